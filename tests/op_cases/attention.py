"""Op cases: the fused attention softmax (scale, additive or bool mask, causal), and the fused
softmax and cross-entropy gradient ops."""
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
    return torch.ops.aten._safe_softmax(scores, -1)   # SDPA's softmax: a row of only -inf gives 0


def _case(id, inputs, **attrs):
    return OpCase("attention_softmax", inputs, attrs,
                  torch_fn=lambda **t: _reference(**t, **attrs), id=f"attention_softmax-{id}")


_BOOL_MASK = np.array([[True, False, True, True], [True, True, False, True], [False, True, True, True]])
_QUERY_MASKED = np.array([[True, False, True, True], [False, False, False, False], [False, True, True, True]])
_FLOAT_QUERY_MASKED = np.where(_QUERY_MASKED, rand(3, 4), -np.inf)

CASES = [
    _case("plain", {"X": rand(2, 3, 4)}, scale=0.5),
    _case("float_mask", {"X": rand(2, 2, 3, 4), "Mask": rand(2, 1, 3, 4)}, scale=0.7),
    _case("bool_mask", {"X": rand(2, 3, 4), "Mask": _BOOL_MASK}, scale=1.3),
    _case("causal", {"X": rand(2, 2, 4, 4)}, scale=0.25, causal=True),
    _case("causal_more_keys", {"X": rand(3, 5)}, causal=True),
    # a query that may see no key (a padded query): weights and gradient 0, not NaN
    _case("bool_mask_query_masked", {"X": rand(2, 3, 4), "Mask": _QUERY_MASKED}, scale=1.3),
    _case("float_mask_query_masked", {"X": rand(2, 3, 4), "Mask": _FLOAT_QUERY_MASKED}, scale=0.7),
]


# -- the fused softmax gradient ops (issue 12): softmax_grad and the hard-label cross-entropy gradient
def _softmax_grad_reference(Out, DOut, axis=-1):
    return Out * (DOut - (DOut * Out).sum(axis, keepdim=True))


def _swce_grad_reference(Softmax, Label, DLoss, axis=-1):
    one_hot = torch.zeros_like(Softmax).scatter_(axis, Label, 1.0)
    return (Softmax - one_hot) * DLoss


def _probs_along(shape, axis):
    x = np.exp(rand(*shape))
    return x / x.sum(axis, keepdims=True)


CASES += [
    OpCase("softmax_grad", {"Out": _probs_along((3, 5), -1), "DOut": rand(3, 5)}, {"axis": -1},
           torch_fn=lambda **t: _softmax_grad_reference(**t, axis=-1), id="softmax_grad-last"),
    OpCase("softmax_grad", {"Out": _probs_along((2, 4, 3), 1), "DOut": rand(2, 4, 3)}, {"axis": 1},
           torch_fn=lambda **t: _softmax_grad_reference(**t, axis=1), id="softmax_grad-middle"),
    OpCase("softmax_with_cross_entropy_grad",
           {"Softmax": _probs_along((4, 5), -1), "Label": np.array([[0], [4], [2], [2]]), "DLoss": rand(4, 1)},
           {"axis": -1}, torch_fn=lambda **t: _swce_grad_reference(**t, axis=-1), id="swce_grad-last"),
    OpCase("softmax_with_cross_entropy_grad",
           {"Softmax": _probs_along((2, 3, 4), 1), "Label": np.array([[[0, 2, 1, 1]], [[2, 2, 0, 1]]]),
            "DLoss": rand(2, 1, 4)},
           {"axis": 1}, torch_fn=lambda **t: _swce_grad_reference(**t, axis=1), id="swce_grad-middle"),
]
