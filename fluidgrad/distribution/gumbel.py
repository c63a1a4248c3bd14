"""Gumbel(loc, scale): the law of the maximum of many draws, density
exp(-(z + e^-z)) / scale with z = (x - loc) / scale (torch.distributions.Gumbel,
paddle.distribution.Gumbel). rsample is the inverse CDF loc - scale log(-log u)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..functions import exp, log
from ..tensor.math import clip
from ..tensor.random import rand
from .base import Distribution, as_param, draw_shape, params, positive

EULER_GAMMA = 0.57721566490153286060


class Gumbel(Distribution):
    """Gumbel(loc, scale) per element of the broadcast loc and scale (scale > 0)."""

    has_rsample = True
    _arg_ranks = {"loc": 0, "scale": 0}

    def __init__(self, loc: Any, scale: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        self.loc, self.scale = params("Gumbel", loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)
        if self._validate_args:
            positive("Gumbel", "scale", self.scale)

    @property
    def mean(self) -> Any:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def stddev(self) -> Any:
        return math.pi / math.sqrt(6) * self.scale

    @property
    def variance(self) -> Any:
        return self.stddev ** 2

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """The inverse CDF at u uniform on [tiny, 1 - eps] (torch's range)."""
        finfo = np.finfo(self.loc.dtype)
        u = rand(self._extended_shape(draw_shape(shape, sample_shape)), dtype=self.loc.dtype)
        return self.icdf(clip(u, float(finfo.tiny), float(1 - finfo.eps)))

    def log_prob(self, value: Any) -> Any:
        y = (self.loc - as_param(value, self.loc.dtype)) / self.scale
        return y - exp(y) - log(self.scale)

    def entropy(self) -> Any:
        return log(self.scale) + 1 + EULER_GAMMA

    def cdf(self, value: Any) -> Any:
        return exp(-exp((self.loc - as_param(value, self.loc.dtype)) / self.scale))

    def icdf(self, value: Any) -> Any:
        return self.loc - self.scale * log(-log(as_param(value, self.loc.dtype)))
