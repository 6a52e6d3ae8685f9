"""The ``method`` names of the builders, apart from their heavy imports (the CLI lists them)."""

__all__ = ["GEODESIC_METHODS", "SLICED_METHODS"]

#: ``method`` names accepted by :func:`pymc_sle.distances.geodesic`.
GEODESIC_METHODS = ("graph", "heat", "exact")

#: ``method`` names accepted by :func:`pymc_sle.distances.sliced_wasserstein`.
SLICED_METHODS = ("auto", "exact", "quantiles", "pairwise")
