"""Built-in data sets: synthetic benchmarks that need no download."""

from pymc_sle.datasets.synthetic import (
    IndexedRegressionData,
    one_dimensional,
    one_dimensional_truth,
)

__all__ = ["IndexedRegressionData", "one_dimensional", "one_dimensional_truth"]
