"""Bernoulli(probs=None, logits=None): 1 with probability p, else 0 (torch.distributions.Bernoulli,
paddle.distribution.Bernoulli). log_prob and entropy are written in logits (log-sigmoids), so
they stay finite and differentiable near p = 0 and 1."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..eager import Tensor
from ..nn.functional.activation import log_sigmoid
from ..tensor.manipulation import broadcast_to
from ..tensor.random import bernoulli
from .base import Distribution, as_param, binary_probs_and_logits


class Bernoulli(Distribution):
    """Exactly one of probs (in [0, 1]) and logits (log-odds)."""

    _arg_ranks = {"logits": 0}

    def __init__(self, probs: Any = None, logits: Any = None, name: str | None = None,
                 validate_args: bool | None = None) -> None:
        if probs is not None:
            given = as_param(probs)
            if isinstance(given, Tensor) and not np.all((given.numpy() >= 0) & (given.numpy() <= 1)):
                raise ValueError(f"Bernoulli: probs must lie in [0, 1], got {given.numpy()}")
        self.probs, self.logits = binary_probs_and_logits("Bernoulli", probs, logits)
        super().__init__(self.probs.shape, validate_args=validate_args)

    @property
    def mean(self) -> Any:
        return self.probs

    @property
    def variance(self) -> Any:
        return self.probs * (1 - self.probs)

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """0 / 1 draws in probs' dtype, of shape `shape + batch_shape`; no gradient."""
        extended = self._extended_shape(shape if sample_shape is None else sample_shape)
        return bernoulli(broadcast_to(self.probs.detach(), extended))

    def log_prob(self, value: Any) -> Any:
        """value log p + (1 - value) log(1 - p), as -binary_cross_entropy_with_logits."""
        value = as_param(value, self.logits.dtype)
        return log_sigmoid(self.logits) - (1 - value) * self.logits

    def entropy(self) -> Any:
        return (1 - self.probs) * self.logits - log_sigmoid(self.logits)
