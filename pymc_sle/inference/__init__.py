"""Inference helpers: data-adaptive priors and multi-start MAP.

- :mod:`~pymc_sle.inference.priors` -- bounds and priors for the SLE hyperparameters (also
  reachable as ``pymc_sle.priors``);
- :func:`find_map` / :class:`MAPResult` -- multi-start MAP, the paper's bounded maximum
  likelihood.
"""

from pymc_sle.inference import priors
from pymc_sle.inference._map import MAPResult, find_map

__all__ = ["MAPResult", "find_map", "priors"]
