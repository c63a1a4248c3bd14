"""PyTorch references shared by the core op cases (tests/op_cases/core_*.py)."""
from __future__ import annotations

import numpy as np
import torch

from fluidgrad.ops import get_op_def


def _gather_torch(X, Index, axis=0):
    picked = X.index_select(axis, Index.reshape(-1))
    return picked.reshape(X.shape[:axis] + Index.shape + X.shape[axis + 1:])


def _slice_grad_torch(X, Target, axes, starts, ends):
    out = torch.zeros_like(Target)
    index = [slice(None)] * Target.dim()
    for a, s, e in zip(axes, starts, ends):
        index[a] = slice(s, e)
    out[tuple(index)] = X
    return out


def _unreduce_torch(X, Target, axis=None, keepdim=False, reduce_all=False, mean=False):
    axes = list(range(Target.dim())) if reduce_all or axis is None else [a % Target.dim() for a in axis]
    if not keepdim:
        for a in sorted(axes):
            X = X.unsqueeze(a)
    out = X.expand(Target.shape)
    if mean:
        out = out / int(np.prod([Target.shape[a] for a in axes]))
    return out


def _swce_torch(Logits, Label, soft=False, axis=-1):
    log_p = torch.log_softmax(Logits, axis)
    if soft:
        loss = -(Label * log_p).sum(axis, keepdim=True)
    else:
        label = Label if Label.dim() == Logits.dim() else Label.unsqueeze(axis)
        loss = -log_p.gather(axis, label)
    return torch.softmax(Logits, axis), loss


def _ce_torch(X, Label, soft=False):
    if soft:
        return -(Label * torch.log(X)).sum(-1, keepdim=True)
    label = Label if Label.dim() == X.dim() else Label.unsqueeze(-1)
    return -torch.log(X.gather(-1, label))


def _zero_grad_of(fn):
    """Piecewise-constant ops: PyTorch's graph would be cut, so add 0*X to keep X in it."""
    return lambda X, **kw: fn(X, **kw) + 0 * X


def _random_check(low, high):
    def check(outs, case):
        (out,) = outs
        attrs = get_op_def(case.op).attrs | case.attrs
        assert out.shape == tuple(attrs["shape"]) and out.dtype == np.dtype(attrs["dtype"])
        assert low(attrs) <= out.min() and out.max() <= high(attrs)
        assert np.unique(out).size > out.size // 2, "random values should differ"
    return check
