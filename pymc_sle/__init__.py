"""pymc_sle: Gaussian processes in PyMC on inputs that have a distance but no valid kernel."""

from pymc_sle import gp, metrics, priors
from pymc_sle.bump import bump
from pymc_sle.cov import INNER_KERNELS, SLE
from pymc_sle.distance_matrix import DistanceMatrix

__all__ = [
    "INNER_KERNELS",
    "SLE",
    "DistanceMatrix",
    "bump",
    "gp",
    "metrics",
    "priors",
    "__version__",
]

__version__ = "0.1.0"
