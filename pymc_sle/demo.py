"""The quick-start demo: the paper's Figure 1, SLE-Matern vs plain Matern-3/2 on a 1-D function.

Both models get the same data, split, signal and noise priors and full NUTS posteriors; the SLE
model sees only the distance matrix, the Matern model the coordinates. ``pymc-sle demo`` runs it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
from threadpoolctl import threadpool_limits

from pymc_sle.cov import SLE
from pymc_sle.datasets import IndexedRegressionData, one_dimensional
from pymc_sle.gp import Marginal
from pymc_sle.metrics import evaluate
from pymc_sle.priors import lognormal_between, radius_bounds, scale_priors, sle_priors

__all__ = ["DemoSettings", "FittedModel", "fit", "matern_model", "run_demo", "sle_model"]


@dataclass(frozen=True)
class DemoSettings:
    """Sizes and sampler settings of the demo; ``quick()`` is the CI-sized variant."""

    n_train: int = 50
    n_test: int = 200
    noise_sd: float = 0.1
    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    cores: int = 2
    target_accept: float = 0.9
    nuts_sampler: str = "pymc"
    seed: int = 0

    @classmethod
    def quick(cls, **overrides) -> DemoSettings:
        return cls(
            **{"n_train": 25, "n_test": 40, "draws": 200, "tune": 300, "chains": 2, **overrides}
        )


@dataclass
class FittedModel:
    """A sampled GP with its held-out scores and convergence diagnostics."""

    name: str
    idata: az.InferenceData
    metrics: dict[str, float]
    summary: pd.DataFrame
    divergences: int
    seconds: float


def sle_model(
    data: IndexedRegressionData, gp_class: type[pm.gp.Marginal] = Marginal
) -> tuple[pm.Model, pm.gp.Marginal, np.ndarray]:
    """SLE-Matern-3/2 GP on the distance matrix, with :func:`pymc_sle.priors.sle_priors`.

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


def fit(
    name: str,
    build: Callable[[IndexedRegressionData], tuple[pm.Model, pm.gp.Marginal, np.ndarray]],
    data: IndexedRegressionData,
    settings: DemoSettings,
) -> FittedModel:
    """Sample a model with NUTS, predict the test points and score them.

    Adds ``f_test`` (latent) and ``y_test`` (with noise) to the posterior predictive; scores
    ``y_test`` against the held-out noisy observations.
    """
    start = time.perf_counter()
    model, gp, X_test = build(data)
    hyperparameters = [rv.name for rv in model.free_RVs]
    # Chains run in parallel processes (PyMC) or threads (nutpie); a BLAS thread pool per chain
    # oversubscribes the cores and busy-waits: 6.2x slower on 2 cores for this model
    # (benchmarks/blas_threads.py).
    with model, threadpool_limits(limits=1, user_api="blas"):
        idata = pm.sample(
            draws=settings.draws,
            tune=settings.tune,
            chains=settings.chains,
            cores=settings.cores,
            target_accept=settings.target_accept,
            nuts_sampler=settings.nuts_sampler,
            random_seed=settings.seed,
            progressbar=False,
        )
        gp.conditional("f_test", Xnew=X_test)
        gp.conditional("y_test", Xnew=X_test, pred_noise=True)
        pm.sample_posterior_predictive(
            idata,
            var_names=["f_test", "y_test"],
            extend_inferencedata=True,
            random_seed=settings.seed,
            progressbar=False,
        )
    return FittedModel(
        name=name,
        idata=idata,
        metrics=evaluate(idata, data.y_test, "y_test"),
        summary=az.summary(idata, var_names=hyperparameters, round_to="none"),
        divergences=int(idata.sample_stats["diverging"].sum()),
        seconds=time.perf_counter() - start,
    )


def _figure(data: IndexedRegressionData, fits: list[FittedModel], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_sle.plotting import plot_bump_profile, plot_posterior_1d

    x = data.coordinates[:, 0]
    order = np.argsort(x[data.test])
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5), constrained_layout=True)
    for ax, fitted in zip(axes[:2], fits, strict=True):
        draws = fitted.idata.posterior_predictive["f_test"].values.reshape(-1, data.test.size)
        m = fitted.metrics
        plot_posterior_1d(
            ax,
            x[data.test][order],
            draws[:, order],
            x_train=x[data.train],
            y_train=data.y_train,
            truth=data.f_test[order],
            title=(
                f"{fitted.name}: RMSE {m['rmse']:.3f}, CRPS {m['crps']:.3f}, PICP {m['picp']:.3f}"
            ),
        )
    plot_bump_profile(axes[2], fits[0].idata.posterior["radius"].values)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_demo(out_dir: str | Path = "sle-demo", settings: DemoSettings | None = None) -> dict:
    """Fit SLE-Matern-3/2 and Matern-3/2 on the 1-D benchmark; print and save the comparison.

    Writes ``demo.png`` (posterior bands and the bump profile) and ``demo.json`` (metrics and
    diagnostics) into ``out_dir``.

    Returns
    -------
    dict
        Per model: metrics, ``max_rhat``, ``min_ess_bulk``, ``divergences``, ``seconds``.
    """
    settings = settings or DemoSettings()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = one_dimensional(settings.n_train, settings.n_test, settings.noise_sd, settings.seed)
    fits = [
        fit("SLE (Matern 3/2)", sle_model, data, settings),
        fit("Matern 3/2", matern_model, data, settings),
    ]
    report = {}
    for fitted in fits:
        print(f"\n=== {fitted.name}: posterior of the hyperparameters ===")
        print(fitted.summary.to_string(float_format=lambda v: f"{v:.4g}"))
        report[fitted.name] = {
            **fitted.metrics,
            "max_rhat": float(fitted.summary["r_hat"].max()),
            "min_ess_bulk": float(fitted.summary["ess_bulk"].min()),
            "divergences": fitted.divergences,
            "seconds": round(fitted.seconds, 1),
        }
    table = pd.DataFrame(report).T
    print(f"\n=== held-out scores on {data.test.size} noisy test points (95 % PICP) ===")
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    _figure(data, fits, out_dir / "demo.png")
    settings_dict = {k: getattr(settings, k) for k in settings.__dataclass_fields__}
    (out_dir / "demo.json").write_text(
        json.dumps({"settings": settings_dict, "results": report}, indent=2)
    )
    print(f"\nwrote {out_dir / 'demo.png'} and {out_dir / 'demo.json'}")
    return report
