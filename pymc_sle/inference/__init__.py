"""Inference for SLE GPs: data-adaptive priors, the grid posterior, basins, MAP, the samplers.

The names a modeller types are at the top level: :func:`pymc_sle.sle_priors` and what it
builds on (:func:`pymc_sle.suggest_bounds`, :func:`pymc_sle.lognormal_between`, ...),
:func:`pymc_sle.sample_basins` and :func:`pymc_sle.find_map`. Here are the reference and the
knobs behind them: the exact grid posterior of the ``sle_priors`` model
(:func:`grid_posterior`), its radius basins (:class:`Basin`), the constants of the search
(:class:`SearchPolicy`) and the samplers' target acceptances.
"""

from pymc_sle.inference._basins import Basin
from pymc_sle.inference._grid import GridPosterior, grid_posterior
from pymc_sle.inference._sampler import BASINS_TARGET_ACCEPT, ONE_BASIN_TARGET_ACCEPT
from pymc_sle.inference._search import DEFAULT_POLICY, SearchPolicy

__all__ = [
    "BASINS_TARGET_ACCEPT",
    "DEFAULT_POLICY",
    "ONE_BASIN_TARGET_ACCEPT",
    "Basin",
    "GridPosterior",
    "SearchPolicy",
    "grid_posterior",
]
