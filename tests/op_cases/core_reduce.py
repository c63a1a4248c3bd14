"""Cases of the core reduce ops: one OpCase per line, checked by `fluidgrad.testing.check_op`."""
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
# a 0-D X over axis 0 / -1 (accepted, as PyTorch and Paddle): the value itself
c += [Case(op, {"X": np.array(0.3)}, {"axis": [axis]}, id=f"{op}-0d-axis{axis}",
           torch_fn=lambda X, f=fn, a=axis: f(X, a))
      for op, fn, axis in (("reduce_sum", T.sum, 0), ("reduce_mean", T.mean, -1), ("reduce_max", T.amax, -1))]

CASES = c
