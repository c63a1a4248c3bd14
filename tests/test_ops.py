"""One table of cases over the op registry.

Each case is one op with float64 inputs and attributes. For each case:
  * the forward values equal PyTorch's (or an explicit NumPy reference where PyTorch lacks the op);
  * the gradient (when the op has one) equals central differences and PyTorch's, through
    `fluidgrad.testing.check_grad`;
  * the same op run on float32 inputs keeps float32.
A meta-test checks that every registered op has a kernel, a shape rule, a gradient or an
explicit NO_GRADIENT, and a case here (or a named test file elsewhere).
"""
from __future__ import annotations

import pathlib
import re
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.executor import Executor, Scope
from fluidgrad.ops import NO_GRADIENT, get_op_def, registered_ops
from fluidgrad.static import data
from op_cases import collect_cases
from op_cases.common import distinct, ints, nonzero, pos, probs, rand
from fluidgrad.testing import (OpCase, ProgramGradCheck, build_single_op, check_grad, check_program_grad,
                               torch_gradients)

Case = OpCase


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


def _cases() -> list[Case]:
    T = torch
    c: list[Case] = []
    # ---- activation.py: unary functions
    c += [Case("exp", {"X": rand(3, 4)}, torch_fn=lambda X: T.exp(X)),
          Case("log", {"X": pos(3, 4)}, torch_fn=lambda X: T.log(X)),
          Case("sqrt", {"X": pos(3, 4)}, torch_fn=lambda X: T.sqrt(X)),
          Case("square", {"X": rand(3, 4)}, torch_fn=lambda X: T.square(X)),
          Case("relu", {"X": nonzero(3, 4)}, torch_fn=lambda X: T.relu(X)),
          Case("sigmoid", {"X": rand(3, 4, lo=-4, hi=4)}, torch_fn=lambda X: T.sigmoid(X)),
          Case("sigmoid", {"X": np.array([-800.0, -30.0, 0.0, 30.0, 800.0])}, id="sigmoid-saturated",
               torch_fn=lambda X: T.sigmoid(X)),
          Case("tanh", {"X": rand(3, 4, lo=-2, hi=2)}, torch_fn=lambda X: T.tanh(X)),
          Case("relu_grad", {"Out": nonzero(3, 4), "DOut": rand(3, 4)},
               torch_fn=lambda Out, DOut: DOut * (Out > 0).to(Out.dtype)),
          Case("sigmoid_grad", {"Out": rand(3, 4, lo=0.05, hi=0.95), "DOut": rand(3, 4)},
               torch_fn=lambda Out, DOut: DOut * Out * (1 - Out)),
          Case("tanh_grad", {"Out": rand(3, 4, lo=-0.95, hi=0.95), "DOut": rand(3, 4)},
               torch_fn=lambda Out, DOut: DOut * (1 - Out * Out)),
          Case("abs", {"X": nonzero(3, 4)}, torch_fn=lambda X: T.abs(X)),
          Case("sin", {"X": rand(3, 4, lo=-3, hi=3)}, torch_fn=lambda X: T.sin(X)),
          Case("cos", {"X": rand(3, 4, lo=-3, hi=3)}, torch_fn=lambda X: T.cos(X)),
          Case("sign", {"X": nonzero(3, 4)}, torch_fn=_zero_grad_of(lambda X: T.sign(X))),
          Case("pow", {"X": pos(3, 4)}, {"factor": 3.0}, torch_fn=lambda X: T.pow(X, 3.0)),
          Case("pow", {"X": pos(3, 4)}, {"factor": -0.5}, id="pow-negative-fraction",
               torch_fn=lambda X: T.pow(X, -0.5)),
          Case("leaky_relu", {"X": nonzero(3, 4)}, {"alpha": 0.1},
               torch_fn=lambda X: TF.leaky_relu(X, 0.1)),
          Case("leaky_step", {"X": nonzero(3, 4)}, {"alpha": 0.1},
               torch_fn=_zero_grad_of(lambda X: T.where(X > 0, T.ones_like(X), T.full_like(X, 0.1))))]
    # ---- loss.py
    c += [Case("softmax", {"X": rand(3, 5)}, torch_fn=lambda X: T.softmax(X, -1)),
          Case("softmax", {"X": rand(3, 4, 2)}, {"axis": 1}, id="softmax-axis1",
               torch_fn=lambda X: T.softmax(X, 1)),
          Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": ints(5, 4, 1)},
               id="swce-hard-N1", torch_fn=lambda Logits, Label: _swce_torch(Logits, Label)),
          Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": ints(5, 4)},
               id="swce-hard-N", torch_fn=lambda Logits, Label: _swce_torch(Logits, Label)),
          Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": probs(4, 5)},
               {"soft_label": True}, id="swce-soft",
               torch_fn=lambda Logits, Label: _swce_torch(Logits, Label, soft=True)),
          Case("softmax_with_cross_entropy", {"Logits": rand(2, 4, 3), "Label": ints(4, 2, 1, 3)},
               {"axis": 1}, id="swce-axis1", torch_fn=lambda Logits, Label: _swce_torch(Logits, Label, axis=1)),
          Case("softmax_with_cross_entropy", {"Logits": rand(4, 5), "Label": ints(5, 4, 1)},
               id="swce-loss-only", use_outputs=(1,),
               torch_fn=lambda Logits, Label: _swce_torch(Logits, Label)[1]),
          Case("cross_entropy", {"X": probs(4, 5), "Label": ints(5, 4, 1)}, id="ce-hard-N1",
               torch_fn=lambda X, Label: _ce_torch(X, Label)),
          Case("cross_entropy", {"X": probs(4, 5), "Label": ints(5, 4)}, id="ce-hard-N",
               torch_fn=lambda X, Label: _ce_torch(X, Label)),
          Case("cross_entropy", {"X": probs(4, 5), "Label": probs(4, 5)}, {"soft_label": True}, id="ce-soft",
               torch_fn=lambda X, Label: _ce_torch(X, Label, soft=True)),
          Case("one_hot_like", {"Label": ints(3, 4, 1), "Logits": rand(4, 3)},
               torch_fn=lambda Label, Logits: TF.one_hot(Label[:, 0], 3).to(Logits.dtype) + 0 * Logits)]
    # ---- math.py: elementwise binary, with broadcasting
    binary = {"elementwise_add": lambda X, Y: X + Y, "elementwise_sub": lambda X, Y: X - Y,
              "elementwise_mul": lambda X, Y: X * Y, "elementwise_div": lambda X, Y: X / Y}
    shapes = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((4,), (2, 3, 4)),
              ((3, 4), ())]
    for op, fn in binary.items():
        for xs, ys in shapes:
            y = pos(*ys) if op == "elementwise_div" else rand(*ys)
            c.append(Case(op, {"X": rand(*xs), "Y": y}, torch_fn=fn, id=f"{op}-{xs}-{ys}"))
    c += [Case("elementwise_pow", {"X": pos(3, 4), "Y": rand(3, 4, lo=-2, hi=2)}, torch_fn=lambda X, Y: X ** Y),
          Case("elementwise_pow", {"X": pos(3, 4), "Y": rand(4, lo=-2, hi=2)}, id="elementwise_pow-bcast",
               torch_fn=lambda X, Y: X ** Y),
          Case("elementwise_pow", {"X": np.array([[0.0, 0.5, 2.0], [0.0, 1.5, 0.0]]), "Y": rand(2, 3, lo=1.5, hi=3)},
               id="elementwise_pow-zero-base", no_grad=("X",), second_order=False,
               torch_fn=lambda X, Y: X ** Y),
          Case("elementwise_max", {"X": distinct(3, 4), "Y": distinct(3, 4) + 0.125},
               torch_fn=lambda X, Y: T.maximum(X, Y)),
          Case("elementwise_max", {"X": distinct(3, 4), "Y": distinct(4) + 0.125}, id="elementwise_max-bcast",
               torch_fn=lambda X, Y: T.maximum(X, Y)),
          Case("elementwise_min", {"X": distinct(3, 4), "Y": distinct(3, 1) + 0.125},
               torch_fn=lambda X, Y: T.minimum(X, Y)),
          # ties split the gradient in half, as in PyTorch and as central differences measure
          Case("elementwise_max", {"X": np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]]), "Y": np.array([1.0, 0.0, -1.0])},
               id="elementwise_max-ties", torch_fn=lambda X, Y: T.maximum(X, Y), second_order=False),
          Case("elementwise_min", {"X": np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]]), "Y": np.array([1.0, 0.0, -1.0])},
               id="elementwise_min-ties", torch_fn=lambda X, Y: T.minimum(X, Y), second_order=False)]
    compare = {"less_than": T.lt, "less_equal": T.le, "greater_than": T.gt, "greater_equal": T.ge,
               "equal": T.eq, "not_equal": T.ne}
    for op, fn in compare.items():
        x = np.round(rand(3, 4), 1)
        c.append(Case(op, {"X": x, "Y": np.where(rand(3, 4) > 0, x, np.round(rand(3, 4), 1))},
                      torch_fn=lambda X, Y, f=fn: f(X, Y)))
        c.append(Case(op, {"X": ints(3, 3, 4), "Y": ints(3, 4)}, torch_fn=lambda X, Y, f=fn: f(X, Y),
                      id=f"{op}-int-bcast"))
    a, b = rand(3, 4) > 0, rand(3, 4) > 0
    c += [Case("logical_and", {"X": a, "Y": b}, torch_fn=lambda X, Y: T.logical_and(X, Y)),
          Case("logical_or", {"X": a, "Y": b[0]}, torch_fn=lambda X, Y: T.logical_or(X, Y)),
          Case("logical_xor", {"X": a, "Y": b}, torch_fn=lambda X, Y: T.logical_xor(X, Y)),
          Case("logical_not", {"X": a}, torch_fn=lambda X: T.logical_not(X))]
    # ---- matmul: transposes, vectors, batches
    mm = lambda X, Y, tx=False, ty=False: (X.mT if tx else X) @ (Y.mT if ty else Y)  # noqa: E731
    c += [Case("matmul", {"X": rand(3, 4), "Y": rand(4, 5)}, torch_fn=mm),
          Case("matmul", {"X": rand(4, 3), "Y": rand(4, 5)}, {"transpose_x": True}, id="matmul-tx",
               torch_fn=lambda X, Y: mm(X, Y, tx=True)),
          Case("matmul", {"X": rand(3, 4), "Y": rand(5, 4)}, {"transpose_y": True}, id="matmul-ty",
               torch_fn=lambda X, Y: mm(X, Y, ty=True)),
          Case("matmul", {"X": rand(4, 3), "Y": rand(5, 4)}, {"transpose_x": True, "transpose_y": True},
               id="matmul-txty", torch_fn=lambda X, Y: mm(X, Y, True, True)),
          Case("matmul", {"X": rand(4), "Y": rand(4, 5)}, id="matmul-vec-mat", torch_fn=mm),
          Case("matmul", {"X": rand(4), "Y": rand(5, 4)}, {"transpose_y": True}, id="matmul-vec-matT",
               torch_fn=lambda X, Y: mm(X, Y, ty=True)),
          Case("matmul", {"X": rand(3, 4), "Y": rand(4)}, id="matmul-mat-vec", torch_fn=mm),
          Case("matmul", {"X": rand(4, 3), "Y": rand(4)}, {"transpose_x": True}, id="matmul-matT-vec",
               torch_fn=lambda X, Y: mm(X, Y, tx=True)),
          Case("matmul", {"X": rand(4), "Y": rand(4)}, id="matmul-dot", torch_fn=mm),
          Case("matmul", {"X": rand(2, 3, 4), "Y": rand(2, 4, 5)}, id="matmul-batched", torch_fn=mm),
          Case("matmul", {"X": rand(2, 3, 4), "Y": rand(4, 5)}, id="matmul-batched-bcast", torch_fn=mm),
          Case("matmul", {"X": rand(2, 4, 3), "Y": rand(2, 5, 4)}, {"transpose_x": True, "transpose_y": True},
               id="matmul-batched-txty", torch_fn=lambda X, Y: mm(X, Y, True, True)),
          Case("matmul", {"X": rand(2, 1, 3, 4), "Y": rand(5, 2, 4)}, {"transpose_y": True},
               id="matmul-batch-broadcast-both", torch_fn=lambda X, Y: mm(X, Y, ty=True)),
          Case("matmul", {"X": rand(4), "Y": rand(2, 4, 5)}, id="matmul-vec-batched", torch_fn=mm),
          Case("matmul", {"X": rand(4), "Y": rand(2, 5, 4)}, {"transpose_x": True, "transpose_y": True},
               id="matmul-vec-batchedT", torch_fn=lambda X, Y: mm(X, Y, ty=True)),
          Case("matmul", {"X": rand(3, 2, 4), "Y": rand(4)}, id="matmul-batched-vec", torch_fn=mm),
          Case("matmul", {"X": rand(3, 4, 2), "Y": rand(4)}, {"transpose_x": True}, id="matmul-batchedT-vec",
               torch_fn=lambda X, Y: mm(X, Y, tx=True))]
    # ---- scale, sum, assign, cast, constants
    c += [Case("scale", {"X": rand(3, 4)}, {"scale": 2.5, "bias": 0.5}, torch_fn=lambda X: X * 2.5 + 0.5),
          Case("scale", {"X": rand(3, 4)}, {"scale": -2.0, "bias": 0.5, "bias_after_scale": False},
               id="scale-bias-first", torch_fn=lambda X: (X + 0.5) * -2.0),
          Case("sum", {"X": [rand(3, 4), rand(3, 4), rand(3, 4)]}, torch_fn=lambda X: X[0] + X[1] + X[2]),
          Case("assign", {"X": rand(3, 4)}, torch_fn=lambda X: X.clone()),
          Case("cast", {"X": rand(3, 4)}, {"dtype": "float64"}, torch_fn=lambda X: X.to(T.float64)),
          Case("cast", {"X": rand(3, 4)}, {"dtype": "float32"}, id="cast-to-float32", rtol=1e-3, eps=1e-2,
               torch_fn=lambda X: X.to(T.float32)),
          Case("cast", {"X": rand(3, 4) * 5}, {"dtype": "int64"}, id="cast-to-int", grad=False,
               torch_fn=lambda X: X.to(T.int64)),
          Case("fill_constant", {}, {"shape": [2, 3], "value": 1.5, "dtype": "float64"},
               torch_fn=lambda: T.full((2, 3), 1.5, dtype=T.float64)),
          Case("fill_zeros_like", {"X": rand(3, 4)}, torch_fn=_zero_grad_of(T.zeros_like)),
          Case("fill_any_like", {"X": rand(3, 4)}, {"value": 2.5},
               torch_fn=_zero_grad_of(lambda X: T.full_like(X, 2.5)))]
    # ---- broadcasting helpers (the *_grad family)
    c += [Case("reduce_as", {"X": rand(3, 4), "Target": rand(1, 4)},
               torch_fn=lambda X, Target: X.sum(0, keepdim=True)),
          Case("reduce_as", {"X": rand(2, 3, 4), "Target": rand(3, 1)}, id="reduce_as-lead-and-inner",
               torch_fn=lambda X, Target: X.sum(0).sum(-1, keepdim=True)),
          Case("reduce_as", {"X": rand(2, 3), "Target": rand()}, id="reduce_as-to-scalar",
               torch_fn=lambda X, Target: X.sum()),
          Case("expand_as", {"X": rand(4), "Target": rand(3, 4)},
               torch_fn=lambda X, Target: X.expand_as(Target)),
          Case("expand_as", {"X": rand(3, 1), "Target": rand(2, 3, 4)}, id="expand_as-inner",
               torch_fn=lambda X, Target: X.expand_as(Target)),
          Case("expand_as", {"X": rand(1, 1), "Target": rand()}, id="expand_as-higher-rank",
               torch_fn=lambda X, Target: X.reshape(())),
          Case("unreduce", {"X": rand(3), "Target": rand(3, 4)}, {"axis": [1]},
               torch_fn=lambda X, Target: _unreduce_torch(X, Target, [1])),
          Case("unreduce", {"X": rand(1, 4), "Target": rand(3, 4)}, {"axis": [0], "keepdim": True, "mean": True},
               id="unreduce-keepdim-mean",
               torch_fn=lambda X, Target: _unreduce_torch(X, Target, [0], keepdim=True, mean=True)),
          Case("unreduce", {"X": rand(), "Target": rand(3, 4)}, {"reduce_all": True, "mean": True},
               id="unreduce-all", torch_fn=lambda X, Target: _unreduce_torch(X, Target, reduce_all=True, mean=True)),
          Case("slice_grad", {"X": rand(2, 3), "Target": rand(4, 5)},
               {"axes": [0, 1], "starts": [1, -3], "ends": [3, 2**31 - 1]},
               torch_fn=lambda X, Target: _slice_grad_torch(X, Target, [0, 1], [1, -3], [3, None])),
          Case("gather_grad", {"X": rand(4, 3), "Index": np.array([0, 2, 0, 1]), "Target": rand(3, 3)},
               torch_fn=lambda X, Index, Target: T.zeros_like(Target).index_add(0, Index, X)),
          Case("gather_grad", {"X": rand(3, 5), "Index": np.array([1, 0, 1, 3, 1]), "Target": rand(3, 4)},
               {"axis": -1}, id="gather_grad-axis-neg",
               torch_fn=lambda X, Index, Target: T.zeros_like(Target).index_add(1, Index, X)),
          Case("reduce_as", {"X": rand(), "Target": rand(1, 1)}, id="reduce_as-lower-rank",
               torch_fn=lambda X, Target: X.reshape(1, 1)),
          Case("gather_grad", {"X": rand(3, 2, 2), "Index": np.array([[1, 1], [0, 1]]), "Target": rand(3, 2)},
               {"axis": 1}, id="gather_grad-axis1-2d-index",
               torch_fn=lambda X, Index, Target: T.zeros_like(Target).index_add(1, Index.reshape(-1),
                                                                                X.reshape(3, 4))),
          Case("reshape_as", {"X": rand(3, 4), "Target": rand(2, 6)},
               torch_fn=lambda X, Target: X.reshape(Target.shape))]
    # ---- reduce.py
    for op, fn in (("reduce_sum", T.sum), ("reduce_mean", T.mean)):
        c += [Case(op, {"X": rand(2, 3, 4)}, {"reduce_all": True}, id=f"{op}-all", torch_fn=lambda X, f=fn: f(X)),
              Case(op, {"X": rand(2, 3, 4)}, {"axis": [1]}, id=f"{op}-axis1",
                   torch_fn=lambda X, f=fn: f(X, 1)),
              Case(op, {"X": rand(2, 3, 4)}, {"axis": [0, 2], "keepdim": True}, id=f"{op}-axes02-keepdim",
                   torch_fn=lambda X, f=fn: f(X, (0, 2), keepdim=True)),
              Case(op, {"X": rand(2, 3, 4)}, {"axis": [-1]}, id=f"{op}-axis-neg",
                   torch_fn=lambda X, f=fn: f(X, -1)),
              Case(op, {"X": rand(2, 3)}, {"axis": None, "keepdim": True}, id=f"{op}-none-keepdim",
                   torch_fn=lambda X, f=fn: f(X, (0, 1), keepdim=True))]
    c += [Case("mean", {"X": rand(3, 4)}, torch_fn=lambda X: X.mean())]
    for op, fn in (("reduce_max", T.amax), ("reduce_min", T.amin)):
        c += [Case(op, {"X": distinct(3, 4)}, {"axis": [1]}, id=f"{op}-axis1", torch_fn=lambda X, f=fn: f(X, 1)),
              Case(op, {"X": distinct(2, 3, 4)}, {"reduce_all": True}, id=f"{op}-all",
                   torch_fn=lambda X, f=fn: f(X)),
              Case(op, {"X": distinct(2, 3, 4)}, {"axis": [0, 2], "keepdim": True}, id=f"{op}-keepdim",
                   torch_fn=lambda X, f=fn: f(X, (0, 2), keepdim=True)),
              # two equal extremes in a row: both share the gradient (PyTorch's amax/amin do too)
              Case(op, {"X": np.array([[1.0, 3.0, 3.0], [-2.0, 0.5, -2.0]])}, {"axis": [1]}, id=f"{op}-tie",
                   torch_fn=lambda X, f=fn: f(X, 1), second_order=False)]
    # ---- tensor.py
    c += [Case("reshape", {"X": rand(2, 3, 4)}, {"shape": [0, -1]}, id="reshape-0-neg1",
               torch_fn=lambda X: X.reshape(2, 12)),
          Case("reshape", {"X": rand(2, 3, 4)}, {"shape": [-1]}, id="reshape-flat", torch_fn=lambda X: X.reshape(-1)),
          Case("reshape", {"X": rand(2, 3, 4)}, {"shape": [4, 0, 2]}, id="reshape-0-middle",
               torch_fn=lambda X: X.reshape(4, 3, 2)),
          Case("reshape", {"X": rand(6)}, {"shape": [-1, 1, 2]}, id="reshape-neg1-first",
               torch_fn=lambda X: X.reshape(3, 1, 2)),
          Case("transpose", {"X": rand(3, 4)}, {"perm": [1, 0]}, torch_fn=lambda X: X.T),
          Case("transpose", {"X": rand(2, 3, 4)}, {"perm": [2, 0, 1]}, id="transpose-3d",
               torch_fn=lambda X: X.permute(2, 0, 1)),
          Case("transpose", {"X": rand(2, 3, 4)}, {"perm": [-1, 0, 1]}, id="transpose-negative-perm",
               torch_fn=lambda X: X.permute(2, 0, 1)),
          Case("concat", {"X": [rand(2, 3), rand(1, 3), rand(3, 3)]}, {"axis": 0},
               torch_fn=lambda X: T.cat(X, 0)),
          Case("concat", {"X": [rand(2, 3), rand(2, 1)]}, {"axis": -1}, id="concat-axis-neg",
               torch_fn=lambda X: T.cat(X, -1)),
          Case("split", {"X": rand(3, 6)}, {"num_or_sections": 3, "axis": 1}, n_out=3,
               torch_fn=lambda X: T.split(X, 2, 1)),
          Case("split", {"X": rand(6, 2)}, {"num_or_sections": [1, -1, 2], "axis": 0}, n_out=3,
               id="split-sections-neg1", torch_fn=lambda X: T.split(X, [1, 3, 2], 0)),
          Case("split", {"X": rand(3, 6)}, {"num_or_sections": 3, "axis": -1}, n_out=3, use_outputs=(0, 2),
               id="split-unused-output", torch_fn=lambda X: T.split(X, 2, -1)[0::2]),
          Case("split_as", {"X": rand(5, 2), "Like": [rand(2, 2), rand(3, 2)]}, {"axis": 0}, n_out=2,
               torch_fn=lambda X, Like: T.split(X, [2, 3], 0)),
          Case("split_as", {"X": rand(2, 6), "Like": [rand(2, 4), rand(2, 2)]}, {"axis": -1}, n_out=2,
               id="split_as-axis-neg", torch_fn=lambda X, Like: T.split(X, [4, 2], -1)),
          Case("slice", {"X": rand(4, 5)}, {"axes": [0, 1], "starts": [1, 0], "ends": [3, -1]},
               torch_fn=lambda X: X[1:3, 0:-1]),
          Case("slice", {"X": rand(4, 5, 2)}, {"axes": [1], "starts": [-3], "ends": [2**31 - 1]},
               id="slice-negative-open", torch_fn=lambda X: X[:, -3:]),
          Case("gather", {"X": rand(3, 4), "Index": np.array([0, 2, 0, 1, 2])}, id="gather-repeated",
               torch_fn=lambda X, Index: _gather_torch(X, Index)),
          Case("gather", {"X": rand(3, 4), "Index": np.array([3, 3, 1])}, {"axis": 1}, id="gather-axis1",
               torch_fn=lambda X, Index: _gather_torch(X, Index, 1)),
          Case("gather", {"X": rand(3, 4), "Index": np.array([3, 0, 3])}, {"axis": -1}, id="gather-axis-neg",
               torch_fn=lambda X, Index: _gather_torch(X, Index, 1)),
          Case("gather", {"X": rand(5, 2), "Index": np.array([[0, 4], [4, 4]])}, id="gather-2d-index",
               torch_fn=lambda X, Index: _gather_torch(X, Index)),
          Case("one_hot", {"X": ints(4, 3, 2)}, {"depth": 4, "dtype": "float64"},
               torch_fn=lambda X: TF.one_hot(X, 4).to(T.float64)),
          Case("squeeze", {"X": rand(3, 1, 4, 1)}, {"axes": [1, -1]}, torch_fn=lambda X: X.reshape(3, 4)),
          Case("unsqueeze", {"X": rand(3, 4)}, {"axes": [0, 2]}, torch_fn=lambda X: X.reshape(1, 3, 1, 4)),
          Case("unsqueeze", {"X": rand(3, 4)}, {"axes": [-1]}, id="unsqueeze-neg",
               torch_fn=lambda X: X.unsqueeze(-1)),
          Case("unsqueeze", {"X": rand(3)}, {"axes": [-1, -2]}, id="unsqueeze-two-neg",
               torch_fn=lambda X: X.reshape(3, 1, 1)),
          Case("unsqueeze", {"X": rand(3)}, {"axes": [2, 0]}, id="unsqueeze-unsorted",
               torch_fn=lambda X: X.reshape(1, 3, 1)),
          Case("gather", {"X": rand(3, 4), "Index": np.array(2)}, {"axis": 1}, id="gather-scalar-index",
               torch_fn=lambda X, Index: X[:, 2]),
          Case("stack", {"X": [rand(3, 4), rand(3, 4)]}, {"axis": 0}, torch_fn=lambda X: T.stack(X, 0)),
          Case("stack", {"X": [rand(3, 4), rand(3, 4), rand(3, 4)]}, {"axis": -1}, id="stack-axis-neg",
               torch_fn=lambda X: T.stack(X, -1))]
    # ---- random.py: no gradient, checked by range and shape
    c += [Case("uniform_random", {}, {"shape": [50, 4], "min": -2.0, "max": 3.0, "dtype": "float64", "seed": 7},
               check_fn=_random_check(lambda a: a["min"], lambda a: a["max"])),
          Case("gaussian_random", {}, {"shape": [50, 4], "mean": 1.0, "std": 0.5, "dtype": "float64", "seed": 7},
               check_fn=_random_check(lambda a: a["mean"] - 10 * a["std"], lambda a: a["mean"] + 10 * a["std"])),
          Case("truncated_gaussian_random", {}, {"shape": [50, 4], "mean": 1.0, "std": 0.5, "dtype": "float64",
                                                 "seed": 7},
               check_fn=_random_check(lambda a: a["mean"] - 2 * a["std"], lambda a: a["mean"] + 2 * a["std"]))]
    return c


# the cases of tests/op_cases/*.py (one module per op family) join the table
CASES = _cases() + collect_cases()

# Ops registered by other parts of fluidgrad and tested in their own files (name -> test file).
# The meta-test below checks that each such file exists and mentions the op by name.
_NN, _CONTROL, _OPTIM = "test_nn_ops.py", "test_control_flow.py", "test_optimizer.py"
TESTED_ELSEWHERE: dict[str, str] = {
    **dict.fromkeys(["batch_norm", "batch_norm_grad", "layer_norm", "layer_norm_grad", "dropout",
                     "clip", "clip_mask", "log_softmax"], _NN),
    **dict.fromkeys(["while", "while_grad", "conditional_block", "conditional_block_grad", "select_input",
                     "select_input_grad", "increment"], _CONTROL),
    **dict.fromkeys(["sgd", "momentum", "adam"], _OPTIM),
}

_TESTS_DIR = pathlib.Path(__file__).parent


# ------------------------------------------------------------------ running one case
def _flat_feeds(inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    feeds = {}
    for slot, value in inputs.items():
        if isinstance(value, list):
            feeds.update({f"{slot}_{i}": np.asarray(v) for i, v in enumerate(value)})
        else:
            feeds[slot] = np.asarray(value)
    return feeds


def _as_dtype(value: Any, dtype: Any) -> Any:
    if isinstance(value, list):
        return [_as_dtype(v, dtype) for v in value]
    value = np.asarray(value)
    return value.astype(dtype) if value.dtype.kind == "f" else value


def run_forward(case: Case, float_dtype: Any = np.float64) -> tuple[list[np.ndarray], list[fg.Variable]]:
    """Run the case's op once in a one-op program; return its outputs and their Variables."""
    inputs = {k: _as_dtype(v, float_dtype) for k, v in case.inputs.items()}
    feeds = _flat_feeds(inputs)
    attrs = dict(case.attrs)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        variables = {k: data(k, v.shape, v.dtype) for k, v in feeds.items()}
        outs = build_single_op(case.op, inputs, attrs, case.n_out)(variables)
    values = Executor().run(main, feed=feeds, fetch_list=outs, scope=Scope())
    return values, outs


def _torch_forward(case: Case) -> list[np.ndarray]:
    args = {}
    for slot, value in case.inputs.items():
        args[slot] = [torch.tensor(np.asarray(v)) for v in value] if isinstance(value, list) \
            else torch.tensor(np.asarray(value))
    outs = case.torch_fn(**args)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return [o.numpy() for o in outs]


def _used(case: Case, values: list) -> list:
    return values if case.use_outputs is None else [values[i] for i in case.use_outputs]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward_matches_reference(case: Case):
    values, _ = run_forward(case)
    if case.check_fn is not None:
        case.check_fn(values, case)
        return
    expected = _torch_forward(case) if case.torch_fn is not None else case.numpy_fn(**case.inputs)
    values = _used(case, values)
    assert len(values) == len(expected), f"{case.id}: {len(values)} outputs, reference has {len(expected)}"
    for i, (got, want) in enumerate(zip(values, expected)):
        assert got.shape == want.shape, f"{case.id} output {i}: shape {got.shape}, reference {want.shape}"
        assert got.dtype == want.dtype, f"{case.id} output {i}: dtype {got.dtype}, reference {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{case.id} output {i}")


def _float32_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.float64 else dtype


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_float32_forward_keeps_dtype(case: Case):
    if not any(np.asarray(v).dtype.kind == "f" for v in _flat_feeds(case.inputs).values()):
        pytest.skip("no float inputs: the op's dtype comes from its attributes")
    ref, _ = run_forward(case, np.float64)
    got, variables = run_forward(case, np.float32)
    cast_target = case.op == "cast"
    for i, (a, b, var) in enumerate(zip(got, ref, variables)):
        want = b.dtype if cast_target else _float32_of(b.dtype)
        assert a.dtype == want, f"{case.id} output {i}: float32 run gives {a.dtype}, expected {want}"
        assert var.dtype == want.name, f"{case.id} output {i}: declared {var.dtype}, computed {want}"
        assert a.shape == b.shape
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{case.id} output {i}")


GRAD_CASES = [c for c in CASES if c.grad and get_op_def(c.op).has_gradient]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradient(case: Case):
    if case.use_outputs is None:
        check_grad(case.op, case.inputs, case.attrs, no_grad=case.no_grad, n_out=case.n_out,
                   torch_fn=case.torch_fn, rtol=case.rtol, eps=case.eps)
        return
    # only some outputs reach the loss: the others get a zero-filled gradient
    feeds = _flat_feeds(case.inputs)
    build_all = build_single_op(case.op, case.inputs, case.attrs, case.n_out)
    build = lambda variables: _used(case, build_all(variables))  # noqa: E731
    analytic = check_program_grad(build, feeds, rtol=case.rtol)
    wrt = [k for k, v in feeds.items() if v.dtype.kind == "f"]
    expected = torch_gradients(case.torch_fn, case.inputs, ProgramGradCheck(build, feeds, wrt), wrt)
    for name in wrt:
        np.testing.assert_allclose(analytic[name], expected[name], rtol=case.rtol, atol=1e-9,
                                   err_msg=f"{case.id}: gradient of {name} vs PyTorch")


def test_random_ops_repeat_with_seed():
    def draw():
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup):
            out = build_single_op("uniform_random", {}, {"shape": [5], "dtype": "float64"})({})[0]
        return Executor().run(main, fetch_list=[out], scope=Scope())[0]
    fg.seed(3)
    first = draw()
    fg.seed(3)
    np.testing.assert_array_equal(draw(), first)
    assert not np.array_equal(draw(), first)


# ------------------------------------------------------------------ the meta-test
def test_every_registered_op_is_complete_and_covered():
    """Kernel, shape rule, gradient (or NO_GRADIENT) and a test case for every registered op."""
    covered = {c.op for c in CASES}
    problems = []
    for name, op_def in sorted(registered_ops().items()):
        if not callable(op_def.kernel):
            problems.append(f"{name}: no kernel")
        if not callable(op_def.infer):
            problems.append(f"{name}: no shape/dtype rule")
        if op_def.grad is not NO_GRADIENT and not callable(op_def.grad):
            problems.append(f"{name}: grad is neither a grad maker nor NO_GRADIENT")
        if name in covered:
            continue
        elsewhere = TESTED_ELSEWHERE.get(name)
        if elsewhere is None:
            problems.append(f"{name}: no case in tests/test_ops.py and not listed in TESTED_ELSEWHERE")
            continue
        path = _TESTS_DIR / elsewhere
        if not path.exists() or not re.search(rf"\b{re.escape(name)}\b", path.read_text()):
            problems.append(f"{name}: TESTED_ELSEWHERE says {elsewhere}, which does not mention it")
    for name in TESTED_ELSEWHERE:
        if name in covered:
            problems.append(f"{name}: listed in TESTED_ELSEWHERE but also has a case here; drop one")
    assert not problems, "\n".join(problems)


def test_every_gradient_op_has_a_gradient_case():
    gradient_cases = {c.op for c in GRAD_CASES}
    missing = [n for n, d in registered_ops().items()
               if d.has_gradient and n not in gradient_cases and n not in TESTED_ELSEWHERE]
    assert not missing, f"ops with a gradient but no gradient case: {missing}"


@pytest.mark.parametrize("in_shape, shape, expected", [
    ([-1, 5, 1], [0, -1], (-1, 5)),
    ([-1, 3, 4], [0, 2, -1], (-1, 2, 6)),
    ([-1, 3, 4], [-1, 12], (-1, 12)),
    ([2, 3, 4], [0, -1], (2, 12)),
    ([-1, 3, 4], [0, 0, -1], (-1, 3, 4)),
])
def test_reshape_infers_sizes_around_an_unknown_batch(in_shape, shape, expected):
    x = data("x", in_shape, "float64")
    assert fg.reshape(x, shape).shape == expected


def test_reshape_rejects_impossible_shapes_at_build_time():
    x = data("x", [-1, 3, 4], "float64")
    with pytest.raises(ValueError, match=r"reshape.*\[0, 5, -1\]"):
        fg.reshape(x, [0, 5, -1])


# ------------------------------------------------------------------ one order higher
def _first_order_build(case: Case, wrt: list[str]):
    """A program computing the first-order VJP of the case's op (for a fixed cotangent feed),
    so that check_program_grad differentiates the backward ops themselves: grad of grad."""
    build_op = build_single_op(case.op, case.inputs, case.attrs, case.n_out)

    def build(variables):
        outs = [o for o in _used(case, build_op(variables)) if o.dtype.startswith("float")]
        loss = fg.add_n([fg.sum(o * variables[f"cot{i}"]) for i, o in enumerate(outs)])
        grads = fg.gradients([loss], [variables[k] for k in wrt])
        return [g for g in grads if g is not None]
    return build


SECOND_ORDER_CASES = [c for c in GRAD_CASES if c.second_order]


@pytest.mark.parametrize("case", SECOND_ORDER_CASES, ids=[c.id for c in SECOND_ORDER_CASES])
def test_second_order_gradient(case: Case):
    feeds = _flat_feeds(case.inputs)
    wrt = [k for k, v in feeds.items() if v.dtype.kind == "f"]
    values, _ = run_forward(case)
    float_outs = [v for v in _used(case, values) if v.dtype.kind == "f"]
    cot_rng = np.random.default_rng(7)
    feeds.update({f"cot{i}": cot_rng.uniform(0.5, 1.5, size=v.shape).astype(v.dtype)
                  for i, v in enumerate(float_outs)})
    build = _first_order_build(case, wrt)
    with fg.program_guard(fg.Program(), fg.Program()):
        if not build({k: data(k, v.shape, v.dtype) for k, v in feeds.items()}):
            pytest.skip("the first-order gradient is a symbolic zero: nothing to differentiate")
    check_program_grad(build, feeds, rtol=max(case.rtol, 1e-5), eps=case.eps)


# ------------------------------------------------------------------ declared vs computed dtype and shape
_A = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
_B = np.array([2, 3, 4], dtype=np.int64)
INT_CASES = [
    ("elementwise_add", {"X": _A, "Y": _B}, {}), ("elementwise_sub", {"X": _A, "Y": _B}, {}),
    ("elementwise_mul", {"X": _A, "Y": _B}, {}), ("elementwise_div", {"X": _A, "Y": _B}, {}),
    ("elementwise_pow", {"X": _A, "Y": _B}, {}), ("elementwise_max", {"X": _A, "Y": _B}, {}),
    ("elementwise_min", {"X": _A, "Y": _B}, {}), ("scale", {"X": _A}, {"scale": 2.0, "bias": 1.0}),
    ("scale", {"X": _A}, {"scale": 3.0, "bias": -2.0}), ("sum", {"X": [_A, _A]}, {}), ("assign", {"X": _A}, {}),
    ("reduce_sum", {"X": _A}, {"axis": [1]}), ("reduce_max", {"X": _A}, {"axis": [0]}),
    ("reshape", {"X": _A}, {"shape": [-1]}), ("transpose", {"X": _A}, {}), ("concat", {"X": [_A, _A]}, {}),
    ("slice", {"X": _A}, {}), ("gather", {"X": _A, "Index": _B - 2}, {"axis": 1}),
    ("unsqueeze", {"X": _B}, {"axes": [-1, -2]}), ("unsqueeze", {"X": _B}, {"axes": [2, 0]}),
    ("stack", {"X": [_A, _A]}, {"axis": 1}), ("fill_zeros_like", {"X": _A}, {}),
    ("fill_any_like", {"X": _A}, {"value": 2.0}), ("expand_as", {"X": _B, "Target": _A}, {}),
    ("reduce_as", {"X": _A, "Target": _B}, {}), ("cast", {"X": _A}, {"dtype": "bool"}),
    ("squeeze", {"X": _A[None]}, {"axes": [0]}), ("one_hot", {"X": _B}, {"depth": 5}),
    ("split", {"X": _A}, {"num_or_sections": [1, 2], "axis": 1}),
]


@pytest.mark.parametrize("op, inputs, attrs", INT_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(INT_CASES)])
def test_integer_inputs_compute_what_the_shape_rule_declares(op, inputs, attrs):
    case = Case(op, inputs, attrs, n_out=2 if op == "split" else None)
    values, variables = run_forward(case)
    for value, var in zip(values, variables):
        assert value.dtype.name == var.dtype and value.shape == var.shape, \
            f"{op}: declared {var.dtype}{list(var.shape)}, computed {value.dtype}{list(value.shape)}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_declared_shapes_match_computed_shapes(case: Case):
    values, variables = run_forward(case)
    for value, var in zip(values, variables):
        assert value.shape == var.shape and value.dtype.name == var.dtype, \
            f"{case.id}: declared {var.dtype}{list(var.shape)}, computed {value.dtype}{list(value.shape)}"


@pytest.mark.parametrize("op, inputs", [
    ("softmax_with_cross_entropy", {"Logits": rand(3, 4), "Label": np.array([[0], [-1], [2]])}),
    ("softmax_with_cross_entropy", {"Logits": rand(3, 4), "Label": np.array([0, 4, 2])}),
    ("cross_entropy", {"X": probs(3, 4), "Label": np.array([[0], [-1], [2]])}),
    ("cross_entropy", {"X": probs(3, 4), "Label": np.array([1, 1, 9])}),
    ("gather", {"X": rand(3, 4), "Index": np.array([0, 3])}),
    ("one_hot", {"X": np.array([0, 5])}),
])
def test_out_of_range_labels_and_indices_are_errors_not_wraparound(op, inputs):
    """NumPy would wrap -1 to the last class; the kernel must refuse, naming the op."""
    with pytest.raises(fg.framework.ExecutionError, match=rf"{op}.*out of range"):
        run_forward(Case(op, inputs, {"depth": 5} if op == "one_hot" else {}))


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_float32_gradients_stay_float32(case: Case):
    """The backward ops of a float32 op compute in float32 (no silent float64 upcast) and agree
    with the float64 gradients to float32 precision."""
    def analytic(dtype):
        inputs = {k: _as_dtype(v, dtype) for k, v in case.inputs.items()}
        feeds = _flat_feeds(inputs)
        wrt = [k for k, v in feeds.items() if v.dtype.kind == "f"]
        build_all = build_single_op(case.op, inputs, case.attrs, case.n_out)
        check = ProgramGradCheck(lambda variables: _used(case, build_all(variables)), feeds, wrt)
        return check.analytic()
    low, high = analytic(np.float32), analytic(np.float64)
    for name, value in low.items():
        assert value.dtype == np.float32, f"{case.id}: gradient of float32 {name} is {value.dtype}"
        np.testing.assert_allclose(value, high[name], rtol=2e-3, atol=1e-4, err_msg=f"{case.id}: {name}")


# ------------------------------------------------------------------ build-time errors name the op
F64 = "float64"
BAD_BUILDS = [
    ("split", {"X": ((3, 5), F64)}, {"num_or_sections": 2, "axis": 1}, 2, r"split.*\[3, 5\]"),
    ("split", {"X": ((3, 5), F64)}, {"num_or_sections": [2, 2], "axis": 1}, 2, r"split.*\[2, 2\].*\[3, 5\]"),
    ("reshape", {"X": ((3, 5), F64)}, {"shape": [4, -1]}, None, r"reshape.*\[3, 5\]"),
    ("reshape", {"X": ((3, 5), F64)}, {"shape": [-1, -1]}, None, r"reshape.*more than one -1"),
    ("transpose", {"X": ((3, 5), F64)}, {"perm": [0, 0]}, None, r"transpose.*\[0, 0\].*\[3, 5\]"),
    ("concat", {"X": [((3, 5), F64), ((3,), F64)]}, {"axis": 0}, None, r"concat.*\[3, 5\].*\[3\]"),
    ("concat", {"X": [((3, 5), F64), ((3, 5), "float32")]}, {"axis": 0}, None, r"concat.*float64.*float32"),
    ("gather", {"X": ((3, 5), F64), "Index": ((2,), F64)}, {}, None, r"gather.*Index.*float64"),
    ("softmax_with_cross_entropy", {"Logits": ((3, 5), F64), "Label": ((3, 1), F64)}, {}, None,
     r"softmax_with_cross_entropy.*Label.*float64"),
    ("softmax_with_cross_entropy", {"Logits": ((3, 5), F64), "Label": ((4, 1), "int64")}, {}, None,
     r"softmax_with_cross_entropy.*\[4, 1\].*\[3, 5\]"),
    ("softmax", {"X": ((3, 5), "int64")}, {}, None, r"softmax.*int64"),
    ("reduce_sum", {"X": ((3, 5), F64)}, {"axis": [2]}, None, r"reduce_sum.*axis 2.*\[3, 5\]"),
    ("squeeze", {"X": ((3, 5), F64)}, {"axes": [1]}, None, r"squeeze.*size 5.*\[3, 5\]"),
    ("unsqueeze", {"X": ((3, 5), F64)}, {"axes": [0, 0]}, None, r"unsqueeze.*\[0, 0\].*\[3, 5\]"),
    ("stack", {"X": [((3, 5), F64), ((5, 3), F64)]}, {}, None, r"stack.*\[3, 5\].*\[5, 3\]"),
    ("matmul", {"X": ((3, 5), F64), "Y": ((5, 2), "float32")}, {}, None, r"matmul.*float64.*float32"),
    ("matmul", {"X": ((3, 5), F64), "Y": ((3, 2), F64)}, {"transpose_y": True}, None, r"matmul.*\[3, 5\].*\[3, 2\]"),
    ("sum", {"X": [((3, 5), F64), ((3, 4), F64)]}, {}, None, r"sum.*\[3, 5\].*\[3, 4\]"),
    ("elementwise_sub", {"X": ((2, 3), F64), "Y": ((3, 2), F64)}, {}, None, r"elementwise_sub.*\[2, 3\].*\[3, 2\]"),
    ("logical_and", {"X": ((2,), F64), "Y": ((2,), "bool")}, {}, None, r"logical_and.*float64"),
    ("slice", {"X": ((3, 5), F64)}, {"axes": [3], "starts": [0], "ends": [1]}, None, r"slice.*axis 3.*\[3, 5\]"),
    ("cross_entropy", {"X": ((3, 5), F64), "Label": ((3, 1), F64)}, {}, None, r"cross_entropy.*Label.*float64"),
    ("mean", {"X": ((3, 5), "int64")}, {}, None, r"mean.*cast.*int64"),
    ("reduce_mean", {"X": ((3, 5), "int64")}, {"axis": [0]}, None, r"reduce_mean.*cast.*int64"),
]


@pytest.mark.parametrize("op, inputs, attrs, n_out, pattern", BAD_BUILDS,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_BUILDS)])
def test_bad_input_is_rejected_at_build_time_naming_op_and_shapes(op, inputs, attrs, n_out, pattern):
    variables = {}
    for slot, spec in inputs.items():
        if isinstance(spec, list):
            for i, (shape, dtype) in enumerate(spec):
                variables[f"{slot}_{i}"] = data(f"{slot}_{i}", shape, dtype)
        else:
            variables[slot] = data(slot, *spec)
    fake_inputs = {slot: ([0] * len(spec) if isinstance(spec, list) else 0) for slot, spec in inputs.items()}
    with pytest.raises((ValueError, TypeError), match=pattern):
        build_single_op(op, fake_inputs, attrs, n_out)(variables)


# ------------------------------------------------------------------ property: any broadcast pair
@st.composite
def _broadcast_pair(draw):
    """Two shapes NumPy can broadcast: each dim of the shorter one is equal, 1, or the other 1."""
    out = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    def operand():
        keep = draw(st.integers(0, len(out)))
        return tuple(d if draw(st.booleans()) else 1 for d in out[len(out) - keep:])
    return operand(), operand()


_TORCH_BINARY = {"elementwise_add": torch.add, "elementwise_sub": torch.sub, "elementwise_mul": torch.mul,
                 "elementwise_div": torch.div, "elementwise_max": torch.maximum, "elementwise_min": torch.minimum,
                 "elementwise_pow": torch.pow}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(sorted(_TORCH_BINARY)), shapes=_broadcast_pair(), seed=st.integers(0, 2**16))
def test_elementwise_ops_broadcast_any_compatible_shapes(op, shapes, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, size=shapes[0])
    y = rng.uniform(0.5, 2.0, size=shapes[1]) + (0.03 if op in ("elementwise_max", "elementwise_min") else 0.0)
    fn = _TORCH_BINARY[op]
    check_grad(op, {"X": x, "Y": y}, torch_fn=lambda X, Y: fn(X, Y))


_TORCH_REDUCE = {"reduce_sum": torch.sum, "reduce_mean": torch.mean, "reduce_max": torch.amax,
                 "reduce_min": torch.amin}


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(sorted(_TORCH_REDUCE)), shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       data_=st.data(), keepdim=st.booleans(), seed=st.integers(0, 2**16))
def test_reductions_over_any_axes(op, shape, data_, keepdim, seed):
    axes = data_.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape),
                               unique_by=lambda a: a % len(shape)))
    x = np.random.default_rng(seed).normal(size=shape)
    fn = _TORCH_REDUCE[op]
    check_grad(op, {"X": x}, {"axis": axes, "keepdim": keepdim},
               torch_fn=lambda X: fn(X, dim=tuple(axes), keepdim=keepdim))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernels_never_modify_their_inputs(case: Case):
    """The executor aliases arrays between ops, so a kernel writing into an input corrupts others."""
    op_def = get_op_def(case.op)
    args = []
    for slot in op_def.inputs:
        value = case.inputs.get(slot.name)
        if value is None:
            args.append(None)
        elif isinstance(value, list):
            args.append([np.array(v) for v in value])
        else:
            args.append(np.array(value))
    before = [[a.copy() for a in arg] if isinstance(arg, list) else (None if arg is None else arg.copy())
              for arg in args]
    for arg in args:   # a kernel that writes into a read-only input raises
        for a in (arg if isinstance(arg, list) else [arg]):
            if a is not None:
                a.flags.writeable = False
    op_def.kernel(*args, **{**op_def.attrs, **case.attrs})
    for arg, saved in zip(args, before):
        for a, b in zip(arg if isinstance(arg, list) else [arg], saved if isinstance(saved, list) else [saved]):
            if a is not None:
                np.testing.assert_array_equal(a, b)
