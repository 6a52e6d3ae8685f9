"""Distance builders: only the rows x columns a model needs, in parallel, resumable.

Every builder returns a :class:`~pymc_sle.DistanceMatrix`.
"""

from pymc_sle.distances._geodesic import GEODESIC_METHODS, Mesh, geodesic, load_mesh
from pymc_sle.distances._pairwise import MetricError, pairwise
from pymc_sle.distances._sliced import SLICED_METHODS, random_projections, sliced_wasserstein
from pymc_sle.distances._store import StoreWarning
from pymc_sle.distances._strings import edit_distance
from pymc_sle.distances._transport import wasserstein

__all__ = [
    "GEODESIC_METHODS",
    "Mesh",
    "MetricError",
    "SLICED_METHODS",
    "StoreWarning",
    "edit_distance",
    "geodesic",
    "load_mesh",
    "pairwise",
    "random_projections",
    "sliced_wasserstein",
    "wasserstein",
]
