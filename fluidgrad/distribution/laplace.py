"""Laplace(loc, scale): the double exponential, density exp(-|x - loc| / scale) / (2 scale)
(torch.distributions.Laplace, paddle.distribution.Laplace). rsample is the inverse CDF at a
uniform draw, differentiable in loc and scale."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..functions import abs, log, sign
from ..tensor.math import clip, expm1, log1p
from ..tensor.random import rand
from .base import Distribution, as_param, draw_shape, params, positive


class Laplace(Distribution):
    """Laplace(loc, scale) per element of the broadcast loc and scale (scale > 0)."""

    has_rsample = True
    _arg_ranks = {"loc": 0, "scale": 0}

    def __init__(self, loc: Any, scale: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        self.loc, self.scale = params("Laplace", loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)
        if self._validate_args:
            positive("Laplace", "scale", self.scale)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return math.sqrt(2) * self.scale

    @property
    def variance(self) -> Any:
        return 2 * self.scale ** 2

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """loc - scale sign(u) log(1 - |u|), u uniform on [eps - 1, 1) (torch's draw)."""
        eps = float(np.finfo(self.loc.dtype).eps)
        u = rand(self._extended_shape(draw_shape(shape, sample_shape)), dtype=self.loc.dtype)
        u = clip(2 * u - 1, eps - 1, 1.0)
        return self.loc - self.scale * sign(u) * log1p(-abs(u))

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        return -log(2 * self.scale) - abs(value - self.loc) / self.scale

    def entropy(self) -> Any:
        return 1 + log(2 * self.scale)

    def cdf(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        return 0.5 - 0.5 * sign(value - self.loc) * expm1(-abs(value - self.loc) / self.scale)

    def icdf(self, value: Any) -> Any:
        term = as_param(value, self.loc.dtype) - 0.5
        return self.loc - self.scale * sign(term) * log1p(-2 * abs(term))
