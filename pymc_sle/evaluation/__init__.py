"""Scores and checks of a fitted GP.

The names a modeller types are at the top level: the metrics (:func:`pymc_sle.evaluate`,
:func:`pymc_sle.rmse`, ...), :func:`pymc_sle.psd_report`, exact leave-one-out
(:func:`pymc_sle.exact_loo`) and the own-landmark predictive of new points
(:func:`pymc_sle.own_landmark_predictive`). Here is the routine the demo and the benchmarks
share: sample a GP with NUTS, predict held-out points, score them and report convergence
(:func:`fit_and_score`, :func:`holdout_predictive`, :func:`convergence`).
"""

from pymc_sle.evaluation._holdout import (
    HoldoutFit,
    NutsSettings,
    convergence,
    fit_and_score,
    holdout_predictive,
)

__all__ = ["HoldoutFit", "NutsSettings", "convergence", "fit_and_score", "holdout_predictive"]
