"""pymc_sle: Gaussian processes in PyMC on inputs that have a distance but no valid kernel.

``import pymc_sle as sle``: the names a modeller types are here, in PyMC's flat style --
:class:`SLE` (the covariance), :class:`DistanceMatrix` and :class:`SparseDistanceMatrix`,
:func:`sle_priors` and the bounds it builds on, :func:`sample_basins` and :func:`find_map`,
:func:`exact_loo`, :func:`own_landmark_predictive` and the metrics. The subpackages hold the
rest, one per stage of the data flow, each importing from the stages below it only::

    distances/    raw inputs (meshes, images, strings) -> DistanceMatrix / SparseDistanceMatrix:
                  the builders, parallel and resumable, and the two validated distance types
    kernels/      bump -> landmark embedding -> the SLE covariance; the baselines it is
                  measured against; each Op with its C, NUMBA and JAX implementations
    gp/           the marginal likelihood with an analytic gradient, dense and, in gp/_sparse/,
                  through a sparse factorisation; the logprob rewrite that gives it to
                  pm.gp.Marginal(cov_func=SLE(...)); gp.Marginal (sparse predictions);
                  gp.Laplace (gp/_laplace/): non-Gaussian likelihoods, dense or sparse
    inference/    bounds -> grid posterior -> search -> basins -> sampled scales -> the model
                  step (sle_priors); MAP; the basin sampler
    evaluation/   metrics, PSD diagnostics, exact LOO, the own-landmark predictive, and the
                  fit-predict-score routine the demo and the benchmarks share
    datasets/     built-in data: the 1-D benchmark, SAXS images, mesh fields, sequences

below them the shared internals (``_linalg/``: the linear algebra with no GP in it; ``_backends``,
``_validation``, ``_pymc_compat``: every use of PyMC's internals; ``_lazy``), and above them the
applications: ``plotting``, ``demo`` and the ``pymc-sle`` command (``cli``). Modules whose name
starts with ``_`` are private; a subpackage's ``__init__`` lists its public names.

Everything is imported on first use (PEP 562): ``import pymc_sle as sle`` is cheap, and
``sle.distances``, ``sle.SLE``, ... load their modules when first touched, so the command line
and the distance workers do not pay for importing PyMC.
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
#:   likelihood calls LAPACK itself, so a linked BLAS does not change its speed
#:   (:doc:`/performance`).
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
    **{name: ("pymc_sle.distances._matrix", name) for name in ("DistanceMatrix",)},
    **{name: ("pymc_sle.distances._sparse_matrix", name) for name in ("SparseDistanceMatrix",)},
    **{name: ("pymc_sle.kernels._sle", name) for name in ("SLE",)},
    **{name: ("pymc_sle.kernels._bump", name) for name in ("bump",)},
    **{name: ("pymc_sle.kernels._inner", name) for name in ("INNER_KERNELS",)},
    **{name: ("pymc_sle.kernels._embedding", name) for name in (
        "embedding_distances", "raw_embedding_distances")},
    **{name: ("pymc_sle.inference._bounds", name) for name in (
        "SLEBounds", "lognormal_between", "radius_bounds", "suggest_bounds")},
    **{name: ("pymc_sle.inference._priors", name) for name in (
        "SLEPriors", "scale_priors", "sle_priors")},
    **{name: ("pymc_sle.inference._sampler", name) for name in (
        "basin_diagnostics", "basin_models", "sample_basins")},
    **{name: ("pymc_sle.inference._map", name) for name in ("MAPResult", "find_map")},
    **{name: ("pymc_sle.evaluation._loo", name) for name in ("ExactLOO", "exact_loo")},
    **{name: ("pymc_sle.evaluation._new_points", name) for name in (
        "OwnLandmarkPredictive", "own_landmark_predictive")},
    **{name: ("pymc_sle.evaluation._metrics", name) for name in (
        "crps_gaussian", "crps_samples", "evaluate", "nlpd_gaussian", "picp", "picp_samples",
        "rmse", "score_gaussian")},
    **{name: ("pymc_sle.evaluation._diagnostics", name) for name in ("PSDReport", "psd_report")},
}  # fmt: skip

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pymc_sle import datasets, demo, distances, evaluation, gp, inference, kernels, plotting
    from pymc_sle.distances._matrix import DistanceMatrix
    from pymc_sle.distances._sparse_matrix import SparseDistanceMatrix
    from pymc_sle.evaluation._diagnostics import PSDReport, psd_report
    from pymc_sle.evaluation._loo import ExactLOO, exact_loo
    from pymc_sle.evaluation._metrics import (
        crps_gaussian,
        crps_samples,
        evaluate,
        nlpd_gaussian,
        picp,
        picp_samples,
        rmse,
        score_gaussian,
    )
    from pymc_sle.evaluation._new_points import OwnLandmarkPredictive, own_landmark_predictive
    from pymc_sle.inference._bounds import (
        SLEBounds,
        lognormal_between,
        radius_bounds,
        suggest_bounds,
    )
    from pymc_sle.inference._map import MAPResult, find_map
    from pymc_sle.inference._priors import SLEPriors, scale_priors, sle_priors
    from pymc_sle.inference._sampler import basin_diagnostics, basin_models, sample_basins
    from pymc_sle.kernels._bump import bump
    from pymc_sle.kernels._embedding import embedding_distances, raw_embedding_distances
    from pymc_sle.kernels._inner import INNER_KERNELS
    from pymc_sle.kernels._sle import SLE

_getattr, _, _public = lazy_attributes(__name__, _PUBLIC)

#: The stages whose names build models: loading one imports ``pymc_sle.gp`` too, which registers
#: the logprob rewrite that gives ``pm.gp.Marginal(cov_func=SLE(...))`` the library's likelihood.
_BUILDS_MODELS = ("pymc_sle.kernels", "pymc_sle.gp", "pymc_sle.inference", "pymc_sle.evaluation")


def __getattr__(name: str):
    value = _getattr(name)
    if _PUBLIC[name][0].startswith(_BUILDS_MODELS):
        import pymc_sle.gp
    return value


__all__ = sorted([*_public, "__version__"])


def __dir__() -> list[str]:
    """The public API only (``dir(pymc_sle)``), not this module's own imports and helpers."""
    return list(__all__)
