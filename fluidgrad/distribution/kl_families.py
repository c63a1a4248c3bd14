"""kl_divergence(p, q) for the families beyond kl.py's four: torch's closed forms for Beta, Gamma,
Dirichlet, Laplace, Exponential, Gumbel, Poisson, Geometric, LogNormal (the Normal's: log is
one-to-one), MultivariateNormal and Independent pairs, registered in base.py's table."""
from __future__ import annotations

from typing import Any

from ..functions import abs, exp, log, sum, unsqueeze
from ..linalg_solves import triangular_solve
from ..tensor.math import log1p
from ..tensor.special import digamma, lgamma
from .base import kl_divergence, register_kl, sum_rightmost
from .beta import Beta
from .dirichlet import Dirichlet
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import EULER_GAMMA, Gumbel
from .independent import Independent
from .laplace import Laplace
from .lognormal import LogNormal
from .multivariate_normal import MultivariateNormal
from .poisson import Poisson


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Any:
    p1, p0, q1, q0 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    sum_p, sum_q = p1 + p0, q1 + q0
    t1 = lgamma(q1) + lgamma(q0) + lgamma(sum_p)
    t2 = lgamma(p1) + lgamma(p0) + lgamma(sum_q)
    return t1 - t2 + (p1 - q1) * digamma(p1) + (p0 - q0) * digamma(p0) + (sum_q - sum_p) * digamma(sum_p)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Any:
    t1 = q.concentration * log(p.rate / q.rate)
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Any:
    sum_p, sum_q = sum(p.concentration, axis=-1), sum(q.concentration, axis=-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = sum(lgamma(p.concentration) - lgamma(q.concentration), axis=-1)
    t4 = digamma(p.concentration) - unsqueeze(digamma(sum_p), -1)
    return t1 - t2 + sum((p.concentration - q.concentration) * t4, axis=-1)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Any:
    scale_ratio = p.scale / q.scale
    distance = abs(p.loc - q.loc)
    return -log(scale_ratio) + distance / q.scale + scale_ratio * exp(-distance / p.scale) - 1


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Any:
    rate_ratio = q.rate / p.rate
    return rate_ratio - log(rate_ratio) - 1


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Any:
    ratio, q_loc, p_loc = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t3 = exp(q_loc + lgamma(1 + ratio) - p_loc)
    return -log(ratio) - q_loc + p_loc + ratio * EULER_GAMMA + t3 - (1 + EULER_GAMMA)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Any:
    return p.rate * (log(p.rate) - log(q.rate)) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Any:
    return -p.entropy() - log1p(-q.probs) / p.probs - q.logits


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p: LogNormal, q: LogNormal) -> Any:
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Any:
    """log det(Lq / Lp) + (||Lq^-1 Lp||_F^2 + ||Lq^-1 (loc_q - loc_p)||^2 - k) / 2."""
    if p.event_shape != q.event_shape:
        raise ValueError(f"kl_divergence: MultivariateNormals of different event shapes {p.event_shape} and "
                         f"{q.event_shape}")
    trace = sum(triangular_solve(q.scale_tril, p.scale_tril, upper=False) ** 2, axis=[-2, -1])
    shift = triangular_solve(q.scale_tril, unsqueeze(q.loc - p.loc, -1), upper=False)
    return q.half_log_det() - p.half_log_det() + 0.5 * (trace + sum(shift ** 2, axis=[-2, -1]) - p.event_shape[0])


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Any:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(f"kl_divergence: Independent pairs reinterpreting {p.reinterpreted_batch_ndims} "
                                  f"and {q.reinterpreted_batch_ndims} batch axes")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
