"""Window geometry shared by convolution, pooling and unfold, for any number of spatial axes.

Arrays are channel-first: [N, C, *spatial]. A window op is described per spatial axis by a
kernel size, stride, dilation and (lo, hi) padding; `Windows` turns that into output sizes
and into strided views of the padded input (no copy), so every kernel is rank-generic.
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

PADDING_ALGORITHMS = ("EXPLICIT", "VALID", "SAME", "SAME_UPPER", "SAME_LOWER")


def per_axis(value, nd: int, what: str) -> list[int]:
    """An int, or one int per spatial axis (a single-element list repeats)."""
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 1:
        values = values * nd
    if len(values) != nd:
        raise ValueError(f"{what} must be an int or {nd} ints, got {value!r}")
    return [int(v) for v in values]


def pad_pairs(paddings, nd: int) -> list[tuple[int, int]]:
    """(lo, hi) per axis from an int, one int per axis, or [lo0, hi0, lo1, hi1, ...] (Paddle's order)."""
    values = [paddings] if isinstance(paddings, (int, np.integer)) else [int(p) for p in paddings]
    if len(values) == 1:
        values = values * nd
    if len(values) == nd:
        return [(int(p), int(p)) for p in values]
    if len(values) == 2 * nd:
        return [(int(values[2 * i]), int(values[2 * i + 1])) for i in range(nd)]
    raise ValueError(f"paddings must be an int, {nd} ints or {2 * nd} ints (lo, hi per axis), got {paddings!r}")


def same_pads(size: int, kernel: int, stride: int, dilation: int, lower: bool) -> tuple[int, int]:
    """TensorFlow/ONNX 'SAME': output ceil(size / stride); the odd pixel goes at the end (upper)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
    small = total // 2
    return (total - small, small) if lower else (small, total - small)


def out_len(size: int, kernel: int, lo: int, hi: int, stride: int, dilation: int = 1, ceil_mode: bool = False) -> int:
    """Windows along one axis; ceil_mode keeps a last partial window that starts inside the
    input or its lo padding (PyTorch's rule). -1 when the size is unknown."""
    if size < 0:
        return -1
    span = size + lo + hi - dilation * (kernel - 1) - 1
    if span < 0:
        return 0
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + lo:
        out -= 1
    return out


class Windows:
    """The windows of one op over the spatial axes of an [N, C, *spatial] array."""

    def __init__(self, spatial: Sequence[int], kernel: Sequence[int], strides, paddings, dilations=1,
                 padding_algorithm: str = "EXPLICIT", ceil_mode: bool = False) -> None:
        nd = len(kernel)
        self.nd = nd
        self.spatial = [int(s) for s in spatial]
        self.kernel = [int(k) for k in kernel]
        self.strides = per_axis(strides, nd, "strides")
        self.dilations = per_axis(dilations, nd, "dilations")
        algorithm = str(padding_algorithm).upper()
        if algorithm not in PADDING_ALGORITHMS:
            raise ValueError(f"padding_algorithm must be one of {PADDING_ALGORITHMS}, got {padding_algorithm!r}")
        if algorithm == "VALID":
            self.pads = [(0, 0)] * nd
        elif algorithm.startswith("SAME"):
            self.pads = [same_pads(s, k, st, d, algorithm == "SAME_LOWER") if s >= 0 else (0, 0)
                         for s, k, st, d in zip(self.spatial, self.kernel, self.strides, self.dilations)]
        else:
            self.pads = pad_pairs(paddings, nd)
        self.out = [out_len(s, k, lo, hi, st, d, ceil_mode) for s, k, (lo, hi), st, d
                    in zip(self.spatial, self.kernel, self.pads, self.strides, self.dilations)]
        if algorithm.startswith("SAME"):   # known even when the size is not
            self.out = [-(-s // st) if s >= 0 else -1 for s, st in zip(self.spatial, self.strides)]
        # the padded extent: ceil_mode's last window may reach past the hi padding
        self.padded = [max(s + lo + hi, (o - 1) * st + d * (k - 1) + 1)
                       for s, (lo, hi), o, st, d, k in zip(self.spatial, self.pads, self.out, self.strides,
                                                          self.dilations, self.kernel)]

    @property
    def kernel_size(self) -> int:
        return math.prod(self.kernel)

    @property
    def out_size(self) -> int:
        return math.prod(self.out)

    def pad(self, x: np.ndarray, value: float = 0.0) -> np.ndarray:
        """x with its padding (and any ceil_mode overhang) filled with `value`."""
        widths = [(lo, p - s - lo) for (lo, _), p, s in zip(self.pads, self.padded, self.spatial)]
        if not any(lo or hi for lo, hi in widths):
            return x
        out = np.full(x.shape[:2] + tuple(self.padded), value, dtype=x.dtype)
        out[self.interior()] = x
        return out

    def interior(self) -> tuple[slice, ...]:
        """The index of the unpadded input inside a padded array."""
        return (slice(None), slice(None)) + tuple(slice(lo, lo + s) for (lo, _), s in zip(self.pads, self.spatial))

    def view(self, xp: np.ndarray) -> np.ndarray:
        """The padded array as windows [N, C, *kernel, *out] (a strided view, no copy)."""
        strides = xp.strides
        shape = xp.shape[:2] + tuple(self.kernel) + tuple(self.out)
        window_strides = tuple(strides[2 + i] * self.dilations[i] for i in range(self.nd))
        step_strides = tuple(strides[2 + i] * self.strides[i] for i in range(self.nd))
        return as_strided(xp, shape, strides[:2] + window_strides + step_strides, writeable=False)

    def offsets(self):
        """Each kernel offset as an index tuple."""
        return itertools.product(*(range(k) for k in self.kernel))

    def offset_slice(self, offset: Sequence[int]) -> tuple[slice, ...]:
        """The [N, C, *out] strided slice of a padded array that kernel offset `offset` reads."""
        return (slice(None), slice(None)) + tuple(
            slice(k * d, k * d + st * (o - 1) + 1, st)
            for k, d, st, o in zip(offset, self.dilations, self.strides, self.out))

    def add_windows(self, dxp: np.ndarray, dwin: np.ndarray) -> None:
        """col2im: add window values [N, C, *kernel, *out] back into the padded array, one
        strided slice per kernel offset (the kernel is small; no scatter over pixels)."""
        for offset in self.offsets():
            dxp[self.offset_slice(offset)] += dwin[(slice(None), slice(None)) + tuple(offset)]

    def crop(self, xp: np.ndarray) -> np.ndarray:
        if list(xp.shape[2:]) == self.spatial:
            return xp
        return np.ascontiguousarray(xp[self.interior()])


def along_axes(x: np.ndarray, matrices: Sequence[np.ndarray | None]) -> np.ndarray:
    """Apply one [out, in] matrix along each spatial axis of an [N, C, *spatial] array (None
    skips an axis): separable resampling and adaptive averaging are products like this."""
    for i, m in enumerate(matrices):
        if m is None:
            continue
        axis = 2 + i
        if axis == x.ndim - 1:
            x = np.matmul(x, m.T.astype(x.dtype, copy=False))
        else:
            x = np.moveaxis(np.tensordot(m.astype(x.dtype, copy=False), x, axes=([1], [axis])), 0, axis)
    return np.ascontiguousarray(x)


def adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows along one axis: [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def adaptive_mean_matrix(size: int, out: int) -> np.ndarray:
    starts, ends = adaptive_bounds(size, out)
    cols = np.arange(size)
    inside = (cols >= starts[:, None]) & (cols < ends[:, None])
    return inside / (ends - starts)[:, None]
