"""Multinomial(total_count=1, probs=None, logits=None): the counts per category of total_count
Categorical draws (torch.distributions.Multinomial; Paddle's Multinomial(total_count, probs)).
Draws carry no gradient; log_prob and entropy are differentiable in probs / logits."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..functions import cast, exp, log, one_hot, sum, to_tensor, zeros_like
from ..tensor.math import log1p
from ..tensor.search import where
from ..tensor.special import lgamma
from .base import Distribution, as_param, draw_shape
from .categorical import Categorical


class Multinomial(Distribution):
    """total_count: an int (the same number of trials everywhere, as torch's); probs / logits over
    the last axis as Categorical's. event_shape is [K]."""

    def __init__(self, total_count: int = 1, probs: Any = None, logits: Any = None, name: str | None = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, (int, np.integer)) or isinstance(total_count, bool) or total_count < 0:
            raise ValueError(f"Multinomial: total_count must be a non-negative int (one count for every "
                             f"distribution), got {total_count!r}")
        self.total_count = int(total_count)
        try:
            self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        except ValueError as error:
            raise ValueError(str(error).replace("Categorical:", "Multinomial:", 1)) from None
        super().__init__(self._categorical.batch_shape, [self._categorical.num_categories],
                         validate_args=validate_args)

    @property
    def probs(self) -> Any:
        return self._categorical.probs

    @property
    def logits(self) -> Any:
        return self._categorical.logits

    @property
    def mean(self) -> Any:
        return self.probs * self.total_count

    @property
    def variance(self) -> Any:
        return self.total_count * self.probs * (1 - self.probs)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> "Multinomial":
        return Multinomial(self.total_count, logits=self._categorical.expand(batch_shape).logits,
                           validate_args=False)

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """Counts (probs' dtype) of shape `shape + batch_shape + [K]` summing to total_count; no gradient."""
        sample_shape = list(draw_shape(shape, sample_shape))
        sample_shape = [sample_shape] if isinstance(sample_shape, int) else sample_shape
        indices = self._categorical.sample([self.total_count] + sample_shape)
        counts = sum(one_hot(indices, self._event_shape[0]), axis=0)
        return counts if counts.dtype == self.probs.dtype else cast(counts, self.probs.dtype)

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.probs.dtype)
        count = self.total_count
        self._check_value(value, lambda v: (v >= 0).all(-1) & (v == np.round(v)).all(-1) & (v.sum(-1) == count),
                          f"non-negative integer counts summing to total_count={count}")
        powers = self.logits * value
        powers = where(value == 0, zeros_like(powers), powers)
        return lgamma(sum(value, axis=-1) + 1) - sum(lgamma(value + 1), axis=-1) + sum(powers, axis=-1)

    def entropy(self) -> Any:
        """n H(Categorical) - log n! + sum_k E[log x_k!], x_k ~ Binomial(n, p_k) (torch's formula)."""
        n = self.total_count
        probs = self.probs
        support = to_tensor(np.arange(1, n + 1, dtype=probs.dtype).reshape([n] + [1] * len(probs.shape)))
        binomial = (math.lgamma(n + 1) - lgamma(support + 1) - lgamma(n - support + 1)
                    + support * log(probs) + _xlog1m(n - support, probs))
        weights = sum(exp(binomial) * lgamma(support + 1), axis=[0, -1]) if n else 0.0
        return n * self._categorical.entropy() - math.lgamma(n + 1) + weights


def _xlog1m(count: Any, probs: Any) -> Any:
    """count log(1 - p), 0 where count is 0."""
    product = count * log1p(-probs)
    return where(count == 0, zeros_like(product), product)
