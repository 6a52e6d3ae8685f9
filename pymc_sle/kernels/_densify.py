"""Dense distances from a :class:`~pymc_sle.SparseDistanceMatrix`, formed only when a graph runs.

A covariance graph on sparse distances -- ``gp.conditional``, ``pm.gp.Latent``, a covariance the
likelihood's rewrite does not recognise -- reads the dense ``(n_points, n_landmarks)`` block, and
builds ``n x n`` covariances on it. :class:`DenseDistances` is that block as a graph node with
no inputs: nothing is allocated while the graph is built, and a graph that never runs it (the
sparse likelihood, ``sle.gp.Marginal.predict``) never pays for it. When it runs, it warns with a
:class:`DenseFromSparseWarning` naming the bytes it allocates and the path that avoids them, and
it refuses a block larger than ``dense_limit`` bytes (an argument of :class:`~pymc_sle.SLE`).
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify

from pymc_sle._backends import register_jax
from pymc_sle._validation import check_positive_parameter
from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix

__all__ = ["DEFAULT_DENSE_LIMIT", "DenseDistances", "DenseFromSparseWarning", "dense_limit"]

#: The largest dense block formed from sparse distances by default, in bytes (200 million
#: float64 entries).
DEFAULT_DENSE_LIMIT = 1.6e9

#: What avoids the dense block, named by the warning and the error.
_SPARSE_PATH = (
    "The sparse path forms none of it: the marginal likelihood of pm.gp.Marginal (or "
    "sle.gp.Marginal) with cov_func = a scalar times the SLE and a scalar noise sigma, and "
    "sle.gp.Marginal.predict(Xnew, point, diag=True) for predictions (docs/how-to/large-data.md)."
)


class DenseFromSparseWarning(UserWarning):
    """A graph forms the dense distances of a :class:`~pymc_sle.SparseDistanceMatrix`, and the
    ``n x n`` covariances built on them."""


def dense_limit(value) -> float:
    """``dense_limit`` of :class:`~pymc_sle.SLE` validated: ``None`` for the default, or a
    positive number of bytes."""
    if value is None:
        return DEFAULT_DENSE_LIMIT
    return float(check_positive_parameter("dense_limit", value, None))


class DenseDistances(Op):
    """``() -> (n_points, n_columns)``: the dense distances of ``matrix``, ``inf`` where nothing
    is stored (the bump of ``inf`` is 0), formed the first time the node runs (module notes).

    Raises
    ------
    ValueError
        When it runs, if the block takes more than ``limit`` bytes.
    """

    __props__ = ()

    def __init__(self, matrix: SparseDistanceMatrix, limit: float = DEFAULT_DENSE_LIMIT):
        self.matrix, self.limit = matrix, float(limit)
        self._dense = None

    def __eq__(self, other):
        return (
            type(self) is type(other)
            and self.matrix is other.matrix
            and (self.limit == other.limit)
        )

    def __hash__(self):
        return hash((type(self), id(self.matrix), self.limit))

    def make_node(self):
        shape = self.matrix.shape
        return Apply(self, [], [pt.tensor(dtype="float64", shape=shape)])

    def do_constant_folding(self, fgraph, node):
        return False  # formed when the graph runs, where its warning and error belong

    def dense(self) -> np.ndarray:
        """The block, formed (with the warning) or refused the first time it is asked for."""
        if self._dense is None:
            n, m = self.matrix.shape
            size = 8.0 * n * m
            if size > self.limit:
                raise ValueError(
                    f"this covariance graph needs the dense (n_points, n_landmarks) = ({n}, {m}) "
                    f"block of the sparse distances ({size / 2**30:.2f} GiB) and the n x n "
                    f"covariances built on it, more than dense_limit = {self.limit:.3g} bytes. "
                    f"{_SPARSE_PATH} Or pass a larger dense_limit to SLE."
                )
            warnings.warn(
                f"A covariance graph forms the dense (n_points, n_landmarks) = ({n}, {m}) block "
                f"of a SparseDistanceMatrix ({size / 2**20:.1f} MiB) and the n x n covariances "
                f"built on it. {_SPARSE_PATH}",
                DenseFromSparseWarning,
                stacklevel=2,
            )
            self._dense = self.matrix.to_dense()
        return self._dense

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = self.dense()


@numba_funcify.register(DenseDistances)
def _numba_dense_distances(op, node=None, **kwargs):
    """Formed in Python (object mode) the first time the compiled graph runs, as on the C
    backend: a numba global array would be copied into the machine code."""

    def python_dense():
        return op.dense()

    @numba.njit
    def dense_distances():
        with numba.objmode(values="float64[:, :]"):
            values = python_dense()
        return values

    return dense_distances


@register_jax(DenseDistances)
def _jax_dense_distances(op, node=None, **kwargs):
    import jax.numpy as jnp

    values = jnp.asarray(op.dense())

    def dense_distances():
        return values

    return dense_distances
