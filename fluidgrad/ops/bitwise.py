"""Bit-level ops on integers: shifts (paddle.bitwise_left_shift / bitwise_right_shift, ONNX
BitShift) and bitcast (reinterpreting the bytes as another dtype of the same width, ONNX
BitCast, torch.Tensor.view(dtype)). Their outputs are integers or reinterpreted bits: no
gradient.

A shift by a negative amount or by the bit width or more is defined here (NumPy and C
leave it undefined): left shifts give 0, arithmetic right shifts give the sign (0 or -1),
logical right shifts give 0, as ONNX's reference does.
"""
from __future__ import annotations

import numpy as np

from ..framework import dtypes
from .registry import NO_GRADIENT, register_op
from .shape_rules import broadcast_shapes


def _contiguous(a: np.ndarray) -> np.ndarray:
    """A C-ordered copy when needed (np.ascontiguousarray would turn a 0-d array into 1-d)."""
    return a if a.flags.c_contiguous else a.copy()


def _integer(dtype: str) -> bool:
    return dtype != "bool" and "int" in dtype


def _shift_infer(ctx):
    for slot in ("X", "Y"):
        if not _integer(ctx.dtype(slot)):
            raise ctx.dtype_error(f"expects integer inputs, got {ctx.describe(slot)}")
    if ctx.dtype("X") != ctx.dtype("Y"):
        raise ctx.dtype_error(f"inputs must have one dtype, got {ctx.describe('X')} and {ctx.describe('Y')}")
    shape = broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"),
                             lambda: f"{ctx.describe('X')} with {ctx.describe('Y')}")
    ctx.set_output("Out", shape, ctx.dtype("X"))


def _shift_kernel(left: bool):
    def kernel(x, y, is_arithmetic):
        x, y = (_contiguous(a) for a in np.broadcast_arrays(x, y))
        bits = np.iinfo(x.dtype).bits
        amount = y.astype(np.int64)
        outside = (amount < 0) | (amount >= bits)
        amount = np.where(outside, 0, amount)
        unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
        signed = x.dtype.kind == "i"
        if left:
            out, fill = np.left_shift(unsigned, amount.astype(unsigned.dtype)).view(x.dtype), 0
        elif signed and is_arithmetic:
            out = np.right_shift(x, amount.astype(x.dtype))
            fill = np.where(x < 0, -1, 0).astype(x.dtype)
        else:
            out, fill = np.right_shift(unsigned, amount.astype(unsigned.dtype)).view(x.dtype), 0
        return np.where(outside, fill, out).astype(x.dtype)
    return kernel


register_op("bitwise_left_shift", inputs="X Y", outputs="Out", attrs={"is_arithmetic": True},
            kernel=_shift_kernel(left=True), infer=_shift_infer, grad=NO_GRADIENT,
            doc="X << Y elementwise (broadcasting), wrapping around the bit width; shifts outside "
                "[0, bits) give 0.")
register_op("bitwise_right_shift", inputs="X Y", outputs="Out", attrs={"is_arithmetic": True},
            kernel=_shift_kernel(left=False), infer=_shift_infer, grad=NO_GRADIENT,
            doc="X >> Y elementwise (broadcasting): arithmetic (sign-filling) for signed X when "
                "is_arithmetic, else logical; shifts outside [0, bits) give the fill.")


def _numpy_dtype(dtype: str) -> np.dtype:
    dtypes.require_extension_dtype(dtype)  # bfloat16, float8, ...: NumPy learns them from ml_dtypes
    return np.dtype(dtype)


def _itemsize(dtype: str) -> int:
    return _numpy_dtype(dtype).itemsize


def _bitcast_infer(ctx):
    source, target = ctx.dtype("X"), ctx.attr("dtype")
    if source not in dtypes.ALL_DTYPES or target not in dtypes.ALL_DTYPES:
        raise ctx.dtype_error(f"cannot reinterpret {ctx.describe('X')} as {target!r}")
    if _itemsize(source) != _itemsize(target):
        raise ctx.dtype_error(f"reinterprets bytes between dtypes of one width: {ctx.describe('X')} "
                              f"({_itemsize(source) * 8} bits) as {target} ({_itemsize(target) * 8} bits)")
    ctx.set_output("Out", ctx.shape("X"), target)


register_op("bitcast", inputs="X", outputs="Out", attrs={"dtype": "int32"},
            kernel=lambda x, dtype: _contiguous(x).view(_numpy_dtype(dtype)),
            infer=_bitcast_infer, grad=NO_GRADIENT,
            doc="X's bytes read as `dtype` (of the same width): ONNX BitCast, torch.Tensor.view(dtype).")
