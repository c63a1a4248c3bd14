"""Geometric(probs=None, logits=None): the number of failures before the first success of
Bernoulli(probs) trials, on 0, 1, 2, ... (torch.distributions.Geometric; Paddle's
Geometric(probs)). Draws are floor(log u / log(1 - p)), with no gradient."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..functions import log, zeros_like
from ..nn.functional.activation import softplus
from ..tensor.math import clip, floor, log1p
from ..tensor.random import rand
from ..tensor.search import where
from ..eager import no_grad
from .base import Distribution, as_param, binary_probs_and_logits, draw_shape, check


class Geometric(Distribution):
    """Exactly one of probs (in (0, 1]) and logits (log-odds of success)."""

    _arg_ranks = {"logits": 0}

    def __init__(self, probs: Any = None, logits: Any = None, name: str | None = None,
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits = binary_probs_and_logits("Geometric", probs, logits)
        super().__init__(self.probs.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            check("Geometric", "probs", self.probs, lambda v: (v > 0) & (v <= 1), "in (0, 1]")

    @property
    def mean(self) -> Any:
        return 1 / self.probs - 1

    @property
    def variance(self) -> Any:
        return (1 / self.probs - 1) / self.probs

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """Failure counts in probs' dtype, of shape `shape + batch_shape`; no gradient."""
        with no_grad():
            u = rand(self._extended_shape(draw_shape(shape, sample_shape)), dtype=self.probs.dtype)
            u = clip(u, float(np.finfo(self.probs.dtype).tiny), 1.0)
            return floor(log(u) / log1p(-self.probs.detach()))

    def log_prob(self, value: Any) -> Any:
        """value log(1 - p) + log p; 0 failures of a sure success is log 1 = 0."""
        value = as_param(value, self.probs.dtype)
        self._check_value(value, lambda v: (v >= 0) & (v == np.round(v)), "the counts 0, 1, 2, ...")
        failures = value * log1p(-self.probs)
        return where(value == 0, zeros_like(failures), failures) + log(self.probs)

    def entropy(self) -> Any:
        """The Bernoulli entropy over p (binary cross-entropy of the logits with p, divided by p)."""
        return (softplus(self.logits) - self.logits * self.probs) / self.probs

