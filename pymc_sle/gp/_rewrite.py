r"""``pm.gp.Marginal(cov_func=SLE(...))`` takes the library's likelihood: a logprob rewrite.

PyMC builds a model's log density from its random variables through its logprob rewrites
(``pymc.logprob.rewriting``): each observed variable is turned into a *measurable* variable
whose density ``_logprob`` gives. :func:`sle_marginal_normal` is one such rewrite, registered in
``early_measurable_ir_rewrites_db`` when :mod:`pymc_sle.gp` is imported (as PyMC's own
``mv_normal_to_precision_mv_normal`` is). It looks at every ``MvNormal(mu, cov)`` -- the observed
variable of ``pm.gp.Marginal.marginal_likelihood``, or one written by hand -- and when ``cov`` is
``s * SLE(X, X) + v * I`` (``pymc_sle.gp._marginal_form``) it replaces the variable by one of
two measurable variables of the same distribution:

- :class:`SparseSLEMarginalNormal` where the SLE is on a :class:`~pymc_sle.SparseDistanceMatrix`
  and the sparse exact likelihood covers the form: the density of
  :class:`~pymc_sle.gp.SparseSLELogDensity`, whose graph reads the bump parameters, ``s`` and
  ``v`` only, and draws from the same sparse factor -- no ``n x n`` matrix anywhere in its
  graph (PyTensor would otherwise fold the jitter's identity into an ``n x n`` constant);
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

from copy import copy

import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.logprob.abstract import _logprob
from pymc.logprob.rewriting import early_measurable_ir_rewrites_db
from pymc.pytensorf import normalize_rng_param
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.random.basic import MvNormalRV, multivariate_normal
from pytensor.tensor.random.utils import normalize_size_param

from pymc_sle.gp._log_density import gaussian_logp
from pymc_sle.gp._marginal_form import marginal_form, sparse_likelihood, unfilled
from pymc_sle.gp._sparse import SparseSLELogDensity, draw

__all__ = ["SLEMarginalNormal", "SparseSLEMarginalNormal", "sle_marginal_normal"]


class SLEMarginalNormal(SymbolicRandomVariable):
    """``MvNormal(mean, cov)`` -- the same draws -- whose density is
    :func:`~pymc_sle.gp.gaussian_logp`; introduced by :func:`sle_marginal_normal` only."""

    name = "sle_marginal_normal"
    extended_signature = "[rng],[size],(n),(n,n)->[rng],(n)"
    _print_name = ("SLEMarginalNormal", "\\operatorname{SLEMarginalNormal}")

    def __init__(self, *args, method: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.method = method

    @classmethod
    def rv_op(cls, mean, cov, *, method: str = "cholesky", rng=None, size=None):
        rng, size = normalize_rng_param(rng), normalize_size_param(size)
        next_rng, draws = multivariate_normal(mean, cov, size=size, rng=rng,
                                              method=method).owner.outputs  # fmt: skip
        return cls(inputs=[rng, size, mean, cov], outputs=[next_rng, draws],
                   method=method)(rng, size, mean, cov)  # fmt: skip

    def rebuild_rv(self, *args, **kwargs):
        return self.rv_op(*args, method=self.method, **kwargs)


class SparseSLEDraws(Op):
    """``(rng, size, mean, radius, amplitude, shape, ls, scale, noise) -> (next_rng, draws)``:
    draws of ``N(mean, C)`` of shape ``(*size, n)`` through the sparse factor of ``problem``
    (``pymc_sle.gp._sparse.draw``), never the ``n x n`` covariance."""

    def __init__(self, problem):
        self.problem = problem

    def __eq__(self, other):
        return type(self) is type(other) and self.problem is other.problem

    def __hash__(self):
        return hash((type(self), id(self.problem)))

    def make_node(self, rng, size, mean, *parameters):
        inputs = [rng, size, pt.as_tensor_variable(mean),
                  *(pt.as_tensor_variable(p) for p in parameters)]  # fmt: skip
        return Apply(self, inputs, [rng.type(), inputs[2].type()])

    def perform(self, node, inputs, output_storage):
        rng, size, mean, *parameters = inputs
        rng = copy(rng)
        draws = draw(self.problem, *parameters, rng=rng, size=size, mean=mean)
        output_storage[0][0], output_storage[1][0] = rng, draws


class SparseSLEMarginalNormal(SymbolicRandomVariable):
    """``MvNormal(mean, C)`` whose density is :class:`~pymc_sle.gp.SparseSLELogDensity` of
    ``problem`` at ``(radius, amplitude, shape, ls, scale, noise)``, and whose draws come from
    the same sparse factor (:class:`SparseSLEDraws`): its graph holds no ``n x n`` matrix."""

    name = "sparse_sle_marginal_normal"
    extended_signature = "[rng],[size],(n),(),(),(),(),(),()->[rng],(n)"
    _print_name = ("SparseSLEMarginalNormal", "\\operatorname{SparseSLEMarginalNormal}")

    def __init__(self, *args, problem, **kwargs):
        super().__init__(*args, **kwargs)
        self.problem = problem

    @classmethod
    def rv_op(cls, mean, *parameters, problem, rng=None, size=None):
        rng, size = normalize_rng_param(rng), normalize_size_param(size)
        mean = pt.broadcast_to(pt.cast(mean, "float64"), (problem.n,))  # a scalar mean too
        parameters = [pt.as_tensor_variable(p) for p in parameters]
        inputs = [rng, size, mean, *parameters]
        next_rng, draws = SparseSLEDraws(problem)(*inputs)
        return cls(inputs=inputs, outputs=[next_rng, draws], problem=problem)(*inputs)

    def rebuild_rv(self, *args, **kwargs):
        return self.rv_op(*args, problem=self.problem, **kwargs)


@_logprob.register(SLEMarginalNormal)
def _dense_logp(op, values, rng, size, mean, cov, **kwargs):
    [value] = values
    return gaussian_logp(value, unfilled(mean), cov)


@_logprob.register(SparseSLEMarginalNormal)
def _sparse_logp(op, values, rng, size, mean, *parameters, **kwargs):
    [value] = values
    return SparseSLELogDensity(op.problem)(value - mean, *parameters)[0]


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
        problem, parameters = sparse  # the mean without its broadcast against the covariance
        new = SparseSLEMarginalNormal.rv_op(unfilled(mean), *parameters, problem=problem,
                                            rng=rng, size=size)  # fmt: skip
    return new.owner.outputs


early_measurable_ir_rewrites_db.register(sle_marginal_normal.__name__, sle_marginal_normal,
                                         "basic")  # fmt: skip
