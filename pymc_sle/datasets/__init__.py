"""Built-in data sets: synthetic benchmarks that need no download."""

from pymc_sle.datasets._meshes import (
    MeshField,
    geodesic_sine_field,
    geodesic_sines_field,
    matern_field,
)
from pymc_sle.datasets._saxs import SAXSData, coarsen, saxs_images
from pymc_sle.datasets._sequences import SequenceData, evolving_sequences
from pymc_sle.datasets._synthetic import (
    IndexedRegressionData,
    one_dimensional,
    one_dimensional_truth,
)

__all__ = [
    "IndexedRegressionData",
    "MeshField",
    "SAXSData",
    "SequenceData",
    "coarsen",
    "evolving_sequences",
    "geodesic_sine_field",
    "geodesic_sines_field",
    "matern_field",
    "one_dimensional",
    "one_dimensional_truth",
    "saxs_images",
]
