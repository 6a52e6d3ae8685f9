"""The Sparse Landmark Embedding (SLE) covariance for ``pm.gp``."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import Interval
from pymc.gp.cov import Covariance, ExpQuad, Matern12, Matern32, Matern52, Stationary
from pytensor.graph.basic import Constant, Variable

from pymc_sle._validation import as_index_array, check_positive_parameter, constant_value
from pymc_sle.bump import bump
from pymc_sle.distance_matrix import DistanceMatrix, as_distance_matrix
from pymc_sle.embedding import SparsePattern, dense_squared_distances, sparse_squared_distances

__all__ = ["SLE", "INNER_KERNELS", "LandmarkCovariance", "SPARSE_FILL_THRESHOLD"]

#: ``embedding="auto"`` takes the sparse path when at most this fraction of the training
#: embedding can be non-zero (``benchmarks/results/performance.md`` measures the crossover).
SPARSE_FILL_THRESHOLD = 0.1

_EMBEDDINGS = ("auto", "dense", "sparse")

#: Names accepted by ``SLE(inner=...)`` and the PyMC stationary kernel each stands for.
INNER_KERNELS: dict[str, type[Stationary]] = {
    "rbf": ExpQuad,
    "expquad": ExpQuad,
    "matern12": Matern12,
    "matern32": Matern32,
    "matern52": Matern52,
}


def _resolve_inner(inner, inner_kwargs) -> Stationary:
    if isinstance(inner, str):
        key = inner.lower()
        if key not in INNER_KERNELS:
            raise ValueError(f"`inner` must be one of {sorted(INNER_KERNELS)}, but got {inner!r}")
        cls = INNER_KERNELS[key]
    elif isinstance(inner, type) and issubclass(inner, Stationary):
        if inner.full_from_distance is Stationary.full_from_distance:
            raise TypeError(
                f"`inner` must implement `full_from_distance`, but {inner.__name__} does not"
            )
        cls = inner
    else:
        raise TypeError(
            "`inner` must be a kernel name or a pm.gp.cov.Stationary subclass (the class, not an "
            f"instance), but got {inner!r}"
        )
    # The inner kernel sees distances already divided by `ls`, so it is built with unit length.
    return cls(1, ls=1.0, **(inner_kwargs or {}))


def _safe_sqrt(x):
    """``sqrt(x)`` for ``x >= 0`` whose gradient is 0, not inf, where ``x == 0``."""
    positive = pt.gt(x, 0.0)
    return pt.switch(positive, pt.sqrt(pt.switch(positive, x, 1.0)), 0.0)


def _is_random(value) -> bool:
    return isinstance(value, Variable) and constant_value(value) is None


def _prior_upper_bound(variable) -> float | None:
    """The constant upper bound of a model variable's support (e.g. ``pm.Uniform``), if any."""
    try:
        model = pm.modelcontext(None)
    except TypeError:  # no model on the context stack
        return None
    transform = model.rvs_to_transforms.get(variable)
    if not isinstance(transform, Interval):
        return None
    _, upper, _, upper_bounded = transform.get_a_and_b(variable.owner.inputs)
    upper = constant_value(upper) if upper_bounded else None
    return None if upper is None or upper.ndim > 0 else float(upper)


class LandmarkCovariance(Covariance):
    r"""Base of the landmark-embedding kernels: :math:`k(x, x') = h(\lVert \phi(x) - \phi(x')
    \rVert / \ell)` with :math:`\phi(x) \in \mathbb{R}^m` a function of the distances from
    :math:`x` to the landmarks.

    Subclasses define the embedding (``_embed_rows``); this class owns the distance block, index
    validation, the embedding distance (exactly 0 for equal rows, with a gradient-safe square
    root) and the inner kernel. See :class:`SLE` for the parameters they share.
    """

    def __init__(
        self,
        distances: DistanceMatrix | np.ndarray,
        landmarks=None,
        *,
        ls,
        inner: str | type[Stationary] = "matern32",
        inner_kwargs: dict | None = None,
        input_dim: int = 1,
        active_dims=None,
    ):
        super().__init__(input_dim, active_dims)
        if len(self.active_dims) != 1:
            raise ValueError(
                "`active_dims` must name exactly one column of X (the row index), but got "
                f"{list(self.active_dims)}"
            )
        self.distances = as_distance_matrix(distances)
        if landmarks is None:
            landmarks = np.arange(self.distances.n_columns)
        landmarks = as_index_array(
            "landmarks", landmarks, self.distances.n_columns, axis_name="columns of `distances`"
        )
        if landmarks.ndim != 1 or landmarks.size == 0:
            raise ValueError(
                f"`landmarks` must be a non-empty 1-D array of column indices, but has shape "
                f"{landmarks.shape}"
            )
        unique, counts = np.unique(landmarks, return_counts=True)
        if (counts > 1).any():
            raise ValueError(
                f"`landmarks` must be unique, but {unique[counts > 1][:5].tolist()} "
                "appear more than once"
            )
        self.landmarks = landmarks
        self.ls = pt.as_tensor_variable(check_positive_parameter("ls", ls, None))
        self.inner = _resolve_inner(inner, inner_kwargs)
        values = self.distances.values
        every_column = np.array_equal(landmarks, np.arange(self.distances.n_columns))
        # (n_points, m) is all the kernel reads; with every column a landmark, no copy is made.
        self._landmark_values = (
            values if every_column else np.ascontiguousarray(values[:, landmarks])
        )
        self._landmark_block = pt.constant(self._landmark_values, name="landmark_distances")

    @property
    def n_landmarks(self) -> int:
        """Embedding dimension ``m``."""
        return int(self.landmarks.size)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_points={self.distances.n_points}, "
            f"n_landmarks={self.n_landmarks}, inner={type(self.inner).__name__})"
        )

    def _rows(self, X, name: str):
        """Integer row indices from the active column of ``X``, validated when ``X`` is known."""
        column = int(self.active_dims[0])
        concrete = constant_value(X)
        if concrete is not None:
            if concrete.ndim != 2 or concrete.shape[1] <= column:
                raise ValueError(
                    f"`{name}` must be a 2-D array whose column {column} holds row indices into "
                    f"`distances`, but has shape {concrete.shape}"
                )
            as_index_array(
                name, concrete[:, column], self.distances.n_points, axis_name="rows of `distances`"
            )
        return pt.cast(pt.as_tensor_variable(X)[:, column], "int64")

    def _embed_rows(self, rows):
        raise NotImplementedError

    def _training_squared_distances(self, X, rows):
        return dense_squared_distances(self._embed_rows(rows))

    def _kernel_of_squared_distance(self, squared):
        return self.inner.full_from_distance(_safe_sqrt(squared) / self.ls, squared=False)

    def embed(self, X) -> pt.TensorVariable:
        r"""The landmark embedding :math:`\phi(X)` as a tensor of shape ``(n, m)``."""
        return self._embed_rows(self._rows(X, "X"))

    def square_embedding_distance(self, X, Xs=None) -> pt.TensorVariable:
        r""":math:`\lVert \phi(x_i) - \phi(x'_j) \rVert^2` as a tensor of shape ``(n, n')``.

        Entries for equal row indices are exactly 0, so duplicates and the diagonal are exact.
        """
        rows = self._rows(X, "X")
        if Xs is None:
            cols = rows
            squared = self._training_squared_distances(X, rows)
        else:
            cols = self._rows(Xs, "Xs")
            phi, phi_s = self._embed_rows(rows), self._embed_rows(cols)
            norms = pt.sum(pt.square(phi), axis=1)
            norms_s = pt.sum(pt.square(phi_s), axis=1)
            squared = norms[:, None] + norms_s[None, :] - 2.0 * pt.dot(phi, phi_s.T)
        same_point = pt.eq(rows[:, None], cols[None, :])
        return pt.switch(same_point, 0.0, pt.maximum(squared, 0.0))

    def full(self, X, Xs=None) -> pt.TensorVariable:
        return self._kernel_of_squared_distance(self.square_embedding_distance(X, Xs))

    def diag(self, X) -> pt.TensorVariable:
        rows = self._rows(X, "X")
        return self._kernel_of_squared_distance(pt.zeros(rows.shape, dtype=self.ls.dtype))


class SLE(LandmarkCovariance):
    r"""Sparse Landmark Embedding covariance: a PSD kernel from any distance.

    Every input :math:`x` is embedded by bumps of its distances to the landmarks
    :math:`z_1, \dots, z_m` (normally the training points),

    .. math::

        \phi(x)_j = b\bigl(d(x, z_j);\, a_j, r_j, \beta_j\bigr), \qquad
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

    Inputs are indices: ``X[:, 0]`` holds integer row numbers into ``distances``.

    Parameters
    ----------
    distances : DistanceMatrix or array_like of shape (n_points, n_columns)
        Distances from every point the model evaluates (rows) to landmark candidates (columns).
    landmarks : array_like of int of shape (m,), optional
        Column indices of the landmarks, unique. ``None`` uses every column.
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
        Number of columns of ``X``, as in PyMC's covariances.
    active_dims : sequence of one int, optional
        Which column of ``X`` holds the row index (default: column 0).
    radius_max : float, optional
        An upper bound on ``radius``. It makes the embedding's support known in advance: only
        distances below ``radius_max`` can give non-zeros. A random ``radius`` is then used as
        ``min(radius, radius_max)``, so give it a prior bounded by ``radius_max``. Inferred when
        ``radius`` is fixed (its largest value) or is a model variable with a constant upper
        bound (``pm.Uniform``, ``pm.Truncated``).
    embedding : {"auto", "dense", "sparse"}, default "auto"
        How the training covariance is computed. ``"dense"`` evaluates the full ``(n, m)``
        embedding; ``"sparse"`` only its possible non-zeros (needs a known ``radius_max`` and an
        ``X`` of numbers, not ``pm.Data``); ``"auto"`` is sparse when at most
        `SPARSE_FILL_THRESHOLD` of the embedding can be non-zero. Both give the same values and
        gradients.

    Raises
    ------
    ValueError, TypeError
        On invalid distances, landmarks, parameters or inner kernels; when ``full``/``diag`` get
        a concrete ``X`` that is not a column of integral, in-range row indices.

    See Also
    --------
    pymc_sle.bump : the bump function.
    pymc_sle.priors.radius_bounds : data-adaptive bounds for ``radius``.

    References
    ----------
    Noack, Alghalayini and Risser, "A General Kernel Framework for Non-CND Distance Measures
    Using |D|-Dimensional Sparse Landmark Embeddings", Section 4 and Appendix B.

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
    """

    def __init__(
        self,
        distances: DistanceMatrix | np.ndarray,
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
    ):
        super().__init__(
            distances,
            landmarks,
            ls=ls,
            inner=inner,
            inner_kwargs=inner_kwargs,
            input_dim=input_dim,
            active_dims=active_dims,
        )
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
        self.radius_max = self._resolve_radius_max(radius, radius_max)
        if embedding == "sparse" and self.radius_max is None:
            raise ValueError(
                "embedding='sparse' needs a bounded radius: pass `radius_max`, a fixed `radius`, "
                "or a radius prior with a constant upper bound (pm.Uniform, pm.Truncated)"
            )
        if self.radius_max is not None and _is_random(radius):
            self.radius = pt.minimum(self.radius, self.radius_max)

    @staticmethod
    def _resolve_radius_max(radius, radius_max) -> float | None:
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
            return _prior_upper_bound(radius)
        return None

    def _embed_rows(self, rows):
        return bump(self._landmark_block[rows], self.radius, self.amplitude, self.shape)

    def _landmark_distances(self, X) -> np.ndarray | None:
        """Distances from the rows of a fixed ``X`` to the landmarks; ``None`` unless ``X`` is
        numbers or a constant. ``pm.Data`` does not count: ``pm.set_data`` could change it after
        the pattern was built."""
        if isinstance(X, Variable) and not isinstance(X, Constant):
            return None
        concrete = constant_value(X)
        rows = concrete[:, int(self.active_dims[0])].astype(np.int64)
        return self._landmark_values[rows]

    def sparse_pattern(self, X) -> SparsePattern | None:
        """Where the embedding of concrete ``X`` can be non-zero; ``None`` if unknown."""
        block = self._landmark_distances(X)
        if block is None or self.radius_max is None:
            return None
        return SparsePattern(block < self.radius_max)

    def _training_squared_distances(self, X, rows):
        pattern = None if self.embedding == "dense" else self.sparse_pattern(X)
        if self.embedding == "sparse" and pattern is None:
            raise ValueError(
                "embedding='sparse' needs a fixed `X` (numbers, not pm.Data or another symbolic "
                f"expression), but got {type(X).__name__}"
            )
        if pattern is None or (self.embedding == "auto" and pattern.fill > SPARSE_FILL_THRESHOLD):
            return dense_squared_distances(self._embed_rows(rows))
        cols = pattern.col_index

        def per_entry(param):
            return param[cols] if param.ndim == 1 else param

        values = bump(
            pattern.gather(self._landmark_distances(X)),
            per_entry(self.radius),
            per_entry(self.amplitude),
            per_entry(self.shape),
        )
        return sparse_squared_distances(values, pattern)
