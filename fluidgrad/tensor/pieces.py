"""Cutting, joining and index-making functions of Paddle 2 and PyTorch, composed of registered
ops: take, tensor_split, vstack / hstack / dstack / column_stack / row_stack, tril_indices,
triu_indices, logspace."""
from __future__ import annotations

from numbers import Integral
from typing import Any, Sequence

import numpy as np

from ..dispatch import apply_op, is_tensor
from ..framework import Variable, normalize_dtype
from ..framework.dtypes import get_default_dtype
from ..functions import concat, reshape, slice, unsqueeze
from ..indexing import constant
from ..functions import remainder
from .keywords import paddle_or_torch
from .math import clip

__all__ = ["column_stack", "dstack", "hstack", "logspace", "row_stack", "take", "tensor_split", "tril_indices",
           "triu_indices", "vstack"]


def _describe(x: Any) -> str:
    return f"{getattr(x, 'name', None) or type(x).__name__} (shape {list(x.shape)}, {x.dtype})"


def take(x: Any, index: Any, mode: str = "raise", name: str | None = None) -> Any:
    """x read as a flat vector at the integer positions `index` (result: index's shape); negative
    positions count from the end (paddle.take, torch.take). mode 'wrap' takes positions modulo
    the size, 'clip' clamps them into [0, size - 1]; 'raise' refuses one out of range."""
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if "int" not in str(index.dtype):
        raise TypeError(f"take: index must be an integer tensor, got {_describe(index)}")
    flat_index = reshape(index, [-1])
    if mode != "raise":
        size = int(np.prod(x.shape))
        if any(d < 0 for d in x.shape):
            raise ValueError(f"take: mode {mode!r} needs the size of x, unknown for {_describe(x)}")
        flat_index = remainder(flat_index, constant(size, index)) if mode == "wrap" else clip(flat_index, 0, size - 1)
    taken = apply_op("gather", {"X": reshape(x, [-1]), "Index": flat_index}, {"axis": 0, "wrap_negative": True})
    return apply_op("reshape_as", {"X": taken, "Target": index})


def tensor_split(x: Any, num_or_indices: int | Sequence[int] | None = None, axis: int = 0, name: str | None = None, *,
                 indices_or_sections: Any = None, sections: int | None = None, indices: Sequence[int] | None = None,
                 dim: int | None = None) -> list[Any]:
    """x cut along `axis` into num_or_indices parts as equal as can be (the first size % n one
    longer), or at the given positions (a part between decreasing positions is empty)
    (paddle.tensor_split, torch.tensor_split with its indices_or_sections= / sections= / indices=
    and dim=; never an error for an uneven cut, unlike split)."""
    for torch_name, torch_value in (("indices_or_sections", indices_or_sections), ("sections", sections),
                                    ("indices", indices)):
        num_or_indices = paddle_or_torch("tensor_split", "num_or_indices", num_or_indices, torch_name, torch_value)
    if num_or_indices is None:
        raise TypeError("tensor_split: missing the argument num_or_indices= (PyTorch's indices_or_sections=)")
    axis = paddle_or_torch("tensor_split", "axis", axis, "dim", dim, default=0)
    rank = len(x.shape)
    if not -rank <= int(axis) < max(rank, 1) or rank == 0:
        raise ValueError(f"tensor_split: axis {axis} is out of range for {_describe(x)}")
    axis = int(axis) % rank
    length = x.shape[axis]
    if isinstance(num_or_indices, Integral):
        parts = int(num_or_indices)
        if parts <= 0 or length < 0:
            raise ValueError(f"tensor_split: needs a number of parts > 0 (got {parts}) and a known size along "
                             f"axis {axis} of {_describe(x)}")
        sizes = [length // parts + (1 if i < length % parts else 0) for i in range(parts)]
        cuts = list(np.cumsum(sizes)[:-1])
    else:
        cuts = [int(c) for c in num_or_indices]
    if length >= 0:
        cuts = [min(max(c + length if c < 0 else c, 0), length) for c in cuts]
    starts, ends = [0] + cuts, cuts + [length if length >= 0 else np.iinfo(np.int64).max]
    return [slice(x, [axis], [start], [max(start, end)]) for start, end in zip(starts, ends)]


def _at_least(x: Any, rank: int, where_new: str) -> Any:
    """torch.atleast_2d / 3d: [] -> [1, 1(, 1)], [N] -> [1, N] ("front") or [N, 1] ("back"),
    [N] -> [1, N, 1] and [M, N] -> [M, N, 1] for 3-D."""
    have = len(x.shape)
    if have >= rank:
        return x
    if have == 0:
        return reshape(x, [1] * rank)
    if rank == 2:
        return unsqueeze(x, 0 if where_new == "front" else 1)
    return unsqueeze(x, [0, 2] if have == 1 else [2])


def _values(name: str, xs: Any) -> list[Any]:
    if isinstance(xs, Variable) or is_tensor(xs):
        raise TypeError(f"{name}: expects a list of tensors, got a single {_describe(xs)}")
    return list(xs)


def vstack(x: Sequence[Any], name: str | None = None) -> Any:
    """The inputs stacked as rows: 1-D ones become [1, N], then joined on axis 0."""
    return concat([_at_least(v, 2, "front") for v in _values("vstack", x)], axis=0)


def row_stack(x: Sequence[Any], name: str | None = None) -> Any:
    """vstack under its other name."""
    return vstack(x)


def hstack(x: Sequence[Any], name: str | None = None) -> Any:
    """The inputs joined column-wise: on axis 0 when they are 1-D, else on axis 1."""
    xs = [reshape(v, [1]) if len(v.shape) == 0 else v for v in _values("hstack", x)]
    return concat(xs, axis=0 if len(xs[0].shape) == 1 else 1)


def column_stack(x: Sequence[Any], name: str | None = None) -> Any:
    """1-D inputs become the columns [N, 1] of a matrix; 2-D ones join on axis 1."""
    xs = [reshape(v, [1, 1]) if len(v.shape) == 0 else _at_least(v, 2, "back") for v in _values("column_stack", x)]
    return concat(xs, axis=1)


def dstack(x: Sequence[Any], name: str | None = None) -> Any:
    """The inputs joined depth-wise on axis 2, after [N] -> [1, N, 1] and [M, N] -> [M, N, 1]."""
    return concat([_at_least(v, 3, "") for v in _values("dstack", x)], axis=2)


def _triangle_indices(caller: str, row: int, col: int | None, offset: int, dtype: Any, lower: bool) -> Any:
    col = row if col is None else col
    if int(row) < 0 or int(col) < 0:
        raise ValueError(f"{caller}: row and col must be >= 0, got {row} and {col}")
    pick = np.tril_indices if lower else np.triu_indices
    dtype = normalize_dtype(dtype)
    if "int" not in dtype:
        raise TypeError(f"{caller}: dtype must be an integer dtype, got {dtype}")
    return constant(np.stack(pick(int(row), int(offset), int(col))).astype(dtype).reshape(2, -1), None)


def tril_indices(row: int, col: int | None = None, offset: int = 0, dtype: Any = "int64", name: str | None = None) -> Any:
    """The [2, K] row and column indices of the lower triangle (diagonal `offset` included) of a
    row x col matrix, row by row (paddle.tril_indices, torch.tril_indices; col defaults to row)."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, lower=True)


def triu_indices(row: int, col: int | None = None, offset: int = 0, dtype: Any = "int64", name: str | None = None) -> Any:
    """The [2, K] row and column indices of the upper triangle (from diagonal `offset` up)."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, lower=False)


def _number(value: Any) -> Any:
    if isinstance(value, Variable):
        raise TypeError(f"logspace: start, stop, num and base must be numbers in static mode, got {value.name}")
    return value.item() if is_tensor(value) else value


def logspace(start: float, stop: float | None = None, num: int | None = None, base: float = 10.0, dtype: Any = None,
             name: str | None = None, *, end: float | None = None, steps: int | None = None) -> Any:
    """base ** linspace(start, stop, num): `num` values spaced evenly on a log scale (the default
    float dtype unless given; paddle.logspace, torch.logspace with its end= and steps=)."""
    stop, num = paddle_or_torch("logspace", "stop", stop, "end", end), paddle_or_torch("logspace", "num", num,
                                                                                         "steps", steps)
    if stop is None or num is None:
        raise TypeError("logspace: missing the arguments stop= and num= (PyTorch's end= and steps=)")
    start, stop, num, base = (_number(v) for v in (start, stop, num, base))
    if int(num) < 0:
        raise ValueError(f"logspace: num must be >= 0, got {num}")
    values = np.power(float(base), np.linspace(float(start), float(stop), int(num)))
    return constant(values.astype(normalize_dtype(dtype or get_default_dtype())), None)
