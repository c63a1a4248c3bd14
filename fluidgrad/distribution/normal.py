"""Normal(loc, scale): the Gaussian, with a reparameterized sample (loc + scale * eps) so that
gradients reach loc and scale through rsample (paddle.distribution.Normal, torch's Normal)."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..functions import exp, log
from ..tensor.math import erf, erfinv
from ..tensor.random import randn
from .base import Distribution, as_param, params, positive


class Normal(Distribution):
    """N(loc, scale^2) per element of the broadcast loc and scale."""

    has_rsample = True
    _arg_ranks = {"loc": 0, "scale": 0}

    def __init__(self, loc: Any, scale: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        self.loc, self.scale = params("Normal", loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)
        if self._validate_args:
            positive("Normal", "scale", self.scale)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return self.scale

    @property
    def variance(self) -> Any:
        return self.scale ** 2

    def rsample(self, shape: Sequence[int] = ()) -> Any:
        """loc + scale * eps with eps ~ N(0, 1): differentiable in loc and scale."""
        return self.loc + self.scale * randn(self._extended_shape(shape), dtype=self.loc.dtype)

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        return -((value - self.loc) ** 2) / (2 * self.scale ** 2) - log(self.scale) - math.log(math.sqrt(2 * math.pi))

    def probs(self, value: Any) -> Any:
        """The density at value (paddle's Normal.probs)."""
        return exp(self.log_prob(value))

    def entropy(self) -> Any:
        return 0.5 + 0.5 * math.log(2 * math.pi) + log(self.scale)

    def cdf(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        return 0.5 * (1 + erf((value - self.loc) / self.scale / math.sqrt(2)))

    def icdf(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)
