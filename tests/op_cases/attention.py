"""Op cases: the fused attention softmax (scale, additive or bool mask, causal)."""
from __future__ import annotations

import numpy as np
import torch

from fluidgrad.testing import OpCase

from .common import rand


def _reference(X, Mask=None, scale=1.0, causal=False):
    scores = X * scale
    if Mask is not None:
        scores = scores.masked_fill(~Mask, float("-inf")) if Mask.dtype == torch.bool else scores + Mask
    if causal:
        upper = torch.ones(X.shape[-2:], dtype=torch.bool).triu(1)
        scores = scores.masked_fill(upper, float("-inf"))
    return torch.softmax(scores, dim=-1)


def _case(id, inputs, **attrs):
    return OpCase("attention_softmax", inputs, attrs,
                  torch_fn=lambda **t: _reference(**t, **attrs), id=f"attention_softmax-{id}")


_BOOL_MASK = np.array([[True, False, True, True], [True, True, False, True], [False, True, True, True]])

CASES = [
    _case("plain", {"X": rand(2, 3, 4)}, scale=0.5),
    _case("float_mask", {"X": rand(2, 2, 3, 4), "Mask": rand(2, 1, 3, 4)}, scale=0.7),
    _case("bool_mask", {"X": rand(2, 3, 4), "Mask": _BOOL_MASK}, scale=1.3),
    _case("causal", {"X": rand(2, 2, 4, 4)}, scale=0.25, causal=True),
    _case("causal_more_keys", {"X": rand(3, 5)}, causal=True),
]
