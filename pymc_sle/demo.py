"""The quick-start demo: the paper's Figure 1, SLE-Matern vs plain Matern-3/2 on a 1-D function.

Both models get the same data, split, signal and noise priors and full NUTS posteriors; the SLE
model sees only the distance matrix, the Matern model the coordinates. ``pymc-sle demo`` runs it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm

from pymc_sle.datasets._synthetic import IndexedRegressionData, one_dimensional
from pymc_sle.evaluation._holdout import HoldoutFit, NutsSettings, fit_and_score
from pymc_sle.evaluation._loo import exact_loo
from pymc_sle.gp._marginal import Marginal
from pymc_sle.inference._bounds import lognormal_between, radius_bounds
from pymc_sle.inference._priors import scale_priors, sle_priors
from pymc_sle.kernels._sle import SLE

__all__ = ["DemoSettings", "matern_model", "run_demo", "sle_model"]

SLE_NAME = "SLE (Matern 3/2)"


@dataclass(frozen=True)
class DemoSettings:
    """Data sizes and sampler settings of the demo; ``quick()`` is the CI-sized variant."""

    n_train: int = 50
    n_test: int = 200
    noise_sd: float = 0.1
    nuts: NutsSettings = field(default_factory=NutsSettings)  # 4 chains of 1000 + 1000, 2 cores

    @classmethod
    def quick(cls, **nuts_overrides) -> DemoSettings:
        """25 training and 40 test points; 2 chains of 300 tuning + 200 draws."""
        nuts = {"draws": 200, "tune": 300, "chains": 2, **nuts_overrides}
        return cls(n_train=25, n_test=40, nuts=replace(NutsSettings(), **nuts))

    @classmethod
    def full(cls, **nuts_overrides) -> DemoSettings:
        """The default data and sampler settings with the sampler's progress bar, and
        ``nuts_overrides`` applied."""
        return cls(nuts=replace(NutsSettings(progressbar=True), **nuts_overrides))


def sle_model(
    data: IndexedRegressionData, gp_class: type[pm.gp.Marginal] = Marginal
) -> tuple[pm.Model, pm.gp.Marginal, np.ndarray]:
    """SLE-Matern-3/2 GP on the distance matrix, with :func:`pymc_sle.sle_priors`.

    ``gp_class`` is :class:`pymc_sle.gp.Marginal` (analytic likelihood gradient) or PyMC's own
    ``pm.gp.Marginal``; both define the same model.
    """
    with pm.Model() as model:
        priors = sle_priors(data.distances, data.train, data.y_train, landmarks=data.train)
        cov = priors["eta"] ** 2 * SLE(
            data.distances,
            landmarks=data.train,
            radius=priors["radius"],
            ls=priors["ls"],
            inner="matern32",
        )
        gp = gp_class(cov_func=cov)
        gp.marginal_likelihood("y", X=data.train[:, None], y=data.y_train, sigma=priors["sigma"])
    return model, gp, data.test[:, None]


def matern_model(data: IndexedRegressionData) -> tuple[pm.Model, Marginal, np.ndarray]:
    """Plain Matern-3/2 GP on the coordinates; its length scale gets the radius's prior.

    Both demo models use :class:`pymc_sle.gp.Marginal` (analytic likelihood gradient), so they get
    the same inference machinery.
    """
    x = data.coordinates
    with pm.Model() as model:
        bounds = radius_bounds(data.distances, data.train, data.train, lower="nearest")
        ls = pm.LogNormal("ls", **lognormal_between(*bounds))
        scales = scale_priors(data.y_train)
        cov = scales["eta"] ** 2 * pm.gp.cov.Matern32(x.shape[1], ls=ls)
        gp = Marginal(cov_func=cov)
        gp.marginal_likelihood("y", X=x[data.train], y=data.y_train, sigma=scales["sigma"])
    return model, gp, x[data.test]


def _figure(data: IndexedRegressionData, fits: dict[str, HoldoutFit], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_sle.plotting import plot_bump_profile, plot_posterior_1d

    x = data.coordinates[:, 0]
    order = np.argsort(x[data.test])
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5), constrained_layout=True)
    for ax, (name, fitted) in zip(axes[:2], fits.items(), strict=True):
        draws = fitted.idata.posterior_predictive["f_test"].values.reshape(-1, data.test.size)
        m = fitted.scores
        plot_posterior_1d(
            ax,
            x[data.test][order],
            draws[:, order],
            x_train=x[data.train],
            y_train=data.y_train,
            truth=data.f_test[order],
            title=(
                f"{name}: band of the latent f\nscores on the noisy test y: RMSE {m['rmse']:.3f}, "
                f"CRPS {m['crps']:.3f}, PICP {m['picp']:.3f}"
            ),
            ylabel="f(x), y",
        )
    plot_bump_profile(axes[2], fits[SLE_NAME].idata.posterior["radius"].values)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_demo(out_dir: str | Path = "sle-demo", settings: DemoSettings | None = None) -> dict:
    """Fit SLE-Matern-3/2 and Matern-3/2 on the 1-D benchmark; print and save the comparison.

    Writes ``demo.png`` (posterior bands and the bump profile) and ``demo.json`` (metrics and
    diagnostics) into ``out_dir``. Test points are predicted as the README does: each with its
    own landmark, as every training point is
    (:func:`~pymc_sle.own_landmark_predictive`, on 100 posterior draws);
    the Matérn has no landmarks, so there it is ``gp.conditional``'s predictive.

    Returns
    -------
    dict
        Per model: metrics, ``loo_coverage`` (the 95 % intervals' coverage of the training
        points by exact leave-one-out, :func:`pymc_sle.exact_loo`),
        ``loo_coverage_new`` (the same with each point predicted as a new one, its own landmark
        dropped, ``own_landmark="drop"``, on every 10th draw; the Matérn has no landmarks, so
        there it estimates the same coverage from fewer draws), ``max_rhat``,
        ``min_ess_bulk``, ``divergences``, ``target_accept`` (the NUTS target acceptance the
        model ran at: the settings' ``nuts.target_accept``, or the sampler's default when that
        is ``None``), ``seconds``.
    """
    settings = settings or DemoSettings()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    data = one_dimensional(settings.n_train, settings.n_test, settings.noise_sd, settings.nuts.seed)
    nuts = settings.nuts
    fits, loos, new_point_loos = {}, {}, {}
    for name, build in ((SLE_NAME, sle_model), ("Matern 3/2", matern_model)):
        print(
            f"=== {name}: {nuts.chains} chains x ({nuts.tune} tune + {nuts.draws} draws), "
            f"{nuts.nuts_sampler} NUTS on {nuts.cores} cores, {data.train.size} training points",
            flush=True,
        )
        model, gp, X_test = build(data)
        fits[name] = fit_and_score(
            model, gp, X_test, data.y_test, nuts, latent=True, prediction="own_landmark"
        )
        loos[name] = exact_loo(fits[name].idata, gp, var_name="y", model=model)
        thinned = fits[name].idata.sel(draw=slice(None, None, 10))
        new_point_loos[name] = exact_loo(
            thinned, gp, var_name="y", model=model, own_landmark="drop"
        )
    report = {}
    for name, fitted in fits.items():
        print(f"\n=== {name}: posterior of the hyperparameters ===")
        print(fitted.summary.to_string(float_format=lambda v: f"{v:.4g}"))
        report[name] = {
            **fitted.scores,
            "loo_coverage": loos[name].coverage(0.95),
            "loo_coverage_new": new_point_loos[name].coverage(0.95),
            "max_rhat": fitted.diagnostics["r_hat_max"],
            "min_ess_bulk": fitted.diagnostics["ess_bulk_min"],
            "divergences": fitted.diagnostics["divergences"],
            "target_accept": float(fitted.idata.posterior.attrs["target_accept"]),
            "seconds": round(fitted.seconds, 1),
        }
    table = pd.DataFrame(report).T
    print(
        f"\n=== held-out scores on {data.test.size} noisy test points (95 % PICP; SLE predicts "
        "each with its own landmark), and the 95 % intervals' coverage by exact leave-one-out "
        "on the training points (loo_coverage_new: each predicted as a new point, its own "
        "landmark dropped) ==="
    )
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    _figure(data, fits, out_dir / "demo.png")
    (out_dir / "demo.json").write_text(
        json.dumps({"settings": asdict(settings), "results": report}, indent=2)
    )
    print(f"\nwrote {out_dir / 'demo.png'} and {out_dir / 'demo.json'}")
    print(f"the demo took {time.perf_counter() - started:.0f} s")
    return report
