"""LogNormal(loc, scale): exp of a Normal(loc, scale) (torch.distributions.LogNormal,
paddle.distribution.LogNormal); loc and scale are the underlying Normal's, kept in `base_dist`."""
from __future__ import annotations

from typing import Any, Sequence

from ..functions import exp, log
from ..tensor.math import expm1
from .base import Distribution, as_param, draw_shape
from .normal import Normal


class LogNormal(Distribution):
    """The law of exp(X), X ~ Normal(loc, scale), on (0, inf)."""

    has_rsample = True
    _arg_ranks = {"loc": 0, "scale": 0}

    def __init__(self, loc: Any, scale: Any, name: str | None = None, validate_args: bool | None = None) -> None:
        super().__init__(validate_args=validate_args)
        try:
            self.base_dist = Normal(loc, scale, validate_args=self._validate_args)
        except ValueError as error:
            raise ValueError(str(error).replace("Normal:", "LogNormal:", 1)) from None
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        self._batch_shape = self.base_dist.batch_shape

    @property
    def mean(self) -> Any:
        return exp(self.loc + self.scale ** 2 / 2)

    @property
    def variance(self) -> Any:
        return expm1(self.scale ** 2) * exp(2 * self.loc + self.scale ** 2)

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        return exp(self.base_dist.rsample(draw_shape(shape, sample_shape)))

    def _log_value(self, value: Any) -> Any:
        value = as_param(value, self.loc.dtype)
        self._check_value(value, lambda v: v > 0, "(0, inf)")
        return log(value)

    def log_prob(self, value: Any) -> Any:
        """The Normal's density at log(value), times the Jacobian 1 / value."""
        log_value = self._log_value(value)
        return self.base_dist.log_prob(log_value) - log_value

    def entropy(self) -> Any:
        return self.base_dist.entropy() + self.loc

    def cdf(self, value: Any) -> Any:
        return self.base_dist.cdf(self._log_value(value))

    def icdf(self, value: Any) -> Any:
        return exp(self.base_dist.icdf(value))
