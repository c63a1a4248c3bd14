"""Selection and indexing: where, argmax, topk, sort, take_along_axis, gather_nd, scatter, ...

Paddle 2 names and signatures; each serves both modes through `apply_op`.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..dispatch import apply_op, is_tensor
from ..framework import Variable, normalize_dtype
from ..indexing import constant, create
from ..indexing import index_put as _index_put
from ..framework.torch_forms import torch_keywords
from . import return_types

__all__ = ["where", "argmax", "argmin", "topk", "sort", "argsort", "take_along_axis", "put_along_axis",
           "gather_nd", "kthvalue", "scatter", "scatter_nd_add", "scatter_nd", "index_put", "index_select", "masked_fill", "nonzero",
           "tril", "triu"]


def _is_value(x: Any) -> bool:
    return isinstance(x, Variable) or is_tensor(x)


def _promoted_for(value: Any, scalar: Any) -> Any:
    """value cast to float32 when the other side is a Python float and value is integer or bool, as
    torch promotes (casting 0.5 to the integer dtype would silently give 0)."""
    if isinstance(scalar, float) and not any(kind in str(value.dtype) for kind in ("float", "complex")):
        return apply_op("cast", {"X": value}, {"dtype": "float32"})
    return value


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Any:
    """x where condition holds, else y (broadcast together); a Python number takes the other's dtype
    (a Python float next to an integer or bool tensor promotes both to float32, as torch).
    `where(condition)` alone is `nonzero(condition, as_tuple=True)`."""
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    if _is_value(x):
        x = _promoted_for(x, y)
        y = constant(y, x)
    elif _is_value(y):
        y = _promoted_for(y, x)
        x = constant(x, y)
    else:
        dtype = "float32" if isinstance(x, float) or isinstance(y, float) else "int64"
        x = constant(x, condition, dtype)
        y = constant(y, x)
    if condition.dtype != "bool":
        condition = apply_op("cast", {"X": condition}, {"dtype": "bool"})
    return apply_op("where", {"Condition": condition, "X": x, "Y": y})


def _arg(op_type: str, x: Any, axis: int | None, keepdim: bool, dtype: Any) -> Any:
    return apply_op(op_type, {"X": x}, {"axis": None if axis is None else int(axis), "keepdim": bool(keepdim),
                                        "select_last_index": False, "dtype": normalize_dtype(dtype)})


@torch_keywords
def argmax(x: Any, axis: int | None = None, keepdim: bool = False, dtype: Any = "int64",
           name: str | None = None) -> Any:
    """Index of the largest value along axis (of the flattened x when axis is None); the first on ties."""
    return _arg("arg_max", x, axis, keepdim, dtype)


@torch_keywords
def argmin(x: Any, axis: int | None = None, keepdim: bool = False, dtype: Any = "int64",
           name: str | None = None) -> Any:
    """The index of the smallest value along `axis` (of the flattened x when axis is None)."""
    return _arg("arg_min", x, axis, keepdim, dtype)


@torch_keywords
def topk(x: Any, k: int, axis: int | None = None, largest: bool = True, sorted: bool = True,
         name: str | None = None) -> tuple[Any, Any]:
    """(values, indices) of the k largest (or smallest) entries along axis (default the last), a
    named pair as torch's (`.values`, `.indices`)."""
    attrs = {"k": int(k), "axis": -1 if axis is None else int(axis), "largest": bool(largest), "sorted": bool(sorted)}
    return return_types.topk(*apply_op("top_k", {"X": x}, attrs))


@torch_keywords
def kthvalue(x: Any, k: int, axis: int | None = None, keepdim: bool = False, name: str | None = None) -> tuple[Any, Any]:
    """(values, indices) of the k-th smallest entries along axis (default the last; k counts from
    1), as paddle.kthvalue and torch.kthvalue (a named pair: `.values`, `.indices`): the last of
    top_k's k smallest, so the gradient goes to the chosen entry."""
    along = -1 if axis is None else int(axis)
    rank = len(x.shape)
    if not -max(rank, 1) <= along < max(rank, 1):
        raise ValueError(f"kthvalue: axis {axis} is out of range for shape {list(x.shape)}")
    along %= max(rank, 1)
    size = x.shape[along] if rank else 1
    if not 1 <= int(k) <= (size if size >= 0 else int(k)):
        raise ValueError(f"kthvalue: k={k} must lie in [1, {size}] for axis {along} of shape {list(x.shape)}")
    values, indices = topk(x, int(k), axis=along, largest=False, sorted=True)
    if rank == 0:
        return return_types.kthvalue(values, indices)
    picked = [apply_op("slice", {"X": v}, {"axes": [along], "starts": [int(k) - 1], "ends": [int(k)],
                                            "strides": None}) for v in (values, indices)]
    if not keepdim:
        picked = [apply_op("squeeze", {"X": v}, {"axes": [along]}) for v in picked]
    return return_types.kthvalue(picked[0], picked[1])


def sort(x: Any, axis: int = -1, descending: bool = False, stable: bool = False, name: str | None = None) -> Any:
    """Sorted values (always a stable sort)."""
    return apply_op("argsort", {"X": x}, {"axis": int(axis), "descending": bool(descending)})[0]


@torch_keywords
def argsort(x: Any, axis: int = -1, descending: bool = False, stable: bool = False,
            name: str | None = None) -> Any:
    """The indices that sort x along `axis` (descending if asked); no gradient."""
    return apply_op("argsort", {"X": x}, {"axis": int(axis), "descending": bool(descending)})[1]


@torch_keywords
def take_along_axis(arr: Any, indices: Any, axis: int, broadcast: bool = True) -> Any:
    """`out[i][j] = arr[indices[i][j]][j]` for axis 0 (torch.gather). indices has arr's rank and may
    be shorter off axis; a negative index is an error, as in torch.gather (Paddle 3 and NumPy count
    it from the end, as fluidgrad's take_along_dim does after torch.take_along_dim)."""
    return _taken_along(arr, indices, axis)


def _taken_along(arr: Any, indices: Any, axis: int, wrap_negative: bool = False) -> Any:
    return apply_op("take_along_axis", {"X": arr, "Index": indices}, {"axis": int(axis),
                                                                      "wrap_negative": bool(wrap_negative)})


@torch_keywords
def put_along_axis(arr: Any, indices: Any, values: Any, axis: int, reduce: str = "assign",
                   include_self: bool = True, broadcast: bool = True) -> Any:
    """arr with values written at indices along axis; reduce: 'assign', 'add', 'mul' ('multiply'),
    'amax', 'amin'. values (a number or a tensor) broadcast to the shape of indices. A negative
    index is an error, as in torch's scatter (Paddle 3 counts it from the end)."""
    if not include_self:
        raise NotImplementedError("put_along_axis: include_self=False is not supported")
    return _put_along(arr, indices, values, axis, reduce)


def _put_along(arr: Any, indices: Any, values: Any, axis: int, reduce: str = "assign",
               wrap_negative: bool = False) -> Any:
    return apply_op("put_along_axis", {"X": arr, "Index": indices, "Value": constant(values, arr)},
                    {"axis": int(axis), "reduce": reduce, "wrap_negative": bool(wrap_negative)})


def gather_nd(x: Any, index: Any, name: str | None = None, batch_dims: int = 0) -> Any:
    """out[i] = x[index[i]]: each row of index's last axis addresses x's leading axes."""
    return apply_op("gather_nd", {"X": x, "Index": index}, {"batch_dims": int(batch_dims)})


def scatter_nd_add(x: Any, index: Any, updates: Any, name: str | None = None) -> Any:
    """x with updates added at the addresses in index (repeated addresses add up)."""
    return apply_op("scatter_nd", {"X": x, "Index": index, "Updates": updates}, {"reduce": "add"})


def scatter_nd(index: Any, updates: Any, shape: Sequence[int], name: str | None = None) -> Any:
    """Zeros of `shape` with updates added at the addresses in index."""
    zeros = create("fill_constant", {"shape": [int(d) for d in shape], "value": 0.0, "dtype": updates.dtype},
                   like=updates)
    return scatter_nd_add(zeros, index, updates)


def index_put(x: Any, indices: Sequence[Any], value: Any, accumulate: bool = False, name: str | None = None) -> Any:
    """x with x[indices] = value, or with value added there (`accumulate`: a repeated index adds once
    per occurrence); `indices` is a tuple of integer or boolean index tensors; value broadcasts."""
    return _index_put(x, indices, value, accumulate)


def scatter(x: Any, index: Any, updates: Any, overwrite: bool = True, name: str | None = None) -> Any:
    """x with rows `index` (1-D) replaced by updates (overwrite), or by the sum of the updates sent
    to each (overwrite=False)."""
    return apply_op("scatter", {"X": x, "Ids": index, "Updates": updates}, {"overwrite": bool(overwrite)})


@torch_keywords
def index_select(x: Any, index: Any, axis: int = 0, name: str | None = None) -> Any:
    """The entries of x at the 1-D integer `index` along `axis`; a negative index is an error (torch's
    and paddle.gather's rule; Paddle 3's index_select counts it from the end)."""
    if len(index.shape) != 1:
        raise ValueError(f"index_select: index must be 1-D, got shape {list(index.shape)}")
    return apply_op("gather", {"X": x, "Index": index}, {"axis": int(axis)})


def masked_fill(x: Any, mask: Any, value: Any, name: str | None = None) -> Any:
    """x with `value` where mask holds (mask broadcasts against x)."""
    return where(mask, constant(value, x), x)


def nonzero(x: Any, as_tuple: bool = False) -> Any:
    """Indices of nonzero entries: [count, rank] int64, or a tuple of rank 1-D index tensors."""
    out = apply_op("nonzero", {"X": x})
    if not as_tuple:
        return out
    rank = len(x.shape)
    return tuple(apply_op("squeeze", {"X": part}, {"axes": [1]})
                 for part in apply_op("split", {"X": out}, {"num_or_sections": rank, "axis": 1}, n_out=rank)) \
        if rank > 1 else (apply_op("squeeze", {"X": out}, {"axes": [1]}),)


def tril(x: Any, diagonal: int = 0, name: str | None = None) -> Any:
    """x with the elements above the `diagonal`-th diagonal set to zero (lower triangle)."""
    return apply_op("tril_triu", {"X": x}, {"diagonal": int(diagonal), "lower": True})


def triu(x: Any, diagonal: int = 0, name: str | None = None) -> Any:
    """x with the elements below the `diagonal`-th diagonal set to zero (upper triangle)."""
    return apply_op("tril_triu", {"X": x}, {"diagonal": int(diagonal), "lower": False})
