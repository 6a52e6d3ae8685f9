"""Distance builders: only the rows x columns a model needs, in parallel, resumable.

Every builder returns a :class:`~pymc_sle.DistanceMatrix`.
"""

from pymc_sle.distances.pairwise import MetricError, pairwise
from pymc_sle.distances.strings import edit_distance

__all__ = ["MetricError", "edit_distance", "pairwise"]
