"""StudentT(df, loc=0, scale=1): a Normal whose precision is Gamma distributed; heavy tails for
small df (torch.distributions.StudentT, paddle.distribution.StudentT). rsample is
loc + scale X / sqrt(Z / df), X ~ Normal(0, 1), Z ~ Chi2(df), reparameterised in all three."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..functions import full_like, log
from ..tensor.math import log1p, rsqrt
from ..tensor.random import randn
from ..tensor.search import where
from ..tensor.special import digamma, lgamma
from .base import Distribution, as_param, draw_shape, params, positive
from .chi2 import Chi2


class StudentT(Distribution):
    """Student's t with df > 0 degrees of freedom, location loc and scale > 0 (broadcast)."""

    has_rsample = True
    _arg_ranks = {"df": 0, "loc": 0, "scale": 0}

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, name: str | None = None,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = params("StudentT", df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)
        if self._validate_args:
            positive("StudentT", "df", self.df)
            positive("StudentT", "scale", self.scale)
        self._chi2 = Chi2(self.df, validate_args=False)

    @property
    def mean(self) -> Any:
        """loc where df > 1, else NaN (torch's)."""
        return where(self.df > 1, self.loc, full_like(self.loc, math.nan))

    @property
    def variance(self) -> Any:
        """scale^2 df / (df - 2) where df > 2, infinite for 1 < df <= 2, NaN below (torch's)."""
        finite = self.scale ** 2 * self.df / where(self.df > 2, self.df - 2, full_like(self.df, 1.0))
        heavy = where(self.df > 1, full_like(self.df, math.inf), full_like(self.df, math.nan))
        return where(self.df > 2, finite, heavy)

    def rsample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        sample_shape = draw_shape(shape, sample_shape)
        x = randn(self._extended_shape(sample_shape), dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * rsqrt(z / self.df)

    def log_prob(self, value: Any) -> Any:
        y = (as_param(value, self.df.dtype) - self.loc) / self.scale
        normaliser = (log(self.scale) + 0.5 * log(self.df) + 0.5 * math.log(math.pi) + lgamma(0.5 * self.df)
                      - lgamma(0.5 * (self.df + 1)))
        return -0.5 * (self.df + 1) * log1p(y ** 2 / self.df) - normaliser

    def entropy(self) -> Any:
        lbeta = lgamma(0.5 * self.df) + math.lgamma(0.5) - lgamma(0.5 * (self.df + 1))
        return (log(self.scale) + 0.5 * (self.df + 1) * (digamma(0.5 * (self.df + 1)) - digamma(0.5 * self.df))
                + 0.5 * log(self.df) + lbeta)
