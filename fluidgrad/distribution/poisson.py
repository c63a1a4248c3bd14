"""Poisson(rate): counts of events at a mean rate (torch.distributions.Poisson,
paddle.distribution.Poisson). Draws come from the `poisson` op and carry no gradient (counts
are piecewise constant in the rate); log_prob is differentiable in the rate."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..dispatch import apply_op
from ..tensor.manipulation import broadcast_to
from ..tensor.special import lgamma
from .base import Distribution, as_param, draw_shape, params, check, xlogy


class Poisson(Distribution):
    """Poisson(rate) per element of rate (rate >= 0)."""

    _arg_ranks = {"rate": 0}

    def __init__(self, rate: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        (self.rate,) = params("Poisson", rate)
        super().__init__(self.rate.shape, validate_args=validate_args)
        if self._validate_args:
            check("Poisson", "rate", self.rate, lambda v: v >= 0, "non-negative")

    @property
    def mean(self) -> Any:
        return self.rate

    @property
    def variance(self) -> Any:
        return self.rate

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """Counts in rate's dtype, of shape `shape + batch_shape`; no gradient."""
        extended = self._extended_shape(draw_shape(shape, sample_shape))
        return apply_op("poisson", {"X": broadcast_to(self.rate.detach(), extended)}, {"seed": 0})

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.rate.dtype)
        self._check_value(value, lambda v: (v >= 0) & (v == np.round(v)), "the counts 0, 1, 2, ...")
        return xlogy(value, self.rate) - self.rate - lgamma(value + 1)
