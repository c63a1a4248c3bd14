"""Exporting reductions and scans of any dtype: ONNX's type constraints and onnxruntime's CPU
kernels are narrower than fluidgrad's ops.

fluidgrad sums, multiplies and accumulates bool and integer tensors into int64 (Paddle's and
PyTorch's rule: counting the True entries of a mask is `sum(mask)`), while ONNX's ReduceSum and
CumSum keep their input's dtype and take no bool; onnxruntime has no ReduceSum / CumSum for
uint8 or int16 and no ReduceMax / ArgMax for bool or int16. So the exporter casts the input to
the dtype fluidgrad accumulates in, widens it further where onnxruntime has no kernel for that
dtype (exactly: every value of the narrow dtype is one of the wide one, order kept), and casts
the result back to the dtype the fluidgrad op promises.
"""
from __future__ import annotations

from typing import Any, Callable

_SUMS = frozenset({"int32", "int64", "float16", "float32", "float64"})
_ORDERS = _SUMS | {"uint8", "int8"}

# onnxruntime's CPU kernels (1.2x) per op type, where narrower than fluidgrad's dtypes
KERNEL_DTYPES: dict[str, frozenset[str]] = {
    **{op: _SUMS for op in ("ReduceSum", "ReduceProd", "ReduceMean", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                            "ReduceLogSumExp", "CumSum")},
    **{op: _ORDERS for op in ("ReduceMax", "ReduceMin", "ArgMax", "ArgMin")},
    "CumProd": _SUMS | {"uint32", "uint64"},
}

# the narrowest kernel dtype holding every value of a dtype onnxruntime has no kernel for
_WIDER = {"bool": "int32", "int8": "int32", "uint8": "int32", "int16": "int32", "uint16": "int32",
          "uint32": "int64", "uint64": "int64", "bfloat16": "float32"}


def kernel_dtype(onnx_type: str, dtype: str) -> str:
    """`dtype` if onnxruntime has a `onnx_type` kernel for it, else the narrowest wider one it has."""
    kernels = KERNEL_DTYPES.get(onnx_type)
    if kernels is None or dtype in kernels:
        return dtype
    wider = _WIDER.get(dtype, dtype)
    return wider if wider in kernels else "int64"


def write_in_kernel_dtype(c: Any, onnx_type: str, build: Callable[[str, list[str] | None], str],
                         accumulate: str | None = None) -> None:
    """Write an op's X -> Out as `build(x, outputs)` (the ONNX nodes of one reduction or scan) on X
    cast to the dtype fluidgrad accumulates in (`accumulate`, by default Out's), widened to one
    onnxruntime has a kernel for; the result is cast to Out's dtype."""
    out_dtype = c.dtype_of("Out")
    work = kernel_dtype(onnx_type, accumulate or out_dtype)
    x = c.x("X") if c.dtype_in("X") == work else c.cast(c.x("X"), work)
    if work == out_dtype:
        build(x, [c.out("Out")])
    else:
        c.node("Cast", [build(x, None)], [c.out("Out")], to=c.onnx_dtype(out_dtype))
