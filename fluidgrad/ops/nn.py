"""Convolution and pooling (NCHW), plus `clip` and `log_softmax`.

conv2d is im2col + one BLAS product: the padded input is viewed (no copy) as windows
of shape [C, KH, KW, N, OH, OW] with stride tricks, copied once into a matrix, and
multiplied by the [O, C * KH * KW] filter. Its gradients are two more ops, `conv2d_input_grad` (col2im: KH * KW
strided slice additions) and `conv2d_filter_grad`; the three are bilinear and adjoint to
each other, so each one's gradient is written with the other two (grad of grad for free).
Pooling works the same way: `pool2d_grad` scatters back, `max_pool2d_select` is its
transpose for max pooling.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .registry import ZERO_GRADIENT, register_op
from .shape_rules import float_only, normalize_axis


# ---------------------------------------------------------------- geometry
def _pair(value, what: str) -> list[int]:
    values = [value, value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) != 2:
        raise ValueError(f"{what} must be an int or two ints, got {value!r}")
    return [int(v) for v in values]


def _pads(paddings) -> list[int]:
    """[top, bottom, left, right] from an int, [h, w] or [top, bottom, left, right]."""
    values = [paddings] * 2 if isinstance(paddings, (int, np.integer)) else list(paddings)
    if len(values) == 2:
        return [int(values[0]), int(values[0]), int(values[1]), int(values[1])]
    if len(values) == 4:
        return [int(v) for v in values]
    raise ValueError(f"paddings must be an int, [h, w] or [top, bottom, left, right], got {paddings!r}")


def _out_len(size: int, kernel: int, lo: int, hi: int, stride: int, dilation: int = 1) -> int:
    if size < 0:
        return -1
    return (size + lo + hi - dilation * (kernel - 1) - 1) // stride + 1


def _pad(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    if not any(pads):
        return x
    top, bottom, left, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _crop(xp: np.ndarray, pads: Sequence[int], height: int, width: int) -> np.ndarray:
    return xp[:, :, pads[0]:pads[0] + height, pads[2]:pads[2] + width]


# ---------------------------------------------------------------- conv2d
_CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "data_format": "NCHW"}


class _Conv:
    """The geometry of one convolution, from the input shape, filter shape and attributes."""

    def __init__(self, x_shape, w_shape, strides, paddings, dilations, groups):
        self.n, self.c, self.h, self.w = x_shape
        self.o, _, self.kh, self.kw = w_shape
        self.sh, self.sw = _pair(strides, "strides")
        self.dh, self.dw = _pair(dilations, "dilations")
        self.pads = _pads(paddings)
        self.groups = int(groups)
        self.oh = _out_len(self.h, self.kh, self.pads[0], self.pads[1], self.sh, self.dh)
        self.ow = _out_len(self.w, self.kw, self.pads[2], self.pads[3], self.sw, self.dw)

    def cols(self, x: np.ndarray, channels: slice) -> np.ndarray:
        """im2col: the windows of x's `channels` as a [C_g * KH * KW, N * OH * OW] matrix (one copy).

        Laid out channel-major so that the copy reads runs along OW and one BLAS product
        with the [O_g, C_g * KH * KW] filter gives the output channel-major too."""
        xp = _pad(x[:, channels], self.pads)
        s0, s1, s2, s3 = xp.strides
        view = as_strided(xp, (xp.shape[1], self.kh, self.kw, self.n, self.oh, self.ow),
                          (s1, s2 * self.dh, s3 * self.dw, s0, s2 * self.sh, s3 * self.sw), writeable=False)
        return view.reshape(xp.shape[1] * self.kh * self.kw, -1)

    def group_slices(self):
        cg, og = self.c // self.groups, self.o // self.groups
        return [(slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)) for g in range(self.groups)]


def _channel_major(dout: np.ndarray, channels: slice) -> np.ndarray:
    """dOut's `channels` as a [O_g, N * OH * OW] matrix."""
    part = dout[:, channels]
    return part.transpose(1, 0, 2, 3).reshape(part.shape[1], -1)


def conv2d_kernel(x, w, bias=None, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1,
                  data_format="NCHW"):
    conv = _Conv(x.shape, w.shape, strides, paddings, dilations, groups)
    out = np.empty((conv.o, conv.n, conv.oh, conv.ow), dtype=np.result_type(x, w))   # channel-major
    for cs, os_ in conv.group_slices():
        out[os_] = (w[os_].reshape(os_.stop - os_.start, -1) @ conv.cols(x, cs)).reshape(out[os_].shape)
    if bias is not None:
        out += bias.reshape(-1, 1, 1, 1)
    return out.transpose(1, 0, 2, 3)


def conv2d_input_grad_kernel(dout, w, x, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1,
                             data_format="NCHW"):
    """dX of conv2d (X only gives the shape): W^T dOut, added back window offset by window offset (col2im)."""
    conv = _Conv(x.shape, w.shape, strides, paddings, dilations, groups)
    hp, wp = conv.h + conv.pads[0] + conv.pads[1], conv.w + conv.pads[2] + conv.pads[3]
    dxp = np.zeros((conv.c, conv.n, hp, wp), dtype=dout.dtype)   # channel-major, like the columns
    rows, cols = conv.sh * (conv.oh - 1) + 1, conv.sw * (conv.ow - 1) + 1
    for cs, os_ in conv.group_slices():
        weights = w[os_].reshape(os_.stop - os_.start, -1)
        dcols = (weights.T @ _channel_major(dout, os_)).reshape(-1, conv.kh, conv.kw, conv.n, conv.oh, conv.ow)
        for kh in range(conv.kh):
            for kw in range(conv.kw):
                h0, w0 = kh * conv.dh, kw * conv.dw
                dxp[cs, :, h0:h0 + rows:conv.sh, w0:w0 + cols:conv.sw] += dcols[:, kh, kw]
    return np.ascontiguousarray(_crop(dxp.transpose(1, 0, 2, 3), conv.pads, conv.h, conv.w))


def conv2d_filter_grad_kernel(dout, x, w, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1,
                              data_format="NCHW"):
    """dW of conv2d (W only gives the shape): dOut times the transposed im2col matrix."""
    conv = _Conv(x.shape, w.shape, strides, paddings, dilations, groups)
    dw = np.empty(w.shape, dtype=dout.dtype)
    for cs, os_ in conv.group_slices():
        dw[os_] = (_channel_major(dout, os_) @ conv.cols(x, cs).T).reshape(dw[os_].shape)
    return dw


def _conv_infer(ctx):
    float_only(ctx, "Input", "Filter")
    x, w = list(ctx.shape("Input")), list(ctx.shape("Filter"))
    if ctx.attr("data_format") != "NCHW":
        raise ctx.shape_error(f"only data_format='NCHW' is supported, got {ctx.attr('data_format')!r}")
    if len(x) != 4 or len(w) != 4:
        raise ctx.shape_error(f"expects 4-D Input [N, C, H, W] and Filter [O, C/groups, KH, KW], got "
                              f"{ctx.describe('Input')} and {ctx.describe('Filter')}")
    groups = ctx.attr("groups")
    if groups < 1 or w[0] % groups or (x[1] >= 0 and x[1] != w[1] * groups):
        raise ctx.shape_error(f"{ctx.describe('Input')} has {x[1]} channels, but {ctx.describe('Filter')} with "
                              f"groups={groups} needs {w[1] * groups} (and O divisible by groups)")
    if ctx.dtype("Input") != ctx.dtype("Filter"):
        raise ctx.dtype_error(f"{ctx.describe('Input')} and {ctx.describe('Filter')} must have one dtype")
    if ctx.has_input("Bias") and list(ctx.shape("Bias")) != [w[0]]:
        raise ctx.shape_error(f"{ctx.describe('Bias')} must have shape [{w[0]}]")
    conv = _Conv(x, w, ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("dilations"), groups)
    if (conv.oh == 0 or conv.ow == 0) or (conv.oh < -1 or conv.ow < -1) or \
            (x[2] >= 0 and conv.oh < 1) or (x[3] >= 0 and conv.ow < 1):
        raise ctx.shape_error(f"{ctx.describe('Filter')} does not fit into {ctx.describe('Input')} with "
                              f"paddings {ctx.attr('paddings')} and dilations {ctx.attr('dilations')}")
    ctx.set_output("Output", [x[0], w[0], conv.oh, conv.ow], ctx.dtype("Input"))


def _conv_attrs(g) -> dict:
    return {k: g.attr(k) for k in _CONV_ATTRS}


def _conv_grad(g):
    x, w, dout, attrs = g.input("Input"), g.input("Filter"), g.output_grad("Output"), _conv_attrs(g)
    if g.needs_input_grad("Input"):
        g.set_input_grad("Input", g.op("conv2d_input_grad", {"DOutput": dout, "Filter": w, "Input": x}, **attrs))
    if g.needs_input_grad("Filter"):
        g.set_input_grad("Filter", g.op("conv2d_filter_grad", {"DOutput": dout, "Input": x, "Filter": w}, **attrs))
    if g.input("Bias") is not None and g.needs_input_grad("Bias"):
        g.set_input_grad("Bias", g.op("reduce_sum", {"X": dout}, axis=[0, 2, 3], keepdim=False, reduce_all=False))


def _conv_input_grad_grad(g):
    """Out = B(D, W), the adjoint of conv2d in X: <G, B(D, W)> = <D, conv2d(G, W)>."""
    d, w, x, cot, attrs = g.input("DOutput"), g.input("Filter"), g.input("Input"), g.output_grad("Out"), _conv_attrs(g)
    if g.needs_input_grad("DOutput"):
        g.set_input_grad("DOutput", g.op("conv2d", {"Input": cot, "Filter": w}, **attrs))
    if g.needs_input_grad("Filter"):
        g.set_input_grad("Filter", g.op("conv2d_filter_grad", {"DOutput": d, "Input": cot, "Filter": w}, **attrs))


def _conv_filter_grad_grad(g):
    """Out = F(D, X), the adjoint of conv2d in W: <G, F(D, X)> = <D, conv2d(X, G)>."""
    d, x, w, cot, attrs = g.input("DOutput"), g.input("Input"), g.input("Filter"), g.output_grad("Out"), _conv_attrs(g)
    if g.needs_input_grad("DOutput"):
        g.set_input_grad("DOutput", g.op("conv2d", {"Input": x, "Filter": cot}, **attrs))
    if g.needs_input_grad("Input"):
        g.set_input_grad("Input", g.op("conv2d_input_grad", {"DOutput": d, "Filter": cot, "Input": x}, **attrs))


register_op("conv2d", inputs="Input Filter Bias?", outputs="Output", attrs=dict(_CONV_ATTRS),
            kernel=conv2d_kernel, infer=_conv_infer, grad=_conv_grad,
            doc="2-D convolution (cross-correlation), NCHW, with strides, paddings, dilations and groups.")
def _conv_grad_infer(shape_slot: str):
    """The conv2d gradient ops: DOutput must have conv2d(Input, Filter)'s output shape."""
    def infer(ctx):
        float_only(ctx, "DOutput", "Input", "Filter")
        x, w, dout = list(ctx.shape("Input")), list(ctx.shape("Filter")), list(ctx.shape("DOutput"))
        conv = _Conv(x, w, ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("dilations"), ctx.attr("groups"))
        expected = [x[0], w[0], conv.oh, conv.ow]
        if len(dout) != 4 or any(a != b and a >= 0 and b >= 0 for a, b in zip(dout, expected)):
            raise ctx.shape_error(f"{ctx.describe('DOutput')} must have conv2d's output shape {expected} for "
                                  f"{ctx.describe('Input')} and {ctx.describe('Filter')}")
        ctx.set_output("Out", ctx.shape(shape_slot), ctx.dtype("DOutput"))
    return infer


register_op("conv2d_input_grad", inputs="DOutput Filter Input", outputs="Out", attrs=dict(_CONV_ATTRS),
            kernel=conv2d_input_grad_kernel, infer=_conv_grad_infer("Input"), grad=_conv_input_grad_grad,
            doc="The gradient of conv2d with respect to Input (Input gives only the shape).")
register_op("conv2d_filter_grad", inputs="DOutput Input Filter", outputs="Out", attrs=dict(_CONV_ATTRS),
            kernel=conv2d_filter_grad_kernel, infer=_conv_grad_infer("Filter"), grad=_conv_filter_grad_grad,
            doc="The gradient of conv2d with respect to Filter (Filter gives only the shape).")


# ---------------------------------------------------------------- pool2d
_POOL_ATTRS = {"pooling_type": "max", "ksize": [1, 1], "strides": [1, 1], "paddings": [0, 0],
               "global_pooling": False, "exclusive": True, "data_format": "NCHW"}


class _Pool:
    def __init__(self, x_shape, ksize, strides, paddings, global_pooling):
        self.n, self.c, self.h, self.w = x_shape
        if global_pooling:
            self.kh, self.kw, self.sh, self.sw, self.pads = self.h, self.w, 1, 1, [0, 0, 0, 0]
        else:
            self.kh, self.kw = _pair(ksize, "ksize")
            self.sh, self.sw = _pair(strides, "strides")
            self.pads = _pads(paddings)
        self.oh = _out_len(self.h, self.kh, self.pads[0], self.pads[1], self.sh)
        self.ow = _out_len(self.w, self.kw, self.pads[2], self.pads[3], self.sw)
        if global_pooling:  # one window, even when H and W are known only at run time
            self.oh = self.ow = 1

    def positions(self, xp: np.ndarray):
        """(k, view) for each window offset k = kh * KW + kw: the [N, C, OH, OW] strided slice of the
        padded array that offset reads. Looping over KH * KW offsets keeps every NumPy call on
        large regular slices, much faster than reducing a 6-D window view."""
        for kh in range(self.kh):
            for kw in range(self.kw):
                yield kh * self.kw + kw, xp[:, :, kh:kh + self.sh * (self.oh - 1) + 1:self.sh,
                                            kw:kw + self.sw * (self.ow - 1) + 1:self.sw]

    def padded_shape(self) -> tuple[int, int, int, int]:
        return (self.n, self.c, self.h + self.pads[0] + self.pads[1], self.w + self.pads[2] + self.pads[3])

    def counts(self, exclusive: bool, dtype) -> np.ndarray:
        """How many elements each average divides by: real (non-padding) ones when exclusive."""
        if not exclusive:
            return np.asarray(self.kh * self.kw, dtype=dtype)

        def along(size, k, lo, stride, out):
            starts = np.arange(out) * stride - lo
            return np.minimum(starts + k, size) - np.maximum(starts, 0)
        rows = along(self.h, self.kh, self.pads[0], self.sh, self.oh)
        cols = along(self.w, self.kw, self.pads[2], self.sw, self.ow)
        return np.maximum(np.outer(rows, cols), 1).astype(dtype)

    def maximum(self, x: np.ndarray) -> np.ndarray:
        best = None
        for _, view in self.positions(_pad(x, self.pads, -np.inf)):
            best = view.copy() if best is None else np.maximum(best, view, out=best)
        return best

    def first_max_hits(self, x: np.ndarray):
        """(k, hit) per window offset k: hit marks the windows whose first maximum (PyTorch's
        choice on ties) sits at offset k. Comparing with the window maximum beats an argmax."""
        best = self.maximum(x)
        free = np.ones(best.shape, dtype=bool)
        for k, view in self.positions(_pad(x, self.pads, -np.inf)):
            hit = view == best
            hit &= free
            free &= ~hit
            yield k, hit


def pool2d_kernel(x, pooling_type="max", ksize=(1, 1), strides=(1, 1), paddings=(0, 0), global_pooling=False,
                  exclusive=True, data_format="NCHW"):
    if global_pooling:
        reduce = np.max if pooling_type == "max" else np.mean
        return reduce(x, axis=(2, 3), keepdims=True).astype(x.dtype, copy=False)
    pool = _Pool(x.shape, ksize, strides, paddings, global_pooling)
    if pooling_type == "max":
        return pool.maximum(x)
    total = np.zeros((pool.n, pool.c, pool.oh, pool.ow), dtype=x.dtype)
    for _, view in pool.positions(_pad(x, pool.pads)):
        total += view
    return total / pool.counts(exclusive, x.dtype)


def pool2d_grad_kernel(x, dout, pooling_type="max", ksize=(1, 1), strides=(1, 1), paddings=(0, 0),
                       global_pooling=False, exclusive=True, data_format="NCHW"):
    """Scatter dOut back over the windows: to each window's first maximum, or spread evenly."""
    pool = _Pool(x.shape, ksize, strides, paddings, global_pooling)
    if global_pooling and pooling_type == "avg":
        return np.broadcast_to(dout / dout.dtype.type(pool.h * pool.w), x.shape).copy()
    if global_pooling:
        flat_index = x.reshape(pool.n, pool.c, -1).argmax(axis=-1)[..., None]
        dx = np.zeros((pool.n, pool.c, pool.h * pool.w), dtype=dout.dtype)
        np.put_along_axis(dx, flat_index, dout.reshape(pool.n, pool.c, 1), axis=-1)
        return dx.reshape(x.shape)
    dxp = np.zeros(pool.padded_shape(), dtype=dout.dtype)
    if pooling_type == "max":
        targets = [view for _, view in pool.positions(dxp)]
        for k, hit in pool.first_max_hits(x):
            targets[k] += dout * hit
    else:
        share = dout / pool.counts(exclusive, dout.dtype)
        for _, view in pool.positions(dxp):
            view += share
    return np.ascontiguousarray(_crop(dxp, pool.pads, pool.h, pool.w))


def max_pool2d_select_kernel(x, y, ksize=(1, 1), strides=(1, 1), paddings=(0, 0), global_pooling=False,
                             data_format="NCHW"):
    """Y (shaped like X) read at each max-pool window's argmax of X: the transpose of pool2d_grad."""
    pool = _Pool(x.shape, ksize, strides, paddings, global_pooling)
    out = np.zeros((pool.n, pool.c, pool.oh, pool.ow), dtype=y.dtype)
    sources = [view for _, view in pool.positions(_pad(y, pool.pads))]
    for k, hit in pool.first_max_hits(x):
        np.copyto(out, sources[k], where=hit)
    return out


def _pool_infer(ctx):
    float_only(ctx, "X")
    x = list(ctx.shape("X"))
    if len(x) != 4:
        raise ctx.shape_error(f"expects a 4-D NCHW input, got {ctx.describe('X')}")
    if ctx.attr("data_format") != "NCHW":
        raise ctx.shape_error(f"only data_format='NCHW' is supported, got {ctx.attr('data_format')!r}")
    if ctx.op_def.type != "max_pool2d_select" and ctx.attr("pooling_type") not in ("max", "avg"):
        raise ctx.shape_error(f"pooling_type must be 'max' or 'avg', got {ctx.attr('pooling_type')!r}")
    pool = _Pool(x, ctx.attr("ksize"), ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("global_pooling"))
    pads = pool.pads
    if ctx.attr("global_pooling"):
        return x, pool
    if pads[0] >= pool.kh or pads[1] >= pool.kh or pads[2] >= pool.kw or pads[3] >= pool.kw:
        raise ctx.shape_error(f"paddings {pads} must be smaller than the window {[pool.kh, pool.kw]}")
    if (x[2] >= 0 and pool.oh < 1) or (x[3] >= 0 and pool.ow < 1):
        raise ctx.shape_error(f"window {[pool.kh, pool.kw]} does not fit into {ctx.describe('X')}")
    return x, pool


def _pool_out_infer(ctx):
    x, pool = _pool_infer(ctx)
    ctx.set_output("Out", [x[0], x[1], pool.oh, pool.ow], ctx.dtype("X"))


def _pool_attrs(g, with_type: bool = True) -> dict:
    keys = [k for k in _POOL_ATTRS if with_type or k not in ("pooling_type", "exclusive")]
    return {k: g.attr(k) for k in keys}


def _pool_grad(g):
    g.set_input_grad("X", g.op("pool2d_grad", {"X": g.input("X"), "DOut": g.output_grad("Out")}, **_pool_attrs(g)))


def _pool_grad_grad(g):
    """pool2d_grad is linear in DOut; its transpose is avg pooling, or max_pool2d_select."""
    cot = g.output_grad("Out")
    if g.attr("pooling_type") == "avg":
        dd = g.op("pool2d", {"X": cot}, **_pool_attrs(g))
    else:
        dd = g.op("max_pool2d_select", {"X": g.input("X"), "Y": cot}, **_pool_attrs(g, with_type=False))
    g.set_input_grad("DOut", dd)


def _select_grad(g):
    g.set_input_grad("Y", g.op("pool2d_grad", {"X": g.input("X"), "DOut": g.output_grad("Out")},
                               pooling_type="max", **_pool_attrs(g, with_type=False)))


def _select_infer(ctx):
    x, pool = _pool_infer(ctx)
    if list(ctx.shape("Y")) != x:
        raise ctx.shape_error(f"{ctx.describe('Y')} must have the shape of {ctx.describe('X')}")
    ctx.set_output("Out", [x[0], x[1], pool.oh, pool.ow], ctx.dtype("Y"))


register_op("pool2d", inputs="X", outputs="Out", attrs=dict(_POOL_ATTRS), kernel=pool2d_kernel,
            infer=_pool_out_infer, grad=_pool_grad,
            doc="Max or average pooling over NCHW windows; `exclusive` averages only non-padding elements.")
register_op("pool2d_grad", inputs="X DOut", outputs="Out", attrs=dict(_POOL_ATTRS), kernel=pool2d_grad_kernel,
            infer=lambda ctx: (_pool_infer(ctx), ctx.set_output("Out", ctx.shape("X"), ctx.dtype("DOut"))),
            grad=_pool_grad_grad, doc="The gradient of pool2d with respect to X (X locates the maxima).")
register_op("max_pool2d_select", inputs="X Y", outputs="Out",
            attrs={k: v for k, v in _POOL_ATTRS.items() if k not in ("pooling_type", "exclusive")},
            kernel=max_pool2d_select_kernel, infer=_select_infer, grad=_select_grad,
            doc="Y read at the argmax of each max-pool window of X (pool2d_grad's transpose).")


# ---------------------------------------------------------------- clip, log_softmax
def _clip_infer(ctx):
    float_only(ctx, "X")
    if ctx.attr("min") > ctx.attr("max"):
        raise ctx.shape_error(f"min {ctx.attr('min')} is larger than max {ctx.attr('max')}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _clip_grad(g):
    mask = g.op("clip_mask", {"X": g.input("X")}, min=g.attr("min"), max=g.attr("max"))
    g.set_input_grad("X", g.op("elementwise_mul", {"X": g.output_grad("Out"), "Y": mask}))


register_op("clip", inputs="X", outputs="Out", attrs={"min": -np.inf, "max": np.inf},
            kernel=lambda x, min, max: np.clip(x, x.dtype.type(min), x.dtype.type(max)),
            infer=_clip_infer, grad=_clip_grad, doc="Clamp X into [min, max].")
register_op("clip_mask", inputs="X", outputs="Out", attrs={"min": -np.inf, "max": np.inf},
            kernel=lambda x, min, max: ((x >= min) & (x <= max)).astype(x.dtype),
            infer=_clip_infer, grad=ZERO_GRADIENT, doc="1 where min <= X <= max, else 0 (clip's slope).")


def _log_softmax_kernel(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _log_softmax_infer(ctx):
    float_only(ctx, "X")
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _log_softmax_grad(g):
    """dX = dOut - softmax * sum(dOut, axis)."""
    dout, axis = g.output_grad("Out"), g.attr("axis")
    total = g.op("reduce_sum", {"X": dout}, axis=[axis], keepdim=True, reduce_all=False)
    softmax = g.op("exp", {"X": g.output("Out")})
    g.set_input_grad("X", g.op("elementwise_sub", {"X": dout, "Y": g.op("elementwise_mul",
                                                                         {"X": softmax, "Y": total})}))


register_op("log_softmax", inputs="X", outputs="Out", attrs={"axis": -1}, kernel=_log_softmax_kernel,
            infer=_log_softmax_infer, grad=_log_softmax_grad, doc="log(softmax(X)) along `axis`, computed stably.")
