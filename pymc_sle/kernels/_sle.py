"""The Sparse Landmark Embedding (SLE) covariance for ``pm.gp``."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor.tensor as pt
from pymc.gp.cov import Stationary
from pytensor.graph.basic import Variable

from pymc_sle._data_numbers import data_number
from pymc_sle._pymc_compat import constant_upper_bound
from pymc_sle._validation import (
    as_index_array,
    can_change,
    check_finite_nonnegative,
    check_positive_parameter,
    constant_value,
)
from pymc_sle.distances._matrix import DistanceMatrix
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
from pymc_sle.kernels._bump import bump
from pymc_sle.kernels._bump_ops import bump_squared_distances
from pymc_sle.kernels._embedding_ops import dense_squared_distances
from pymc_sle.kernels._landmark import LandmarkCovariance

__all__ = ["SLE", "SPARSE_FILL_THRESHOLD", "training_covariance_of"]

#: ``embedding="auto"`` takes sparse products when at most this fraction of the training
#: embedding is non-zero at the current parameters (:doc:`/performance`
#: measures the crossover).
SPARSE_FILL_THRESHOLD = 0.1

_EMBEDDINGS = ("auto", "dense")

#: A radius prior with more than this mass below the smallest or above the largest training
#: distance gets a warning (``sle_priors`` puts 2.5 % on either side).
_DEGENERATE_PRIOR_MASS = 0.1


def _prior_mass_outside(radius, low: float, high: float) -> tuple[float, float] | None:
    """Prior probability of ``radius < low`` and ``radius > high`` (the largest over a vector);
    ``None`` when ``radius`` is not a random variable with a CDF (e.g. a Deterministic)."""
    import pymc as pm

    try:  # the distances as data numbers: one compiled module for every data set
        below = np.exp(pm.logcdf(radius, data_number(low)).eval())
        above = -np.expm1(pm.logcdf(radius, data_number(high)).eval())
    except (NotImplementedError, TypeError, ValueError, AttributeError):
        return None
    return float(np.max(below)), float(np.max(above))


def _fixed_numbers(X, name: str) -> np.ndarray:
    """``X`` as numbers; ``TypeError`` naming ``name`` if it is symbolic (``pm.Data`` could
    change after a sparse pattern was built from it)."""
    concrete = None if can_change(X) else constant_value(X)
    if concrete is None:
        raise TypeError(
            f"`{name}` must be fixed numbers (an array or a constant) for sparse distances, but "
            f"got {type(X).__name__}"
        )
    return concrete


def _is_random(value) -> bool:
    return isinstance(value, Variable) and constant_value(value) is None


def _check_searched_inner(radius, inner: type, inner_kwargs: dict) -> None:
    """Refuse a radius from :func:`~pymc_sle.sle_priors` in an SLE whose inner
    kernel is not the one its grid searched: the priors' scales, start and basins would be
    another model's, whose basins can hold very different masses (:doc:`/hyperposterior`)."""
    searched = getattr(getattr(radius, "tag", None), "searched_inner", None)
    if searched is None or searched == (inner, inner_kwargs):
        return
    cls, kwargs = searched
    raise ValueError(
        f"`inner` must be the kernel sle_priors searched for this radius ({cls.__name__}"
        f"{f', inner_kwargs={kwargs}' if kwargs else ''}), but got {inner.__name__}"
        f"{f', inner_kwargs={inner_kwargs}' if inner_kwargs else ''}: pass the same `inner` to "
        "sle_priors, or build the kernel with priors.covariance()"
    )


class SLE(LandmarkCovariance):
    r"""Sparse Landmark Embedding covariance: a PSD kernel from any distance.

    Every input :math:`x` is embedded by bumps of its distances to the landmarks
    :math:`z_1, \dots, z_m` (normally the training points),

    .. math::

        \phi(x)_j = b\bigl(d(x, z_j);\, a_j, r_j, \beta_j\bigr),

        b(d; a, r, \beta) = a \exp\!\left(\beta - \frac{\beta}{1 - d^2/r^2}\right)
        \mathbb{1}[d < r],

    and a stationary kernel :math:`h` is applied to the Euclidean distance between embeddings,

    .. math::

        k(x, x') = h\!\left(\frac{\lVert \phi(x) - \phi(x') \rVert_2}{\ell}\right),
        \qquad h(0) = 1.

    For ``inner="matern32"``, :math:`h(s) = (1 + \sqrt{3}s) e^{-\sqrt{3}s}`; ``"matern52"``,
    :math:`(1 + \sqrt{5}s + 5s^2/3) e^{-\sqrt{5}s}`; ``"matern12"``, :math:`e^{-s}`; ``"rbf"``,
    :math:`e^{-s^2/2}`. Because :math:`\phi` maps into :math:`\mathbb{R}^m`, :math:`k` is positive
    semi-definite for *any* distance :math:`d` -- geodesic, Wasserstein, edit -- whether or not
    it is conditionally negative definite. Multiply by :math:`\sigma^2` for a signal variance.
    Per-landmark :math:`a_j, r_j, \beta_j` give the paper's non-stationary SLE (Appendix B); a
    position-dependent :math:`\sigma(x)` composes through :class:`pymc.gp.cov.ScaledCov`.

    The inputs come in one of two forms, with the same values and gradients:

    - **index mode** (``distances`` given): ``X[:, 0]`` holds integer row numbers into
      ``distances``; its ``landmarks`` columns are the distances to the landmarks;
    - **feature mode** (``distances`` omitted, ``input_dim=m``): the ``m`` active columns of
      ``X`` *are* each point's distances to the landmarks, e.g. ``D[train][:, landmarks]`` for
      training and the new points' distances to the same landmarks for prediction. New points
      need only these ``m`` distances, so ``pm.set_data`` can bring any number of them after the
      fit (see the how-to "New data after the fit").

    Parameters
    ----------
    distances : DistanceMatrix, SparseDistanceMatrix or array_like, optional
        Of shape (n_points, n_columns).
        Index mode: distances from every point the model evaluates (rows) to landmark
        candidates (columns). ``None`` (the default) selects feature mode. A
        :class:`~pymc_sle.SparseDistanceMatrix` bounds the radius by its ``cutoff`` and lets
        :class:`pymc_sle.gp.Marginal` take its sparse likelihood (README, "Large data").
    landmarks : array_like of int of shape (m,), optional
        Index mode: column indices of the landmarks, unique. ``None`` uses every column; must be
        ``None`` in feature mode, where the landmarks are the active columns of ``X``.
    radius : float, array_like of shape (m,) or TensorVariable
        Bump support radius :math:`r > 0`; entries farther than ``radius`` embed as exactly 0.
    ls : float or TensorVariable
        Length scale :math:`\ell > 0` of the inner kernel in embedding space.
    amplitude : float, array_like of shape (m,) or TensorVariable, default 1.0
        Bump height :math:`a > 0`. With a scalar amplitude the kernel depends on ``amplitude /
        ls`` only, so keep the default unless ``ls`` is fixed.
    shape : float, array_like of shape (m,) or TensorVariable, default 1.0
        Bump shape :math:`\beta > 0`; larger values concentrate the bump near its centre.
    inner : str or type, default "matern32"
        ``"rbf"``/``"expquad"``, ``"matern12"``, ``"matern32"``, ``"matern52"``, or a
        :class:`pymc.gp.cov.Stationary` subclass, applied through its ``full_from_distance``.
    inner_kwargs : dict, optional
        Extra constructor arguments for a custom inner class (e.g. ``{"alpha": 2.0}`` for
        :class:`pymc.gp.cov.RatQuad`).
    input_dim : int, default 1
        Number of columns of ``X``, as in PyMC's covariances; in feature mode, the number of
        landmarks ``m`` unless ``active_dims`` says otherwise.
    active_dims : sequence of int, optional
        Index mode: the one column of ``X`` holding the row index (default: column 0). Feature
        mode: the columns holding the distances to the landmarks (default: all ``input_dim``).
    radius_max : float, optional
        An upper bound on ``radius``: only distances below it can give non-zeros, which bounds
        the memory of ``embedding="auto"``. A random ``radius`` is
        then used as ``min(radius, radius_max)``, so give it a prior bounded by ``radius_max``.
        Inferred when ``radius`` is fixed (its largest value) or is a model variable with a
        constant upper bound (``pm.Uniform``, ``pm.Truncated``); with sparse distances, at most
        (and by default) their ``cutoff``.
    embedding : {"auto", "dense"}, default "auto"
        How the training covariance is computed. ``"auto"`` finds the embedding's non-zeros at
        every evaluation, at the current parameter values, evaluates the bump there only, and
        takes sparse products when at most `SPARSE_FILL_THRESHOLD` of the embedding is non-zero
        (dense ones otherwise), whatever the radius prior (LogNormal included); a known
        ``radius_max`` bounds the memory this needs. ``"dense"`` evaluates the full ``(n, m)``
        embedding and its dense products. Both give the same values and gradients.
    dense_limit : float, optional
        On sparse distances: the largest dense block of distances, in bytes, that a graph which
        needs it may form (``gp.conditional``, ``pm.gp.Latent``, a covariance the sparse
        likelihood does not cover), with a :class:`~pymc_sle.kernels.DenseFromSparseWarning`
        when it does (default 1.6e9, 200 million distances). The block is formed when such a
        graph runs, never while it is built.

    Raises
    ------
    ValueError, TypeError
        On invalid distances, landmarks, parameters or inner kernels; when ``full``/``diag`` get
        a concrete ``X`` that is not a column of integral, in-range row indices (index mode) or
        of finite, non-negative distances (feature mode). A ``pm.Data`` ``X`` is checked the same
        way whenever the graph runs.

    See Also
    --------
    pymc_sle.bump : the bump function.
    pymc_sle.radius_bounds : data-adaptive bounds for ``radius``.

    References
    ----------
    Noack, Alghalayini and Risser, "A General Kernel Framework for Non-CND Distance Measures
    Using \|D\|-Dimensional Sparse Landmark Embeddings", Section 4 and Appendix B.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_sle import SLE
    >>> x = np.linspace(0.0, 1.0, 6)
    >>> D = np.abs(x[:, None] - x[None, :])
    >>> cov = SLE(D, landmarks=[0, 2, 4], radius=0.5, ls=1.0, inner="rbf")
    >>> K = cov(np.arange(6)[:, None]).eval()
    >>> K.shape, bool(np.allclose(np.diag(K), 1.0))
    ((6, 6), True)

    Feature mode: the same kernel from the distances to the three landmarks.

    >>> features = SLE(radius=0.5, ls=1.0, inner="rbf", input_dim=3)
    >>> bool(np.allclose(features(D[:, [0, 2, 4]]).eval(), K))
    True
    """

    _reads_sparse_distances = True

    def __init__(
        self,
        distances: DistanceMatrix | np.ndarray | None = None,
        landmarks=None,
        *,
        radius,
        ls,
        amplitude=1.0,
        shape=1.0,
        inner: str | type[Stationary] = "matern32",
        inner_kwargs: dict | None = None,
        input_dim: int = 1,
        active_dims=None,
        radius_max: float | None = None,
        embedding: str = "auto",
        dense_limit: float | None = None,
    ):
        super().__init__(
            distances,
            landmarks,
            ls=ls,
            inner=inner,
            inner_kwargs=inner_kwargs,
            input_dim=input_dim,
            active_dims=active_dims,
            dense_limit=dense_limit,
        )
        _check_searched_inner(radius, type(self.inner), inner_kwargs or {})
        m = self.n_landmarks
        params = {
            "radius": check_positive_parameter("radius", radius, m),
            "amplitude": check_positive_parameter("amplitude", amplitude, m),
            "shape": check_positive_parameter("shape", shape, m),
        }
        if _is_random(ls) and _is_random(amplitude) and params["amplitude"].ndim == 0:
            warnings.warn(
                "Both `amplitude` and `ls` are random, but with a scalar amplitude the SLE kernel "
                "depends on amplitude / ls only: the data inform their ratio, and their joint "
                "posterior is a ridge closed by the priors alone. Fix amplitude=1.0, or give a "
                "per-landmark amplitude vector.",
                UserWarning,
                stacklevel=2,
            )
        self.radius, self.amplitude, self.shape = (
            pt.as_tensor_variable(params[k]) for k in ("radius", "amplitude", "shape")
        )
        if embedding not in _EMBEDDINGS:
            raise ValueError(f"`embedding` must be one of {_EMBEDDINGS}, but got {embedding!r}")
        self.embedding = embedding
        self.radius_max = self._resolve_radius_max(radius, radius_max, self.distances)
        self._radius_prior = radius if _is_random(radius) else None
        if self.radius_max is not None and _is_random(radius):
            self.radius = pt.minimum(self.radius, self.radius_max)

    @staticmethod
    def _resolve_radius_max(radius, radius_max, distances) -> float | None:
        """The bound on the radius: given, fixed, or the prior's constant upper bound; with
        sparse distances at most their cutoff (nothing beyond it is stored)."""
        if not isinstance(distances, SparseDistanceMatrix):
            return SLE._radius_bound(radius, radius_max)
        cutoff = distances.cutoff
        fixed = constant_value(radius)
        for name, value in (
            ("radius", None if fixed is None else fixed.max()),
            ("radius_max", radius_max),
        ):
            if value is not None and float(value) > cutoff:
                raise ValueError(
                    f"`{name}` must be at most the cutoff {cutoff:.6g} of the sparse distances "
                    f"(larger distances are not stored), but is {float(value):.6g}"
                )
        bound = SLE._radius_bound(radius, radius_max)
        return cutoff if bound is None else min(bound, cutoff)

    @staticmethod
    def _radius_bound(radius, radius_max) -> float | None:
        fixed = constant_value(radius)
        if radius_max is not None:
            radius_max = float(check_positive_parameter("radius_max", radius_max, None))
            if fixed is not None and fixed.max() > radius_max:
                raise ValueError(
                    f"`radius_max` must be >= `radius`, but got radius_max={radius_max:.6g} "
                    f"and a largest radius of {fixed.max():.6g}"
                )
            return radius_max
        if fixed is not None:
            return float(fixed.max())
        if isinstance(radius, Variable):
            return constant_upper_bound(radius)
        return None

    def sparse_to_landmarks(self, X, name: str = "X") -> SparseDistanceMatrix:
        """The distances from the points of a fixed ``X`` to the landmarks, ``(n, m)``, stored
        only below the radius bound ``radius_max`` (the bump is 0 beyond it): what the sparse
        likelihood and prediction read.

        Index mode: the rows of ``distances`` that ``X`` names. Feature mode: the active columns
        of ``X``, a :class:`~pymc_sle.SparseDistanceMatrix` (whose cutoff must be at least
        ``radius_max``) or an array of distances.
        """
        if self.radius_max is None:
            raise ValueError(
                "sparse distances need a bounded radius: pass `radius_max`, a fixed `radius`, or "
                "a radius prior with a constant upper bound (pm.Uniform, pm.Truncated)"
            )
        if not self.feature_mode:
            rows = as_index_array(
                name,
                _fixed_numbers(X, name)[:, int(self.active_dims[0])],
                self.distances.n_points,
                axis_name="rows of `distances`",
            )
            block = self.distances.take(rows=rows, cols=self.landmarks)
            return (
                block.truncate(self.radius_max)
                if isinstance(block, SparseDistanceMatrix)
                else SparseDistanceMatrix.from_dense(block.values, self.radius_max)
            )
        columns = np.asarray(self.active_dims, dtype=np.int64)
        if not isinstance(X, SparseDistanceMatrix):
            values = np.asarray(_fixed_numbers(X, name), dtype=float)
            if values.ndim != 2 or values.shape[1] <= columns.max():
                raise ValueError(
                    f"`{name}` must be 2-D with the columns {columns.tolist()} of distances to the "
                    f"landmarks, but has shape {values.shape}"
                )
            check_finite_nonnegative(name, values[:, columns])
            return SparseDistanceMatrix.from_dense(values[:, columns], self.radius_max)
        if X.n_columns <= columns.max():
            raise ValueError(
                f"`{name}` must have the columns {columns.tolist()} of distances to the landmarks, "
                f"but has shape {X.shape}"
            )
        if self.radius_max > X.cutoff:
            raise ValueError(
                f"the radius bound radius_max={self.radius_max:.6g} must be at most the cutoff "
                f"{X.cutoff:.6g} of the sparse distances `{name}` (larger distances are not "
                "stored): pass a smaller `radius_max`, or build the distances with a larger cutoff"
            )
        every_column = np.array_equal(columns, np.arange(X.n_columns))
        return (X if every_column else X.take(cols=columns)).truncate(self.radius_max)

    def full(self, X, Xs=None) -> pt.TensorVariable:
        """The covariance; the training covariance ``full(X)`` is tagged with this kernel and
        ``X`` (``pymc_sle.kernels._sle.training_covariance_of``), for the likelihood that
        specialises it."""
        K = super().full(X, Xs)
        if Xs is None:
            K.tag.sle_training_covariance_of = (self, X, K)
        return K

    def _embed(self, to_landmarks):
        return bump(to_landmarks, self.radius, self.amplitude, self.shape)

    def _warn_about_radius_prior(self, X) -> None:
        """Once, for a concrete training ``X`` and a radius prior: warn when the prior puts much
        mass where the embedding degenerates (``docs/hyperposterior.md``): below the smallest
        training distance every embedding is one-hot and the likelihood is flat in the radius;
        far above the largest the kernel depends on ``radius**2 * ls`` only (a ridge)."""
        radius, self._radius_prior = self._radius_prior, None
        if radius is None or can_change(X):
            return
        block = self._fixed_to_landmarks(X)
        if block is None:  # sparse distances: those stored below the radius bound
            block = self.sparse_to_landmarks(X).values
        block = block[np.isfinite(block)]
        if not (block > 0).any():
            return
        low, high = float(block[block > 0].min()), float(block.max())
        mass = _prior_mass_outside(radius, low, high)
        if mass is None:
            return
        where = [
            f"{100 * m:.0f} % below the smallest training distance {low:.4g} (every embedding "
            "one-hot, the likelihood flat in the radius)"
            if side == "below"
            else f"{100 * m:.0f} % above the largest training distance {high:.4g} (the kernel "
            "depends on radius**2 * ls only: a ridge)"
            for side, m in zip(("below", "above"), mass, strict=True)
            if m > _DEGENERATE_PRIOR_MASS
        ]
        if where:
            warnings.warn(
                f"The `radius` prior puts {' and '.join(where)}; NUTS chains wander or stick "
                "there. Use pymc_sle.sle_priors, or a prior with most of its mass between "
                "those distances (pymc_sle.lognormal_between).",
                UserWarning,
                stacklevel=4,
            )

    def _training_squared_distances(self, X, to_landmarks):
        self._warn_about_radius_prior(X)
        if self.embedding == "dense":
            return dense_squared_distances(self._embed(to_landmarks))
        fixed = self._fixed_to_landmarks(X)
        block = pt.specify_shape(to_landmarks, (None, self.n_landmarks))
        return bump_squared_distances(
            block if fixed is None else fixed,
            self.radius,
            self.amplitude,
            self.shape,
            SPARSE_FILL_THRESHOLD,
            radius_max=self.radius_max,
        )


def training_covariance_of(variable) -> tuple[SLE, object, pt.TensorVariable] | None:
    """``(kernel, X, K)`` when ``variable`` is the training covariance ``K = kernel.full(X)`` of
    an :class:`SLE` or a clone of it (clones keep the tag: ``K`` is the original), else
    ``None``."""
    return getattr(variable.tag, "sle_training_covariance_of", None)
