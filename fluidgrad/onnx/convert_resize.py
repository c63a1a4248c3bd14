"""Resize and Upsample: every mode as one interpolation matrix per resized axis.

ONNX's Resize is separable: along each axis, every output element is a weighted sum of input
elements, the weights depending only on the sizes, the mode and the coordinate
transformation. With static shapes the converter computes those weights at import time
(an (out, in) matrix per axis, following the ONNX specification for nearest / linear / cubic,
antialias, exclude_outside and tf_crop_and_resize) and applies them with `matmul`, so the
imported graph is ordinary differentiable ops.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .convert_common import binary, cast
from .convert_table import converter
from .fold import SymDim, symbolic


def _source_coords(mode: str, out_size: int, in_size: int, scale: float,
                   roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Input coordinate of each output index, and which ones extrapolate (tf_crop_and_resize)."""
    y = np.arange(out_size, dtype=np.float64)
    out_width = scale * in_size
    outside = None
    if mode == "align_corners":
        x = np.zeros(out_size) if out_width == 1 else y * (in_size - 1) / (out_width - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        x = np.full(out_size, (hi - lo) * (in_size - 1) / 2) if out_width == 1 \
            else y * (hi - lo) * (in_size - 1) / (out_width - 1)
        x = x + lo * (in_size - 1)
        outside = (x < 0) | (x > in_size - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(out_size, -0.5) if out_width == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / out_width)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise ValueError(f"coordinate_transformation_mode {mode!r} is not an ONNX mode")
    return x, outside


def _nearest(ratio: float, _scale: float, rounding: str) -> np.ndarray:
    if ratio == 1.0:
        return np.array([0.0, 1.0])
    up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
          "floor": False, "ceil": True}[rounding]
    return np.array([0.0, 1.0]) if up else np.array([1.0, 0.0])


def _linear(ratio: float, scale: float, antialias: bool) -> np.ndarray:
    if not antialias:
        return np.array([1 - ratio, ratio])
    scale = min(scale, 1.0)
    start = int(np.floor(-1 / scale) + 1)
    args = (np.arange(start, 2 - start) - ratio) * scale
    coeffs = np.clip(1 - np.abs(args), 0, 1)
    return coeffs / coeffs.sum()


def _cubic_kernel(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _cubic(ratio: float, scale: float, a: float, antialias: bool) -> np.ndarray:
    if not antialias:
        return _cubic_kernel(np.array([ratio + 1, ratio, 1 - ratio, 2 - ratio]), a)
    scale = min(scale, 1.0)
    start = int(np.floor(-2 / scale) + 1)
    coeffs = _cubic_kernel(scale * (np.arange(start, 2 - start) - ratio), a)
    return coeffs / coeffs.sum()


def axis_matrix(in_size: int, out_size: int, scale: float, attrs: dict,
                roi: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The (out_size, in_size) weights of one axis, and the mask of extrapolated outputs."""
    x, outside = _source_coords(attrs["coordinate_transformation_mode"], out_size, in_size, scale, roi)
    floor = np.floor(x)
    ratios = np.where(x == floor, 1.0, x - floor)
    mode = attrs["mode"]
    if mode == "nearest":
        coeffs = [_nearest(r, scale, attrs["nearest_mode"]) for r in ratios]
    elif mode == "linear":
        coeffs = [_linear(r, scale, attrs["antialias"]) for r in ratios]
    elif mode == "cubic":
        coeffs = [_cubic(r, scale, attrs["cubic_coeff_a"], attrs["antialias"]) for r in ratios]
    else:
        raise ValueError(f"mode {mode!r} is not an ONNX Resize mode")
    coeffs = np.array(coeffs, dtype=np.float64).reshape(out_size, -1)
    n = coeffs.shape[1]
    # The n input indices nearest to x (ties to the smaller one), as ONNX's reference picks them.
    pad = int(np.ceil(n / 2))
    padded = x + pad
    whole = np.floor(padded)
    frac = padded - whole
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        offset = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    index = (whole + offset).astype(np.int64)[:, None] + np.arange(n)[None, :] - pad
    if attrs["exclude_outside"]:
        coeffs = np.where((index < 0) | (index >= in_size), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    matrix = np.zeros((out_size, in_size))
    rows = np.repeat(np.arange(out_size), n)
    np.add.at(matrix, (rows, np.clip(index, 0, in_size - 1).reshape(-1)), coeffs.reshape(-1))
    if outside is not None:
        matrix[outside] = 0.0
    return matrix, outside


def _resize_attrs(ctx: Any) -> dict:
    default_transform = "half_pixel" if ctx.opset >= 11 else "asymmetric"
    mode = ctx.attr("mode", "nearest")
    return {"mode": {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode),
            "coordinate_transformation_mode": ctx.attr("coordinate_transformation_mode", default_transform),
            "nearest_mode": ctx.attr("nearest_mode", "round_prefer_floor" if ctx.opset >= 11 else "floor"),
            "cubic_coeff_a": float(ctx.attr("cubic_coeff_a", -0.75)),
            "exclude_outside": bool(ctx.attr("exclude_outside", 0)),
            "antialias": bool(ctx.attr("antialias", 0)),
            "extrapolation_value": float(ctx.attr("extrapolation_value", 0.0))}


def _geometry(ctx: Any, shape: list[int], scales: np.ndarray | None, sizes: np.ndarray | None,
              axes: list[int]) -> tuple[list[float], list[int]]:
    """Scale and output size of each axis in `axes` (keep_aspect_ratio_policy applied)."""
    if sizes is not None:
        sizes = [int(s) for s in sizes]
        scales_out = [sizes[i] / shape[a] for i, a in enumerate(axes)]
        policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            scale = min(scales_out) if policy == "not_larger" else max(scales_out)
            return [scale] * len(axes), [int(scale * shape[a] + 0.5) for a in axes]
        return scales_out, sizes
    scales = [float(s) for s in scales]
    return scales, [int(s * shape[a]) for s, a in zip(scales, axes)]


def _without_kept_unknown_axes(ctx: Any, x: Any, axes: list[int], scales: np.ndarray | None,
                               sizes: np.ndarray | None) -> tuple[list[int], Any, Any]:
    """`axes`, `scales` and `sizes` without the axes of unknown size (a dynamic batch) that the
    Resize keeps as they are: scale 1, or a size read from the input itself (Shape(x)[a], as
    exporters write `sizes` under a dynamic batch). Only the resized axes need known sizes."""
    unknown = [i for i, a in enumerate(axes) if x.shape[a] < 0]
    if not unknown:
        if symbolic(sizes):
            raise ctx.unsupported(f"sizes {list(sizes)} of an input {list(x.shape)} of known size depend on "
                                  f"dimensions unknown when the program is built")
        return axes, scales, sizes
    for i in unknown:
        if scales is not None and float(scales[i]) == 1.0:
            continue
        if sizes is not None and isinstance(sizes[i], SymDim) and sizes[i].var == x.name and sizes[i].axis == axes[i]:
            continue
        what = f"scale {float(scales[i])}" if scales is not None else f"size {sizes[i]}"
        raise ctx.unsupported(f"resizing axis {axes[i]} of unknown size in {list(x.shape)} ({what}): only axes "
                              f"of known size can be resized")
    if sizes is not None and ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise ctx.unsupported(f"keep_aspect_ratio_policy with axes of unknown size in {list(x.shape)}")
    kept = [i for i in range(len(axes)) if i not in unknown]
    pick = (lambda values: None if values is None else np.asarray([values[i] for i in kept]))
    sizes = pick(sizes)
    if symbolic(sizes) and any(isinstance(d, SymDim) for d in sizes):
        raise ctx.unsupported(f"sizes {list(sizes)} of known axes depend on dimensions unknown when the program is built")
    return [axes[i] for i in kept], pick(scales), None if sizes is None else sizes.astype("int64")


def _apply_along(ctx: Any, x: Any, matrix: np.ndarray, axis: int) -> Any:
    rank = len(x.shape)
    weights = ctx.constant(matrix.astype(x.dtype))
    if axis == rank - 1:
        return ctx.op("matmul", {"X": x, "Y": weights}, transpose_y=True)
    if axis == rank - 2:
        return ctx.op("matmul", {"X": weights, "Y": x})
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = ctx.op("transpose", {"X": x}, perm=perm)
    return ctx.op("transpose", {"X": ctx.op("matmul", {"X": moved, "Y": weights}, transpose_y=True)}, perm=perm)


def resize(ctx: Any, x: Any, scales: np.ndarray | None, sizes: np.ndarray | None,
           roi: np.ndarray | None, axes: list[int] | None) -> Any:
    shape = list(x.shape)
    rank = len(shape)
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in axes]
    attrs = _resize_attrs(ctx)
    if roi is not None and roi.size:
        roi = [float(v) for v in roi.reshape(-1)]
        k = len(roi) // 2
        roi_of = {a: (roi[i], roi[k + i]) for i, a in enumerate(axes if k == len(axes) else range(rank))}
    else:
        roi_of = {}
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize" and any(
            x.shape[a] < 0 and roi_of.get(a, (0.0, 1.0)) != (0.0, 1.0) for a in axes):
        raise ctx.unsupported(f"cropping an axis of unknown size in {list(x.shape)} (roi {roi})")
    axes, scales, sizes = _without_kept_unknown_axes(ctx, x, axes, scales, sizes)
    axis_scales, out_sizes = _geometry(ctx, shape, scales, sizes, axes)
    x_dtype = x.dtype
    y = x if x_dtype.startswith("float") else cast(ctx, x, "float64")
    mask = None
    for axis, scale, out in zip(axes, axis_scales, out_sizes):
        roi_axis = roi_of.get(axis)
        if out == shape[axis] and np.isclose(scale, 1.0) and (roi_axis is None or roi_axis == (0.0, 1.0)):
            continue
        matrix, outside = axis_matrix(shape[axis], out, scale, attrs, roi_axis)
        y = _apply_along(ctx, y, matrix, axis)
        if outside is not None and outside.any():
            inside = (~outside).astype(np.float64).reshape([-1] + [1] * (rank - axis - 1))
            mask = inside if mask is None else mask * inside
    if mask is not None:
        value = attrs["extrapolation_value"]
        y = binary(ctx, "elementwise_mul", y, ctx.constant(mask.astype(y.dtype)))
        y = binary(ctx, "elementwise_add", y, ctx.constant(((1 - mask) * value).astype(y.dtype)))
    if not x_dtype.startswith("float"):
        y = cast(ctx, ctx.op("round", {"X": y}) if attrs["mode"] != "nearest" else y, x_dtype)
    return y


def _optional_const(ctx: Any, i: int, what: str) -> np.ndarray | None:
    if not ctx.has_input(i):
        return None
    value = ctx.maybe_const(i)
    if value is None:
        value = _concat_of_constants(ctx, ctx.node.input[i])
    if value is None:
        value = ctx.const(i, what)   # raises, naming the input
    return value if value.size else None


def _concat_of_constants(ctx: Any, name: str) -> np.ndarray | None:
    """Float scales written as Concat(Constant, Constant) (PyTorch's exporter does this), which
    the importer keeps as ops because it folds only integer shape arithmetic."""
    producer = next((n for n in ctx.graph.graph.node if name in n.output), None)
    if producer is None or producer.op_type != "Concat":
        return None
    parts = [ctx.graph.lookup_const(part) for part in producer.input]
    if any(p is None for p in parts):
        return None
    axis = next((a.i for a in producer.attribute if a.name == "axis"), 0)
    return np.concatenate(parts, axis=axis)


@converter("Resize", since=10)
def _resize_v10(ctx):
    return resize(ctx, ctx.input(0), _optional_const(ctx, 1, "scales"), None, None, None)


@converter("Resize", since=11)
def _resize(ctx):
    axes = ctx.attr("axes")
    return resize(ctx, ctx.input(0), _optional_const(ctx, 2, "scales"), _optional_const(ctx, 3, "sizes"),
                  _optional_const(ctx, 1, "roi"), None if axes is None else list(axes))


@converter("Upsample")
def _upsample(ctx):
    scales = np.asarray(ctx.attr("scales")) if ctx.opset < 9 else ctx.const(1, "scales")
    return resize(ctx, ctx.input(0), scales, None, None, None)
