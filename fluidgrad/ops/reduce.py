"""Reductions (sum, mean, max) and their transposes (broadcasting a reduced gradient back)."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..framework import dtypes
from ..framework.errors import ShapeError
from .cascade_sum import cascade_sum
from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import reduced_shape


def _axes(axis, ndim):
    """The reduced axes, sorted; a 0-D array has none (the rule accepts axis 0 / -1 there)."""
    if ndim == 0 or axis is None or axis == [] or axis == ():
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


def block_sum(x: np.ndarray, axes) -> np.ndarray | None:
    """The sum of a float array over `axes`, flat [prod(kept)], or None (then NumPy's sum): float32,
    float16 and bfloat16 by cascade_sum (blocked, error like PyTorch's); a C-contiguous float64
    array over every axis but one block of adjacent kept axes ([lead, kept, trail], e.g. a conv
    bias's gradient over (0, 2, 3)) as two BLAS matrix-vector products, 3x faster than NumPy's
    sum there (a float64 chain of 2^20 additions still keeps ~10 digits)."""
    fast = cascade_sum(x, axes)
    if fast is not None:
        return fast.reshape(-1)
    kept = [i for i in range(x.ndim) if i not in axes]
    if not kept or kept != list(range(kept[0], kept[-1] + 1)) or x.dtype != np.float64 \
            or not x.flags.c_contiguous or x.size == 0:
        return None
    if math.prod(x.shape[kept[0]:kept[-1] + 1]) == 1:   # one kept element (a 1-channel conv's bias
        return np.add.reduce(x.reshape(-1), keepdims=True)   # gradient): one flat sum is faster
    rows, width = math.prod(x.shape[:kept[0]]), math.prod(x.shape[kept[-1] + 1:])
    per_row = x.reshape(-1, width) @ np.ones(width, dtype=x.dtype) if width > 1 else x.reshape(-1)
    return np.ones(rows, dtype=x.dtype) @ per_row.reshape(rows, -1) if rows > 1 else per_row


@functools.cache
def _accumulate_dtype(dtype: np.dtype) -> np.dtype:
    """dtypes.accumulate_dtype as a NumPy dtype, cached: the lookup cost more than a small sum."""
    return np.dtype(dtypes.accumulate_dtype(dtype.name))


def _reduce_kernel(fn, accumulate=False):
    """`fn` over the axes; `accumulate`: bool and integers sum in int64 (dtypes.accumulate_dtype).
    Float sums and means go through block_sum (float32 / float16 / bfloat16: cascade_sum)."""
    def kernel(x, axis=None, keepdim=False, reduce_all=False):
        axes = _axes(None if reduce_all else axis, x.ndim)
        fast = block_sum(x, axes) if fn is np.sum else cascade_mean(x, axes)
        if fast is not None:
            return fast.reshape(tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdim
                                else tuple(d for i, d in enumerate(x.shape) if i not in axes))
        dtype = _accumulate_dtype(x.dtype) if accumulate else x.dtype
        if accumulate:
            return np.asarray(fn(x, axis=axes, keepdims=keepdim, dtype=dtype))
        return np.asarray(fn(x, axis=axes, keepdims=keepdim), dtype=dtype)
    return kernel


def cascade_mean(x: np.ndarray, axes) -> np.ndarray | None:
    """The mean over `axes` of a float32 / float16 / bfloat16 array from cascade_sum's float32
    total, divided before rounding (as np.mean); None for other dtypes and empty arrays."""
    total = cascade_sum(x, axes, in_float32=True)
    if total is None:
        return None
    np.divide(total, np.float32(math.prod(x.shape[a] for a in axes)), out=total)
    return total.astype(x.dtype, copy=False)


def _full_mean(x: np.ndarray) -> np.ndarray:
    """The `mean` op: the mean of every element, 0-D. A C-contiguous float32 / float16 array is
    one contiguous row to np.mean (pairwise, float16 in float32): accurate, and cheapest when small."""
    fast = None if x.flags.c_contiguous and x.dtype.char in "fe" else cascade_mean(x, tuple(range(x.ndim)))
    return np.asarray(x.mean(), dtype=x.dtype) if fast is None else fast


def float_sum(a: np.ndarray, axes: tuple, keepdims: bool = False) -> np.ndarray:
    """np.sum(a, axes, keepdims=...) with float32 / float16 / bfloat16 through cascade_sum."""
    fast = cascade_sum(a, axes)
    if fast is None:
        return np.sum(a, axis=axes, keepdims=keepdims)
    return fast.reshape(tuple(1 if i in axes else d for i, d in enumerate(a.shape))) if keepdims else fast


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
    if not keepdim:  # put the reduced axes back as 1s (a reshape: cheaper than expand_dims)
        dout = dout.reshape(tuple(1 if i in axes else d for i, d in enumerate(target.shape)))
    if mean:  # one broadcasting divide into the full shape
        count = 1
        for a in axes:
            count *= target.shape[a]
        return np.divide(dout, dout.dtype.type(max(count, 1)), out=np.empty(target.shape, dout.dtype))
    return np.broadcast_to(dout, target.shape)


def _reduce_grad(mean):
    def grad(g: GradBuilder):
        g.set_input_grad("X", g.op("unreduce", {"X": g.output_grad("Out"), "Target": g.input_like("X")},
                                   axis=g.attr("axis"), keepdim=g.attr("keepdim"),
                                   reduce_all=g.attr("reduce_all"), mean=mean))
    return grad


def _unreduce_grad(g: GradBuilder):
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
    if not dtypes.is_float(ctx.dtype("X")):
        raise ctx.dtype_error(f"averages floating point values; cast {ctx.describe('X')} to a float first")


def _mean_infer(ctx):
    _float_mean(ctx)
    ctx.set_output("Out", (), ctx.dtype("X"))


def _mean_grad(g: GradBuilder):
    g.set_input_grad("X", g.op("unreduce", {"X": g.output_grad("Out"), "Target": g.input_like("X")},
                               reduce_all=True, mean=True))


register_op("mean", inputs="X", outputs="Out", kernel=_full_mean,
            infer=_mean_infer, grad=_mean_grad, doc="The mean of all elements, as a 0-D value.")


def _extreme_grad(g: GradBuilder):
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


# ================================================================ more reductions and scans
# (prod, logsumexp, p-norms, all/any, cumsum/cumprod; kept apart from the core reductions above)
from .registry import NO_GRADIENT  # noqa: E402
from .scan_grad_grad import cumprod_grad_grad  # noqa: E402
from .shape_rules import float_only, normalize_axis  # noqa: E402


def _reduce_attrs(g: GradBuilder):
    return dict(axis=g.attr("axis"), keepdim=g.attr("keepdim"), reduce_all=g.attr("reduce_all"))


# -- logsumexp
def _logsumexp_kernel(x, axis=None, keepdim=False, reduce_all=False):
    axes = _axes(None if reduce_all else axis, x.ndim)
    top = np.max(x, axis=axes, keepdims=True) if x.size else np.zeros([1] * x.ndim, x.dtype)
    top = np.where(np.isfinite(top), top, 0)   # all -inf (or an inf) along a row: no inf - inf
    out = np.log(float_sum(np.exp(x - top), axes, keepdims=True)) + top
    return np.asarray(out if keepdim else np.squeeze(out, axis=axes), dtype=x.dtype)


def _logsumexp_infer(ctx):
    float_only(ctx, "X")
    _reduce_infer(ctx)


def _logsumexp_grad(g: GradBuilder):
    """dX = dOut * exp(X - Out): a softmax, never above 1, so large magnitudes are safe."""
    x, attrs = g.input("X"), _reduce_attrs(g)
    out_b = g.op("unreduce", {"X": g.output("Out"), "Target": x}, **attrs)
    dout_b = g.op("unreduce", {"X": g.output_grad("Out"), "Target": x}, **attrs)
    softmax = g.op("exp", {"X": g.op("elementwise_sub", {"X": x, "Y": out_b})})
    g.set_input_grad("X", g.op("elementwise_mul", {"X": dout_b, "Y": softmax}))


register_op("logsumexp", inputs="X", outputs="Out", attrs=_REDUCE_ATTRS, kernel=_logsumexp_kernel,
            infer=_logsumexp_infer, grad=_logsumexp_grad,
            doc="log(sum(exp(X))) over axes, shifted by the maximum (ONNX ReduceLogSumExp).")


# -- p-norm (p > 0; p = 1 and p = inf are compositions of abs with reduce_sum / reduce_max)
def _p_norm_kernel(x, porder=2.0, axis=None, keepdim=False, reduce_all=False):
    if x.dtype.itemsize < 4:  # float16 / bfloat16 in float32 (as PyTorch): their |x|^p sums overflow
        with np.errstate(over="ignore"):
            return _p_norm_kernel(x.astype(np.float32), porder, axis, keepdim, reduce_all).astype(x.dtype)
    axes = _axes(None if reduce_all else axis, x.ndim)
    if porder == 2.0:
        out = np.sqrt(float_sum(x * x, axes, keepdims=keepdim))
    else:
        out = float_sum(np.abs(x) ** porder, axes, keepdims=keepdim) ** (1.0 / porder)
    return np.asarray(out, dtype=x.dtype)


def _p_norm_infer(ctx):
    float_only(ctx, "X")
    if not ctx.attr("porder") > 0:
        raise ctx.shape_error(f"porder must be positive, got {ctx.attr('porder')}")
    _reduce_infer(ctx)


def _p_norm_grad(g: GradBuilder):
    """dX = dOut * sign(x) |x|^(p-1) / norm^(p-1); a zero norm divides by 1 (its x are all 0)."""
    x, out, p, attrs = g.input("X"), g.output("Out"), g.attr("porder"), _reduce_attrs(g)
    zero = g.op("cast", {"X": g.op("equal", {"X": out, "Y": g.op("fill_zeros_like", {"X": out})})},
                dtype=g.dtype(out))
    safe_norm = g.op("elementwise_add", {"X": out, "Y": zero})
    if p != 2.0:
        safe_norm = g.op("pow", {"X": safe_norm}, factor=p - 1.0)
    share = g.op("unreduce", {"X": g.op("elementwise_div", {"X": g.output_grad("Out"), "Y": safe_norm}),
                              "Target": x}, **attrs)
    direction = x
    if p != 2.0:
        direction = g.op("elementwise_mul", {"X": g.op("sign", {"X": x}),
                                             "Y": g.op("pow", {"X": g.op("abs", {"X": x})}, factor=p - 1.0)})
    g.set_input_grad("X", g.op("elementwise_mul", {"X": share, "Y": direction}))


register_op("p_norm", inputs="X", outputs="Out", attrs={"porder": 2.0, **_REDUCE_ATTRS}, kernel=_p_norm_kernel,
            infer=_p_norm_infer, grad=_p_norm_grad,
            doc="(sum |X|^p)^(1/p) over axes; its gradient at a zero norm is 0 (as PyTorch), not nan.")


# -- all / any
def _bool_reduce_infer(ctx):
    axis = None if ctx.attr("reduce_all") else ctx.attr("axis")
    ctx.set_output("Out", reduced_shape(ctx, ctx.shape("X"), axis, ctx.attr("keepdim")), "bool")


def _bool_reduce_kernel(fn):
    def kernel(x, axis=None, keepdim=False, reduce_all=False):
        return np.asarray(fn(x, axis=_axes(None if reduce_all else axis, x.ndim), keepdims=keepdim))
    return kernel


register_op("reduce_all", inputs="X", outputs="Out", attrs=_REDUCE_ATTRS, kernel=_bool_reduce_kernel(np.all),
            infer=_bool_reduce_infer, grad=NO_GRADIENT, doc="Whether every element (non-zero) is true.")
register_op("reduce_any", inputs="X", outputs="Out", attrs=_REDUCE_ATTRS, kernel=_bool_reduce_kernel(np.any),
            infer=_bool_reduce_infer, grad=NO_GRADIENT, doc="Whether any element (non-zero) is true.")


# -- scans: cumsum and cumprod, with ONNX CumSum's exclusive and reverse
_SCAN_ATTRS = {"axis": -1, "exclusive": False, "reverse": False}


def _scan(ufunc, x, axis, exclusive, reverse):
    x = x.astype(dtypes.accumulate_dtype(x.dtype.name), copy=False)  # bool and integers: int64
    axis = axis % max(x.ndim, 1)
    if x.ndim == 0:
        return x.copy() if not exclusive else np.asarray(ufunc.identity, dtype=x.dtype)
    if reverse:
        x = np.flip(x, axis)
    if exclusive:
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, -1)
        pad = [(0, 0)] * x.ndim
        pad[axis] = (1, 0)
        x = np.pad(x[tuple(index)], pad, constant_values=ufunc.identity)
    out = _cumsum(x, axis) if ufunc is np.add and x.dtype.kind in "fV" else ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    return np.ascontiguousarray(np.flip(out, axis)) if reverse else out


# a running float32 sum adds at most this many values in one chain (as cascade_sum's blocks)
_SCAN_BLOCK = 256


def _cumsum(x: np.ndarray, axis: int) -> np.ndarray:
    """The running sum of a float array along `axis`, accurate like PyTorch's (which accumulates
    float16 in float32 and float32 in float64): float16 / bfloat16 accumulate in float32; a long
    float32 axis in blocks of _SCAN_BLOCK values, each block's running sum then offset by the
    float64 running total of the blocks before it (one chain of 2^20 float32 values drifts 1e-5)."""
    if x.dtype.itemsize < 4:
        return np.add.accumulate(x, axis=axis, dtype=np.float32).astype(x.dtype)
    n = x.shape[axis]
    if x.dtype != np.float32 or n <= 2 * _SCAN_BLOCK:
        return np.add.accumulate(x, axis=axis, dtype=x.dtype)
    blocks, whole = n // _SCAN_BLOCK, n - n % _SCAN_BLOCK
    out = np.empty(x.shape, x.dtype)
    src, dst = np.moveaxis(x, axis, -1), np.moveaxis(out, axis, -1)
    split = src.shape[:-1] + (blocks, _SCAN_BLOCK)
    head = dst[..., :whole].reshape(split)          # splitting one axis: a view, written through
    np.add.accumulate(src[..., :whole].reshape(split), axis=-1, out=head)
    totals = np.cumsum(head[..., -1], axis=-1, dtype=np.float64)
    head[..., 1:, :] += totals[..., :-1, None].astype(np.float32)
    if whole < n:
        np.add.accumulate(src[..., whole:], axis=-1, out=dst[..., whole:])
        dst[..., whole:] += totals[..., -1:].astype(np.float32)
    return out


def _scan_infer(ctx):
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("Out", ctx.shape("X"), dtypes.accumulate_dtype(ctx.dtype("X")))


def _cumsum_grad(g: GradBuilder):
    """The transpose of a (exclusive) cumulative sum is the same sum in the other direction."""
    g.set_input_grad("X", g.op("cumsum", {"X": g.output_grad("Out")}, axis=g.attr("axis"),
                               exclusive=g.attr("exclusive"), reverse=not g.attr("reverse")))


register_op("cumsum", inputs="X", outputs="Out", attrs=_SCAN_ATTRS,
            kernel=lambda x, axis, exclusive, reverse: _scan(np.add, x, axis, exclusive, reverse),
            infer=_scan_infer, grad=_cumsum_grad, doc="Cumulative sum along `axis` (ONNX CumSum).")


def _cumprod_grad_kernel(x, dout, axis=-1, exclusive=False, reverse=False):
    """Exact also where X has zeros: dx_j = prod_{k<j} x_k * S_j with S_j = dout_j + x_{j+1} S_{j+1}."""
    axis = axis % max(x.ndim, 1)
    if x.ndim == 0:
        return np.zeros_like(x) if exclusive else dout.astype(x.dtype, copy=True)
    if x.size == 0:  # nothing to scan: an empty gradient, as PyTorch
        return np.zeros_like(x)
    if reverse:
        x, dout = np.flip(x, axis), np.flip(dout, axis)
    x, dout = np.moveaxis(x, axis, 0), np.moveaxis(dout, axis, 0)
    if exclusive:  # out = inclusive cumprod of [1, x_0, .., x_{n-2}]
        x = np.concatenate([np.ones_like(x[:1]), x[:-1]])
    before = np.multiply.accumulate(np.concatenate([np.ones_like(x[:1]), x[:-1]]), axis=0)
    tail = np.empty_like(before)
    tail[-1] = dout[-1]
    for j in range(len(x) - 2, -1, -1):
        tail[j] = dout[j] + x[j + 1] * tail[j + 1]
    dx = before * tail
    if exclusive:  # the gradient of x_j is that of the shifted entry j + 1
        dx = np.concatenate([dx[1:], np.zeros_like(dx[:1])])
    dx = np.moveaxis(dx, 0, axis)
    return np.ascontiguousarray(np.flip(dx, axis)) if reverse else np.ascontiguousarray(dx)


def _cumprod_grad_infer(ctx):
    float_only(ctx, "X", "DOut")
    if ctx.shape("X") != ctx.shape("DOut"):
        raise ctx.shape_error(f"X and DOut must match, got {ctx.describe('X')} and {ctx.describe('DOut')}")
    ctx.set_output("DX", ctx.shape("X"), ctx.dtype("X"))


def _cumprod_grad(g: GradBuilder):
    g.set_input_grad("X", g.op("cumprod_grad", {"X": g.input("X"), "DOut": g.output_grad("Out")},
                               axis=g.attr("axis"), exclusive=g.attr("exclusive"), reverse=g.attr("reverse")))


register_op("cumprod", inputs="X", outputs="Out", attrs=_SCAN_ATTRS,
            kernel=lambda x, axis, exclusive, reverse: _scan(np.multiply, x, axis, exclusive, reverse),
            infer=_scan_infer, grad=_cumprod_grad, doc="Cumulative product along `axis`.")
register_op("cumprod_grad", inputs="X DOut", outputs="DX", attrs=_SCAN_ATTRS, kernel=_cumprod_grad_kernel,
            infer=_cumprod_grad_infer, grad=cumprod_grad_grad,
            doc="cumprod's gradient, exact where X has zeros. Its own gradient (scan_grad_grad.py) is "
                "ordinary ops, O(n^2) in the scanned length, exact at zeros too.")


# -- prod over one axis (prod over several axes chains it)
def _prod_infer(ctx):
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("Out", reduced_shape(ctx, ctx.shape("X"), [ctx.attr("axis")], ctx.attr("keepdim")),
                   dtypes.accumulate_dtype(ctx.dtype("X")))


def _prod_grad(g: GradBuilder):
    """dx_j = dOut * (product of the others) = dOut * exclusive cumprod * reverse exclusive cumprod:
    no division, so zeros in X are exact."""
    x, axis, keepdim = g.input("X"), g.attr("axis"), g.attr("keepdim")
    before = g.op("cumprod", {"X": x}, axis=axis, exclusive=True, reverse=False)
    after = g.op("cumprod", {"X": x}, axis=axis, exclusive=True, reverse=True)
    dout = g.op("unreduce", {"X": g.output_grad("Out"), "Target": x}, axis=[axis], keepdim=keepdim,
                reduce_all=False)
    g.set_input_grad("X", g.op("elementwise_mul", {"X": dout, "Y": g.op("elementwise_mul",
                                                                         {"X": before, "Y": after})}))


register_op("reduce_prod", inputs="X", outputs="Out", attrs={"axis": 0, "keepdim": False},
            kernel=lambda x, axis, keepdim: np.asarray(np.prod(x, axis=axis, keepdims=keepdim,
                                                               dtype=dtypes.accumulate_dtype(x.dtype.name))),
            infer=_prod_infer, grad=_prod_grad, doc="The product along one axis.")
