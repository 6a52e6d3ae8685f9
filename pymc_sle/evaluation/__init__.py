"""Scores and checks of a fitted GP.

- :mod:`~pymc_sle.evaluation.metrics` -- RMSE, CRPS, PICP, NLPD (also the attribute
  ``pymc_sle.metrics``);
- :mod:`~pymc_sle.evaluation.diagnostics` -- is a Gram matrix PSD, and how well conditioned
  (also the attribute ``pymc_sle.diagnostics``);
- :mod:`~pymc_sle.evaluation.holdout` -- sample a GP with NUTS, predict held-out points, score
  them and report convergence: the routine the demo and the benchmarks share;
- :mod:`~pymc_sle.evaluation.loo` -- exact leave-one-out densities and PIT of a marginal GP at
  every posterior draw: ``arviz.loo`` on a GP, and interval coverage without a test set;
- :mod:`~pymc_sle.evaluation.new_points` -- the predictive of new points with each its own
  landmark, as every training point of an SLE is.
"""

from pymc_sle.evaluation import diagnostics, holdout, loo, metrics, new_points

__all__ = ["diagnostics", "holdout", "loo", "metrics", "new_points"]
