"""Op cases: selection and indexing (fluidgrad/ops/search.py, and indexing ops of ops/tensor.py)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

from fluidgrad.testing import OpCase as Case
from op_cases.common import distinct, ints, rand

T = torch
_LOW = -2**31


def _distinct_rows(rows, cols, k):
    """k distinct column indices per row (put_along_axis 'assign' has no repeated targets)."""
    return np.argsort(rand(rows, cols), axis=1)[:, :k].astype(np.int64)


def _last_arg(pick):
    def fn(X, axis):
        x = np.asarray(X)
        return [np.asarray(x.shape[axis] - 1 - pick(np.flip(x, axis), axis=axis), dtype=np.int64)]
    return fn


def _index_put(X, where, value):
    out = X.clone()
    out[where] = value
    return out


def _scatter_overwrite_false(X, Ids, Updates):
    return X.index_fill(0, Ids, 0).index_add(0, Ids, Updates)


_TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0]])
_GND_INDEX = np.stack([ints(3, 5), ints(4, 5)], axis=-1)
_SCATTER_DISTINCT = np.array([2, 0, 3])
_ROW_INDEX = _distinct_rows(3, 5, 2)

CASES = [
    # where: the gradient goes to X where Condition holds, to Y elsewhere (summed where broadcast)
    Case("where", {"Condition": rand(3, 4) > 0, "X": rand(3, 4), "Y": rand(3, 4)},
         torch_fn=lambda Condition, X, Y: T.where(Condition, X, Y)),
    Case("where", {"Condition": rand(3, 1) > 0, "X": rand(4), "Y": rand(2, 3, 4)}, id="where-broadcast",
         torch_fn=lambda Condition, X, Y: T.where(Condition, X, Y)),
    # arg_max / arg_min: integer outputs, no gradient
    Case("arg_max", {"X": distinct(3, 4)}, {"axis": 1}, torch_fn=lambda X: T.argmax(X, 1)),
    Case("arg_max", {"X": distinct(2, 3, 4)}, {"axis": 0, "keepdim": True}, id="arg_max-keepdim",
         torch_fn=lambda X: T.argmax(X, 0, keepdim=True)),
    Case("arg_max", {"X": distinct(3, 4)}, id="arg_max-flat", torch_fn=lambda X: T.argmax(X)),
    Case("arg_max", {"X": _TIES}, {"axis": 1}, id="arg_max-ties-first", torch_fn=lambda X: T.argmax(X, 1)),
    Case("arg_max", {"X": _TIES}, {"axis": 1, "select_last_index": True}, id="arg_max-ties-last",
         numpy_fn=lambda X: _last_arg(np.argmax)(X, 1)),
    Case("arg_min", {"X": distinct(3, 4)}, {"axis": -1, "dtype": "int32"}, id="arg_min-int32",
         torch_fn=lambda X: T.argmin(X, -1).to(T.int32)),
    Case("arg_min", {"X": ints(5, 3, 6)}, {"axis": 0}, id="arg_min-ints", torch_fn=lambda X: T.argmin(X, 0)),
    Case("arg_min", {"X": _TIES}, {"axis": 1, "select_last_index": True}, id="arg_min-ties-last",
         numpy_fn=lambda X: _last_arg(np.argmin)(X, 1)),
    # sorting: the gradient is a scatter of the output gradient back to where each value came from
    Case("argsort", {"X": distinct(3, 5)}, torch_fn=lambda X: T.sort(X, -1)),
    Case("argsort", {"X": distinct(4, 3)}, {"axis": 0, "descending": True}, id="argsort-descending-axis0",
         torch_fn=lambda X: T.sort(X, 0, descending=True)),
    Case("argsort", {"X": _TIES}, {"descending": True}, id="argsort-ties-stable", grad=False,
         torch_fn=lambda X: T.sort(X, dim=-1, descending=True, stable=True)),
    Case("argsort", {"X": ints(4, 3, 6)}, id="argsort-ints", grad=False,
         torch_fn=lambda X: T.sort(X, dim=-1, stable=True)),
    Case("top_k", {"X": distinct(3, 6) * 4}, {"k": 2}, torch_fn=lambda X: T.topk(X, 2)),  # no ties as integers
    Case("top_k", {"X": distinct(5, 3)}, {"k": 3, "axis": 0, "largest": False}, id="top_k-smallest-axis0",
         torch_fn=lambda X: T.topk(X, 3, 0, largest=False)),
    Case("top_k", {"X": distinct(2, 30)}, {"k": 4}, id="top_k-partial", torch_fn=lambda X: T.topk(X, 4)),
    Case("top_k", {"X": np.array(0.3)}, {"k": 1, "axis": -1}, id="top_k-0d", torch_fn=lambda X: T.topk(X, 1)),
    Case("argsort", {"X": np.array(0.3)}, {"axis": -1, "descending": True}, id="argsort-0d",
         torch_fn=lambda X: T.sort(X, -1, descending=True)),
    Case("top_k", {"X": distinct(3, 6)}, {"k": 2}, id="top_k-indices-unused", use_outputs=(0,),
         torch_fn=lambda X: T.topk(X, 2)[0]),
    # take_along_axis / put_along_axis (ONNX GatherElements / ScatterElements)
    Case("take_along_axis", {"X": rand(3, 4), "Index": ints(4, 3, 6)}, {"axis": 1},
         torch_fn=lambda X, Index: T.gather(X, 1, Index)),
    Case("take_along_axis", {"X": rand(4, 3), "Index": ints(4, 2, 3)}, {"axis": 0}, id="take_along_axis-short",
         torch_fn=lambda X, Index: T.gather(X, 0, Index)),
    Case("take_along_axis", {"X": rand(3, 4), "Index": ints(8, 3, 4) - 4}, {"axis": -1, "wrap_negative": True},
         id="take_along_axis-negative", torch_fn=lambda X, Index: T.take_along_dim(X, Index, 1)),
    Case("put_along_axis", {"X": rand(6), "Index": np.array([-1, 2, -6]), "Value": rand(3)},
         {"axis": 0, "reduce": "add", "wrap_negative": True}, id="put_along_axis-negative",
         torch_fn=lambda X, Index, Value: X.put(Index, Value, accumulate=True)),
    Case("put_along_axis", {"X": rand(3, 5), "Index": _ROW_INDEX, "Value": rand(3, 2)}, {"axis": 1},
         torch_fn=lambda X, Index, Value: X.scatter(1, Index, Value)),
    Case("put_along_axis", {"X": rand(3, 5), "Index": ints(5, 3, 6), "Value": rand(3, 6)},
         {"axis": 1, "reduce": "add"}, id="put_along_axis-add-repeats",
         torch_fn=lambda X, Index, Value: X.scatter_add(1, Index, Value)),
    Case("put_along_axis", {"X": rand(4, 3), "Index": ints(4, 2, 3), "Value": rand()},
         {"axis": 0, "reduce": "add"}, id="put_along_axis-scalar-value",
         torch_fn=lambda X, Index, Value: X.scatter_add(0, Index, Value.expand(Index.shape))),
    Case("put_along_axis", {"X": rand(3, 5), "Index": ints(5, 3, 4), "Value": rand(3, 4)},
         {"axis": 1, "reduce": "mul"}, id="put_along_axis-mul", grad=False,  # X's gradient: test_indexing.py
         torch_fn=lambda X, Index, Value: X.scatter_reduce(1, Index, Value, "prod")),
    Case("put_along_axis", {"X": distinct(3, 5), "Index": ints(5, 3, 4), "Value": distinct(3, 4) + 0.125},
         {"axis": 1, "reduce": "amax"}, id="put_along_axis-amax", grad=False,
         torch_fn=lambda X, Index, Value: X.scatter_reduce(1, Index, Value, "amax")),
    # gather_nd / scatter_nd (ONNX GatherND / ScatterND, paddle gather_nd / scatter_nd_add)
    Case("gather_nd", {"X": rand(3, 4, 2), "Index": _GND_INDEX},
         torch_fn=lambda X, Index: X[Index[:, 0], Index[:, 1]]),
    Case("gather_nd", {"X": rand(3, 4), "Index": ints(3, 2, 2, 1)}, id="gather_nd-rows",
         torch_fn=lambda X, Index: X[Index[..., 0]]),
    Case("gather_nd", {"X": rand(2, 3, 4), "Index": ints(3, 2, 5, 1)}, {"batch_dims": 1}, id="gather_nd-batch",
         torch_fn=lambda X, Index: X[T.arange(2)[:, None], Index[..., 0]]),
    Case("scatter_nd", {"X": rand(3, 4), "Index": ints(3, 5, 1), "Updates": rand(5, 4)},
         torch_fn=lambda X, Index, Updates: X.index_add(0, Index[:, 0], Updates)),
    Case("scatter_nd", {"X": rand(3, 4), "Index": _GND_INDEX, "Updates": rand(5)}, id="scatter_nd-elements",
         torch_fn=lambda X, Index, Updates: X.index_put((Index[:, 0], Index[:, 1]), Updates, accumulate=True)),
    Case("scatter_nd", {"X": rand(4, 3), "Index": _SCATTER_DISTINCT[:, None], "Updates": rand(3, 3)},
         {"reduce": "assign"}, id="scatter_nd-assign",
         torch_fn=lambda X, Index, Updates: X.index_copy(0, Index[:, 0], Updates)),
    Case("scatter_nd", {"X": rand(2, 3, 4), "Index": ints(3, 2, 5, 1), "Updates": rand(2, 5, 4)},
         {"batch_dims": 1}, id="scatter_nd-batch",
         torch_fn=lambda X, Index, Updates: X.index_put((T.arange(2)[:, None], Index[..., 0]), Updates,
                                                        accumulate=True)),
    # an index row of length 0 selects all of X (all of the batch element with batch_dims)
    Case("gather_nd", {"X": rand(2, 3), "Index": np.zeros((4, 0), np.int64)}, id="gather_nd-empty-rows",
         torch_fn=lambda X, Index: X.expand(4, 2, 3)),
    Case("gather_nd", {"X": rand(2, 3, 4), "Index": np.zeros((2, 3, 0), np.int64)}, {"batch_dims": 1},
         id="gather_nd-batch-empty-rows", torch_fn=lambda X, Index: X[:, None].expand(2, 3, 3, 4)),
    Case("scatter_nd", {"X": rand(2, 3), "Index": np.zeros((4, 0), np.int64), "Updates": rand(4, 2, 3)},
         id="scatter_nd-empty-rows", torch_fn=lambda X, Index, Updates: X + Updates.sum(0)),
    # scatter: rows of axis 0
    Case("scatter", {"X": rand(4, 3), "Ids": _SCATTER_DISTINCT, "Updates": rand(3, 3)},
         torch_fn=lambda X, Ids, Updates: X.index_copy(0, Ids, Updates)),
    Case("scatter", {"X": rand(4, 3), "Ids": np.array([1, 3, 1, 0]), "Updates": rand(4, 3)}, {"overwrite": False},
         id="scatter-sum-repeats", torch_fn=_scatter_overwrite_false),
    # tril / triu
    Case("tril_triu", {"X": rand(3, 4)}, {"diagonal": 1}, torch_fn=lambda X: T.tril(X, 1)),
    Case("tril_triu", {"X": rand(2, 3, 4)}, {"diagonal": -1, "lower": False}, id="triu-batched",
         torch_fn=lambda X: T.triu(X, -1)),
    # one_hot on another axis (a negative label is an error: test_index_refusals.py)
    Case("one_hot", {"X": np.array([[0, 1, 2], [1, 2, 0]])}, {"depth": 3, "axis": 0, "dtype": "float64"},
         id="one_hot-axis0", torch_fn=lambda X: TF.one_hot(X, 3).permute(2, 0, 1).to(T.float64)),
    # strided slices, negative steps; x[...] = v
    Case("slice", {"X": rand(5, 6)}, {"axes": [0, 1], "starts": [4, 0], "ends": [_LOW, 6], "strides": [-2, 3]},
         id="slice-strided-negative", torch_fn=lambda X: T.flip(X, [0])[0::2, 0::3]),
    Case("slice", {"X": rand(7, 2)}, {"axes": [0], "starts": [-2], "ends": [1], "strides": [-2]},
         id="slice-negative-bounds", torch_fn=lambda X: T.flip(X, [0])[1:5:2]),
    Case("slice_grad", {"X": rand(3, 2), "Target": rand(5, 6)},
         {"axes": [0, 1], "starts": [4, 0], "ends": [_LOW, 6], "strides": [-2, 3]}, id="slice_grad-strided",
         torch_fn=lambda X, Target: _index_put(T.zeros_like(Target), (T.tensor([4, 2, 0])[:, None],
                                                                       T.tensor([0, 3])), X)),
    Case("set_value", {"X": rand(4, 5), "Value": rand(5)},
         {"axes": [0], "starts": [1], "ends": [2], "decrease_axes": [0]},
         torch_fn=lambda X, Value: _index_put(X, 1, Value)),
    Case("set_value", {"X": rand(4, 5), "Value": rand(2, 1)},
         {"axes": [0, 1], "starts": [0, 4], "ends": [4, _LOW], "strides": [2, -2]}, id="set_value-strided",
         torch_fn=lambda X, Value: _index_put(X, (T.tensor([0, 2])[:, None], T.tensor([4, 2, 0])),
                                              Value.expand(2, 3))),
    Case("set_value", {"X": rand(3, 4), "Value": rand()}, {"axes": [1], "starts": [1], "ends": [3]},
         id="set_value-scalar", torch_fn=lambda X, Value: _index_put(X, (slice(None), slice(1, 3)), Value)),
]
