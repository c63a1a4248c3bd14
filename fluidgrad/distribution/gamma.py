"""Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / gamma(a) on (0, inf)
(torch.distributions.Gamma, paddle.distribution.Gamma), and `standard_gamma`, the draw that
Beta, Dirichlet, Chi2 and StudentT build on.

rsample is reparameterised: the `standard_gamma` op draws by the inverse CDF and its gradient
is the implicit one (see ops/gamma_sampling.py), so gradients reach the concentration, as
torch's rsample does, and the rate through the division."""
from __future__ import annotations

from typing import Any, Sequence

from ..dispatch import apply_op
from ..functions import log
from ..tensor.manipulation import broadcast_to
from ..tensor.special import digamma, lgamma
from .base import Distribution, as_param, broadcast_shape, draw_shape, params, positive, xlogy


def standard_gamma(concentration: Any) -> Any:
    """Gamma(concentration, 1) draws, one per element, differentiable in the concentration."""
    return apply_op("standard_gamma", {"X": concentration}, {"seed": 0})


class Gamma(Distribution):
    """Gamma(concentration, rate) per element of the broadcast parameters (both > 0)."""

    has_rsample = True
    _arg_ranks = {"concentration": 0, "rate": 0}

    def __init__(self, concentration: Any, rate: Any, name: str | None = None,
                 validate_args: bool | None = None) -> None:
        owner = type(self).__name__
        self.concentration, self.rate = params(owner, concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)
        if self._validate_args:
            positive(owner, "concentration", self.concentration)
            positive(owner, "rate", self.rate)

    @property
    def mean(self) -> Any:
        return self.concentration / self.rate

    @property
    def variance(self) -> Any:
        return self.concentration / self.rate ** 2

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        extended = self._extended_shape(draw_shape(shape, sample_shape))
        return standard_gamma(broadcast_to(self.concentration, extended)) / self.rate

    def _value(self, value: Any) -> Any:
        value = as_param(value, self.rate.dtype)
        self._check_value(value, lambda v: v >= 0, "[0, inf)")
        return value

    def log_prob(self, value: Any) -> Any:
        value = self._value(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value) - self.rate * value
                - lgamma(self.concentration))

    def cdf(self, value: Any) -> Any:
        """P(concentration, rate * value), the regularised lower incomplete gamma function."""
        scaled = self.rate * self._value(value)
        shape = broadcast_shape("Gamma.cdf", scaled.shape, self._batch_shape)
        concentration = self.concentration
        if list(concentration.shape) != shape:
            concentration = broadcast_to(concentration, shape)
        if list(scaled.shape) != shape:
            scaled = broadcast_to(scaled, shape)
        return apply_op("gammainc", {"X": concentration, "Y": scaled})

    def entropy(self) -> Any:
        a = self.concentration
        return a - log(self.rate) + lgamma(a) + (1 - a) * digamma(a)
