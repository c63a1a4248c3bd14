"""Dirichlet(concentration): distributions over K categories, on the simplex
(torch.distributions.Dirichlet, paddle.distribution.Dirichlet). rsample normalises K Gamma
draws, reparameterised through them."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..functions import sum
from ..tensor.manipulation import broadcast_to
from ..tensor.math import clip
from ..tensor.special import digamma, lgamma
from .base import Distribution, as_param, draw_shape, positive, xlogy
from .gamma import standard_gamma


class Dirichlet(Distribution):
    """concentration: [..., K], positive; batch_shape its leading axes, event_shape [K]."""

    has_rsample = True
    _arg_ranks = {"concentration": 1}

    def __init__(self, concentration: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        self.concentration = as_param(concentration)
        shape = list(self.concentration.shape)
        if len(shape) < 1:
            raise ValueError(f"Dirichlet: concentration needs a category axis, got shape {shape}")
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)
        if self._validate_args:
            positive("Dirichlet", "concentration", self.concentration)

    @property
    def mean(self) -> Any:
        return self.concentration / sum(self.concentration, axis=-1, keepdim=True)

    @property
    def variance(self) -> Any:
        total = sum(self.concentration, axis=-1, keepdim=True)
        return self.concentration * (total - self.concentration) / (total ** 2 * (total + 1))

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        extended = self._extended_shape(draw_shape(shape, sample_shape))
        draws = standard_gamma(broadcast_to(self.concentration, extended))
        return clip(draws / sum(draws, axis=-1, keepdim=True), float(np.finfo(self.concentration.dtype).tiny), 1.0)

    def log_prob(self, value: Any) -> Any:
        value = as_param(value, self.concentration.dtype)
        self._check_value(value, lambda v: (v >= 0).all(-1) & (np.abs(v.sum(-1) - 1) < 1e-6),
                          "the simplex: non-negative, summing to 1 over the last axis")
        a = self.concentration
        return sum(xlogy(a - 1, value), axis=-1) + lgamma(sum(a, axis=-1)) - sum(lgamma(a), axis=-1)

    def entropy(self) -> Any:
        a = self.concentration
        total = sum(a, axis=-1)
        count = int(a.shape[-1])
        return (sum(lgamma(a), axis=-1) - lgamma(total) - (count - total) * digamma(total)
                - sum((a - 1) * digamma(a), axis=-1))
