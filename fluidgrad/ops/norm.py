"""Normalisation and dropout: `batch_norm`, `layer_norm`, `dropout`.

batch_norm and layer_norm have dedicated grad ops (one fused pass instead of a dozen
elementwise ops); the grad ops' own gradients (grad of grad) are ordinary ops, written in
norm_grad_grad.py. dropout's gradient is `dOut * Mask`, an ordinary op.
All three carry `is_test`, which `Program.clone(for_test=True)` switches on.
"""
from __future__ import annotations

import math

import numpy as np

from . import fused_norm
from .cascade_sum import cascade_sum, cascade_vecmat
from .random import generator
from .grad_builder import GradBuilder
from .norm_grad_grad import (batch_norm_grad_grad, batch_norm_stats_chain, layer_norm_grad_grad, layer_norm_stats_chain,
                             running_statistics)
from .registry import register_op
from .shape_rules import float_only, same_dtype


# ---------------------------------------------------------------- batch_norm
def _channel_view(v: np.ndarray, ndim: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast against an [N, C, ...] array."""
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _channel_sum(a: np.ndarray) -> np.ndarray:
    """Sum over every axis but 1: float32 by cascade_sum (blocked: a batch of N rows does not
    add up in one float32 chain); else the contiguous trailing axes first, much faster than
    NumPy's reduction over axes (0, 2, 3)."""
    fast = cascade_sum(a, (0,) + tuple(range(2, a.ndim)))
    return a.reshape(a.shape[0], a.shape[1], -1).sum(axis=2).sum(axis=0) if fast is None else fast


def batch_norm_kernel(x, scale, bias, mean, variance, momentum=0.9, epsilon=1e-5, is_test=False,
                      use_global_stats=False, data_layout="NCHW", trainable_statistics=False):
    """Y, MeanOut, VarianceOut, SavedMean, SavedVariance (the inverse std used, for the grad)."""
    dtype, ndim = x.dtype.type, x.ndim
    fused = fused_norm.compiled(x, scale, bias)   # one pass per channel for statistics and for y
    if running_statistics(is_test, use_global_stats, trainable_statistics):
        batch_mean, batch_var = mean.astype(x.dtype, copy=False), variance.astype(x.dtype, copy=False)
        centered = None if fused else x - _channel_view(batch_mean, ndim)
        mean_out, var_out = mean, variance
    else:
        count = x.size // x.shape[1] if x.shape[1] else 0
        if count == 1 and not is_test:   # a batch known only at run time (static), as torch and F.batch_norm
            raise ValueError(f"op batch_norm: Expected more than 1 value per channel when training (batch "
                             f"statistics of one value normalise it to 0), got X of shape {list(x.shape)}")
        if fused:
            batch_mean, batch_var = fused_norm.batch_norm_stats_of(x)
        else:
            batch_mean = _channel_sum(x) / dtype(count)
            centered = x - _channel_view(batch_mean, ndim)
            batch_var = _channel_sum(centered * centered) / dtype(count)
        unbiased = batch_var * dtype(count / max(count - 1, 1))
        mean_out = dtype(momentum) * mean + dtype(1 - momentum) * batch_mean.astype(mean.dtype)
        var_out = dtype(momentum) * variance + dtype(1 - momentum) * unbiased.astype(variance.dtype)
    inv_std = (1.0 / np.sqrt(batch_var + dtype(epsilon))).astype(x.dtype)
    if fused:
        return fused_norm.batch_norm_output(x, batch_mean, inv_std * scale, bias), mean_out, var_out, \
            batch_mean, inv_std
    y = centered * _channel_view(inv_std * scale, ndim) + _channel_view(bias, ndim)
    return y.astype(x.dtype, copy=False), mean_out, var_out, batch_mean, inv_std


def batch_norm_grad_kernel(x, scale, saved_mean, saved_inv_std, dy, epsilon=1e-5, is_test=False,
                           use_global_stats=False, data_layout="NCHW", trainable_statistics=False):
    """DX, DScale, DBias. With batch statistics the mean and variance depend on X too.

    dscale = sum(dy * (x - mean)) * inv_std from the centred x (as PyTorch: sum(dy x) - mean
    sum(dy) cancels on an offset input; pairwise sums, einsum's float32 ones lose digits), the
    centred x then reused in place for dx = a * dy + b * (x - mean) + e per channel."""
    ndim, dtype = x.ndim, x.dtype
    running = running_statistics(is_test, use_global_stats, trainable_statistics)
    if not running and fused_norm.compiled(x, scale, saved_mean, saved_inv_std, dy):
        return fused_norm.batch_norm_grad(x, scale, saved_mean, saved_inv_std, dy)
    dbias = _channel_sum(dy)
    centered = x - _channel_view(saved_mean.astype(dtype, copy=False), ndim)
    dy_xc = _channel_sum(dy * centered)
    dscale = (dy_xc * saved_inv_std).astype(dtype, copy=False)
    if running:
        return dy * _channel_view(scale * saved_inv_std, ndim), dscale, dbias
    count = dtype.type(x.size // x.shape[1])
    a = scale * saved_inv_std
    b = -a * saved_inv_std * dscale / count
    e = -a / count * dbias
    centered *= _channel_view(b.astype(dtype, copy=False), ndim)
    dx = dy * _channel_view(a.astype(dtype, copy=False), ndim)
    dx += centered
    dx += _channel_view(e.astype(dtype, copy=False), ndim)
    return dx, dscale, dbias


def _batch_norm_infer(ctx):
    float_only(ctx, "X", "Scale", "Bias", "Mean", "Variance")
    x = list(ctx.shape("X"))
    if len(x) < 2:
        raise ctx.shape_error(f"expects X of rank >= 2 (channels on axis 1), got {ctx.describe('X')}")
    if ctx.attr("data_layout") != "NCHW":
        raise ctx.shape_error(f"only data_layout='NCHW' (channels on axis 1) is supported, "
                              f"got {ctx.attr('data_layout')!r}")
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        if list(ctx.shape(slot)) != [x[1]]:
            raise ctx.shape_error(f"{ctx.describe(slot)} must have shape [{x[1]}] to match {ctx.describe('X')}")
    dtype = ctx.dtype("X")
    ctx.set_output("Y", x, dtype)
    ctx.set_output("MeanOut", [x[1]], ctx.dtype("Mean"))
    ctx.set_output("VarianceOut", [x[1]], ctx.dtype("Variance"))
    ctx.set_output("SavedMean", [x[1]], dtype)
    ctx.set_output("SavedVariance", [x[1]], dtype)


def _batch_norm_grad(g: GradBuilder) -> None:
    """The fused batch_norm_grad op; gradients reaching SavedMean / SavedVariance (from a
    second derivative) pass on to X through the statistics."""
    dx = None
    if g.has_output_grad("Y"):
        dx, dscale, dbias = g.op("batch_norm_grad", {
            "X": g.input("X"), "Scale": g.input("Scale"), "SavedMean": g.output("SavedMean"),
            "SavedVariance": g.output("SavedVariance"), "DY": g.output_grad("Y")},
            epsilon=g.attr("epsilon"), is_test=g.attr("is_test"), use_global_stats=g.attr("use_global_stats"),
            trainable_statistics=g.attr("trainable_statistics"))
        g.set_input_grad("Scale", dscale)
        g.set_input_grad("Bias", dbias)
    g.set_input_grad("X", batch_norm_stats_chain(g, dx))


def _batch_norm_grad_infer(ctx):
    float_only(ctx, "X", "Scale")
    for slot in ("SavedMean", "SavedVariance", "DY"):  # what batch_norm computes in X's dtype
        same_dtype(ctx, "X", slot)
    ctx.set_output("DX", ctx.shape("X"), ctx.dtype("X"))
    ctx.set_output("DScale", ctx.shape("Scale"), ctx.dtype("Scale"))
    ctx.set_output("DBias", ctx.shape("Scale"), ctx.dtype("Scale"))


_BN_ATTRS = {"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "use_global_stats": False, "data_layout": "NCHW",
             "trainable_statistics": False}
register_op("batch_norm", inputs="X Scale Bias Mean Variance",
            outputs="Y MeanOut VarianceOut SavedMean SavedVariance", attrs=dict(_BN_ATTRS),
            kernel=batch_norm_kernel, infer=_batch_norm_infer, grad=_batch_norm_grad,
            doc="Batch normalisation over all axes but 1. Training: batch statistics, and MeanOut/VarianceOut "
                "(written to the Mean/Variance variables) = momentum * running + (1 - momentum) * batch, "
                "with the unbiased batch variance as PyTorch. is_test: running statistics, unless "
                "trainable_statistics (Paddle's: batch statistics in test mode too).")
register_op("batch_norm_grad", inputs="X Scale SavedMean SavedVariance DY", outputs="DX DScale DBias",
            attrs={k: _BN_ATTRS[k] for k in ("epsilon", "is_test", "use_global_stats", "data_layout",
                                             "trainable_statistics")},
            kernel=batch_norm_grad_kernel, infer=_batch_norm_grad_infer, grad=batch_norm_grad_grad,
            doc="The gradients of batch_norm (SavedVariance is the inverse standard deviation). Its own "
                "gradient is the partial derivative in every input, SavedMean and SavedVariance included.")


# ---------------------------------------------------------------- layer_norm
def _rows(x: np.ndarray, begin_norm_axis: int) -> np.ndarray:
    # explicit products (math.prod: np.prod costs 5 us): -1 cannot be inferred for an empty batch
    return x.reshape(math.prod(x.shape[:begin_norm_axis]), math.prod(x.shape[begin_norm_axis:]))


def _row_sums(a: np.ndarray) -> np.ndarray:
    """Sum along axis 1 as BLAS matrix-vector products, several times faster than a.sum(1)
    (float32: cascade_sum's blocks, so long rows keep their digits)."""
    fast = cascade_sum(a, (1,)) if a.dtype == np.float32 else None
    return a @ np.ones(a.shape[1], dtype=a.dtype) if fast is None else fast


def _column_sums(a: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """(weights or ones) @ a, a sum over the batch rows; float32 in blocks (cascade_sum)."""
    if weights is None:
        fast = cascade_sum(a, (0,)) if a.dtype == np.float32 else None
        return np.ones(a.shape[0], dtype=a.dtype) @ a if fast is None else fast
    fast = cascade_vecmat(weights, a)
    return weights @ a if fast is None else fast


def _float32(*arrays: np.ndarray | None) -> list:
    return [None if a is None else a.astype(np.float32) for a in arrays]


def layer_norm_kernel(x, scale=None, bias=None, begin_norm_axis=1, epsilon=1e-5):
    """Y, Mean, Variance (both [prod(X.shape[:begin_norm_axis])]). Fused: the centred rows are
    the one temporary, normalised, scaled and shifted in place."""
    if x.dtype.itemsize < 4:  # float16 / bfloat16 rows in float32 (as PyTorch): their sums of squares overflow
        y, mean, var = layer_norm_kernel(*_float32(x, scale, bias), begin_norm_axis, epsilon)
        return y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)
    rows = _rows(x, begin_norm_axis)
    if fused_norm.compiled(x, scale, bias):   # one pass per row, read from cache
        y, mean, var = fused_norm.layer_norm(np.ascontiguousarray(rows), scale, bias, epsilon)
        return y.reshape(x.shape), mean, var
    dtype = x.dtype.type
    inv_n = dtype(1.0 / max(rows.shape[1], 1))
    mean = _row_sums(rows) * inv_n
    y = rows - mean[:, None]
    var = np.einsum("ij,ij->i", y, y) * inv_n
    y *= (dtype(1.0) / np.sqrt(var + dtype(epsilon)))[:, None]
    if scale is not None:
        y *= scale.reshape(1, -1)
    if bias is not None:
        y += bias.reshape(1, -1)
    # bfloat16: NumPy's matmul has no loop for it and computes in float32; round back
    return y.reshape(x.shape).astype(x.dtype, copy=False), mean.astype(x.dtype, copy=False), \
        var.astype(x.dtype, copy=False)


def layer_norm_grad_kernel(x, scale, mean, variance, dy, begin_norm_axis=1, epsilon=1e-5):
    """DX, DScale, DBias (DScale/DBias shaped like Scale; zeros-sized when there is no Scale).

    With xc = x - mean, g = dy * scale and per-row sums taken as BLAS matrix-vector products,
    dx = rstd (g - mean(g) - x_hat mean(g x_hat)) = rstd g + b xc + c with per-row b, c:
    the centred rows are the one temporary besides dx (whose buffer first holds dy xc for
    DScale and sum(g xc) = (dy xc) @ scale, then g), since fresh large arrays cost page faults."""
    if x.dtype.itemsize < 4:  # float16 / bfloat16 in float32, as the forward
        grads = layer_norm_grad_kernel(*_float32(x, scale, mean, variance, dy), begin_norm_axis, epsilon)
        return tuple(g.astype(x.dtype) for g in grads)
    rows, drows = _rows(x, begin_norm_axis), _rows(dy, begin_norm_axis)
    shape = scale.shape if scale is not None else (rows.shape[1],)
    if fused_norm.compiled(x, scale, mean, variance, dy):
        dx, dscale, dbias = fused_norm.layer_norm_grad(np.ascontiguousarray(rows), scale, mean, variance,
                                                       np.ascontiguousarray(drows), epsilon)
        return dx.reshape(x.shape), dscale.reshape(shape), dbias.reshape(shape)
    dtype = x.dtype.type
    inv_n = dtype(1.0 / max(rows.shape[1], 1))
    rstd = (dtype(1.0) / np.sqrt(variance + dtype(epsilon))).astype(x.dtype, copy=False)
    xc = rows - mean[:, None]
    dx = np.multiply(drows, xc)          # first dy * xc, then g, then dx: one buffer
    dscale = _column_sums(dx, rstd)
    dbias = _column_sums(drows)
    if scale is not None:
        flat_scale = scale.reshape(-1)
        g_xc = dx @ flat_scale
        np.multiply(drows, flat_scale, out=dx)
    else:
        g_xc = _row_sums(dx)
        np.copyto(dx, drows)
    g_sum = _row_sums(dx)
    dx *= rstd[:, None]
    xc *= (-(rstd * rstd * rstd) * g_xc * inv_n)[:, None]
    dx += xc
    dx += (-rstd * g_sum * inv_n)[:, None]
    return dx.reshape(x.shape), dscale.reshape(shape), dbias.reshape(shape)


def _layer_norm_infer(ctx):
    float_only(ctx, "X")
    x = list(ctx.shape("X"))
    axis = ctx.attr("begin_norm_axis")
    if not 0 <= axis < len(x):
        raise ctx.shape_error(f"begin_norm_axis={axis} must lie in [0, {len(x) - 1}] for {ctx.describe('X')}")
    tail = x[axis:]
    width = -1 if any(d < 0 for d in tail) else int(np.prod(tail))
    for slot in ("Scale", "Bias"):
        if ctx.has_input(slot):
            size = int(np.prod(ctx.shape(slot)))
            if width >= 0 and size != width:
                raise ctx.shape_error(f"{ctx.describe(slot)} must have {width} elements (the axes from "
                                      f"{axis} of {ctx.describe('X')})")
    lead = x[:axis]
    rows = -1 if any(d < 0 for d in lead) else int(np.prod(lead))
    ctx.set_output("Y", x, ctx.dtype("X"))
    ctx.set_output("Mean", [rows], ctx.dtype("X"))
    ctx.set_output("Variance", [rows], ctx.dtype("X"))


def _layer_norm_grad(g: GradBuilder) -> None:
    """The fused layer_norm_grad op; gradients reaching Mean / Variance (from a second
    derivative) pass on to X through the statistics."""
    dx = None
    if g.has_output_grad("Y"):
        scale = g.input("Scale")
        inputs = {"X": g.input("X"), "Scale": scale, "Mean": g.output("Mean"), "Variance": g.output("Variance"),
                  "DY": g.output_grad("Y")}
        dx, dscale, dbias = g.op("layer_norm_grad", inputs, begin_norm_axis=g.attr("begin_norm_axis"),
                                 epsilon=g.attr("epsilon"))
        if scale is not None:
            g.set_input_grad("Scale", dscale)
        bias = g.input("Bias")
        if bias is not None:
            same = tuple(g.shape(dbias)) == tuple(g.shape(bias))
            g.set_input_grad("Bias", dbias if same else g.op("reshape_as", {"X": dbias, "Target": bias}))
    g.set_input_grad("X", layer_norm_stats_chain(g, dx))


def _layer_norm_grad_infer(ctx):
    float_only(ctx, "X")
    for slot in ("Mean", "Variance", "DY"):  # what layer_norm computes in X's dtype
        same_dtype(ctx, "X", slot)
    x = list(ctx.shape("X"))
    tail = x[ctx.attr("begin_norm_axis"):]
    shape = ctx.shape("Scale") if ctx.has_input("Scale") else [-1 if any(d < 0 for d in tail) else int(np.prod(tail))]
    ctx.set_output("DX", x, ctx.dtype("X"))
    ctx.set_output("DScale", shape, ctx.dtype("X"))
    ctx.set_output("DBias", shape, ctx.dtype("X"))


register_op("layer_norm", inputs="X Scale? Bias?", outputs="Y Mean Variance",
            attrs={"begin_norm_axis": 1, "epsilon": 1e-5}, kernel=layer_norm_kernel, infer=_layer_norm_infer,
            grad=_layer_norm_grad,
            doc="Normalise each row over the axes from begin_norm_axis on; Scale/Bias hold one value per "
                "normalised element (any shape with that many elements).")
register_op("layer_norm_grad", inputs="X Scale? Mean Variance DY", outputs="DX DScale DBias",
            attrs={"begin_norm_axis": 1, "epsilon": 1e-5}, kernel=layer_norm_grad_kernel,
            infer=_layer_norm_grad_infer, grad=layer_norm_grad_grad,
            doc="The gradients of layer_norm. Its own gradient is the partial derivative in every input, "
                "Mean and Variance included.")


# ---------------------------------------------------------------- dropout
def dropout_kernel(x, dropout_prob=0.5, is_test=False, seed=0, dropout_implementation="upscale_in_train"):
    """Out = X * Mask. Mask holds the factor for each element: 0 or 1/(1-p) (upscale_in_train),
    0 or 1 (downgrade_in_infer); at test time 1, or (1-p) for downgrade_in_infer.
    A non-zero `seed` draws the same mask on every run."""
    dtype = x.dtype.type
    upscale = dropout_implementation == "upscale_in_train"
    if is_test:
        mask = np.full(x.shape, 1.0 if upscale else 1.0 - dropout_prob, dtype=x.dtype)
    elif dropout_prob >= 1.0:
        mask = np.zeros(x.shape, dtype=x.dtype)
    else:
        keep = generator(seed).random(x.shape) >= dropout_prob
        mask = keep.astype(x.dtype) * dtype(1.0 / (1.0 - dropout_prob) if upscale else 1.0)
    return x * mask, mask


def _dropout_infer(ctx):
    float_only(ctx, "X")
    if not 0.0 <= ctx.attr("dropout_prob") <= 1.0:
        raise ctx.shape_error(f"dropout_prob must lie in [0, 1], got {ctx.attr('dropout_prob')}")
    if ctx.attr("dropout_implementation") not in ("upscale_in_train", "downgrade_in_infer"):
        raise ctx.shape_error(f"dropout_implementation must be 'upscale_in_train' or 'downgrade_in_infer', "
                              f"got {ctx.attr('dropout_implementation')!r}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))
    ctx.set_output("Mask", ctx.shape("X"), ctx.dtype("X"))


def _dropout_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("elementwise_mul", {"X": g.output_grad("Out"),
                                                   "Y": g.output("Mask")}))


register_op("dropout", inputs="X", outputs="Out Mask",
            attrs={"dropout_prob": 0.5, "is_test": False, "seed": 0,
                   "dropout_implementation": "upscale_in_train"},
            kernel=dropout_kernel, infer=_dropout_infer,
            grad=_dropout_grad,
            doc="Randomly zero elements with probability dropout_prob; Mask is the factor applied, so "
                "dX = dOut * Mask.")
