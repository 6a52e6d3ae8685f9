r"""``pm.gp.Marginal(cov_func=SLE(...))`` takes the library's likelihood: a logprob rewrite.

PyMC builds a model's log density from its random variables through its logprob rewrites
(``pymc.logprob.rewriting``): each observed variable is turned into a *measurable* variable
whose density ``_logprob`` gives. :func:`sle_marginal_normal` is one such rewrite, registered in
``early_measurable_ir_rewrites_db`` when :mod:`pymc_sle.gp` is imported (as PyMC's own
``mv_normal_to_precision_mv_normal`` is). It looks at every ``MvNormal(mu, cov)`` -- the observed
variable of ``pm.gp.Marginal.marginal_likelihood``, or one written by hand -- and when ``cov`` is
``s * SLE(X, X) + v * I`` (``pymc_sle.gp._marginal_form``) it replaces the variable by one of
two measurable variables with the same draws:

- :class:`SparseSLEMarginalNormal` where the SLE is on a :class:`~pymc_sle.SparseDistanceMatrix`
  and the sparse exact likelihood covers the form: the density of
  :class:`~pymc_sle.gp.SparseSLELogDensity`, whose graph reads the bump parameters, ``s`` and
  ``v`` only -- no ``n x n`` matrix;
- :class:`SLEMarginalNormal` otherwise: the density of
  :class:`~pymc_sle.gp.GaussianLogDensity`, one Cholesky factorisation for the value and the
  gradient.

Both are :math:`\log \mathcal N(y \mid \mu, C)` of the same :math:`C` (PyMC's own up to
rounding), so the model, its prior and its posterior are unchanged; only the graph the sampler
differentiates is. The rewrite runs before PyMC canonicalises the graph, where the tensor an SLE
returns still carries its tag. A ``pm.logp(rv, value)`` call dispatches on ``MvNormal`` directly,
without the rewrites, and keeps PyMC's graph; the model's log density (``model.logp()``,
``pm.sample``, nutpie, ``find_map``) takes the rewritten one.
"""

from __future__ import annotations

import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.logprob.abstract import _logprob
from pymc.logprob.rewriting import early_measurable_ir_rewrites_db
from pymc.pytensorf import normalize_rng_param
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.random.basic import MvNormalRV, multivariate_normal
from pytensor.tensor.random.utils import normalize_size_param

from pymc_sle.gp._log_density import gaussian_logp
from pymc_sle.gp._marginal_form import marginal_form, sparse_likelihood, unfilled
from pymc_sle.gp._sparse import SparseSLELogDensity

__all__ = ["SLEMarginalNormal", "SparseSLEMarginalNormal", "sle_marginal_normal"]


class _MarginalNormal(SymbolicRandomVariable):
    """A multivariate normal whose draws are ``MvNormal(mean, cov)``'s and whose density the
    library computes; introduced by :func:`sle_marginal_normal` only."""

    def __init__(self, *args, method: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.method = method

    @classmethod
    def _draws(cls, mean, cov, rng, size, method):
        rng, size = normalize_rng_param(rng), normalize_size_param(size)
        next_rng, draws = multivariate_normal(mean, cov, size=size, rng=rng,
                                              method=method).owner.outputs  # fmt: skip
        return rng, size, next_rng, draws


class SLEMarginalNormal(_MarginalNormal):
    """``MvNormal(mean, cov)`` whose density is :func:`~pymc_sle.gp.gaussian_logp`."""

    name = "sle_marginal_normal"
    extended_signature = "[rng],[size],(n),(n,n)->[rng],(n)"
    _print_name = ("SLEMarginalNormal", "\\operatorname{SLEMarginalNormal}")

    @classmethod
    def rv_op(cls, mean, cov, *, method: str = "cholesky", rng=None, size=None):
        rng, size, next_rng, draws = cls._draws(mean, cov, rng, size, method)
        return cls(inputs=[rng, size, mean, cov], outputs=[next_rng, draws],
                   method=method)(rng, size, mean, cov)  # fmt: skip

    def rebuild_rv(self, *args, **kwargs):
        return self.rv_op(*args, method=self.method, **kwargs)


class SparseSLEMarginalNormal(_MarginalNormal):
    """``MvNormal(mean, cov)`` whose density is :class:`~pymc_sle.gp.SparseSLELogDensity` of
    ``problem`` at ``(radius, amplitude, shape, ls, scale, noise)``."""

    name = "sparse_sle_marginal_normal"
    extended_signature = "[rng],[size],(n),(n,n),(),(),(),(),(),()->[rng],(n)"
    _print_name = ("SparseSLEMarginalNormal", "\\operatorname{SparseSLEMarginalNormal}")

    def __init__(self, *args, problem, **kwargs):
        super().__init__(*args, **kwargs)
        self.problem = problem

    @classmethod
    def rv_op(cls, mean, cov, *parameters, problem, method="cholesky", rng=None, size=None):
        rng, size, next_rng, draws = cls._draws(mean, cov, rng, size, method)
        parameters = [pt.as_tensor_variable(p) for p in parameters]
        inputs = [rng, size, mean, cov, *parameters]
        return cls(inputs=inputs, outputs=[next_rng, draws], method=method,
                   problem=problem)(*inputs)  # fmt: skip

    def rebuild_rv(self, *args, **kwargs):
        return self.rv_op(*args, method=self.method, problem=self.problem, **kwargs)


@_logprob.register(SLEMarginalNormal)
def _dense_logp(op, values, rng, size, mean, cov, **kwargs):
    [value] = values
    return gaussian_logp(value, unfilled(mean), cov)


@_logprob.register(SparseSLEMarginalNormal)
def _sparse_logp(op, values, rng, size, mean, cov, *parameters, **kwargs):
    [value] = values
    return SparseSLELogDensity(op.problem)(value - unfilled(mean), *parameters)[0]


@node_rewriter(tracks=[MvNormalRV])
def sle_marginal_normal(fgraph, node):
    """``MvNormal(mu, s * SLE(X, X) + v * I)`` -> the library's measurable normal (module
    notes); ``None`` (PyMC's density) for any other covariance."""
    rng, size, mean, cov = node.inputs
    form = marginal_form(cov)
    if form is None:
        return None
    draws = node.outputs[1]
    sparse = sparse_likelihood(form, draws.type.ndim - 1, stacklevel=8)
    if sparse is None:
        new = SLEMarginalNormal.rv_op(mean, cov, rng=rng, size=size, method=node.op.method)
    else:
        problem, parameters = sparse
        new = SparseSLEMarginalNormal.rv_op(mean, cov, *parameters, problem=problem, rng=rng,
                                            size=size, method=node.op.method)  # fmt: skip
    return new.owner.outputs


early_measurable_ir_rewrites_db.register(sle_marginal_normal.__name__, sle_marginal_normal,
                                         "basic")  # fmt: skip
