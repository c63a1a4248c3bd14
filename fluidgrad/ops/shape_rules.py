"""Shape rules shared by many ops. -1 stands for a size known only at run time."""
from __future__ import annotations

from typing import Callable, Sequence

from ..framework import dtypes
from .registry import InferContext


def broadcast_shapes(ctx: InferContext, a: Sequence[int], b: Sequence[int],
                     what: Callable[[], str]) -> tuple[int, ...]:
    """NumPy broadcasting, with -1 allowed; raises naming the op and both shapes.
    `what` describes the operands; it is called only on error (it runs for every op built)."""
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for da, db in zip(a, b):
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif da == -1 or db == -1:
            out.append(max(da, db))
        else:
            raise ctx.shape_error(f"cannot broadcast {what()}")
    return tuple(out)


def same_as(slot: str = "X", out: str = "Out"):
    """Output has the input's shape and dtype (elementwise unary ops)."""
    def infer(ctx: InferContext) -> None:
        ctx.set_output(out, ctx.shape(slot), ctx.dtype(slot))
    return infer


_COMPUTE_FLOATS = frozenset(d for d in dtypes.ALL_DTYPES if dtypes.is_float(d))


def float_only(ctx: InferContext, *slots: str) -> None:
    for slot in slots:
        for i, dtype in enumerate(ctx.dtypes(slot)):
            if dtype not in _COMPUTE_FLOATS:  # dtypes.is_float, without a call per input
                raise ctx.dtype_error(f"expects floating point input, got {ctx.describe(slot, i)}"
                                      + storage_hint(dtype))


def storage_hint(dtype: str) -> str:
    """The end of a refusal of a storage format (float8, int4, ...): what to do instead."""
    if not dtypes.is_storage(dtype):
        return ""
    return f"; {dtype} is a storage format (cast, reshape, concatenate, ...): cast it to float32 first"


def same_dtype(ctx: InferContext, a: str, b: str) -> str:
    if ctx.dtype(a) != ctx.dtype(b):
        raise ctx.dtype_error(f"inputs must have one dtype, got {ctx.describe(a)} and {ctx.describe(b)}")
    return ctx.dtype(a)


def binary_broadcast(out_dtype: str | None = None):
    """X and Y broadcast together; output dtype is theirs (or `out_dtype`, e.g. "bool")."""
    def infer(ctx: InferContext) -> None:
        dtype = same_dtype(ctx, "X", "Y")
        shape = broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"),
                                 lambda: f"{ctx.describe('X')} with {ctx.describe('Y')}")
        ctx.set_output("Out", shape, out_dtype or dtype)
    # on known sizes the rule accepts exactly the shapes NumPy broadcasts, and its verdict
    # otherwise depends on the dtypes only: eager mode caches it per dtypes (eager/infer.py)
    infer.numpy_broadcast = True  # type: ignore[attr-defined]
    return infer


def normalize_axis(ctx: InferContext, axis: int, ndim: int, slot: str = "X") -> int:
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ctx.shape_error(f"axis {axis} is out of range for {ctx.describe(slot)}")
    return axis % max(ndim, 1)


def axis_of(ctx: InferContext, axis: int, ndim: int, slot: str = "X") -> int:
    """normalize_axis for ops that cut or join along a real axis (concat, split, slice): a 0-D
    input has none, as in PyTorch (reductions alone take axis 0 or -1 of a 0-D tensor)."""
    if ndim == 0:
        raise ctx.shape_error(f"{ctx.describe(slot)} is 0-D: it has no axis {axis} to cut or join along")
    return normalize_axis(ctx, axis, ndim, slot)


def reduced_shape(ctx: InferContext, shape: Sequence[int], axis, keepdim: bool) -> tuple[int, ...]:
    ndim = len(shape)
    if axis is None or axis == [] or axis == ():
        axes = set(range(ndim))
    else:
        given = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        axes = {normalize_axis(ctx, a, ndim) for a in given}
        if len(axes) < len(given):  # a repeated axis would be reduced (a mean divided) twice
            raise ctx.shape_error(f"axis {given} names an axis more than once for {ctx.describe('X')}")
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def static_numel(shape: Sequence[int]) -> int:
    """Number of elements, or -1 when a dimension is unknown."""
    n = 1
    for d in shape:
        if d < 0:
            return -1
        n *= d
    return n
