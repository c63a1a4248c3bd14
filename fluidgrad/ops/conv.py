"""Convolution over 1, 2 or 3 spatial axes (channel-first), and its transpose.

One rank-generic kernel serves `conv1d`, `conv2d`, `conv3d`: the padded input is viewed (no
copy) as windows [N, C, *K, *O], copied once into a [N, C*K, L] matrix stack (L = prod(O)),
and multiplied by the [O, C*K] filter in one batched BLAS call whose result [N, O, L] is
already the channel-first output: no transpose copy follows. The gradients are two more ops,
`conv{n}d_input_grad` (W^T dOut, then col2im: one strided slice addition per kernel offset)
and `conv{n}d_filter_grad`; the three are bilinear and adjoint to each other, so each one's
gradient is written with the other two (grad of grad for free). `conv{n}d_transpose` is
`conv{n}d_input_grad` run forward, so its gradients are conv and conv_filter_grad again.
3x3 stride-1 convolutions with enough channels take Winograd F(2x2, 3x3) instead (winograd.py)
when numba is installed: 2.25x fewer multiplies than im2col + GEMM.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import accel, winograd
from .cascade_sum import cascade_sum
from .geometry import PADDING_ALGORITHMS, Windows, per_axis
from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only

CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "data_format": "NCHW",
              "padding_algorithm": "EXPLICIT"}
_LAYOUTS = {1: ("NCL", "NCW"), 2: ("NCHW",), 3: ("NCDHW",)}


def _windows(x_shape, w_shape, strides, paddings, dilations, padding_algorithm) -> Windows:
    return _cached_windows(tuple(x_shape[2:]), tuple(w_shape[2:]), _frozen(strides), _frozen(paddings),
                           _frozen(dilations), padding_algorithm)


def _frozen(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


@functools.lru_cache(maxsize=256)
def _cached_windows(spatial, kernel, strides, paddings, dilations, padding_algorithm) -> Windows:
    """Windows are read-only once built: a training loop's few geometries are built once."""
    return Windows(spatial, kernel, strides, paddings, dilations, padding_algorithm)


def _group_slices(channels: int, out_channels: int, groups: int):
    cg, og = channels // groups, out_channels // groups
    return [(slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)) for g in range(groups)]


def _columns(win: np.ndarray, channels: slice) -> np.ndarray:
    """im2col for one group: the windows of `channels` as [N, C_g * K, L] (the one copy)."""
    part = win[:, channels]
    n, c = part.shape[:2]
    nd = (part.ndim - 2) // 2   # explicit sizes, no -1: an empty batch has nothing to infer from
    return part.reshape(n, c * int(np.prod(part.shape[2:2 + nd])), int(np.prod(part.shape[2 + nd:])))


# ---------------------------------------------------------------- stride 1: shifted flat planes
# With stride 1, the window at output position q starts at the same flat index q of the padded
# plane, if the output is laid out with the padded plane's row lengths (`lay`: the first axis
# the output's, the others the padded input's; the extra positions are junk). Then each kernel
# offset is one contiguous slice of the flat padded plane, shifted: im2col and col2im become
# K long contiguous copies or additions instead of K strided ones with inner loops as short as
# an output row. Measured, it pays for col2im (conv's input gradient) on small planes (the
# demo's 4x4: 1.4x faster), not for im2col, whose junk columns and crop copy cost more than the
# strided copy; `_FLAT_BYTES` bounds the columns it builds at once (large ones leave the cache).
_FLAT_BYTES = 4 << 20


def _flat_layout(geo: Windows) -> tuple[list[int], int, list[int]]:
    """The `lay` extents, their flat size (the GEMM's columns per image) and each offset's shift
    in the flat padded plane."""
    lay = [geo.out[0]] + geo.padded[1:]
    plane_strides = [math.prod(geo.padded[a + 1:]) for a in range(geo.nd)]
    shifts = [sum(k * d * st for k, d, st in zip(offset, geo.dilations, plane_strides)) for offset in geo.offsets()]
    return lay, math.prod(lay), shifts


def _use_flat(geo: Windows, n: int, channels: int, itemsize: int, groups: int) -> bool:
    if groups != 1 or max(geo.strides) > 1:
        return False
    return n * channels * geo.kernel_size * _flat_layout(geo)[1] * itemsize <= _FLAT_BYTES


def _to_layout(a: np.ndarray, geo: Windows) -> np.ndarray:
    """An [N, O, *out] array in the `lay` layout [N, O, span] (junk positions zero)."""
    lay, span, _ = _flat_layout(geo)
    if list(a.shape[2:]) == lay:
        return a.reshape(a.shape[0], a.shape[1], span)
    out = np.zeros(a.shape[:2] + tuple(lay), dtype=a.dtype)
    out[(slice(None), slice(None)) + tuple(slice(0, e) for e in geo.out)] = a
    return out.reshape(a.shape[0], a.shape[1], span)


def _flat_col2im(dout: np.ndarray, w: np.ndarray, geo: Windows, channels: int) -> np.ndarray:
    """conv's input gradient for stride 1: W^T dOut in the `lay` layout, then K contiguous
    shifted additions into the flat padded plane."""
    _, span, shifts = _flat_layout(geo)
    n, o = dout.shape[:2]
    dcols = np.matmul(w.reshape(o, -1).T, _to_layout(dout, geo)).reshape(n, channels, len(shifts), span)
    total = math.prod(geo.padded)
    dxp = np.zeros((n, channels, max(total, max(shifts) + span)), dtype=dout.dtype)
    for k, shift in enumerate(shifts):
        dxp[:, :, shift:shift + span] += dcols[:, :, k]
    return geo.crop(dxp[:, :, :total].reshape((n, channels) + tuple(geo.padded)))


def _winograd(geo: Windows, groups: int, channels: int, *arrays) -> bool:
    """Whether Winograd F(2x2, 3x3) runs (winograd.py): 3x3 stride 1, numba on, `channels` (the
    forward's input channels) enough."""
    return (geo.nd == 2 and winograd.applies(geo.kernel, geo.strides, geo.dilations, geo.pads, groups)
            and winograd.pays(channels) and accel.enabled() and accel.takes(*arrays))


def _finite(result: np.ndarray) -> bool:
    """Whether a Winograd result can stand: its transforms subtract neighbours, so an infinite
    operand gives NaN (inf - inf) where im2col gives inf. Any non-finite operand makes the result
    non-finite, so one sum over the result tells; the rare rest is recomputed by im2col."""
    return bool(np.isfinite(result.sum()))


def conv_kernel(x, w, bias=None, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1,
                data_format="NCHW", padding_algorithm="EXPLICIT"):
    geo = _windows(x.shape, w.shape, strides, paddings, dilations, padding_algorithm)
    if _winograd(geo, groups, x.shape[1], *((x, w) if bias is None else (x, w, bias))):
        out = winograd.conv2d(x, w, bias, geo.pads)
        if _finite(out):
            return out
    n, o = x.shape[0], w.shape[0]
    win = geo.view(geo.pad(x))
    out = np.empty((n, o, geo.out_size), dtype=np.result_type(x, w))
    for cs, os_ in _group_slices(x.shape[1], o, groups):
        np.matmul(w[os_].reshape(os_.stop - os_.start, -1), _columns(win, cs), out=out[:, os_])
    if bias is not None:
        out += bias.reshape(-1, 1)
    return out.reshape((n, o) + tuple(geo.out))


def col2im(dout: np.ndarray, w: np.ndarray, geo: Windows, channels: int, groups: int) -> np.ndarray:
    """W^T dOut added back over the windows: conv's input gradient, and conv_transpose's forward."""
    n, o = dout.shape[:2]
    dxp = np.zeros((n, channels) + tuple(geo.padded), dtype=dout.dtype)
    d3 = dout.reshape(n, o, geo.out_size)
    for cs, os_ in _group_slices(channels, o, groups):
        weights = w[os_].reshape(os_.stop - os_.start, -1)
        dcols = np.matmul(weights.T, d3[:, os_])
        dwin = dcols.reshape((n, cs.stop - cs.start) + tuple(geo.kernel) + tuple(geo.out))
        geo.add_windows(dxp[:, cs], dwin)
    return geo.crop(dxp)


def conv_input_grad_kernel(dout, w, x, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1,
                           data_format="NCHW", padding_algorithm="EXPLICIT"):
    """dX of conv (X gives only the shape). With stride 1 it is itself a convolution of dOut
    with the flipped, channel-swapped filter: one im2col copy and one GEMM, cheaper than
    col2im's read-modify-write pass per kernel offset."""
    geo = _windows(x.shape, w.shape, strides, paddings, dilations, padding_algorithm)
    if winograd.flipped_pads(geo.pads) and _winograd(geo, groups, x.shape[1], dout, w):
        dx = winograd.input_grad(dout, w, geo.pads)
        if _finite(dx):
            return dx
    if _use_flat(geo, x.shape[0], x.shape[1], dout.dtype.itemsize, groups):
        return _flat_col2im(dout, w, geo, x.shape[1])
    reach = [d * (k - 1) for k, d in zip(geo.kernel, geo.dilations)]
    full = [(r - lo, r - hi) for r, (lo, hi) in zip(reach, geo.pads)]
    if max(geo.strides) > 1 or min(v for pair in full for v in pair) < 0:
        return col2im(dout, w, geo, x.shape[1], groups)
    return conv_kernel(dout, _flipped_filter(w, groups), None, 1, [v for pair in full for v in pair],
                       geo.dilations, groups)


def _flipped_filter(w: np.ndarray, groups: int) -> np.ndarray:
    """[O, C/g, *K] -> [C, O/g, *K] with every spatial axis reversed (the adjoint's filter)."""
    o, cg = w.shape[:2]
    per_group = w.reshape((groups, o // groups, cg) + w.shape[2:]).swapaxes(1, 2)
    flipped = per_group[(Ellipsis,) + (slice(None, None, -1),) * (w.ndim - 2)]
    return np.ascontiguousarray(flipped).reshape((groups * cg, o // groups) + w.shape[2:])


def conv_filter_grad_kernel(dout, x, w, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1,
                            data_format="NCHW", padding_algorithm="EXPLICIT"):
    """dW of conv (W gives only the shape): per image dOut [O, L] times its columns^T, summed
    over the images by cascade_sum (float32: an error growing as log2(N), not N)."""
    geo = _windows(x.shape, w.shape, strides, paddings, dilations, padding_algorithm)
    if _winograd(geo, groups, x.shape[1], dout, x):
        dw = winograd.filter_grad(dout, x, geo.pads)
        if _finite(dw):
            return dw
    n, o = dout.shape[:2]
    win = geo.view(geo.pad(x))
    d3 = dout.reshape(n, o, geo.out_size)
    dw = np.empty(w.shape, dtype=dout.dtype)
    for cs, os_ in _group_slices(x.shape[1], o, groups):
        per_image = np.matmul(d3[:, os_], _columns(win, cs).transpose(0, 2, 1))
        total = cascade_sum(per_image, (0,))
        dw[os_] = (per_image.sum(axis=0) if total is None else total).reshape(dw[os_].shape)
    return dw


# ---------------------------------------------------------------- shape rules
def _check_layout(ctx, nd: int) -> None:
    if ctx.attr("data_format") not in _LAYOUTS[nd]:
        raise ctx.shape_error(f"only channel-first data_format {_LAYOUTS[nd][0]!r} is supported, "
                              f"got {ctx.attr('data_format')!r}")
    if str(ctx.attr("padding_algorithm")).upper() not in PADDING_ALGORITHMS:
        raise ctx.shape_error(f"padding_algorithm must be one of {PADDING_ALGORITHMS}, "
                              f"got {ctx.attr('padding_algorithm')!r}")


def _geometry(ctx, nd: int, x: list, w: list) -> Windows:
    try:
        return Windows(x[2:], w[2:], ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("dilations"),
                       ctx.attr("padding_algorithm"))
    except ValueError as err:
        raise ctx.shape_error(str(err)) from None


def _check_operands(ctx, nd: int, x_slot: str, w_slot: str):
    """Rank, dtype and channel checks shared by conv and conv_transpose; returns shapes, groups."""
    float_only(ctx, x_slot, w_slot)
    _check_layout(ctx, nd)
    x, w = list(ctx.shape(x_slot)), list(ctx.shape(w_slot))
    if len(x) != nd + 2 or len(w) != nd + 2:
        raise ctx.shape_error(f"expects {nd + 2}-D {x_slot} [N, C, *spatial] and {w_slot}, got "
                              f"{ctx.describe(x_slot)} and {ctx.describe(w_slot)}")
    if ctx.dtype(x_slot) != ctx.dtype(w_slot):
        raise ctx.dtype_error(f"{ctx.describe(x_slot)} and {ctx.describe(w_slot)} must have one dtype")
    groups = ctx.attr("groups")
    if any(s < 1 for s in per_axis(ctx.attr("strides"), nd, "strides")) or \
            any(d < 1 for d in per_axis(ctx.attr("dilations"), nd, "dilations")):
        raise ctx.shape_error(f"strides {ctx.attr('strides')} and dilations {ctx.attr('dilations')} must be >= 1")
    return x, w, groups


def _conv_infer(nd: int):
    def infer(ctx):
        x, w, groups = _check_operands(ctx, nd, "Input", "Filter")
        if groups < 1 or w[0] % groups or (x[1] >= 0 and x[1] != w[1] * groups):
            raise ctx.shape_error(f"{ctx.describe('Input')} has {x[1]} channels, but {ctx.describe('Filter')} "
                                  f"with groups={groups} needs {w[1] * groups} (and O divisible by groups)")
        if ctx.has_input("Bias") and list(ctx.shape("Bias")) != [w[0]]:
            raise ctx.shape_error(f"{ctx.describe('Bias')} must have shape [{w[0]}]")
        geo = _geometry(ctx, nd, x, w)
        if any(o == 0 or o < -1 or (s >= 0 and o < 1) for o, s in zip(geo.out, x[2:])):
            raise ctx.shape_error(f"{ctx.describe('Filter')} does not fit into {ctx.describe('Input')} with "
                                  f"paddings {ctx.attr('paddings')} and dilations {ctx.attr('dilations')}")
        ctx.set_output("Output", [x[0], w[0]] + geo.out, ctx.dtype("Input"))
    return infer


def _conv_grad_infer(nd: int, shape_slot: str):
    """The conv gradient ops: DOutput must have conv(Input, Filter)'s output shape."""
    def infer(ctx):
        float_only(ctx, "DOutput", "Input", "Filter")
        _check_layout(ctx, nd)
        x, w, dout = list(ctx.shape("Input")), list(ctx.shape("Filter")), list(ctx.shape("DOutput"))
        if len(x) != nd + 2 or len(w) != nd + 2:
            raise ctx.shape_error(f"expects {nd + 2}-D Input and Filter, got {ctx.describe('Input')} and "
                                  f"{ctx.describe('Filter')}")
        expected = [x[0], w[0]] + _geometry(ctx, nd, x, w).out
        if len(dout) != nd + 2 or any(a != b and a >= 0 and b >= 0 for a, b in zip(dout, expected)):
            raise ctx.shape_error(f"{ctx.describe('DOutput')} must have conv's output shape {expected} for "
                                  f"{ctx.describe('Input')} and {ctx.describe('Filter')}")
        ctx.set_output("Out", ctx.shape(shape_slot), ctx.dtype("DOutput"))
    return infer


# ---------------------------------------------------------------- gradients
def _attrs(g, keys=CONV_ATTRS) -> dict:
    return {k: _attr(g, k, CONV_ATTRS[k]) for k in keys}


def _attr(g, name: str, default):
    """An attribute of the forward op; programs saved before it existed lack it."""
    try:
        return g.attr(name)
    except KeyError:
        return default


def _bias_grad(g, dout, nd: int):
    if g.input("Bias") is not None and g.needs_input_grad("Bias"):
        g.set_input_grad("Bias", g.op("reduce_sum", {"X": dout}, axis=[0] + list(range(2, nd + 2)),
                                      keepdim=False, reduce_all=False))


def _conv_grad(nd: int):
    def grad(g: GradBuilder) -> None:
        x, w, dout, attrs = g.input("Input"), g.input("Filter"), g.output_grad("Output"), _attrs(g)
        if g.needs_input_grad("Input"):
            g.set_input_grad("Input", g.op(f"conv{nd}d_input_grad", {"DOutput": dout, "Filter": w, "Input": x},
                                           **attrs))
        if g.needs_input_grad("Filter"):
            g.set_input_grad("Filter", g.op(f"conv{nd}d_filter_grad", {"DOutput": dout, "Input": x, "Filter": w},
                                            **attrs))
        _bias_grad(g, dout, nd)
    return grad


def _conv_input_grad_grad(nd: int):
    """Out = B(D, W), the adjoint of conv in X: <G, B(D, W)> = <D, conv(G, W)>."""
    def grad(g: GradBuilder) -> None:
        d, w, cot, attrs = g.input("DOutput"), g.input("Filter"), g.output_grad("Out"), _attrs(g)
        if g.needs_input_grad("DOutput"):
            g.set_input_grad("DOutput", g.op(f"conv{nd}d", {"Input": cot, "Filter": w}, **attrs))
        if g.needs_input_grad("Filter"):
            g.set_input_grad("Filter", g.op(f"conv{nd}d_filter_grad", {"DOutput": d, "Input": cot, "Filter": w},
                                            **attrs))
    return grad


def _conv_filter_grad_grad(nd: int):
    """Out = F(D, X), the adjoint of conv in W: <G, F(D, X)> = <D, conv(X, G)>."""
    def grad(g: GradBuilder) -> None:
        d, x, cot, attrs = g.input("DOutput"), g.input("Input"), g.output_grad("Out"), _attrs(g)
        if g.needs_input_grad("DOutput"):
            g.set_input_grad("DOutput", g.op(f"conv{nd}d", {"Input": x, "Filter": cot}, **attrs))
        if g.needs_input_grad("Input"):
            g.set_input_grad("Input", g.op(f"conv{nd}d_input_grad", {"DOutput": d, "Filter": cot, "Input": x},
                                           **attrs))
    return grad


# ---------------------------------------------------------------- transposed convolution
TRANSPOSE_ATTRS = {**CONV_ATTRS, "output_padding": [0, 0]}


def transpose_out_len(size: int, kernel: int, lo: int, hi: int, stride: int, dilation: int, extra: int) -> int:
    if size < 0:
        return -1
    return (size - 1) * stride - lo - hi + dilation * (kernel - 1) + 1 + extra


def _transpose_geometry(in_spatial, kernel, strides, paddings, dilations, output_padding):
    """The conv geometry whose input is the transposed conv's output; out_size = the input's."""
    nd = len(kernel)
    probe = Windows([1] * nd, kernel, strides, paddings, dilations)
    extra = per_axis(output_padding, nd, "output_padding")
    out = [transpose_out_len(s, k, lo, hi, st, d, e) for s, k, (lo, hi), st, d, e
           in zip(in_spatial, kernel, probe.pads, probe.strides, probe.dilations, extra)]
    geo = Windows(out, kernel, strides, paddings, dilations)
    return geo, out, extra


def conv_transpose_kernel(x, w, bias=None, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1,
                          data_format="NCHW", padding_algorithm="EXPLICIT", output_padding=(0, 0)):
    geo, out, _ = _transpose_geometry(x.shape[2:], w.shape[2:], strides, paddings, dilations, output_padding)
    y = col2im(x, w, geo, w.shape[1] * groups, groups)
    if bias is not None:
        y += bias.reshape((-1,) + (1,) * len(out))
    return y


def _conv_transpose_infer(nd: int):
    def infer(ctx):
        x, w, groups = _check_operands(ctx, nd, "Input", "Filter")
        if str(ctx.attr("padding_algorithm")).upper() != "EXPLICIT":
            raise ctx.shape_error(f"padding_algorithm must be 'EXPLICIT' (the functions resolve 'same' and "
                                  f"'valid' to paddings), got {ctx.attr('padding_algorithm')!r}")
        if groups < 1 or (x[1] >= 0 and x[1] != w[0]) or w[0] % groups:
            raise ctx.shape_error(f"{ctx.describe('Input')} has {x[1]} channels, but {ctx.describe('Filter')} "
                                  f"[C_in, C_out / groups, *kernel] expects {w[0]} (divisible by groups={groups})")
        if ctx.has_input("Bias") and list(ctx.shape("Bias")) != [w[1] * groups]:
            raise ctx.shape_error(f"{ctx.describe('Bias')} must have shape [{w[1] * groups}]")
        try:
            geo, out, extra = _transpose_geometry(x[2:], w[2:], ctx.attr("strides"), ctx.attr("paddings"),
                                                  ctx.attr("dilations"), ctx.attr("output_padding"))
        except ValueError as err:
            raise ctx.shape_error(str(err)) from None
        if any(e < 0 or e >= st for e, st in zip(extra, geo.strides)):
            raise ctx.shape_error(f"output_padding {ctx.attr('output_padding')} must be smaller than the "
                                  f"strides {ctx.attr('strides')}")
        if any(o == 0 or o < -1 for o in out):
            raise ctx.shape_error(f"{ctx.describe('Input')} with {ctx.describe('Filter')} and paddings "
                                  f"{ctx.attr('paddings')} gives an empty output {out}")
        ctx.set_output("Output", [x[0], w[1] * groups] + out, ctx.dtype("Input"))
    return infer


def _conv_transpose_grad(nd: int):
    """Y = conv_input_grad(X, W): dX = conv(dY, W), dW = conv_filter_grad(X, dY)."""
    def grad(g: GradBuilder) -> None:
        x, w, dy = g.input("Input"), g.input("Filter"), g.output_grad("Output")
        attrs = _attrs(g)
        if g.needs_input_grad("Input"):
            g.set_input_grad("Input", g.op(f"conv{nd}d", {"Input": dy, "Filter": w}, **attrs))
        if g.needs_input_grad("Filter"):
            g.set_input_grad("Filter", g.op(f"conv{nd}d_filter_grad", {"DOutput": x, "Input": dy, "Filter": w},
                                            **attrs))
        _bias_grad(g, dy, nd)
    return grad


def _register(nd: int) -> None:
    attrs = {k: (v[:1] * nd if isinstance(v, list) else v) for k, v in CONV_ATTRS.items()}
    attrs["data_format"] = _LAYOUTS[nd][0]
    name = f"conv{nd}d"
    register_op(name, inputs="Input Filter Bias?", outputs="Output", attrs=dict(attrs), kernel=conv_kernel,
                infer=_conv_infer(nd), grad=_conv_grad(nd),
                doc=f"{nd}-D convolution (cross-correlation), channel-first, with strides, paddings (or "
                    f"padding_algorithm SAME/VALID), dilations and groups.")
    register_op(f"{name}_input_grad", inputs="DOutput Filter Input", outputs="Out", attrs=dict(attrs),
                kernel=conv_input_grad_kernel, infer=_conv_grad_infer(nd, "Input"), grad=_conv_input_grad_grad(nd),
                doc=f"The gradient of {name} with respect to Input (Input gives only the shape).")
    register_op(f"{name}_filter_grad", inputs="DOutput Input Filter", outputs="Out", attrs=dict(attrs),
                kernel=conv_filter_grad_kernel, infer=_conv_grad_infer(nd, "Filter"),
                grad=_conv_filter_grad_grad(nd),
                doc=f"The gradient of {name} with respect to Filter (Filter gives only the shape).")
    register_op(f"{name}_transpose", inputs="Input Filter Bias?", outputs="Output",
                attrs={**attrs, "output_padding": [0] * nd}, kernel=conv_transpose_kernel,
                infer=_conv_transpose_infer(nd), grad=_conv_transpose_grad(nd),
                doc=f"{nd}-D transposed convolution: Filter [C_in, C_out / groups, *kernel]; output size "
                    f"(in - 1) * stride - pad_lo - pad_hi + dilation * (kernel - 1) + 1 + output_padding.")


for _nd in (1, 2, 3):
    _register(_nd)
