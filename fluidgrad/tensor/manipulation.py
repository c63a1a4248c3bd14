"""Shape building and rearranging: tile, expand, flip, roll, unstack, chunk, repeat_interleave, ...

Paddle 2 names and signatures; each serves both modes through `apply_op`. (reshape, flatten,
squeeze, unsqueeze, stack, slice live in `fluidgrad.functions`.)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..dispatch import apply_op, axis_of_input, is_tensor
from ..framework.runtime_dims import has_runtime_dims
from ..framework.sizes import checked_sizes
from .. import views
from ..functions import concat, pieces_of, runtime_shape_tensor
from ..indexing import Indexed
from ..indexing import constant
from ..framework.torch_forms import torch_keywords

__all__ = ["cat", "tile", "expand", "broadcast_to", "expand_as", "flip", "roll", "unstack", "unbind", "chunk",
           "repeat_interleave", "strided_slice", "broadcast_tensors", "unique"]


def _ints(values: Any) -> list[int]:
    if is_tensor(values):
        return [int(v) for v in np.asarray(values.numpy()).reshape(-1)]
    if isinstance(values, (int, np.integer)):
        return [int(values)]
    return [int(v.item()) if is_tensor(v) else int(v) for v in values]


def cat(tensors: Sequence[Any], dim: int = 0, *, axis: int | None = None, name: str | None = None) -> Any:
    """PyTorch's name for `concat`: the inputs joined along `dim` (or Paddle's axis=)."""
    if axis is not None and axis != dim and dim != 0:
        raise TypeError(f"cat: give the axis once, as dim= or axis= (got {dim} and {axis})")
    return concat(tensors, dim if axis is None else axis)


def tile(x: Any, repeat_times: Sequence[int], name: str | None = None) -> Any:
    """x repeated repeat_times[i] times along axis i (x gains leading axes if repeat_times is longer)."""
    return apply_op("tile", {"X": x}, {"repeat_times": checked_sizes("tile", repeat_times)})


def expand(x: Any, shape: Sequence[int], name: str | None = None) -> Any:
    """x broadcast to `shape`; -1 keeps x's size on that axis. Sizes read while jit.to_static
    traces (`y.shape[0]` of an unknown batch) are computed when the program runs."""
    shape = checked_sizes("expand", shape, negative="keep")
    if has_runtime_dims(shape):
        tensor, hint = runtime_shape_tensor(shape)
        return apply_op("expand", {"X": x, "ShapeTensor": tensor}, {"shape": hint})
    out = apply_op("expand", {"X": x}, {"shape": shape})
    return views.mark(out, x, lambda: views.Expanded(x, tuple(out.shape)))


def broadcast_to(x: Any, shape: Sequence[int], name: str | None = None) -> Any:
    """x expanded to `shape` by broadcasting (the gradient sums back)."""
    return expand(x, checked_sizes("broadcast_to", shape, negative="keep"))


def expand_as(x: Any, y: Any, name: str | None = None) -> Any:
    """x expanded to y's shape by broadcasting."""
    return expand(x, list(y.shape))


def broadcast_tensors(input: Sequence[Any], name: str | None = None) -> list[Any]:
    """The inputs expanded to their common broadcast shape."""
    shape = list(np.broadcast_shapes(*[tuple(max(d, 1) for d in t.shape) for t in input]))
    return [expand(t, shape) for t in input]


@torch_keywords(dims="axis")
def flip(x: Any, axis: int | Sequence[int], name: str | None = None) -> Any:
    """x with the order of elements reversed along each axis in `axis`."""
    return apply_op("flip", {"X": x}, {"axis": _ints(axis)})


@torch_keywords(dims="axis")
def roll(x: Any, shifts: int | Sequence[int], axis: int | Sequence[int] | None = None,
         name: str | None = None) -> Any:
    """x shifted cyclically along axis (over the flattened x when axis is None)."""
    return apply_op("roll", {"X": x}, {"shifts": _ints(shifts), "axis": [] if axis is None else _ints(axis)})


@torch_keywords
def unstack(x: Any, axis: int = 0, num: int | None = None) -> list[Any]:
    """The slices of x along axis, each without that axis."""
    axis = axis_of_input("unstack", x, axis)
    n = x.shape[axis]
    if n < 0:
        raise ValueError(f"unstack: axis {axis} of x (shape {list(x.shape)}) has a size known only at run time")
    if num is not None and num != n:
        raise ValueError(f"unstack: num={num} but axis {axis} of x has size {n}")
    parts = apply_op("split", {"X": x}, {"num_or_sections": n, "axis": axis}, n_out=n)
    slices = [apply_op("squeeze", {"X": p}, {"axes": [axis]}) for p in parts]
    rest = (slice(None),) * (axis % max(len(x.shape), 1))
    return [views.mark(part, x, lambda i=i: Indexed(x, rest + (i,))) for i, part in enumerate(slices)]


@torch_keywords
def unbind(input: Any, axis: int = 0) -> list[Any]:
    """x split along `axis` into a list of slices without that axis (= unstack)."""
    return unstack(input, axis_of_input("unbind", input, axis, "input"))


@torch_keywords
def chunk(x: Any, chunks: int, axis: int = 0, name: str | None = None) -> list[Any]:
    """x split into `chunks` pieces along axis; as in PyTorch, when the size does not divide, the
    pieces have ceil(size / chunks) entries and the last is smaller (there may be fewer pieces).
    On an axis of unknown size (a Program's batch) the count is fixed at `chunks`: a run-time size
    that torch.chunk cuts into fewer pieces is an error naming chunk and the sizes."""
    if int(chunks) < 1:
        raise ValueError(f"chunk: chunks must be a positive number of pieces, got {chunks}")
    axis = axis_of_input("chunk", x, axis)
    n = x.shape[axis]
    if n < 0:
        return apply_op("split", {"X": x}, {"num_or_sections": int(chunks), "axis": axis, "chunked": True},
                        n_out=int(chunks))
    if n % chunks == 0:
        return pieces_of(x, apply_op("split", {"X": x}, {"num_or_sections": int(chunks), "axis": axis},
                                     n_out=int(chunks)), axis)
    size = -(-n // chunks)
    sections = [size] * (n // size) + ([n % size] if n % size else [])
    return pieces_of(x, apply_op("split", {"X": x}, {"num_or_sections": sections, "axis": axis},
                                 n_out=len(sections)), axis)


@torch_keywords
def repeat_interleave(x: Any, repeats: int | Any, axis: int | None = None, name: str | None = None) -> Any:
    """Each entry repeated `repeats` times (or repeats[i] times for entry i) along axis (of the
    flattened x when axis is None). A gather of repeated positions, so differentiable twice."""
    if axis is None:
        x, axis = apply_op("flatten", {"X": x}, {"start_axis": 0, "stop_axis": -1}), 0
    axis = axis_of_input("repeat_interleave", x, axis)
    if isinstance(repeats, (int, np.integer)):
        index = apply_op("repeat_index", {"X": x}, {"repeats": int(repeats), "axis": axis})
    else:
        repeats = constant(np.asarray(repeats, dtype=np.int64) if not hasattr(repeats, "dtype") or
                           isinstance(repeats, np.ndarray) else repeats, x)
        index = apply_op("repeat_index", {"X": x, "Repeats": repeats}, {"axis": axis})
    return apply_op("gather", {"X": x, "Index": index}, {"axis": axis})


def strided_slice(x: Any, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                  strides: Sequence[int], name: str | None = None) -> Any:
    """x[starts[i]:ends[i]:strides[i]] on each of axes; negative strides walk backwards."""
    for axis in _ints(axes):
        axis_of_input("strided_slice", x, axis)
    return apply_op("slice", {"X": x}, {"axes": _ints(axes), "starts": _ints(starts), "ends": _ints(ends),
                                        "strides": _ints(strides)})


@torch_keywords
def unique(x: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, dtype: str = "int64", name: str | None = None) -> Any:
    """The sorted distinct values of x (flattened, or slices along `axis`), as `paddle.unique`:
    with the index of each one's first occurrence, each element's position in the result and
    the counts when asked (a tuple then, in that order)."""
    out, first, inverse, counts = apply_op("unique", {"X": x}, {"axis": [] if axis is None else [int(axis)],
                                                                "sorted": True, "dtype": dtype})
    extra = [v for v, wanted in ((first, return_index), (inverse, return_inverse), (counts, return_counts)) if wanted]
    return (out, *extra) if extra else out
