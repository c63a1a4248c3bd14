"""Converters for linear quantization: QuantizeLinear, DequantizeLinear, and the integer and
quantized products (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv).

Each is a composition of registered ops: integer products run in float64, which is exact
for 8- and 16-bit operands at these sizes (every partial sum stays below 2**53), and
dequantization is ordinary float arithmetic, so its gradient in the scale comes for free.
Rounding is half to even, as ONNX's reference rounds (`np.rint`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .convert_common import binary, cast, normalize_axes
from .convert_nn import _spatial_rank, _window_attrs
from .convert_table import converter

_INTEGER_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
                   "int32": (-2**31, 2**31 - 1), "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1),
                   "uint2": (0, 3)}


def _broadcast_param(ctx: Any, var: Any, x_shape: tuple, axis: int, block_size: int) -> Any:
    """A scale or zero point made broadcastable to x: per tensor, per axis, or per block."""
    rank = len(x_shape)
    shape = tuple(var.shape)
    if len(shape) == 0:
        return var
    if int(np.prod(shape)) == 1:
        return ctx.op("reshape", {"X": var}, shape=[])
    axis = normalize_axes([axis], rank)[0]
    if not block_size:
        dims = [1] * rank
        dims[axis] = -1
        return ctx.op("reshape", {"X": var}, shape=dims)
    size = x_shape[axis]
    if size < 0:
        raise ctx.unsupported(f"blocked quantization along axis {axis} of unknown size in {list(x_shape)}")
    repeat = ctx.constant(np.arange(size, dtype="int64") // int(block_size))
    return ctx.op("gather", {"X": var, "Index": repeat}, axis=axis)


def _saturate(ctx: Any, values: Any, dtype: str) -> Any:
    """float64 values rounded half to even, clipped to `dtype`'s range, cast to it."""
    if dtype not in _INTEGER_RANGES:
        raise ctx.unsupported(f"quantizing to {dtype} (fluidgrad quantizes to 2- to 32-bit integers)")
    low, high = _INTEGER_RANGES[dtype]
    rounded = ctx.op("round", {"X": values})
    return cast(ctx, ctx.op("clip", {"X": rounded}, min=float(low), max=float(high)), dtype)


def _target_dtype(ctx: Any, zero_point_index: int) -> str:
    if ctx.has_input(zero_point_index):
        return ctx.dtype(zero_point_index)
    if ctx.attr("output_dtype"):
        return dtypes.to_fluidgrad(ctx.attr("output_dtype"), f"{ctx.where()} output_dtype")
    return "uint8"


@converter("QuantizeLinear", since=10)
def _quantize_linear(ctx):
    x = ctx.input(0)
    axis, block = int(ctx.attr("axis", 1)), int(ctx.attr("block_size", 0) or 0)
    target = _target_dtype(ctx, 2)
    scale = ctx.input(1)
    compute = str(np.promote_types(x.dtype, scale.dtype))
    if ctx.attr("precision"):
        compute = dtypes.to_fluidgrad(ctx.attr("precision"), f"{ctx.where()} precision")
    scale = _broadcast_param(ctx, cast(ctx, scale, compute), tuple(x.shape), axis, block)
    ratio = cast(ctx, binary(ctx, "elementwise_div", cast(ctx, x, compute), scale), "float64")
    if target not in _INTEGER_RANGES:  # float8 / float4: a cast (saturating unless told not to)
        if ctx.has_input(2) and target.startswith("float4"):
            zero = _broadcast_param(ctx, cast(ctx, ctx.input(2), "float64"), tuple(x.shape), axis, block)
            ratio = binary(ctx, "elementwise_add", ratio, zero)
        return ctx.op("cast", {"X": cast(ctx, ratio, compute)}, dtype=target,
                      saturate=bool(ctx.attr("saturate", 1)), round_mode="up")
    rounded = ctx.op("round", {"X": ratio})
    if ctx.has_input(2):
        zero = _broadcast_param(ctx, cast(ctx, ctx.input(2), "float64"), tuple(x.shape), axis, block)
        rounded = binary(ctx, "elementwise_add", rounded, zero)
    return _saturate(ctx, rounded, target)


@converter("DequantizeLinear", since=10)
def _dequantize_linear(ctx):
    x = ctx.input(0)
    axis, block = int(ctx.attr("axis", 1)), int(ctx.attr("block_size", 0) or 0)
    scale = ctx.input(1)
    values = cast(ctx, x, "float32")
    if ctx.has_input(2):
        zero = _broadcast_param(ctx, cast(ctx, ctx.input(2), "float32"), tuple(x.shape), axis, block)
        values = binary(ctx, "elementwise_sub", values, zero)
    compute = str(np.promote_types("float32", scale.dtype))
    scale = _broadcast_param(ctx, cast(ctx, scale, compute), tuple(x.shape), axis, block)
    out = binary(ctx, "elementwise_mul", cast(ctx, values, compute), scale)
    out_dtype = ctx.dtype(1)
    if ctx.attr("output_dtype"):
        out_dtype = dtypes.to_fluidgrad(ctx.attr("output_dtype"), f"{ctx.where()} output_dtype")
    return cast(ctx, out, out_dtype)


def _centered(ctx: Any, index: int, zero_index: int, per_row_axis: int | None = None) -> Any:
    """Input `index` minus its zero point (if given), as float64 (exact for 8/16-bit integers)."""
    values = cast(ctx, ctx.input(index), "float64")
    if not ctx.has_input(zero_index):
        return values
    zero = cast(ctx, ctx.input(zero_index), "float64")
    if per_row_axis is not None and len(zero.shape) == 1 and int(np.prod(zero.shape)) > 1:
        dims = [1] * len(values.shape)
        dims[per_row_axis] = -1
        zero = ctx.op("reshape", {"X": zero}, shape=dims)
    elif len(zero.shape) == 1 and int(np.prod(zero.shape)) == 1:
        zero = ctx.op("reshape", {"X": zero}, shape=[])
    return binary(ctx, "elementwise_sub", values, zero)


def _per_column_zero(ctx: Any, b: Any, zero_index: int) -> Any:
    """MatMulInteger's b zero point: a scalar, or one per column of B (its last axis)."""
    values = cast(ctx, ctx.input(b), "float64")
    if not ctx.has_input(zero_index):
        return values
    zero = cast(ctx, ctx.input(zero_index), "float64")
    if len(zero.shape) == 1 and int(np.prod(zero.shape)) == 1:
        zero = ctx.op("reshape", {"X": zero}, shape=[])
    return binary(ctx, "elementwise_sub", values, zero)


def _per_row_zero(ctx: Any, a: int, zero_index: int) -> Any:
    """MatMulInteger's a zero point: a scalar, or one per row of A (its second-to-last axis)."""
    values = cast(ctx, ctx.input(a), "float64")
    if not ctx.has_input(zero_index):
        return values
    zero = cast(ctx, ctx.input(zero_index), "float64")
    if len(zero.shape) == 1 and int(np.prod(zero.shape)) > 1:
        zero = ctx.op("unsqueeze", {"X": zero}, axes=[1])
    elif len(zero.shape) == 1:
        zero = ctx.op("reshape", {"X": zero}, shape=[])
    return binary(ctx, "elementwise_sub", values, zero)


@converter("MatMulInteger", since=10)
def _matmul_integer(ctx):
    product = ctx.op("matmul", {"X": _per_row_zero(ctx, 0, 2), "Y": _per_column_zero(ctx, 1, 3)})
    return cast(ctx, product, "int32")


def _scalar_of(ctx: Any, index: int) -> Any:
    var = cast(ctx, ctx.input(index), "float64")
    return ctx.op("reshape", {"X": var}, shape=[]) if len(var.shape) == 1 and var.shape[0] == 1 else var


@converter("QLinearMatMul", since=10)
def _qlinear_matmul(ctx):
    product = ctx.op("matmul", {"X": _per_row_zero(ctx, 0, 2), "Y": _per_column_zero(ctx, 3, 5)})
    a_scale, b_scale, y_scale = (_scalar_of(ctx, i) for i in (1, 4, 6))
    if len(b_scale.shape) == 1:  # per column of B
        b_scale = ctx.op("reshape", {"X": b_scale}, shape=[1, -1])
    if len(a_scale.shape) == 1:  # per row of A
        a_scale = ctx.op("unsqueeze", {"X": a_scale}, axes=[1])
    factor = binary(ctx, "elementwise_div", binary(ctx, "elementwise_mul", a_scale, b_scale), y_scale)
    values = binary(ctx, "elementwise_mul", product, factor)
    if ctx.has_input(7):
        values = binary(ctx, "elementwise_add", values, _scalar_of(ctx, 7))
    return _saturate(ctx, values, ctx.dtype(7) if ctx.has_input(7) else ctx.dtype(0))


def _integer_conv(ctx: Any, x_zero: int, w: int, w_zero: int) -> Any:
    x = _centered(ctx, 0, x_zero)
    weights = _centered(ctx, w, w_zero, per_row_axis=0)
    n = _spatial_rank(ctx, x)
    return ctx.op(f"conv{n}d", {"Input": x, "Filter": weights}, groups=int(ctx.attr("group", 1)),
                  **_window_attrs(ctx, n))


@converter("ConvInteger", since=10)
def _conv_integer(ctx):
    return cast(ctx, _integer_conv(ctx, 2, 1, 3), "int32")


@converter("QLinearConv", since=10)
def _qlinear_conv(ctx):
    x_zero_index, w_index, w_zero_index = 2, 3, 5
    sums = _integer_conv(ctx, x_zero_index, w_index, w_zero_index)
    if ctx.has_input(8):  # the int32 bias is added before scaling
        sums = binary(ctx, "elementwise_add", sums, ctx.op("reshape", {"X": cast(ctx, ctx.input(8), "float64")},
                                                             shape=[1, -1] + [1] * (len(sums.shape) - 2)))
    x_scale, w_scale, y_scale = (_scalar_of(ctx, i) for i in (1, 4, 6))
    if len(w_scale.shape) == 1:  # per output channel
        w_scale = ctx.op("reshape", {"X": w_scale}, shape=[1, -1] + [1] * (len(sums.shape) - 2))
    factor = binary(ctx, "elementwise_div", binary(ctx, "elementwise_mul", x_scale, w_scale), y_scale)
    values = binary(ctx, "elementwise_mul", sums, factor)
    if ctx.has_input(7):
        values = binary(ctx, "elementwise_add", values, _scalar_of(ctx, 7))
    return _saturate(ctx, values, ctx.dtype(7) if ctx.has_input(7) else ctx.dtype(0))
