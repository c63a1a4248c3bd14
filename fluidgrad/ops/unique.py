"""unique: the distinct values (or slices along an axis) of a tensor, with where each first
occurs, where each element went, and how often each occurs (paddle.unique, ONNX Unique).

How many distinct values there are is known only at run time, so the outputs have -1 as
that size, as `nonzero`'s count. Not differentiable (neither PyTorch nor Paddle is).
"""
from __future__ import annotations

import numpy as np

from .registry import NO_GRADIENT, register_op
from .shape_rules import normalize_axis


def _unique_kernel(x, axis, sorted, dtype):
    data, along = (x.reshape(-1), 0) if not axis else (x, axis[0] % x.ndim)
    values, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                               return_counts=True, axis=along)
    inverse = inverse.reshape(-1)
    if not sorted:  # in order of first occurrence (ONNX sorted=0)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        values, first, counts, inverse = np.take(values, order, axis=along), first[order], counts[order], rank[inverse]
    return values, first.astype(dtype), inverse.astype(dtype), counts.astype(dtype)


def _unique_infer(ctx):
    shape = list(ctx.shape("X"))
    axis = ctx.attr("axis")
    if ctx.attr("dtype") not in ("int32", "int64"):
        raise ctx.dtype_error(f"index dtype must be int32 or int64, got {ctx.attr('dtype')!r}")
    if axis:
        if len(axis) != 1:
            raise ctx.shape_error(f"takes one axis, got {axis}")
        along = normalize_axis(ctx, axis[0], len(shape))
        out, inverse = shape[:along] + [-1] + shape[along + 1:], [shape[along]]
    else:
        total = int(np.prod(shape)) if all(d >= 0 for d in shape) else -1
        out, inverse = [-1], [total]
    ctx.set_output("Out", out, ctx.dtype("X"))
    ctx.set_output("Indices", [-1], ctx.attr("dtype"))
    ctx.set_output("Index", inverse, ctx.attr("dtype"))
    ctx.set_output("Counts", [-1], ctx.attr("dtype"))


register_op("unique", inputs="X", outputs="Out Indices Index Counts",
            attrs={"axis": [], "sorted": True, "dtype": "int64"}, kernel=_unique_kernel, infer=_unique_infer,
            grad=NO_GRADIENT,
            doc="Distinct values of X (flattened, or slices along axis[0]), sorted or in order of first "
                "occurrence; Indices: first occurrences, Index: each element's position in Out, Counts.")


# ---------------------------------------------------------------- isin
def _isin_infer(ctx):
    if ctx.dtype("X") != ctx.dtype("TestX"):
        raise ctx.dtype_error(f"inputs must have one dtype, got {ctx.describe('X')} and {ctx.describe('TestX')}")
    ctx.set_output("Out", ctx.shape("X"), "bool")


register_op("isin", inputs="X TestX", outputs="Out", attrs={"invert": False},
            kernel=lambda x, test_x, invert: np.isin(x, test_x, invert=invert), infer=_isin_infer,
            grad=NO_GRADIENT,
            doc="Whether each element of X occurs anywhere in TestX (a bool mask of X's shape; invert: "
                "whether it does not): paddle.isin, torch.isin. A sort, not a |X| x |TestX| comparison.")
