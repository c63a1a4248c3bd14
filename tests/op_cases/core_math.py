"""Cases of the core math ops: one OpCase per line, checked by `fluidgrad.testing.check_op`."""
from __future__ import annotations

import numpy as np  # noqa: F401
import torch
import torch.nn.functional as TF  # noqa: F401

from fluidgrad.testing import OpCase as Case

from ._torch_refs import (_ce_torch, _gather_torch, _random_check, _slice_grad_torch, _swce_torch,  # noqa: F401
                          _unreduce_torch, _zero_grad_of)
from .common import distinct, ints, nonzero, pos, probs, rand  # noqa: F401

T = torch
c: list[Case] = []
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
      Case("fill_constant", {"ShapeTensor": np.array([2, 3], "int64")}, {"shape": [2, 3], "value": 1.5,
           "dtype": "float64"}, id="fill_constant-shape-tensor", grad=False,
           torch_fn=lambda ShapeTensor: T.full(tuple(ShapeTensor.tolist()), 1.5, dtype=T.float64)),
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

CASES = c
