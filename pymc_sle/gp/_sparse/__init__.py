r"""The exact SLE marginal likelihood through a sparse factorisation (large data).

For an SLE with scalar bump parameters on distances stored below a cutoff, the covariance of
the observations is :math:`C = B + UU^\top` with :math:`B` sparse on the pairs of training
points that share a landmark (``_likelihood`` gives the math). The modules, in the order the
data flows:

- ``_mixtures`` -- the inner kernel as a positive mixture of Gaussians (exact for the RBF);
- ``_problem`` -- :class:`SparseSLEProblem`, the fixed part: the distances, ``B``'s pattern and
  its symbolic factorisation, built once per training set;
- ``_likelihood`` -- the log density and its gradient at given parameters, and draws;
- ``_prediction`` -- the predictive mean and pointwise variance at new points;
- ``_op`` -- :class:`SparseSLELogDensity`, the PyTensor Op and its numba dispatch.

The sparse linear algebra itself (supernodal factorisation, selected inversion) is
``pymc_sle._linalg``'s.
"""

from pymc_sle.gp._sparse._likelihood import PARAMETERS, draw, log_density
from pymc_sle.gp._sparse._mixtures import MIXTURES, Mixture, inner_mixture
from pymc_sle.gp._sparse._op import SparseSLELogDensity
from pymc_sle.gp._sparse._prediction import predict
from pymc_sle.gp._sparse._problem import SparseSLEProblem

__all__ = [
    "MIXTURES",
    "PARAMETERS",
    "Mixture",
    "SparseSLELogDensity",
    "SparseSLEProblem",
    "draw",
    "inner_mixture",
    "log_density",
    "predict",
]
