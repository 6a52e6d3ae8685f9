"""The model step: data-adaptive priors for the SLE GP's hyperparameters, and the coordinates
NUTS samples them in.

:func:`sle_priors` validates the training data once
(``training_data``), then runs the pipeline: the search problem
and its grid passes (``_search``), the plan of the scale each variable is sampled on
(``_scales``), and one step that adds the variables to the PyMC model. :func:`scale_priors`
gives the signal and noise priors alone, for any GP.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pymc_sle._data_numbers import data_number
from pymc_sle.inference._basins import Basin, add_label
from pymc_sle.inference._bounds import lognormal_between, target_scale, training_data
from pymc_sle.inference._latent_priors import check_likelihood, latent_location_and_scale
from pymc_sle.inference._scales import ReparamPlan, plan
from pymc_sle.inference._search import DEFAULT_POLICY, SearchPolicy, SearchProblem, search
from pymc_sle.kernels._inner import resolve_inner

__all__ = ["SLEPriors", "scale_priors", "sle_priors"]


class SLEPriors(dict):
    """What :func:`~pymc_sle.sle_priors` returns: a dict ``{"radius", "ls", "eta",
    "sigma"}`` of the new random variables (``"offset"`` instead of ``"sigma"`` for a latent
    GP, whose mean :meth:`SLEPriors.mean_func` builds), with the radius ``basins`` its start
    search found (highest mass first; empty for ``start="prior"``).
    :func:`pymc_sle.sample_basins` samples each.

    :meth:`SLEPriors.covariance` builds the SLE covariance these priors were searched for (the same
    distances, landmarks and inner kernel), so the inner kernel is named once.

    ``scales`` records what the search decided: for each key, the scale NUTS samples it on --
    ``"log"`` (PyMC's default), ``"centred log"`` (a log scale centred at the grid's mode),
    ``"quantile"`` (the grid posterior's quantile scale; ``"capped quantile"`` with the radius
    capped at ``radius_cap``), or ``"ridge"`` / ``"floored ridge"`` (relative to the grid's ridge
    given the radius, on a centred log scale; ``"floored ridge, quantile"`` on its quantile
    scale), or ``"identity"`` (the latent GP's offset), with ``", basin jumps"`` after the
    radius's where a label moves it between basins.
    The model's variables are the four keys, whatever their scales: the changes of variable are
    their transforms, hidden from traces as PyMC hides every transformed value
    (``idata_kwargs={"include_transformed": True}`` keeps them). Where a basin label moves the
    radius, it is one more variable after the four, ``<radius>_basin``: the basin each draw is
    in (``pymc_sle.inference._basins``)."""

    def __init__(
        self,
        variables: dict,
        basins: tuple[Basin, ...] = (),
        radius_cap: float | None = None,
        truncated_mass: float = 0.0,
        scales: dict[str, str] | None = None,
        kernel: dict | None = None,
    ):
        super().__init__(variables)
        self.basins = tuple(basins)
        #: The radius's upper bound in the sampled model (``None``: none), and the grid's
        #: posterior mass above it, which the model's posterior loses (``sle_priors``).
        self.radius_cap, self.truncated_mass = radius_cap, float(truncated_mass)
        scales = dict(scales or {})
        self.scales = scales | {name: "log" for name in self if name not in scales}
        #: What the search assumed of the kernel: ``distances``, ``landmarks`` (column indices),
        #: ``inner`` and ``inner_kwargs`` (``None`` when built by hand).
        self.kernel = None if kernel is None else dict(kernel)
        if self.kernel is not None and "radius" in self:
            # an SLE given this radius checks it has the inner kernel the grid searched
            searched = resolve_inner(self.kernel["inner"], self.kernel["inner_kwargs"])
            self["radius"].tag.searched_inner = (type(searched), self.kernel["inner_kwargs"] or {})

    def covariance(self, *, feature_mode: bool = False, **sle_kwargs):
        """``eta**2 * SLE(...)`` with these priors' radius and length scale, on the distances,
        landmarks and inner kernel the priors were searched for.

        Parameters
        ----------
        feature_mode : bool, default False
            ``False``: index mode, ``X[:, 0]`` are row indices into the distance matrix given
            to :func:`sle_priors`. ``True``: feature mode, the ``len(landmarks)`` columns of
            ``X`` are each point's distances to the landmarks (no distance matrix).
        **sle_kwargs
            Other arguments of :class:`pymc_sle.SLE` (``amplitude``, ``shape``,
            ``radius_max``, ``embedding``, ``active_dims``).

        Returns
        -------
        pymc.gp.cov.Covariance

        Raises
        ------
        ValueError
            If the priors were not made by :func:`sle_priors`.
        TypeError
            If ``sle_kwargs`` sets what the priors fix (distances, landmarks, radius, ls, inner,
            inner_kwargs, input_dim).
        """
        from pymc_sle.kernels._sle import SLE

        if self.kernel is None:
            raise ValueError(
                "`covariance()` needs priors made by sle_priors, which records the distances, "
                "landmarks and inner kernel; build SLE(...) yourself for these"
            )
        fixed = {"distances", "landmarks", "radius", "ls", "inner", "inner_kwargs", "input_dim"}
        clashing = sorted(fixed & set(sle_kwargs))
        if clashing:
            raise TypeError(
                f"`covariance()` takes {clashing} from the priors (what sle_priors searched "
                "for); build SLE(...) yourself to change them"
            )
        kernel = self.kernel
        where = (
            {"input_dim": len(kernel["landmarks"])}
            if feature_mode
            else {"distances": kernel["distances"], "landmarks": kernel["landmarks"]}
        )
        sle = SLE(
            **where,
            radius=self["radius"],
            ls=self["ls"],
            inner=kernel["inner"],
            inner_kwargs=kernel["inner_kwargs"],
            **sle_kwargs,
        )
        return self["eta"] ** 2 * sle

    def mean_func(self) -> pm.gp.mean.Mean:
        """The GP's mean function: ``Constant(offset)`` where the priors have an ``offset``
        (``sle_priors`` with a ``likelihood``), ``Zero()`` otherwise."""
        if "offset" in self:
            return pm.gp.mean.Constant(self["offset"])
        return pm.gp.mean.Zero()

    def var_names(self, model: pm.Model, idata=None) -> list[str]:
        """What convergence diagnostics should cover: every free variable of ``model``, the
        four hyperparameters first (then the basin label of ``pymc_sle.inference._basins``,
        if any: its r-hat says whether the chains agree on the basins' weights).

        With ``idata``, only those in its posterior: ``gp.conditional`` adds free variables to
        the model that NUTS never sampled, e.g. ``az.summary(idata,
        var_names=priors.var_names(model, idata))`` after a prediction."""
        own = [v.name for v in self.values()]
        names = own + [rv.name for rv in model.free_RVs if rv.name not in own]
        return names if idata is None else [n for n in names if n in idata.posterior]


def sle_priors(
    distances,
    rows,
    y,
    *,
    likelihood=None,
    landmarks=None,
    mass: float = 0.95,
    names: dict[str, str] | None = None,
    inner="matern32",
    inner_kwargs: dict | None = None,
    start: str | None = None,
    scale_ridges: bool = True,
    cap_radius: bool = True,
    search_points: int = 500,
    policy: SearchPolicy | None = None,
) -> SLEPriors:
    """Create priors for an SLE GP in the current PyMC model, and the coordinates NUTS samples.

    The model's priors:

    - ``radius ~ LogNormal`` with ``mass`` between the radius bounds of :func:`suggest_bounds`;
    - ``ls ~ LogNormal`` with ``mass`` between its embedding-distance bounds;
    - ``eta ~ HalfNormal(std(y))``, the signal standard deviation (the SLE is multiplied by
      ``eta**2``; :meth:`SLEPriors.covariance` builds ``eta**2 * SLE(...)``);
    - ``sigma ~ HalfNormal(std(y))``, the noise standard deviation.

    The amplitude is left at 1: with a scalar amplitude the kernel depends on
    ``amplitude / ls`` only (module notes).

    **What NUTS samples** (``start="mode"``). The radius posterior can be rough -- basins
    separated by dips -- and ``log ls`` follows ``log radius`` along a curved ridge. A grid
    posterior of the same model (:func:`~pymc_sle.inference.grid_posterior`, with the ``inner``
    kernel given here) finds where the mass is, and smooth changes of variable make it easy to
    sample, without changing the model (:doc:`/hyperposterior` explains each choice):

    - the radius on the grid's quantile scale (a standard normal mapped onto its marginal), or,
      when several basins behind deep dips hold mass, on a log scale centred at the grid's mode;
    - ``ls``, ``eta`` and ``sigma`` relative to their ridges given the radius (a transform of
      each: the variables keep exactly the priors above, and the trace shows only the four);
      with ``scale_ridges=False``, ``eta`` and ``sigma`` on centred log scales;
    - the noise on its quantile scale when its posterior reaches down to zero;
    - where basins outside the start's hold more than 1 % of the mass, every variable in the
      frame of the basin a discrete label names, ``<radius>_basin`` (one more variable, after
      the four): plain ``pm.sample`` updates it by Gibbs-Metropolis steps and jumps between the
      basins (``pymc_sle.inference._basins``; nutpie and numpyro cannot sample it, use
      :func:`pymc_sle.sample_basins` with them);
    - every chain starting at the grid's mode, jittered.

    Basins of the radius posterior are listed in ``basins`` (peak, mass, extent, start) for
    :func:`pymc_sle.sample_basins`, which samples each apart and pools them by the
    grid's masses. ``pm.sample_smc`` needs ``start="prior"`` (:doc:`/how-to/samplers`). The
    grid costs about 2,000 eigendecompositions of the ``n x n`` training Gram matrix (README,
    "How large?"); on sparse distances, of a ``search_points x search_points`` one
    (``search_points`` below).
    ``start="prior"`` gives plain log scales and PyMC's default start, without the search.

    Parameters
    ----------
    distances, rows, y, landmarks
        As in :func:`suggest_bounds`: the distance matrix, the training rows, their
        observations and the landmark columns (default: every column).
    likelihood : pymc_sle.gp.Bernoulli, Binomial or Poisson, optional
        Priors for a latent GP observed through this likelihood (:class:`pymc_sle.gp.Laplace`)
        instead of Gaussian observations: ``radius`` and ``ls`` as here, ``eta`` on the
        likelihood's latent scale and a constant ``offset`` at the link of the pooled
        observations, no ``sigma``, and NUTS on PyMC's default scales and start (the grid
        search is the Gaussian posterior's): :doc:`/how-to/classification` gives the
        definitions. ``scale_ridges``, ``cap_radius`` and ``policy`` do not apply.
    mass : float, default 0.95
        Prior probability between the bounds.
    names : dict, optional
        Renames variables, e.g. ``{"radius": "r"}``; keys are ``radius``, ``ls``, ``eta``,
        ``sigma``.
    inner, inner_kwargs
        The SLE's inner kernel, as for :class:`pymc_sle.SLE`: the grid searches that kernel's
        posterior, and :meth:`SLEPriors.covariance` uses it.
    start : {"mode", "prior"}, optional
        Where NUTS chains start, and on which scales; see above. Default: ``"mode"``, and
        ``"prior"`` with a ``likelihood`` (which takes no other).
    scale_ridges : bool, default True
        Sample ``eta`` and ``sigma`` relative to ridges of their own, as ``ls`` is (only where
        the radius is on its quantile scale). The ridges are floored: they follow the grid's
        conditional mean only where it rises above the posterior mean, where the GP gives way to
        noise.
    cap_radius : bool, default True
        Where the radius is on its quantile scale, cap it softly below the next basin up from
        the start's, provided the grid's mass above the cap is below ``MIN_BASIN_MASS`` (the
        smallest basin :func:`~pymc_sle.sample_basins` samples). The sampled posterior
        is then the model's restricted to ``radius < radius_cap``, which loses
        ``truncated_mass`` of it (on the result; a warning from a tenth of ``MIN_BASIN_MASS``).
        Forward draws (``pm.sample_prior_predictive``) still come from the untruncated prior.
        ``False`` keeps every basin, uncapped.
    search_points : int, default 500
        On sparse distances (:class:`~pymc_sle.SparseDistanceMatrix`), the grid searches the
        posterior given the observations of this many random training points, the kernel
        unchanged: the grid's cost stays that of
        ``search_points`` points at any ``n``, and its posterior is wider than the full one.
        The radius prior is then truncated at the distances' cutoff, and every scale NUTS
        samples the radius on stays below it (``radius_cap``); a warning says when the grid's
        posterior has not fallen off by the cutoff. Dense distances ignore it (the grid uses
        every point).
    policy : SearchPolicy, optional
        The constants of the search -- grid sizes, basin barriers, masses (default
        :data:`~pymc_sle.inference.DEFAULT_POLICY`). The benchmarks validated the defaults
        together; change one only to study it.

    Returns
    -------
    SLEPriors
        A dict ``{"radius", "ls", "eta", "sigma"}`` of the new random variables
        (``{"radius", "ls", "eta", "offset"}`` with a ``likelihood``), with
        ``basins``, ``radius_cap`` (``None``: none), ``truncated_mass``, ``scales`` (the scale
        each variable is sampled on) and ``kernel`` (what the search assumed:
        distances, landmarks, inner kernel).

    Raises
    ------
    ValueError
        If ``start`` is not ``"mode"`` or ``"prior"`` (or is ``"mode"`` with a
        ``likelihood``), the data are invalid (as for :func:`suggest_bounds`), ``y`` holds
        values the ``likelihood`` does not accept, or the ``likelihood`` is the Gaussian.
    TypeError
        If ``scale_ridges`` or ``cap_radius`` is not a bool, ``policy`` not a
        :class:`~pymc_sle.inference.SearchPolicy`, or ``likelihood`` not a likelihood of
        :mod:`pymc_sle.gp`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_sle import sle_priors
    >>> x = np.linspace(0, 1, 20)
    >>> D = np.abs(x[:, None] - x[None, :])
    >>> with pm.Model():
    ...     priors = sle_priors(D, rows=np.arange(20), y=np.sin(6 * x))
    >>> sorted(priors)
    ['eta', 'ls', 'radius', 'sigma']

    Labels instead of Gaussian observations:

    >>> import pymc_sle as sle
    >>> labels = (x > 0.5).astype(float)
    >>> with pm.Model():
    ...     priors = sle_priors(D, np.arange(20), labels, likelihood=sle.gp.Bernoulli())
    ...     gp = sle.gp.Laplace(mean_func=priors.mean_func(), cov_func=priors.covariance())
    >>> sorted(priors)
    ['eta', 'ls', 'offset', 'radius']
    """
    if start not in (None, "mode", "prior"):
        raise ValueError(f"`start` must be 'mode' or 'prior', but got {start!r}")
    if likelihood is not None and start == "mode":
        raise ValueError(
            "`start` must be 'prior' with a `likelihood`: the grid search of start='mode' is "
            "the Gaussian model's exact posterior"
        )
    for name, value in (("scale_ridges", scale_ridges), ("cap_radius", cap_radius)):
        if not isinstance(value, bool | np.bool_):
            raise TypeError(f"`{name}` must be a bool, but got {value!r}")
    policy = DEFAULT_POLICY if policy is None else policy
    if not isinstance(policy, SearchPolicy):
        raise TypeError(f"`policy` must be a SearchPolicy, but got {type(policy).__name__}")
    names = {"radius": "radius", "ls": "ls", "eta": "eta", "sigma": "sigma", "offset": "offset",
             **(names or {})}  # fmt: skip
    data = training_data(distances, rows, y, landmarks, sparse=True)
    problem = SearchProblem.build(
        data, inner=inner, inner_kwargs=inner_kwargs, mass=mass, search_points=search_points
    )
    if likelihood is not None:
        latent = latent_location_and_scale(likelihood, check_likelihood(likelihood, data.y))
        variables = _add_to_model(problem, None, names, latent)
        return SLEPriors(variables, scales={"offset": "identity"}, kernel=problem.kernel)
    return _compose(problem, policy, start or "mode", names, scale_ridges, cap_radius)


def _compose(problem, policy: SearchPolicy, start: str, names: dict, scale_ridges: bool,
             cap_radius: bool) -> SLEPriors:  # fmt: skip
    """The steps after the problem: search, plan, warnings, the model's variables."""
    if start == "prior":
        return SLEPriors(_add_to_model(problem, None, names), kernel=problem.kernel)
    found = search(problem, policy, zoom=cap_radius)
    reparametrised = plan(problem, found, policy, scale_ridges=scale_ridges, cap_radius=cap_radius)
    for message in reparametrised.warnings:
        warnings.warn(message, UserWarning, stacklevel=3)
    basins = tuple(
        Basin(b.radius, b.mass, b.low, b.high, {names[k]: v for k, v in b.start.items()})
        for b in reparametrised.basins
    )
    return SLEPriors(
        _add_to_model(problem, reparametrised, names),
        basins,
        reparametrised.radius_cap,
        reparametrised.truncated_mass,
        reparametrised.labels,
        problem.kernel,
    )


def _add_to_model(problem: SearchProblem, reparametrised: ReparamPlan | None, names: dict,
                  latent: tuple[float, float] | None = None) -> dict:  # fmt: skip
    """The priors' variables in the current model, sampled as ``reparametrised`` says (``None``:
    PyMC's default scales and start). With ``latent``, the offset's prior mean and the latent
    scale: the latent GP's variables instead of the Gaussian's (``_latent_priors``). The one
    step of ``sle_priors`` that touches the model."""
    radius_prior = lognormal_between(*problem.bounds.radius, problem.mass)
    ls_prior = lognormal_between(*problem.bounds.ls, problem.mass)
    scale = problem.y_scale
    # the numbers read off the data enter the graph as data numbers: one compiled module
    # serves every data set (pymc_sle._data_numbers)
    radius_graph = {k: data_number(v) for k, v in radius_prior.items()}
    ls_graph = {k: data_number(v) for k, v in ls_prior.items()}
    scale_graph = data_number(scale)

    def radius_variable(**options) -> pt.TensorVariable:
        if problem.cutoff is None:
            return pm.LogNormal(names["radius"], **radius_graph, **options)
        # sparse distances: nothing beyond the cutoff is stored
        prior = pm.LogNormal.dist(**radius_graph)
        return pm.Truncated(names["radius"], prior, upper=data_number(problem.cutoff), **options)

    if latent is not None:
        location, latent_scale = (data_number(v) for v in latent)
        return {
            "radius": radius_variable(),
            "ls": pm.LogNormal(names["ls"], **ls_graph),
            "eta": pm.HalfNormal(names["eta"], sigma=latent_scale),
            "offset": pm.Normal(names["offset"], mu=location, sigma=latent_scale),
        }
    if reparametrised is None:
        return {
            "radius": radius_variable(),
            "ls": pm.LogNormal(names["ls"], **ls_graph),
            "eta": pm.HalfNormal(names["eta"], sigma=scale_graph),
            "sigma": pm.HalfNormal(names["sigma"], sigma=scale_graph),
        }
    scales, ridges = reparametrised.scales, reparametrised.ridges
    # each prior, and its draws in numpy (called once per draw: no PyTensor function there)
    priors = {
        "ls": (
            pm.LogNormal.dist(**ls_graph),
            lambda rng, size: rng.lognormal(ls_prior["mu"], ls_prior["sigma"], size),
        ),
        "eta": (
            pm.HalfNormal.dist(sigma=scale_graph),
            lambda rng, size: np.abs(rng.normal(0.0, scale, size)),
        ),
    }
    priors["sigma"] = priors["eta"]

    def options(name: str) -> dict:
        return {"initval": scales[name].initval, "default_transform": scales[name].transform}

    def on_ridge(name: str) -> pt.TensorVariable:
        """``name`` with its own prior, sampled relative to its ridge: the radius is an input
        of its distribution (whose density and draws ignore it) for the transform to read."""
        prior, draw = priors[name]

        def logp(value, _):
            return pm.logp(prior, value)

        def random(_, rng=None, size=None):
            return draw(np.random.default_rng(rng), size)

        scales[name].transform.bind(radius)
        return pm.CustomDist(names[name], radius, logp=logp, random=random, **options(name))

    radius = radius_variable(**options("radius"))
    variables = {"radius": radius}
    for name in ("ls", "eta", "sigma"):  # ls is always on its ridge
        if name in ridges:
            variables[name] = on_ridge(name)
        else:
            variables[name] = pm.HalfNormal(names[name], sigma=scale_graph, **options(name))
    if reparametrised.framed:  # after the four: traces list it last
        add_label(f"{names['radius']}_basin", reparametrised.framed)
    return variables


def scale_priors(y, *, names: dict[str, str] | None = None) -> dict[str, pm.Distribution]:
    """Signal and noise standard deviation priors scaled to the data, for any GP.

    ``eta ~ HalfNormal(std(y))`` and ``sigma ~ HalfNormal(std(y))``: about 92 % of each prior lies
    in the paper's signal bounds ``[0.1, sqrt(10)] * std(y)``, and both shrink gently towards 0.

    Parameters
    ----------
    y : array_like
        Training targets (finite, not constant).
    names : dict, optional
        Renames ``eta`` and ``sigma``.
    """
    names = {"eta": "eta", "sigma": "sigma", **(names or {})}
    scale = data_number(target_scale(y))
    return {
        "eta": pm.HalfNormal(names["eta"], sigma=scale),
        "sigma": pm.HalfNormal(names["sigma"], sigma=scale),
    }
