"""Uniform(low, high): constant density on [low, high) (paddle.distribution.Uniform, torch's
Uniform); rsample = low + (high - low) * u is differentiable in low and high."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..eager import Tensor
from ..functions import exp, full_like, log, logical_and
from ..tensor.manipulation import broadcast_to
from ..tensor.math import clip
from ..tensor.random import rand
from ..tensor.search import where
from .base import Distribution, as_param, broadcast_shape, params


class Uniform(Distribution):
    """U(low, high) per element of the broadcast low and high (low < high)."""

    has_rsample = True
    _arg_ranks = {"low": 0, "high": 0}

    def __init__(self, low: Any, high: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        self.low, self.high = params("Uniform", low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args:
            _check_order(self.low, self.high)

    @property
    def mean(self) -> Any:
        return (self.high + self.low) / 2

    @property
    def stddev(self) -> Any:
        return (self.high - self.low) / math.sqrt(12)

    @property
    def variance(self) -> Any:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, shape: Sequence[int] = ()) -> Any:
        return self.low + (self.high - self.low) * rand(self._extended_shape(shape), dtype=self.low.dtype)

    def log_prob(self, value: Any) -> Any:
        """-log(high - low) inside [low, high), -inf outside."""
        value = as_param(value, self.low.dtype)
        inside = logical_and(self.low <= value, value < self.high)
        density = -log(self.high - self.low)
        shape = broadcast_shape("Uniform.log_prob", value.shape, self._batch_shape)
        density = density if list(density.shape) == shape else broadcast_to(density, shape)
        return where(inside, density, full_like(density, -math.inf))

    def probs(self, value: Any) -> Any:
        """The density at value (paddle's Uniform.probs)."""
        return exp(self.log_prob(value))

    def entropy(self) -> Any:
        return log(self.high - self.low)

    def cdf(self, value: Any) -> Any:
        value = as_param(value, self.low.dtype)
        return clip((value - self.low) / (self.high - self.low), 0.0, 1.0)


def _check_order(low: Any, high: Any) -> None:
    if isinstance(low, Tensor) and isinstance(high, Tensor) and not (low.numpy() < high.numpy()).all():
        raise ValueError(f"Uniform: low must be less than high, got low={low.numpy()}, high={high.numpy()}")
