"""Exponential(rate): the waiting time of a Poisson process, density rate e^(-rate x) on [0, inf)
(torch.distributions.Exponential, paddle.distribution.Exponential). rsample = -log(1 - u) / rate
is the inverse CDF at a uniform u, differentiable in rate."""
from __future__ import annotations

from typing import Any, Sequence

from ..functions import exp, log
from ..tensor.math import log1p
from ..tensor.random import rand
from .base import Distribution, as_param, draw_shape, params, positive


class Exponential(Distribution):
    """Exp(rate) per element of rate (rate > 0)."""

    has_rsample = True
    _arg_ranks = {"rate": 0}

    def __init__(self, rate: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        (self.rate,) = params("Exponential", rate)
        super().__init__(self.rate.shape, validate_args=validate_args)
        if self._validate_args:
            positive("Exponential", "rate", self.rate)

    @property
    def mean(self) -> Any:
        return 1 / self.rate

    @property
    def stddev(self) -> Any:
        return 1 / self.rate

    @property
    def variance(self) -> Any:
        return self.rate ** -2

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        u = rand(self._extended_shape(draw_shape(shape, sample_shape)), dtype=self.rate.dtype)
        return -log1p(-u) / self.rate

    def _value(self, value: Any) -> Any:
        value = as_param(value, self.rate.dtype)
        self._check_value(value, lambda v: v >= 0, "[0, inf)")
        return value

    def log_prob(self, value: Any) -> Any:
        return log(self.rate) - self.rate * self._value(value)

    def entropy(self) -> Any:
        return 1 - log(self.rate)

    def cdf(self, value: Any) -> Any:
        return 1 - exp(-self.rate * self._value(value))

    def icdf(self, value: Any) -> Any:
        return -log1p(-as_param(value, self.rate.dtype)) / self.rate
