"""Distance builders: only the rows x columns a model needs, in parallel, resumable.

Every builder returns a :class:`~pymc_sle.DistanceMatrix`.
"""

from pymc_sle.distances.geodesic import GEODESIC_METHODS, Mesh, geodesic, load_mesh
from pymc_sle.distances.pairwise import MetricError, pairwise
from pymc_sle.distances.sliced import random_projections, sliced_wasserstein
from pymc_sle.distances.strings import edit_distance
from pymc_sle.distances.transport import wasserstein

__all__ = [
    "GEODESIC_METHODS",
    "Mesh",
    "MetricError",
    "edit_distance",
    "geodesic",
    "load_mesh",
    "pairwise",
    "random_projections",
    "sliced_wasserstein",
    "wasserstein",
]
