r"""Inner kernels as positive mixtures of Gaussians, for the sparse likelihood.

The sparse factorisation (``pymc_sle.gp._sparse._likelihood``) needs the inner kernel as a
function of the squared embedding distance :math:`x = E/\ell^2` of the form

.. math::

    h(\sqrt x) \approx \sum_k w_k\, e^{-a_k x}, \qquad w_k > 0,

because each term :math:`e^{-a_k E/\ell^2}` splits into a sparse part and a rank-one part. With
positive weights the approximation is itself a PSD kernel (a positive combination of RBF kernels
of the embedding): the model stays a valid GP whatever the error.

- **RBF**: exact, one term, :math:`a = 1/2`, :math:`w = 1`.
- **Matérn** (smoothness :math:`\nu`) is a Gaussian scale mixture: :math:`h_\nu(\sqrt x) =
  \int_0^\infty e^{-a x}\, p(a)\, da` with :math:`a \sim \mathrm{InvGamma}(\nu, \nu/2)` (from
  :math:`\int_0^\infty t^{\nu-1} e^{-t - z^2/4t} dt = 2 (z/2)^\nu K_\nu(z)` with
  :math:`z = \sqrt{2\nu x}`). With
  :math:`a = e^\sigma` the integrand is analytic in :math:`\sigma` and decays double
  exponentially as :math:`\sigma \to -\infty` and like :math:`e^{-\nu\sigma}` as
  :math:`\sigma \to \infty`, so the trapezoidal rule in :math:`\sigma` converges exponentially
  in its step. The steps and ranges below are the smallest found (on a grid of step, lower and
  upper limit) whose largest error over :math:`x \in \{0\} \cup [10^{-16}, 10^6]` stays under
  the stated bound, checked by ``tests/gp/test_sparse.py``:

  ======== ======== ================ ===== ===================
  kernel    step      log-rate range    Q    max abs error
  ======== ======== ================ ===== ===================
  Matérn ½  0.44     [-4.25, 40]       102   1e-9 (the cusp at 0)
  Matérn 3/2 0.30    [-4.25, 18]       75    1e-12
  Matérn 5/2 0.28    [-3.5, 11]        53    1e-12
  ======== ======== ================ ===== ===================

  Matérn ½ is the hardest: :math:`h(\sqrt x) = 1 - \sqrt x + \dots` has a cusp that no finite
  sum of exponentials matches, so its bound is looser and it needs the most terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pymc.gp.cov import ExpQuad, Matern12, Matern32, Matern52
from scipy.special import gammaln

__all__ = ["MIXTURES", "Mixture", "inner_mixture"]


@dataclass(frozen=True, eq=False)
class Mixture:
    """:math:`h(\\sqrt x) \\approx \\sum_k` ``weights[k] * exp(-rates[k] * x)``, with ``error``
    the largest absolute error of the approximation (0 for the RBF)."""

    rates: np.ndarray
    weights: np.ndarray
    error: float


def _scale_mixture(nu: float, step: float, low: float, high: float, error: float) -> Mixture:
    """The trapezoidal rule in the log rate for the Matérn-``nu`` scale mixture."""
    log_rates = np.arange(low, high + step / 2, step)
    rates = np.exp(log_rates)
    b = nu / 2.0  # InvGamma(nu, b) density times the Jacobian da = a dsigma
    log_weights = np.log(step) + nu * np.log(b) - gammaln(nu) - nu * log_rates - b / rates
    return Mixture(rates, np.exp(log_weights), error)


MIXTURES = {
    ExpQuad: Mixture(np.array([0.5]), np.array([1.0]), 0.0),
    Matern12: _scale_mixture(0.5, 0.44, -4.25, 40.0, 1e-9),
    Matern32: _scale_mixture(1.5, 0.30, -4.25, 18.0, 1e-12),
    Matern52: _scale_mixture(2.5, 0.28, -3.5, 11.0, 1e-12),
}


def inner_mixture(inner) -> Mixture | None:
    """The mixture of the inner kernel instance ``inner`` (exactly its class), or ``None``."""
    return MIXTURES.get(type(inner))
