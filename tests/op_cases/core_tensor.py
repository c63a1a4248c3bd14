"""Cases of the core tensor ops: one OpCase per line, checked by `fluidgrad.testing.check_op`."""
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
# ---- tensor.py
c += [Case("reshape", {"X": rand(2, 3, 4)}, {"shape": [0, -1]}, id="reshape-0-neg1",
           torch_fn=lambda X: X.reshape(2, 12)),
      Case("reshape", {"X": rand(2, 3, 4)}, {"shape": [-1]}, id="reshape-flat", torch_fn=lambda X: X.reshape(-1)),
      Case("reshape", {"X": rand(2, 3, 4)}, {"shape": [4, 0, 2]}, id="reshape-0-middle",
           torch_fn=lambda X: X.reshape(4, 3, 2)),
      Case("reshape", {"X": rand(6)}, {"shape": [-1, 1, 2]}, id="reshape-neg1-first",
           torch_fn=lambda X: X.reshape(3, 1, 2)),
      Case("reshape", {"X": rand(2, 3, 4), "ShapeTensor": np.array([2, -1], "int64")}, {"shape": [2, 12]},
           id="reshape-shape-tensor", torch_fn=lambda X, ShapeTensor: X.reshape(*ShapeTensor.tolist())),
      Case("reshape", {"X": rand(2, 3, 4), "ShapeTensor": np.array([0, 4, 3], "int32")}, {"shape": [0, -1, 3]},
           id="reshape-shape-tensor-copy-0", torch_fn=lambda X, ShapeTensor: X.reshape(2, 4, 3)),
      Case("shape", {"X": rand(2, 3, 4)}, grad=False, torch_fn=lambda X: T.tensor(X.shape, dtype=T.int64)),
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
      Case("gather", {"X": rand(4, 3), "Index": np.array([-1, 0, -4])}, {"wrap_negative": True},
           id="gather-negative-wrapped", torch_fn=lambda X, Index: X[Index]),
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

CASES = c
