"""Creating tensors: arange, linspace, meshgrid, eye, diag.

Functions without tensor inputs return Tensors, except inside `program_guard` (or after
`enable_static()`), where they append an op, as `fluidgrad.full` does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import apply_op, is_tensor
from ..indexing import constant, create  # noqa: F401  (shared with search.py and manipulation.py)

from ..framework import Variable, normalize_dtype
from ..framework.dtypes import get_default_dtype
from ..framework.sizes import checked_sizes
from ..framework.torch_forms import created
from .diagonals import _diagonal
from .keywords import paddle_or_torch

__all__ = ["arange", "diag", "eye", "linspace", "meshgrid"]


def _number(value: Any) -> Any:
    if isinstance(value, Variable) or is_tensor(value):
        if is_tensor(value):
            return value.item()
        raise TypeError(f"arange/linspace: bounds must be numbers in static mode, got the Variable {value.name}")
    return value


def arange(start: Any = 0, end: Any = None, step: Any = 1, dtype: Any = None, name: str | None = None, *,
           device: Any = None, requires_grad: bool = False) -> Any:
    """[start, end) by step; `arange(n)` counts 0..n-1. Integers give int64, else the default float
    dtype; torch's device= / requires_grad= too (`arange(n, device=x.device)`)."""
    start, end, step = _number(start), _number(end), _number(step)
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, end, step))
        dtype = "int64" if ints else get_default_dtype()
    start, end, step = (int(v) if isinstance(v, (int, np.integer)) else float(v) for v in (start, end, step))
    out = create("range", {"start": start, "end": end, "step": step, "dtype": normalize_dtype(dtype)})
    return created(out, "arange", device, requires_grad)


def linspace(start: float, stop: float | None = None, num: int | None = None, dtype: Any = None,
             name: str | None = None, *, end: float | None = None, steps: int | None = None, device: Any = None,
             requires_grad: bool = False) -> Any:
    """`num` evenly spaced values from `start` to `stop`, both included (the default float dtype
    unless given); torch's names end= / steps= and device= / requires_grad= too."""
    stop, num = paddle_or_torch("linspace", "stop", stop, "end", end), paddle_or_torch("linspace", "num", num,
                                                                                       "steps", steps)
    if stop is None or num is None:
        raise TypeError("linspace: give the end (stop= / end=) and the number of values (num= / steps=)")
    out = create("linspace", {"start": float(_number(start)), "stop": float(_number(stop)),
                              "num": int(_number(num)), "dtype": normalize_dtype(dtype or get_default_dtype())})
    return created(out, "linspace", device, requires_grad)


def meshgrid(*args: Any, indexing: str = "ij", name: str | None = None) -> list[Any]:
    """Coordinate grids of 1-D inputs ('ij': the i-th input varies along axis i; 'xy' swaps the
    first two axes, as NumPy does). Built from reshape and expand, so differentiable twice."""
    xs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for x in xs:
        if len(x.shape) > 1:
            raise ValueError(f"meshgrid: inputs must be 0-D or 1-D, got shape {list(x.shape)}")
    sizes = [x.shape[0] if len(x.shape) else 1 for x in xs]
    order = list(range(len(xs)))
    if indexing == "xy" and len(xs) > 1:
        order[0], order[1] = 1, 0
    shape = [sizes[i] for i in order]
    grids = []
    for i, x in enumerate(xs):
        axis = order.index(i)
        view = [1] * len(xs)
        view[axis] = -1
        grids.append(apply_op("expand", {"X": apply_op("reshape", {"X": x}, {"shape": view})}, {"shape": shape}))
    return grids


def eye(num_rows: int, num_columns: int | None = None, dtype: Any = None, name: str | None = None, *,
        device: Any = None, requires_grad: bool = False) -> Any:
    """The identity matrix [num_rows, num_columns] (square when num_columns is None), of the default
    float dtype unless told (paddle.eye, torch.eye, with torch's device= / requires_grad=)."""
    rows, columns = checked_sizes("eye", [_number(num_rows), _number(num_rows if num_columns is None else num_columns)],
                                  negative="any")
    if rows < 0 or columns < 0:
        raise ValueError(f"eye: num_rows and num_columns must be >= 0, got {num_rows} and {num_columns}")
    columns = -1 if num_columns is None else columns
    out = create("eye", {"num_rows": rows, "num_columns": columns,
                         "dtype": normalize_dtype(dtype or get_default_dtype())})
    return created(out, "eye", device, requires_grad)


def diag(x: Any, offset: int = 0, padding_value: Any = 0, name: str | None = None) -> Any:
    """A 1-D x: the square matrix with x on diagonal `offset` (above the main one when positive,
    below when negative) and padding_value elsewhere. A 2-D x: its diagonal `offset`
    (paddle.diag, torch.diag). Composed of gather (and diagonal's indexing): differentiable twice."""
    rank, offset = len(x.shape), int(offset)
    if rank == 2:
        return _diagonal(x, offset, 0, 1)    # a copy, as torch.diag's
    if rank != 1:
        raise ValueError(f"diag: expects a 1-D or 2-D tensor, got shape {list(x.shape)}")
    length = x.shape[0]
    if length < 0:
        raise ValueError(f"diag: the length of x must be known, got shape {list(x.shape)}")
    size = length + abs(offset)
    start = max(-offset, 0) * size + max(offset, 0)         # where x[0] goes in the flat matrix

    def filled(shape: list[int]) -> Any:
        return create("fill_constant", {"shape": shape, "value": float(padding_value), "dtype": x.dtype}, x)
    if length == 0:
        return filled([size, size])
    # the rows [x[k], padding * size] laid end to end put x[k] at start + k * (size + 1): the diagonal
    rows = apply_op("concat", {"X": [apply_op("reshape", {"X": x}, {"shape": [length, 1]}),
                                     filled([length, size])]}, {"axis": 1})
    parts = [filled([start]), apply_op("reshape", {"X": rows}, {"shape": [-1]})]
    rest = size * size - start - length * (size + 1)
    if rest > 0:
        parts.append(filled([rest]))
    flat = apply_op("concat", {"X": parts}, {"axis": 0})
    flat = apply_op("slice", {"X": flat}, {"axes": [0], "starts": [0], "ends": [size * size]})
    return apply_op("reshape", {"X": flat}, {"shape": [size, size]})
