"""grid_sample and affine_grid (Paddle 2 names, PyTorch's semantics), for both modes.

Both are compositions of registered ops (scale, floor, clip, take_along_axis, matmul, ...),
so their gradients with respect to the input and to the grid or theta, and the gradients of
those, come from the ops' own grad makers. A sample is a weighted sum of taps: 1 (nearest),
2 (linear) or 4 (cubic) per spatial axis, gathered from the flattened input planes.
ONNX's GridSample pads coordinates and taps slightly differently from PyTorch
(`onnx_rules=True`, used by the ONNX importer).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from ... import functions as F
from ...dispatch import apply_op
from ...framework.torch_forms import torch_keywords
from ...indexing import constant

__all__ = ['grid_sample', 'affine_grid']

_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic", "cubic": "cubic"}
_CUBIC_A = -0.75


def _scale(x: Any, a: float, b: float = 0.0) -> Any:
    return apply_op("scale", {"X": x}, {"scale": float(a), "bias": float(b)})


def _binary(op_type: str, x: Any, y: Any) -> Any:
    return apply_op(op_type, {"X": x, "Y": y})


def _mul(x: Any, y: Any) -> Any:
    return _binary("elementwise_mul", x, y)


def _where(condition: Any, x: Any, y: Any) -> Any:
    return apply_op("where", {"Condition": condition, "X": x, "Y": y})


def _clip(x: Any, lo: float, hi: float) -> Any:
    return apply_op("clip", {"X": x}, {"min": float(lo), "max": float(hi)})


def _reflect(c: Any, lo: float, hi: float) -> Any:
    """Fold `c` into [lo, hi] by reflecting at the borders, as often as needed."""
    if hi <= lo:
        return F.zeros_like(c)
    span = hi - lo
    dist = apply_op("abs", {"X": _scale(c, 1.0, -lo)})
    flips = apply_op("floor", {"X": _scale(dist, 1.0 / span)})
    extra = _binary("elementwise_sub", dist, _scale(flips, span))
    even = _binary("equal", _binary("elementwise_fmod", flips, F.full_like(flips, 2.0)), F.zeros_like(flips))
    return _where(even, _scale(extra, 1.0, lo), _scale(extra, -1.0, hi))


def _outside(c: Any, lo: float, hi: float) -> Any:
    return apply_op("logical_or", {"X": _binary("less_than", c, F.full_like(c, lo)),
                                   "Y": _binary("greater_than", c, F.full_like(c, hi))})


def _pad_coordinate(c: Any, size: int, padding_mode: str, lo: float, hi: float, onnx_rules: bool) -> Any:
    """The sampling coordinate after the border or reflection rule (zeros: unchanged)."""
    if padding_mode == "border":
        clipped = _clip(c, 0, size - 1)
        return _where(_outside(c, lo, hi), clipped, c) if onnx_rules else clipped
    if padding_mode == "reflection":
        reflected = _reflect(c, lo, hi)
        return reflected if onnx_rules else _clip(reflected, 0, size - 1)
    return c


def _taps(c: Any, mode: str) -> list[tuple[Any, Any]]:
    """(index, weight) of the taps along one axis; weight None for nearest."""
    if mode == "nearest":
        return [(c, None)]
    base = apply_op("floor", {"X": c})
    t = _binary("elementwise_sub", c, base)
    if mode == "linear":
        return [(base, _scale(t, -1.0, 1.0)), (_scale(base, 1.0, 1.0), t)]
    a = _CUBIC_A
    s = _scale(t, -1.0, 1.0)   # 1 - t

    def near(u):   # |u| <= 1: ((a + 2) u - (a + 3)) u^2 + 1
        return _scale(_mul(_scale(u, a + 2, -(a + 3)), _mul(u, u)), 1.0, 1.0)

    def far(u):    # 1 < |u| < 2, with u given as v = u - 1 in [0, 1]: ((a v - 4a) v + 3a)... expanded below
        w = _scale(u, 1.0, 1.0)   # |u| = v + 1
        return _scale(_mul(_scale(_mul(_scale(w, a, -5 * a), w), 1.0, 8 * a), w), 1.0, -4 * a)

    weights = [far(t), near(t), near(s), far(s)]
    return [(_scale(base, 1.0, k), w) for k, w in zip((-1.0, 0.0, 1.0, 2.0), weights)]


def _tap_index(index: Any, size: int, tap_padding: str, lo: float, hi: float, onnx_rules: bool
               ) -> tuple[Any, Any]:
    """An in-range integer-valued index for a tap, and its validity (None: always valid)."""
    if tap_padding == "border":
        return _clip(index, 0, size - 1), None
    if tap_padding == "reflection":
        reflected = _reflect(index, lo, hi)
        if not onnx_rules:
            reflected = _clip(reflected, 0, size - 1)
        return _clip(apply_op("trunc", {"X": reflected}), 0, size - 1), None
    valid = apply_op("logical_and", {"X": _binary("greater_equal", index, F.zeros_like(index)),
                                     "Y": _binary("less_equal", index, F.full_like(index, size - 1))})
    return _clip(index, 0, size - 1), valid


def sample_grid(x: Any, grid: Any, mode: str, padding_mode: str, align_corners: bool,
                onnx_rules: bool = False) -> Any:
    """The core of grid_sample, for N spatial axes (grid's last axis lists x, y[, z])."""
    nd = len(x.shape) - 2
    dims, batch, channels = list(x.shape[2:]), x.shape[0], x.shape[1]
    out_spatial = list(grid.shape[1:-1])
    if min(dims + out_spatial + [batch, channels]) < 0:
        raise ValueError(f"grid_sample: needs static shapes, got x {list(x.shape)} and grid {list(grid.shape)}")
    points = math.prod(out_spatial)
    axes_taps, axes_info = [], []
    for axis in range(nd):
        size = dims[axis]
        k = nd - 1 - axis
        g = apply_op("slice", {"X": grid}, {"axes": [nd + 1], "starts": [k], "ends": [k + 1]})
        g = apply_op("reshape", {"X": g}, {"shape": [batch, 1, points]})
        c = _scale(g, (size - 1) / 2 if align_corners else size / 2, (size - 1) / 2)
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if onnx_rules:
            if mode == "nearest":
                c = apply_op("round", {"X": c})
            c = _pad_coordinate(c, size, padding_mode, lo, hi, True)
            if mode == "nearest":
                c = apply_op("trunc", {"X": c})
            tap_padding = padding_mode
        else:
            if mode != "cubic":
                c = _pad_coordinate(c, size, padding_mode, lo, hi, False)
            if mode == "nearest":
                c = apply_op("round", {"X": c})
            tap_padding = padding_mode if mode == "cubic" else "zeros"
        axes_taps.append(_taps(c, mode))
        axes_info.append((size, tap_padding, lo, hi))
    planes = apply_op("reshape", {"X": x}, {"shape": [batch, channels, math.prod(dims)]})
    strides = [math.prod(dims[a + 1:]) for a in range(nd)]
    total = None
    for combo in itertools.product(*axes_taps):
        flat, weight, valid = None, None, None
        for axis, (index, w) in enumerate(combo):
            size, tap_padding, lo, hi = axes_info[axis]
            index, ok = _tap_index(index, size, tap_padding, lo, hi, onnx_rules)
            part = _scale(index, strides[axis])
            flat = part if flat is None else _binary("elementwise_add", flat, part)
            if w is not None:
                weight = w if weight is None else _mul(weight, w)
            if ok is not None:
                valid = ok if valid is None else apply_op("logical_and", {"X": valid, "Y": ok})
        index = apply_op("expand", {"X": F.cast(flat, "int64")}, {"shape": [batch, channels, points]})
        value = apply_op("take_along_axis", {"X": planes, "Index": index}, {"axis": 2})
        if valid is not None:
            weight = F.cast(valid, x.dtype) if weight is None else _mul(weight, F.cast(valid, x.dtype))
        if weight is not None:
            value = _mul(value, weight)
        total = value if total is None else _binary("elementwise_add", total, value)
    return apply_op("reshape", {"X": total}, {"shape": [batch, channels] + out_spatial})


def grid_sample(x: Any, grid: Any, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool = True, name: str | None = None) -> Any:
    """Sample x (N, C, H, W) or (N, C, D, H, W) at the normalised points of grid
    (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), last axis (x, y[, z]) in [-1, 1].
    mode: bilinear, nearest or bicubic (2-D); padding_mode: zeros, border or reflection."""
    nd = len(x.shape) - 2
    if nd not in (2, 3) or len(grid.shape) != nd + 2 or grid.shape[-1] != nd:
        raise ValueError(f"grid_sample: expects x (N, C, H, W) with grid (N, H_out, W_out, 2), or 5-D x with "
                         f"grid (N, D_out, H_out, W_out, 3); got x {list(x.shape)} and grid {list(grid.shape)}")
    if mode not in ("bilinear", "nearest", "bicubic") or (mode == "bicubic" and nd != 2):
        raise ValueError(f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic' (4-D input only), "
                         f"got {mode!r} for a {nd + 2}-D input")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}")
    return sample_grid(x, grid, _MODES[mode], padding_mode, bool(align_corners))


def base_grid(spatial: Sequence[int], align_corners: bool) -> np.ndarray:
    """The homogeneous output coordinates (x, y[, z], 1) of every output point, (prod(spatial), nd + 1)."""
    def axis(n: int) -> np.ndarray:
        if n <= 1:
            return np.zeros(max(n, 0))
        return np.linspace(-1.0, 1.0, n) if align_corners else (np.arange(n) * 2.0 + 1.0) / n - 1.0
    mesh = np.meshgrid(*[axis(n) for n in spatial], indexing="ij")
    coords = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(math.prod(spatial))]
    return np.stack(coords, axis=1)


@torch_keywords(size="out_shape")
def affine_grid(theta: Any, out_shape: Sequence[int], align_corners: bool = True, name: str | None = None) -> Any:
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps theta (N, 2, 3) or
    (N, 3, 4) for an output of shape out_shape (N, C, H, W) or (N, C, D, H, W) (PyTorch's size=)."""
    out_shape = [int(d) for d in out_shape]
    nd = len(out_shape) - 2
    if nd not in (2, 3) or len(theta.shape) != 3 or list(theta.shape[1:]) != [nd, nd + 1]:
        raise ValueError(f"affine_grid: expects theta (N, 2, 3) with a 4-D out_shape or (N, 3, 4) with a 5-D "
                         f"one; got theta {list(theta.shape)} and out_shape {out_shape}")
    base = constant(base_grid(out_shape[2:], bool(align_corners)).astype(theta.dtype), theta)
    grid = apply_op("matmul", {"X": base, "Y": theta}, {"transpose_y": True})
    return apply_op("reshape", {"X": grid}, {"shape": [out_shape[0]] + out_shape[2:] + [nd]})
