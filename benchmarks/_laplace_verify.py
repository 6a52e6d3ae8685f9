"""The verify section of ``benchmarks.laplace``: Laplace + NUTS and EP + NUTS against
``pm.gp.Latent`` + NUTS on the latent values (the exact posterior, up to Monte Carlo).

The exact run costs the most and does not change when the approximations do, so it is stored
(``<case>.npz`` in the reference folder: its predictive means, hyperparameter draws, quantile
errors and diagnostics, with the settings and a hash of the data it ran on) and loaded by
later runs whose settings and data are the same."""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._laplace_data import labelled_mesh

QUANTILES = (0.05, 0.5, 0.95)  # the hyperparameters' quantiles compared
#: ``pm.sample``'s settings for both methods, besides the draws, the sampler and the case's
#: target acceptance.
SAMPLING = {"chains": 4, "cores": 2, "random_seed": 1, "progressbar": False}
#: BLAS threads while sampling: nutpie's chains are threads of one process, whose BLAS pools
#: would fight over the cores (docs/performance.md). Rows measured before hold no count: they
#: ran with the default threads.
BLAS_THREADS = 1
#: The prior's jitter in the exact run: ``pm.gp.Latent.prior``'s default.
JITTER = 1e-6

#: The verification cases: (likelihood, sharpness of the latent field, NUTS's target acceptance
#: for both methods). The counts pin the Poisson case's latent values, so its exact run samples
#: them neither rotated by the prior (that diverged) nor centred (that mixed slowly:
#: results/CHANGELOG.md) but whitened by their Gaussian posterior under a fixed Gaussian
#: stand-in for the counts (``whitening``).
CASES = {
    "bernoulli": ("bernoulli", 3.0, 0.9),
    "poisson": ("poisson", 1.0, 0.95),
    "bernoulli, separable": ("bernoulli", 12.0, 0.9),
}


#: The methods run for each case: the exact reference first (so that it is stored even when an
#: approximation's run is stopped), then the approximations.
METHODS = ("latent", "laplace", "ep")


def latent_values(kind: str) -> str:
    """How the exact run samples the latent values of a case of likelihood ``kind``."""
    return "Laplace-whitened" if kind == "poisson" else "non-centred"


def whitening(D, y, n_train: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The counts' Gaussian stand-in :math:`N(\tilde y \mid f, W^{-1})` for the likelihood,
    ``(pseudo-observations, W's diagonal)``, fixed at the Laplace mode :math:`\hat f` of the
    Laplace model's MAP hyperparameters: with the likelihood's slope :math:`b` and curvature
    :math:`W` there (``Likelihood.derivatives``; Poisson: :math:`y - e^{\hat f}` and
    :math:`e^{\hat f}`), :math:`\tilde y = \hat f + b / W`. The exact run samples the latent
    values on the coordinates it gives (``verification_model``)."""
    import pymc_sle as sle

    model, gp = verification_model("poisson", D, y, n_train, "laplace")
    with model:
        point = sle.find_map(seed=1).point
    mode, _ = gp.predict(np.arange(n_train)[:, None], point, model=model)
    _, slope, W, _ = sle.gp.Poisson().derivatives(y, mode)
    return mode + slope / W, W


def _whitened(z, mean, K, pseudo, W):
    r"""The latent values :math:`f = m + F z` and the log density of ``z``: the prior's
    :math:`\log N(f \mid \mu, K)` plus the Jacobian :math:`\log|\det F|`.

    :math:`F F^\top = \Sigma = (K^{-1} + W)^{-1}` and :math:`m = \Sigma (K^{-1} \mu + W
    \tilde y)` are the posterior covariance and mean of :math:`f` under the prior
    :math:`N(\mu, K)` and the Gaussian stand-in of ``whitening``: with :math:`K = L L^\top`
    and :math:`I + L^\top W L = C C^\top`, :math:`F = L C^{-\top}`, and :math:`F^\top (K^{-1}
    \mu + W \tilde y) = C^{-1} (L^{-1} \mu + L^\top W \tilde y)`. Where the counts pin a
    value, its coordinate is scaled by the likelihood (centred); where they do not, by the
    prior (non-centred): the posterior is close to standard normal in :math:`z` for every
    hyperparameter value near the MAP, and no funnel is left.

    The density uses the same two factors, so :math:`K` is factorised once: with
    :math:`u = C^{-\top} (C^{-1} (L^{-1} \mu + L^\top W \tilde y) + z) = L^{-1} f`, it is
    :math:`-\tfrac12 \lVert u - L^{-1} \mu \rVert^2 - \sum \log C_{ii} - \tfrac n2 \log
    2\pi` (the :math:`\sum \log L_{ii}` of the prior and of the Jacobian cancel)."""
    import pytensor.tensor as pt
    from pytensor.tensor.linalg import cholesky, solve_triangular

    L = cholesky(K)
    C = cholesky(pt.eye(K.shape[0]) + (L.T * W) @ L)
    white_mean = solve_triangular(L, mean, lower=True)
    centre = solve_triangular(C, white_mean + L.T @ (W * pseudo), lower=True)
    u = solve_triangular(C.T, centre + z, lower=False)
    log_density = (
        -0.5 * pt.sum((u - white_mean) ** 2)
        - pt.sum(pt.log(pt.diag(C)))
        - 0.5 * K.shape[0] * np.log(2 * np.pi)
    )
    return L @ u, log_density


def verification_model(kind: str, D, y, n_train: int, method: str, whitened=None):
    """The same priors and covariance, with the latent values integrated out by ``method``
    (``"laplace"``, ``"ep"``) or sampled by NUTS (``"latent"``: ``pm.gp.Latent``'s prior
    density; counts' latent values on the coordinates ``_whitened`` gives for the Gaussian
    stand-in ``whitened``, labels' rotated by the prior's Cholesky factor)."""
    import pymc as pm

    import pymc_sle as sle

    with pm.Model() as model:
        radius = pm.Uniform("radius", D.cutoff / 4, D.cutoff)
        ls = pm.LogNormal("ls", np.log(2.0), 1.0)
        eta = pm.HalfNormal("eta", 2.0)
        offset = pm.Normal("offset", 0.0, 2.0) if kind == "poisson" else 0.0
        mean = pm.gp.mean.Constant(offset)
        cov = eta**2 * sle.SLE(D.to_dense(fill=D.cutoff), radius=radius, ls=ls)
        X = np.arange(n_train)[:, None]
        if method != "latent":
            gp = {"laplace": sle.gp.Laplace, "ep": sle.gp.EP}[method](mean_func=mean, cov_func=cov)
            likelihood = sle.gp.Poisson() if kind == "poisson" else sle.gp.Bernoulli()
            gp.marginal_likelihood("y", X=X, y=y, likelihood=likelihood)
        elif kind == "poisson":
            gp = pm.gp.Latent(mean_func=mean, cov_func=cov)
            mu, K = mean(X), pm.gp.util.stabilize(cov(X), JITTER)
            z = pm.Flat("z", shape=n_train)  # the density is f's, times the Jacobian |F|
            f, log_density = _whitened(z, mu, K, *whitened)
            f = pm.Deterministic("f", f)
            pm.Potential("f_prior", log_density)
            pm.Poisson("y", mu=pm.math.exp(f), observed=y)
            gp.X, gp.f = X, f  # what ``gp.conditional`` conditions on, as after ``gp.prior``
        else:
            gp = pm.gp.Latent(mean_func=mean, cov_func=cov)
            f = gp.prior("f", X=X, jitter=JITTER)
            pm.Bernoulli("y", logit_p=f, observed=y)
    return model, gp


def _settings(mesh_name, case, n_train, n_test, draws, sampler, data) -> dict:
    """What the exact run depends on: the case, sizes and sampler, and the data's hash."""
    digest = hashlib.sha256()
    for array in data:
        digest.update(np.ascontiguousarray(array, dtype=float).tobytes())
    return {"mesh": mesh_name, "case": case, "cases": CASES[case], "n_train": n_train,
            "n_test": n_test, "draws": draws, "sampler": sampler, "sampling": SAMPLING,
            "blas_threads": BLAS_THREADS, "latent_values": latent_values(CASES[case][0]),
            "data_sha256": digest.hexdigest()}  # fmt: skip


def save_reference(path: Path, settings: dict, fit: tuple, diagnostics: dict) -> None:
    """Store the exact run's ``fit`` (predictive means, draws and quantile errors per
    hyperparameter) and ``diagnostics`` (the row's ``latent_*`` entries) under ``settings``."""
    mean, draws, errors = fit
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"mean": mean, **{f"draws_{k}": v for k, v in draws.items()},
              **{f"errors_{k}": v for k, v in errors.items()}}  # fmt: skip
    meta = json.dumps({"settings": settings, "diagnostics": diagnostics, "names": list(draws)})
    np.savez_compressed(path, meta=np.array(meta), **arrays)


def load_reference(path: Path, settings: dict):
    """The stored exact run's ``(fit, diagnostics)``, or ``None`` when there is none or it ran
    under other settings or on other data."""
    if not path.exists():
        return None
    with np.load(path) as stored:
        meta = json.loads(str(stored["meta"]))
        if meta["settings"] != json.loads(json.dumps(settings)):  # as JSON stores it
            return None
        names = meta["names"]
        fit = (stored["mean"], {k: stored[f"draws_{k}"] for k in names},
               {k: stored[f"errors_{k}"] for k in names})  # fmt: skip
    return fit, meta["diagnostics"]


def measure_verify(
    mesh_name: str,
    case: str,
    n_train: int,
    n_test: int,
    draws: int,
    sampler: str,
    references: str,
) -> dict:
    """In this process: one verification case, Laplace + NUTS and EP + NUTS against Latent +
    NUTS, all sampled by ``sampler`` (``pm.sample``'s ``nuts_sampler``), 4 x (``draws`` +
    ``draws``); the Latent run is loaded from the folder ``references`` when it holds this
    case's run under the same settings, and stored there otherwise. The Laplace figures keep
    their unprefixed keys; EP's are prefixed ``ep_``."""
    import arviz as az
    import pymc as pm
    from threadpoolctl import threadpool_limits

    kind, sharpness, target_accept = CASES[case]
    D, _, train, test, latent, labels = labelled_mesh(
        mesh_name, n_train, n_test, sharpness=sharpness
    )
    if kind == "poisson":
        rng = np.random.default_rng(3)
        labels = rng.poisson(np.exp(1.0 + latent)).astype(float)
    names = ["radius", "ls", "eta"] + (["offset"] if kind == "poisson" else [])
    Xnew = train.size + np.arange(test.size)[:, None]
    out = {"case": case, "n_train": int(train.size), "n_test": int(test.size), "draws": draws,
           "sampler": sampler, "target_accept": target_accept,
           "latent_values": latent_values(kind),
           "blas_threads": BLAS_THREADS}  # fmt: skip
    fits = {}
    settings = _settings(mesh_name, case, n_train, n_test, draws, sampler,
                         [labels[train], latent, D.to_dense(fill=D.cutoff)])  # fmt: skip
    reference = Path(references) / f"{case.replace(', ', '-')}.npz"
    stored = load_reference(reference, settings)
    if stored:
        fits["latent"], diagnostics = stored
        out.update(diagnostics)
    for method in (m for m in METHODS if not (stored and m == "latent")):
        began = time.perf_counter()  # a run's time: its model (the counts' exact run: its
        # whitening's MAP too) and its sampling
        whitened = None
        if method == "latent" and kind == "poisson":
            whitened = whitening(D, labels[train], train.size)
        model, gp = verification_model(kind, D, labels[train], train.size, method, whitened)
        with model, threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
            idata = pm.sample(draws=draws, tune=draws, nuts_sampler=sampler,
                              target_accept=target_accept, **SAMPLING)  # fmt: skip
            elapsed = time.perf_counter() - began
            if method != "latent":
                mean = gp.predictive(Xnew, idata, n_draws=200).mean
            else:
                gp.conditional("f_new", Xnew=Xnew)
                with warnings.catch_warnings():  # the counts' Potential is f's prior, which
                    # shaped the posterior draws of f; f_new's conditional given f needs none
                    warnings.filterwarnings("ignore", "The effect of Potentials", UserWarning)
                    draws_f = pm.sample_posterior_predictive(
                        idata, var_names=["f_new"], random_seed=2, progressbar=False
                    )
                f_new = draws_f.posterior_predictive["f_new"].values.reshape(-1, test.size)
                mean = (np.exp(f_new) if kind == "poisson" else 1 / (1 + np.exp(-f_new))).mean(0)
        posterior = idata.posterior
        errors = {k: np.array([float(az.mcse(idata, var_names=[k], method="quantile", prob=q)[k])
                               for q in QUANTILES]) for k in names}  # fmt: skip
        fits[method] = (mean, {k: posterior[k].values.ravel() for k in names}, errors)
        table = az.summary(idata, var_names=names, kind="diagnostics", round_to="none")
        diagnostics = {
            f"{method}_s": elapsed,
            f"{method}_divergences": int(idata.sample_stats["diverging"].sum()),
            f"{method}_steps_per_draw": float(idata.sample_stats["n_steps"].mean()),
            f"{method}_r_hat_max": float(table["r_hat"].max()),
            f"{method}_ess_bulk_min": float(table["ess_bulk"].min()),
            f"{method}_ess_tail_min": float(table["ess_tail"].min()),
        }
        if method == "latent":
            diagnostics["latent_sampled_on"] = time.strftime("%Y-%m-%d")
            save_reference(reference, settings, fits[method], diagnostics)
        out.update(diagnostics)
    p_exact, h_exact, e_exact = fits["latent"]
    sd = {k: h_exact[k].std() for k in names}
    for method, prefix in (("laplace", ""), ("ep", "ep_")):
        p_approx, h_approx, e_approx = fits[method]
        out[f"{prefix}probability_difference"] = float(np.mean(np.abs(p_approx - p_exact)))
        if kind == "poisson":  # the rates' scale is the data's: the difference per unit of rate
            relative = np.mean(np.abs(p_approx - p_exact) / p_exact)
            out[f"{prefix}relative_difference"] = float(relative)
        difference = {
            k: np.abs(np.quantile(h_approx[k], QUANTILES) - np.quantile(h_exact[k], QUANTILES))
            for k in names
        }
        out[f"{prefix}quantile_difference_sd"] = {
            k: float(difference[k].max() / sd[k]) for k in names
        }
        # the Monte Carlo standard error of that difference, at the quantile where it is largest
        out[f"{prefix}quantile_mcse_sd"] = {
            k: float(np.hypot(e_approx[k], e_exact[k])[difference[k].argmax()] / sd[k])
            for k in names
        }
    return out
