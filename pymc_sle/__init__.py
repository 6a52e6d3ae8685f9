"""pymc_sle: Gaussian processes in PyMC on inputs that have a distance but no valid kernel.

The package follows the pipeline, one subpackage a stage::

    distances/          raw inputs (meshes, images, strings) -> distances, parallel, resumable
    distance_matrix.py  DistanceMatrix: validated distances, slicing, save / load
    kernels/            bump -> landmark embedding -> SLE covariance (and the baselines)
    gp/                 the marginal likelihood with an analytic gradient (gp.Marginal)
    inference/          data-adaptive priors, multi-start MAP
    evaluation/         metrics, PSD diagnostics, the fit-predict-score routine
    datasets/           built-in data: 1-D benchmark, SAXS images, mesh targets

and the applications built on it: ``plotting``, ``demo`` and the ``pymc-sle`` command (``cli``).
"""

import sys

from pymc_sle import datasets, distances, evaluation, gp, inference, kernels
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

# The public namespaces of the first release (`pymc_sle.priors`, `pymc_sle.metrics`, ...) keep
# working, as attributes and as import paths (`from pymc_sle.priors import sle_priors`).
for _name, _module in {
    "priors": priors,
    "metrics": metrics,
    "diagnostics": diagnostics,
    "baselines": baselines,
    "spectral": spectral,
}.items():
    sys.modules[f"{__name__}.{_name}"] = _module
del _name, _module

__all__ = [
    "INNER_KERNELS",
    "SLE",
    "DistanceMatrix",
    "__version__",
    "baselines",
    "bump",
    "datasets",
    "diagnostics",
    "distances",
    "embedding_distances",
    "evaluation",
    "find_map",
    "gp",
    "inference",
    "kernels",
    "metrics",
    "priors",
    "raw_embedding_distances",
    "spectral",
]

__version__ = "0.1.0"
