"""Inference helpers: data-adaptive priors and multi-start MAP.

- :mod:`~pymc_sle.inference.priors` -- bounds and priors for the SLE hyperparameters (also the
  attribute ``pymc_sle.priors``);
- :func:`~pymc_sle.find_map` / :class:`MAPResult` -- multi-start MAP, the paper's bounded maximum
  likelihood;
- :func:`sample_basins` -- NUTS on every basin of a multi-basin radius posterior, pooled by
  the basins' mass (``pm.sample`` when there is one basin); :func:`basin_models` -- the model
  it samples for each basin;
- :func:`grid_posterior` -- the posterior of the ``sle_priors`` model's four hyperparameters on
  a grid: the exact reference for a sampler, radius basins and their mass.
"""

from pymc_sle.inference import basins, grid, priors
from pymc_sle.inference._map import MAPResult, find_map
from pymc_sle.inference.basins import basin_diagnostics, basin_models, sample_basins
from pymc_sle.inference.grid import GridPosterior, grid_posterior

__all__ = [
    "GridPosterior",
    "MAPResult",
    "basin_diagnostics",
    "basin_models",
    "basins",
    "find_map",
    "grid",
    "grid_posterior",
    "priors",
    "sample_basins",
]
