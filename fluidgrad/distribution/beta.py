"""Beta(concentration1, concentration0) on [0, 1] (torch.distributions.Beta; Paddle's
Beta(alpha, beta), whose keywords are taken too): density x^(a-1) (1-x)^(b-1) / B(a, b).
rsample is X / (X + Y) of Gamma(a, 1) and Gamma(b, 1) draws, reparameterised through them."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..tensor.manipulation import broadcast_to
from ..tensor.math import clip
from ..tensor.special import digamma, lgamma
from ..tensor.keywords import paddle_or_torch
from .base import Distribution, as_param, draw_shape, params, positive, xlogy
from .gamma import standard_gamma


class Beta(Distribution):
    """Beta(a, b) per element of the broadcast concentrations (both > 0): a = concentration1 =
    alpha weighs 1, b = concentration0 = beta weighs 0."""

    has_rsample = True
    _arg_ranks = {"concentration1": 0, "concentration0": 0}

    def __init__(self, concentration1: Any = None, concentration0: Any = None, name: str | None = None,
                 validate_args: bool | None = None, *, alpha: Any = None, beta: Any = None) -> None:
        concentration1 = paddle_or_torch("Beta", "alpha", alpha, "concentration1", concentration1)
        concentration0 = paddle_or_torch("Beta", "beta", beta, "concentration0", concentration0)
        if concentration1 is None or concentration0 is None:
            raise TypeError("Beta: needs both concentrations, Beta(concentration1, concentration0) "
                            "(Paddle: Beta(alpha, beta))")
        self.concentration1, self.concentration0 = params("Beta", concentration1, concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)
        if self._validate_args:
            positive("Beta", "concentration1 (alpha)", self.concentration1)
            positive("Beta", "concentration0 (beta)", self.concentration0)

    @property
    def alpha(self) -> Any:
        return self.concentration1

    @property
    def beta(self) -> Any:
        return self.concentration0

    @property
    def mean(self) -> Any:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self) -> Any:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total ** 2 * (total + 1))

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        extended = self._extended_shape(draw_shape(shape, sample_shape))
        x = standard_gamma(broadcast_to(self.concentration1, extended))
        y = standard_gamma(broadcast_to(self.concentration0, extended))
        return clip(x / (x + y), float(np.finfo(self.concentration1.dtype).tiny), 1.0)

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.concentration1.dtype)
        self._check_value(value, lambda v: (v >= 0) & (v <= 1), "[0, 1]")
        a, b = self.concentration1, self.concentration0
        return xlogy(a - 1, value) + xlogy(b - 1, 1 - value) + lgamma(a + b) - lgamma(a) - lgamma(b)

    def entropy(self) -> Any:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (lgamma(a) + lgamma(b) - lgamma(total) - (2 - total) * digamma(total)
                - (a - 1) * digamma(a) - (b - 1) * digamma(b))
