"""Op cases of fluidgrad/ops/logcumsumexp.py: logcumsumexp (values far apart included) and its
gradient op in both directions (VJP and JVP), each checked against PyTorch and differentiated again."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import rand


def _weights(X, Out, axis):
    """w[..., i, j] = exp(x_j - out_i) for j <= i, else 0, along `axis` moved last."""
    x, out = X.movedim(axis, -1), Out.movedim(axis, -1)
    n = x.shape[-1]
    below = T.tril(T.ones(n, n, dtype=T.bool))
    gap = x.unsqueeze(-2) - out.unsqueeze(-1)
    return T.where(below, T.exp(T.where(below, gap, T.zeros_like(gap))), T.zeros_like(gap))


def _slope(axis, jvp):
    """The reference of logcumsumexp_grad written with PyTorch ops (so itself differentiable)."""
    def slope(X, Out, V):
        w, v = _weights(X, Out, axis), V.movedim(axis, -1)
        r = (w * v.unsqueeze(-2)).sum(-1) if jvp else (w * v.unsqueeze(-1)).sum(-2)
        return r.movedim(-1, axis)
    return slope


def _grad_inputs(*shape, axis):
    x = rand(*shape) * 3
    return {"X": x, "Out": np.logaddexp.accumulate(x, axis=axis), "V": rand(*shape)}


_FAR_APART = np.array([[0.0, 40.0, -30.0, 1.0], [-50.0, 0.0, 5.0, 60.0]])

CASES = [
    OpCase("logcumsumexp", {"X": rand(3, 4) * 3}, {"axis": 1}, torch_fn=lambda X: T.logcumsumexp(X, 1)),
    OpCase("logcumsumexp", {"X": rand(3, 2, 4)}, {"axis": 0}, id="logcumsumexp-axis0",
           torch_fn=lambda X: T.logcumsumexp(X, 0)),
    OpCase("logcumsumexp", {"X": _FAR_APART}, {"axis": -1}, id="logcumsumexp-far-apart",
           torch_fn=lambda X: T.logcumsumexp(X, -1)),
    OpCase("logcumsumexp_grad", _grad_inputs(3, 4, axis=1), {"axis": 1}, torch_fn=_slope(1, False)),
    OpCase("logcumsumexp_grad", _grad_inputs(4, 3, axis=0), {"axis": 0, "jvp": True}, id="logcumsumexp_grad-jvp",
           torch_fn=_slope(0, True)),
]
