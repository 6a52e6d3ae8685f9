"""pymc_sle: Gaussian processes in PyMC on inputs that have a distance but no valid kernel."""

from pymc_sle import baselines, diagnostics, gp, metrics, priors, spectral
from pymc_sle.bump import bump
from pymc_sle.cov import INNER_KERNELS, SLE
from pymc_sle.distance_matrix import DistanceMatrix
from pymc_sle.inference import find_map

__all__ = [
    "INNER_KERNELS",
    "SLE",
    "DistanceMatrix",
    "baselines",
    "bump",
    "diagnostics",
    "find_map",
    "gp",
    "metrics",
    "priors",
    "spectral",
    "__version__",
]

__version__ = "0.1.0"
