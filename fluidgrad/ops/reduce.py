"""Reductions (sum, mean, max) and their transposes (broadcasting a reduced gradient back)."""
from __future__ import annotations

import numpy as np

from ..framework import dtypes
from ..framework.errors import ShapeError
from .registry import register_op
from .shape_rules import reduced_shape


def _axes(axis, ndim):
    if axis is None or axis == [] or axis == ():
        return tuple(range(ndim))
    axis = axis if isinstance(axis, (list, tuple)) else [axis]
    return tuple(sorted(a % ndim for a in axis))


def _reduce_infer(ctx):
    axis = None if ctx.attr("reduce_all") else ctx.attr("axis")
    kind = ctx.op_def.type
    if kind == "reduce_mean":
        _float_mean(ctx)
    shape = reduced_shape(ctx, ctx.shape("X"), axis, ctx.attr("keepdim"))
    if kind in _NO_IDENTITY:
        axes = _axes(axis, len(ctx.shape("X")))
        if any(ctx.shape("X")[a] == 0 for a in axes):
            raise ctx.shape_error(_empty_message(kind, ctx.shape("X"), axes))
    dtype = dtypes.accumulate_dtype(ctx.dtype("X")) if kind == "reduce_sum" else ctx.dtype("X")
    ctx.set_output("Out", shape, dtype)


# max and min have no identity element: over a zero-size axis they are an error (as in
# PyTorch), at build time when the size is known and at run time when it is not
_NO_IDENTITY = ("reduce_max", "reduce_min")


def _empty_message(kind, shape, axes):
    return (f"cannot reduce X (shape {list(shape)}) over axes {list(axes)}, which hold "
            f"no elements: {kind[7:]} of nothing is undefined (sum gives 0, mean NaN)")


def _reduce_kernel(fn, accumulate=False):
    """`fn` over the axes; `accumulate`: bool and integers sum in int64 (dtypes.accumulate_dtype)."""
    def kernel(x, axis=None, keepdim=False, reduce_all=False):
        axes = _axes(None if reduce_all else axis, x.ndim)
        dtype = np.dtype(dtypes.accumulate_dtype(x.dtype.name)) if accumulate else x.dtype
        if accumulate:
            return np.asarray(fn(x, axis=axes, keepdims=keepdim, dtype=dtype))
        return np.asarray(fn(x, axis=axes, keepdims=keepdim), dtype=dtype)
    return kernel


def _extreme_kernel(fn, kind):
    def kernel(x, axis=None, keepdim=False, reduce_all=False):
        axes = _axes(None if reduce_all else axis, x.ndim)
        if any(x.shape[a] == 0 for a in axes):
            raise ShapeError(f"op {kind}: {_empty_message(kind, x.shape, axes)}")
        return np.asarray(fn(x, axis=axes, keepdims=keepdim), dtype=x.dtype)
    return kernel


def _unreduce_kernel(dout, target, axis=None, keepdim=False, reduce_all=False, mean=False):
    """Broadcast a reduced gradient back over the reduced axes (divided by the count for a mean)."""
    axes = _axes(None if reduce_all else axis, target.ndim)
    if not keepdim:
        dout = np.expand_dims(dout, axes)
    out = np.broadcast_to(dout, target.shape)
    if mean:
        count = int(np.prod([target.shape[a] for a in axes]))
        out = out / out.dtype.type(max(count, 1))
    return out


def _reduce_grad(mean):
    def grad(g):
        g.set_input_grad("X", g.op("unreduce", {"X": g.output_grad("Out"), "Target": g.input("X")},
                                   axis=g.attr("axis"), keepdim=g.attr("keepdim"),
                                   reduce_all=g.attr("reduce_all"), mean=mean))
    return grad


def _unreduce_grad(g):
    kind = "reduce_mean" if g.attr("mean") else "reduce_sum"
    g.set_input_grad("X", g.op(kind, {"X": g.output_grad("Out")}, axis=g.attr("axis"),
                               keepdim=g.attr("keepdim"), reduce_all=g.attr("reduce_all")))


def _unreduce_infer(ctx):
    ctx.set_output("Out", ctx.shape("Target"), ctx.dtype("X"))


_REDUCE_ATTRS = {"axis": None, "keepdim": False, "reduce_all": False}

register_op("reduce_sum", inputs="X", outputs="Out", attrs=_REDUCE_ATTRS, kernel=_reduce_kernel(np.sum, accumulate=True),
            infer=_reduce_infer, grad=_reduce_grad(mean=False))
register_op("reduce_mean", inputs="X", outputs="Out", attrs=_REDUCE_ATTRS, kernel=_reduce_kernel(np.mean),
            infer=_reduce_infer, grad=_reduce_grad(mean=True))
register_op("unreduce", inputs="X Target", outputs="Out", attrs={**_REDUCE_ATTRS, "mean": False},
            kernel=_unreduce_kernel, infer=_unreduce_infer, grad=_unreduce_grad,
            doc="The transpose of reduce_sum / reduce_mean: spreads a gradient over the reduced axes.")


def _float_mean(ctx):
    """A mean of integers kept in an integer dtype would be truncated: ask for a cast instead."""
    if not ctx.dtype("X").startswith("float"):
        raise ctx.dtype_error(f"averages floating point values; cast {ctx.describe('X')} to a float first")


def _mean_infer(ctx):
    _float_mean(ctx)
    ctx.set_output("Out", (), ctx.dtype("X"))


def _mean_grad(g):
    g.set_input_grad("X", g.op("unreduce", {"X": g.output_grad("Out"), "Target": g.input("X")},
                               reduce_all=True, mean=True))


register_op("mean", inputs="X", outputs="Out", kernel=lambda x: np.asarray(x.mean(), dtype=x.dtype),
            infer=_mean_infer, grad=_mean_grad, doc="The mean of all elements, as a 0-D value.")


def _extreme_grad(g):
    """max/min: the gradient is shared equally by the elements that attain the extreme."""
    x, out, dout = g.input("X"), g.output("Out"), g.output_grad("Out")
    attrs = dict(axis=g.attr("axis"), keepdim=g.attr("keepdim"), reduce_all=g.attr("reduce_all"))
    out_b = g.op("unreduce", {"X": out, "Target": x}, **attrs)
    hit = g.op("cast", {"X": g.op("equal", {"X": x, "Y": out_b})}, dtype=g.dtype(x))
    count = g.op("reduce_sum", {"X": hit}, **attrs)
    share = g.op("elementwise_div", {"X": dout, "Y": count})
    spread = g.op("unreduce", {"X": share, "Target": x}, **attrs)
    g.set_input_grad("X", g.op("elementwise_mul", {"X": spread, "Y": hit}))


register_op("reduce_max", inputs="X", outputs="Out", attrs=_REDUCE_ATTRS, kernel=_extreme_kernel(np.amax, "reduce_max"),
            infer=_reduce_infer, grad=_extreme_grad)
register_op("reduce_min", inputs="X", outputs="Out", attrs=_REDUCE_ATTRS, kernel=_extreme_kernel(np.amin, "reduce_min"),
            infer=_reduce_infer, grad=_extreme_grad)
