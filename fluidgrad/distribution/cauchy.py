"""Cauchy(loc, scale): the ratio of two standard normals, shifted and scaled; no mean, no variance
(torch.distributions.Cauchy, paddle.distribution.Cauchy). rsample is the inverse CDF
loc + scale tan(pi (u - 1/2)), differentiable in loc and scale."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..functions import full, log
from ..tensor.math import atan, log1p, tan
from ..tensor.random import rand
from .base import Distribution, as_param, draw_shape, params, positive


class Cauchy(Distribution):
    """Cauchy(loc, scale) per element of the broadcast loc and scale (scale > 0)."""

    has_rsample = True
    _arg_ranks = {"loc": 0, "scale": 0}

    def __init__(self, loc: Any, scale: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        self.loc, self.scale = params("Cauchy", loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)
        if self._validate_args:
            positive("Cauchy", "scale", self.scale)

    @property
    def mean(self) -> Any:
        """Undefined: NaN everywhere (torch's)."""
        return full(self._batch_shape, math.nan, self.loc.dtype)

    @property
    def variance(self) -> Any:
        """Infinite everywhere (torch's)."""
        return full(self._batch_shape, math.inf, self.loc.dtype)

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        u = rand(self._extended_shape(draw_shape(shape, sample_shape)), dtype=self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        return -math.log(math.pi) - log(self.scale) - log1p(((value - self.loc) / self.scale) ** 2)

    def entropy(self) -> Any:
        return math.log(4 * math.pi) + log(self.scale)

    def cdf(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        return atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Any) -> Any:
        return tan(math.pi * (as_param(value, self.loc.dtype) - 0.5)) * self.scale + self.loc
