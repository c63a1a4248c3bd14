"""Resampling and patch extraction: `interpolate` (nearest, linear, bilinear, bicubic,
trilinear), `unfold` (im2col) and `fold` (col2im).

Interpolation is separable and linear in X: along each spatial axis the output is one
[out, in] matrix times the input (the matrix holds the 1, 2 or 4 taps of each output
position, with PyTorch's source-coordinate rules). The gradient applies the transposed
matrices (`interpolate_grad`), and the two ops are each other's gradient. `unfold` is a
strided view copied once; its gradient (`unfold_grad`) adds the windows back, one kernel
offset at a time. `fold` is that same adding back as a forward op (shape from `output_sizes`
rather than an input), so unfold and fold are each other's gradient.
"""
from __future__ import annotations

import math

import numpy as np

from .geometry import Windows, along_axes, per_axis
from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only

_MODES = {"nearest": (1, 2, 3), "linear": (1,), "bilinear": (2,), "bicubic": (2,), "trilinear": (3,)}
_CUBIC_A = -0.75
INTERP_ATTRS = {"mode": "nearest", "out_size": [], "scales": [], "align_corners": False, "align_mode": 0}


def _ratio(size: int, out: int, scale: float) -> float:
    return 1.0 / scale if scale > 0 else size / out


def _nearest_matrix(size: int, out: int, scale: float, align_corners: bool) -> np.ndarray:
    dst = np.arange(out)
    if align_corners:
        src = np.round(dst * ((size - 1) / (out - 1))) if out > 1 else np.zeros(out)
    else:
        src = np.floor(dst * _ratio(size, out, scale))
    m = np.zeros((out, size))
    m[dst, np.minimum(src.astype(np.int64), size - 1)] = 1.0
    return m


def _source(size: int, out: int, scale: float, align_corners: bool, align_mode: int, clamp: bool) -> np.ndarray:
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        return dst * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    ratio = _ratio(size, out, scale)
    src = dst * ratio if align_mode == 1 else (dst + 0.5) * ratio - 0.5
    return np.maximum(src, 0.0) if clamp else src


def _linear_matrix(size, out, scale, align_corners, align_mode) -> np.ndarray:
    src = _source(size, out, scale, align_corners, align_mode, clamp=True)
    lo = np.minimum(np.floor(src).astype(np.int64), size - 1)
    frac = src - lo
    hi = np.minimum(lo + 1, size - 1)
    m = np.zeros((out, size))
    rows = np.arange(out)
    np.add.at(m, (rows, lo), 1.0 - frac)    # a tiny [out, in] matrix, not the image
    np.add.at(m, (rows, hi), frac)
    return m


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    a = _CUBIC_A

    def near(d):   # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):    # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_matrix(size, out, scale, align_corners, align_mode) -> np.ndarray:
    src = _source(size, out, scale, align_corners, align_mode, clamp=False)
    base = np.floor(src).astype(np.int64)
    t = src - base
    m = np.zeros((out, size))
    rows = np.arange(out)
    for tap, weight in zip(range(-1, 3), _cubic_weights(t)):
        np.add.at(m, (rows, np.clip(base + tap, 0, size - 1)), weight)
    return m


def interp_matrices(spatial, out, scales, mode, align_corners, align_mode) -> list[np.ndarray]:
    scales = list(scales) or [0.0] * len(spatial)
    if mode == "nearest":
        return [_nearest_matrix(s, o, sc, align_corners) for s, o, sc in zip(spatial, out, scales)]
    build = _cubic_matrix if mode == "bicubic" else _linear_matrix
    return [build(s, o, sc, align_corners, align_mode) for s, o, sc in zip(spatial, out, scales)]


def interp_out_size(spatial, out_size, scales) -> list[int]:
    if out_size:
        return [int(o) for o in out_size]
    return [int(math.floor(s * sc)) if s >= 0 else -1 for s, sc in zip(spatial, scales)]


def interpolate_kernel(x, mode="nearest", out_size=(), scales=(), align_corners=False, align_mode=0):
    out = interp_out_size(x.shape[2:], out_size, scales)
    mats = interp_matrices(x.shape[2:], out, scales, mode, align_corners, align_mode)
    return along_axes(x, mats).astype(x.dtype, copy=False)  # bfloat16 meets float32 matrices


def interpolate_grad_kernel(dout, x, mode="nearest", out_size=(), scales=(), align_corners=False, align_mode=0):
    out = interp_out_size(x.shape[2:], out_size, scales)
    mats = interp_matrices(x.shape[2:], out, scales, mode, align_corners, align_mode)
    return along_axes(dout, [m.T for m in mats]).astype(dout.dtype, copy=False)


def _interp_geometry(ctx, slot: str = "X") -> tuple[list[int], list[int]]:
    float_only(ctx, slot)
    x = list(ctx.shape(slot))
    nd = len(x) - 2
    mode = ctx.attr("mode")
    if mode not in _MODES or nd not in _MODES[mode]:
        raise ctx.shape_error(f"mode {mode!r} does not apply to {ctx.describe(slot)}; modes and their spatial "
                              f"ranks: {_MODES}")
    out_size, scales = list(ctx.attr("out_size")), list(ctx.attr("scales"))
    if not out_size and not scales:
        raise ctx.shape_error("give out_size or scales")
    for what, values in (("out_size", out_size), ("scales", scales)):
        if values and len(values) != nd:
            raise ctx.shape_error(f"{what} {values} must have one entry per spatial axis of {ctx.describe(slot)}")
    out = interp_out_size(x[2:], out_size, scales)
    if any(o == 0 or o < -1 for o in out):
        raise ctx.shape_error(f"the output size {out} of {ctx.describe(slot)} must be positive")
    return x, out


def _interpolate_infer(ctx):
    x, out = _interp_geometry(ctx)
    ctx.set_output("Out", x[:2] + out, ctx.dtype("X"))


def _interpolate_grad_infer(ctx):
    x, out = _interp_geometry(ctx)
    float_only(ctx, "DOut")
    if list(ctx.shape("DOut"))[2:] != out and all(o >= 0 for o in out):
        raise ctx.shape_error(f"{ctx.describe('DOut')} must have the interpolated shape {x[:2] + out}")
    ctx.set_output("Out", x, ctx.dtype("DOut"))


def _interp_attrs(g: GradBuilder) -> dict:
    return {k: g.attr(k) for k in INTERP_ATTRS}


def _interpolate_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("interpolate_grad", {"DOut": g.output_grad("Out"),
                                                    "X": g.input_like("X")}, **_interp_attrs(g)))


register_op("interpolate", inputs="X", outputs="Out", attrs=dict(INTERP_ATTRS), kernel=interpolate_kernel,
            infer=_interpolate_infer,
            grad=_interpolate_grad,
            doc="Resize the spatial axes (nearest, linear, bilinear, bicubic, trilinear) to out_size, or by "
                "scales; align_corners and align_mode (1: Paddle's asymmetric) choose the source coordinates.")


def _interpolate_grad_grad(g: GradBuilder) -> None:
    g.set_input_grad("DOut", g.op("interpolate", {"X": g.output_grad("Out")},
                                  **_interp_attrs(g)))


register_op("interpolate_grad", inputs="DOut X", outputs="Out", attrs=dict(INTERP_ATTRS),
            kernel=interpolate_grad_kernel, infer=_interpolate_grad_infer,
            grad=_interpolate_grad_grad,
            doc="The gradient of interpolate (X gives only the shape): the transposed resampling.")


# ---------------------------------------------------------------- unfold (im2col)
UNFOLD_ATTRS = {"kernel_sizes": [1, 1], "strides": [1, 1], "paddings": [0, 0, 0, 0], "dilations": [1, 1]}


def _unfold_windows(shape, kernel_sizes, strides, paddings, dilations) -> Windows:
    return Windows(shape[2:], per_axis(kernel_sizes, len(shape) - 2, "kernel_sizes"), strides, paddings, dilations)


def unfold_kernel(x, kernel_sizes=(1, 1), strides=(1, 1), paddings=(0, 0, 0, 0), dilations=(1, 1)):
    geo = _unfold_windows(x.shape, kernel_sizes, strides, paddings, dilations)
    return geo.view(geo.pad(x)).reshape(x.shape[0], x.shape[1] * geo.kernel_size, geo.out_size)


def _col2im(columns, shape, kernel_sizes, strides, paddings, dilations):
    """The windows in `columns` ([N, C * KH * KW, L]) added back into an array of NCHW `shape`."""
    geo = _unfold_windows(shape, kernel_sizes, strides, paddings, dilations)
    padded = np.zeros(tuple(shape[:2]) + tuple(geo.padded), dtype=columns.dtype)
    geo.add_windows(padded, columns.reshape(tuple(shape[:2]) + tuple(geo.kernel) + tuple(geo.out)))
    return geo.crop(padded)


def unfold_grad_kernel(dy, x, kernel_sizes=(1, 1), strides=(1, 1), paddings=(0, 0, 0, 0), dilations=(1, 1)):
    return _col2im(dy, x.shape, kernel_sizes, strides, paddings, dilations)


def _unfold_geometry(ctx, slot: str = "X") -> tuple[list[int], Windows]:
    float_only(ctx, slot)
    x = list(ctx.shape(slot))
    if len(x) != 4:
        raise ctx.shape_error(f"expects a 4-D NCHW input, got {ctx.describe(slot)}")
    try:
        geo = _unfold_windows(x, ctx.attr("kernel_sizes"), ctx.attr("strides"), ctx.attr("paddings"),
                              ctx.attr("dilations"))
    except ValueError as err:
        raise ctx.shape_error(str(err)) from None
    if min(geo.strides) < 1 or min(geo.dilations) < 1 or min(geo.kernel) < 1:
        raise ctx.shape_error("kernel_sizes, strides and dilations must be >= 1")
    if any(s >= 0 and o < 1 for s, o in zip(x[2:], geo.out)):
        raise ctx.shape_error(f"kernel {geo.kernel} does not fit into {ctx.describe(slot)}")
    return x, geo


def _unfold_shape(x: list[int], geo: Windows) -> list[int]:
    length = -1 if any(o < 0 for o in geo.out) else geo.out_size
    return [x[0], x[1] * geo.kernel_size if x[1] >= 0 else -1, length]


def _unfold_infer(ctx):
    x, geo = _unfold_geometry(ctx)
    ctx.set_output("Y", _unfold_shape(x, geo), ctx.dtype("X"))


def _unfold_grad_infer(ctx):
    x, geo = _unfold_geometry(ctx)
    expected = _unfold_shape(x, geo)
    if any(a != b and a >= 0 and b >= 0 for a, b in zip(ctx.shape("DY"), expected)) or len(ctx.shape("DY")) != 3:
        raise ctx.shape_error(f"{ctx.describe('DY')} must have unfold's output shape {expected}")
    ctx.set_output("Out", x, ctx.dtype("DY"))


def _unfold_attrs(g: GradBuilder) -> dict:
    return {k: g.attr(k) for k in UNFOLD_ATTRS}


def _unfold_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("unfold_grad", {"DY": g.output_grad("Y"), "X": g.input_like("X")},
                               **_unfold_attrs(g)))


register_op("unfold", inputs="X", outputs="Y", attrs=dict(UNFOLD_ATTRS), kernel=unfold_kernel, infer=_unfold_infer,
            grad=_unfold_grad,
            doc="im2col: the sliding windows of NCHW X as [N, C * KH * KW, L] (paddings [lo, hi] per axis).")


def _unfold_grad_grad(g: GradBuilder) -> None:
    g.set_input_grad("DY", g.op("unfold", {"X": g.output_grad("Out")}, **_unfold_attrs(g)))


register_op("unfold_grad", inputs="DY X", outputs="Out", attrs=dict(UNFOLD_ATTRS), kernel=unfold_grad_kernel,
            infer=_unfold_grad_infer,
            grad=_unfold_grad_grad,
            doc="col2im: unfold's gradient (X gives only the shape); windows added back, overlaps summed.")


# ---------------------------------------------------------------- fold (col2im)
def _fold_shape(columns: list[int], output_sizes, kernel_sizes) -> list[int]:
    kernel = per_axis(kernel_sizes, 2, "kernel_sizes")
    size = kernel[0] * kernel[1]
    channels = columns[1] // size if columns[1] >= 0 else -1
    return [columns[0], channels] + per_axis(output_sizes, 2, "output_sizes")


def fold_kernel(x, output_sizes=(1, 1), kernel_sizes=(1, 1), strides=(1, 1), paddings=(0, 0, 0, 0),
                dilations=(1, 1)):
    return _col2im(x, _fold_shape(list(x.shape), output_sizes, kernel_sizes), kernel_sizes, strides, paddings,
                   dilations)


def _fold_infer(ctx):
    float_only(ctx, "X")
    columns = list(ctx.shape("X"))
    if len(columns) != 3:
        raise ctx.shape_error(f"expects X of shape [N, C * KH * KW, L], got {ctx.describe('X')}")
    try:
        shape = _fold_shape(columns, ctx.attr("output_sizes"), ctx.attr("kernel_sizes"))
        geo = _unfold_windows(shape, ctx.attr("kernel_sizes"), ctx.attr("strides"), ctx.attr("paddings"),
                              ctx.attr("dilations"))
    except ValueError as err:
        raise ctx.shape_error(str(err)) from None
    if min(geo.strides) < 1 or min(geo.dilations) < 1 or min(geo.kernel) < 1 or min(shape[2:]) < 1:
        raise ctx.shape_error(f"output_sizes {shape[2:]}, kernel_sizes, strides and dilations must be >= 1")
    if columns[1] >= 0 and columns[1] % geo.kernel_size:
        raise ctx.shape_error(f"{ctx.describe('X')}: axis 1 must be C * {geo.kernel_size} (kernel "
                              f"{geo.kernel})")
    if min(geo.out) < 1 or (columns[2] >= 0 and columns[2] != geo.out_size):
        raise ctx.shape_error(f"{ctx.describe('X')} has {columns[2]} windows; kernel {geo.kernel} slides "
                              f"{max(geo.out_size, 0)} times over output_sizes {shape[2:]}")
    ctx.set_output("Y", shape, ctx.dtype("X"))


def _fold_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("unfold", {"X": g.output_grad("Y")}, **_unfold_attrs(g)))


register_op("fold", inputs="X", outputs="Y", attrs={"output_sizes": [1, 1], **UNFOLD_ATTRS}, kernel=fold_kernel,
            infer=_fold_infer, grad=_fold_grad,
            doc="col2im: the columns of X [N, C * KH * KW, L] added back into [N, C, H, W] windows (overlaps "
                "summed), the adjoint of unfold (its gradient is unfold).")
