"""pymc_sle: Gaussian processes in PyMC on inputs that have a distance but no valid kernel.

The package follows the pipeline, one subpackage a stage::

    distances/          raw inputs (meshes, images, strings) -> distances, parallel, resumable
    distance_matrix.py  DistanceMatrix: validated distances, slicing, save / load
    sparse_distance_matrix.py  SparseDistanceMatrix: only the distances below a cutoff
    kernels/            bump -> landmark embedding -> SLE covariance (and the baselines)
    gp/                 the marginal likelihood with an analytic gradient (gp.Marginal)
    inference/          data-adaptive priors, multi-start MAP
    evaluation/         metrics, PSD diagnostics, the fit-predict-score routine
    datasets/           built-in data: 1-D benchmark, SAXS images, mesh targets

and the applications built on it: ``plotting``, ``demo`` and the ``pymc-sle`` command (``cli``).

Everything is imported on first use (PEP 562): ``import pymc_sle as sle`` is cheap, and
``sle.distances``, ``sle.SLE``, ``sle.priors``, ... load their modules when first touched, so the
command line and the distance workers do not pay for importing PyMC.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING

from pymc_sle._lazy import lazy_attributes

__version__ = "0.1.0"

#: Two warnings every pip user would see on a first run, hidden when ``pymc_sle`` is imported
#: first (every other warning stays as it was):
#:
#: - ArviZ announces its coming 1.0 refactor on import, once a day (a FutureWarning whose text
#:   starts with a newline, hence ``(?s)``): news, not a warning about anything called here.
#: - PyTensor installed by pip finds no BLAS to link its C code to and says that operations
#:   "will be severely degraded" (a warning), then, compiling its first matrix product, that it
#:   uses "NumPy C-API based implementation for BLAS functions" (a log record). The SLE
#:   likelihood calls LAPACK itself; a linked OpenBLAS made no difference to it
#:   (``benchmarks/results/size_limits.md``; README, "How large?").
_QUIET = (
    (r"(?s)\s*ArviZ is undergoing a major refactor", FutureWarning),
    (r"PyTensor could not link to a BLAS installation", UserWarning),
)
for _message, _category in _QUIET:
    warnings.filterwarnings("ignore", _message, _category)


class _NoBlasNotice(logging.Filter):
    """Drops PyTensor's log record that it compiles matrix products without a BLAS."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "NumPy C-API based implementation for BLAS" not in record.getMessage()


# By name: the logger exists before PyTensor is imported, and PyTensor's import keeps it.
logging.getLogger("pytensor.tensor.blas").addFilter(_NoBlasNotice())

#: ``sle.<name>``: the module and attribute (``None``: the module itself), imported on first use.
_PUBLIC = {
    **{name: (f"pymc_sle.{name}", None) for name in (
        "datasets", "demo", "distances", "evaluation", "gp", "inference", "kernels", "plotting")},
    "DistanceMatrix": ("pymc_sle.distance_matrix", "DistanceMatrix"),
    "SparseDistanceMatrix": ("pymc_sle.sparse_distance_matrix", "SparseDistanceMatrix"),
    "diagnostics": ("pymc_sle.evaluation.diagnostics", None),
    "metrics": ("pymc_sle.evaluation.metrics", None),
    "find_map": ("pymc_sle.inference", "find_map"),
    "priors": ("pymc_sle.inference.priors", None),
    "INNER_KERNELS": ("pymc_sle.kernels", "INNER_KERNELS"),
    "SLE": ("pymc_sle.kernels", "SLE"),
    "baselines": ("pymc_sle.kernels.baselines", None),
    "bump": ("pymc_sle.kernels", "bump"),
    "embedding_distances": ("pymc_sle.kernels", "embedding_distances"),
    "raw_embedding_distances": ("pymc_sle.kernels", "raw_embedding_distances"),
    "spectral": ("pymc_sle.kernels.spectral", None),
}  # fmt: skip

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pymc_sle import datasets, demo, distances, evaluation, gp, inference, kernels, plotting
    from pymc_sle.distance_matrix import DistanceMatrix
    from pymc_sle.evaluation import diagnostics, metrics
    from pymc_sle.inference import find_map, priors
    from pymc_sle.kernels import (
        INNER_KERNELS,
        SLE,
        baselines,
        bump,
        embedding_distances,
        raw_embedding_distances,
        spectral,
    )
    from pymc_sle.sparse_distance_matrix import SparseDistanceMatrix

__getattr__, _, _public = lazy_attributes(__name__, _PUBLIC)
__all__ = sorted([*_public, "__version__"])


def __dir__() -> list[str]:
    """The public API only (``dir(pymc_sle)``), not this module's own imports and helpers."""
    return list(__all__)
