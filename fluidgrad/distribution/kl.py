"""kl_divergence(p, q): KL(p || q) in closed form for pairs of one family (torch's formulas),
registered in base.py's table. Where q gives zero probability to an outcome p can produce, the
divergence is +inf; outcomes p never produces add 0."""
from __future__ import annotations

import math
from typing import Any

from ..functions import full_like, log, logical_or, sum
from ..nn.functional.activation import softplus
from ..tensor.search import where
from .bernoulli import Bernoulli
from .categorical import Categorical
from .normal import Normal
from .base import register_kl
from .uniform import Uniform


def _masked(value: Any, infinite: Any, zero: Any) -> Any:
    """value, +inf where `infinite`, then 0 where `zero` (p's impossible outcomes win)."""
    value = where(infinite, full_like(value, math.inf), value)
    return where(zero, full_like(value, 0.0), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Any:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - log(var_ratio))


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Any:
    t = p.probs * (p.logits - q.logits)
    return sum(_masked(t, q.probs == 0, p.probs == 0), axis=-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Any:
    t1 = _masked(p.probs * (softplus(-q.logits) - softplus(-p.logits)), q.probs == 0, p.probs == 0)
    t2 = _masked((1 - p.probs) * (softplus(q.logits) - softplus(p.logits)), q.probs == 1, p.probs == 1)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Any:
    result = log((q.high - q.low) / (p.high - p.low))
    outside = logical_or(q.low > p.low, q.high < p.high)
    return where(outside, full_like(result, math.inf), result)
