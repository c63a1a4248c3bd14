"""Categorical(probs=None, logits=None): one of K categories per batch element, as
torch.distributions.Categorical (a positional argument is `probs`, as torch's; pass `logits=`
by name). log_prob reads the normalized logits, so a policy-gradient loss
`-log_prob(action) * advantage` backpropagates into the logits."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..eager import Tensor
from ..functions import log, reshape, squeeze, sum, transpose, unsqueeze
from ..nn.functional.activation import softmax
from ..tensor.manipulation import broadcast_to
from ..tensor.math import clip, logsumexp
from ..tensor.random import multinomial
from ..tensor.search import take_along_axis
from .base import Distribution, as_param, broadcast_shape


class Categorical(Distribution):
    """probs: non-negative weights over the last axis (normalized here); logits: unnormalized log
    weights. Exactly one of the two."""

    _arg_ranks = {"logits": 1}

    def __init__(self, probs: Any = None, logits: Any = None, name: str | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: give exactly one of probs and logits")
        if probs is not None:
            probs = as_param(probs)
            _check_probs(probs)
            self.probs = probs / sum(probs, axis=-1, keepdim=True)
            eps = float(np.finfo(self.probs.dtype).eps)
            self.logits = log(clip(self.probs, eps, 1 - eps))    # torch's probs_to_logits
        else:
            logits = as_param(logits)
            self.logits = logits - logsumexp(logits, axis=-1, keepdim=True)
            self.probs = softmax(logits, axis=-1)
        if len(self.logits.shape) < 1:
            raise ValueError(f"Categorical: probs or logits need a category axis, got shape {list(self.logits.shape)}")
        self.num_categories = int(self.logits.shape[-1])
        super().__init__(self.logits.shape[:-1], validate_args=validate_args)

    def sample(self, shape: Sequence[int] = (), *, sample_shape: Sequence[int] | None = None) -> Any:
        """Category indices (int64) of shape `shape + batch_shape`, drawn with replacement."""
        extended = self._extended_shape(shape if sample_shape is None else sample_shape)
        count = int(np.prod(extended[:len(extended) - len(self._batch_shape)], dtype=np.int64))
        rows = reshape(self.probs.detach(), [-1, self.num_categories])
        draws = multinomial(rows, count, replacement=True)       # [batch, count]
        return reshape(transpose(draws, [1, 0]), extended)

    def log_prob(self, value: Any) -> Any:
        """The normalized logit of each category index in value (broadcast with batch_shape)."""
        value = as_param(value, "int64")
        _check_indices(value, self.num_categories)
        shape = broadcast_shape("Categorical.log_prob", value.shape, self._batch_shape)
        logits = broadcast_to(self.logits, shape + [self.num_categories])
        index = unsqueeze(value if list(value.shape) == shape else broadcast_to(value, shape), -1)
        return squeeze(take_along_axis(logits, index, -1), -1)

    def entropy(self) -> Any:
        """-sum(p log p); a category of probability 0 adds 0 (its logit is clipped, as torch)."""
        logits = clip(self.logits, float(np.finfo(self.logits.dtype).min))
        return -sum(logits * self.probs, axis=-1)


def _check_probs(probs: Any) -> None:
    if isinstance(probs, Tensor):
        values = probs.numpy()
        if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values.sum(-1) <= 0):
            raise ValueError(f"Categorical: probs (shape {list(values.shape)}) must be finite, non-negative, with "
                             f"a positive sum over the last axis (for unnormalized log weights pass logits=)")


def _check_indices(value: Any, count: int) -> None:
    if isinstance(value, Tensor):
        values = value.numpy()
        if values.size and (values.min() < 0 or values.max() >= count):
            raise ValueError(f"Categorical.log_prob: value (shape {list(values.shape)}) must hold category indices "
                             f"in [0, {count}), got {values.min()} .. {values.max()}")


