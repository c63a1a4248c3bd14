"""Small compositions the converters share (casts, integer fallbacks, axes)."""
from __future__ import annotations

from typing import Any, Sequence

from ..framework import Variable

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")


def cast(ctx: Any, var: Variable, dtype: str) -> Variable:
    return var if var.dtype == dtype else ctx.op("cast", {"X": var}, dtype=dtype)


def via_float(ctx: Any, var: Variable, build: Any) -> Variable:
    """Run a float-only op on integer input through float64 (exact below 2**53), casting back."""
    if var.dtype.startswith("float"):
        return build(var)
    return cast(ctx, build(cast(ctx, var, "float64")), var.dtype)


def normalize_axes(axes: Sequence[int], rank: int) -> list[int]:
    return [int(a) + rank if int(a) < 0 else int(a) for a in axes]


def binary(ctx: Any, op_type: str, x: Variable, y: Variable) -> Variable:
    return ctx.op(op_type, {"X": x, "Y": y})


def full(ctx: Any, shape: Sequence[int], value: float, dtype: str) -> Variable:
    return ctx.op("fill_constant", {}, shape=[int(d) for d in shape], value=float(value), dtype=dtype)


def mul_scalar(ctx: Any, var: Variable, value: float) -> Variable:
    return binary(ctx, "elementwise_mul", var, ctx.scalar(value, var.dtype))


def add_scalar(ctx: Any, var: Variable, value: float) -> Variable:
    return binary(ctx, "elementwise_add", var, ctx.scalar(value, var.dtype))


def axes_input(ctx: Any, attr_until: int, index: int = 1) -> list[int] | None:
    """Axes given as an attribute before opset `attr_until`, as an input from then on."""
    if ctx.opset < attr_until:
        axes = ctx.attr("axes")
        return None if axes is None else list(axes)
    if not ctx.has_input(index):
        return None
    return [int(a) for a in ctx.const(index, "axes").reshape(-1)]
