"""Converters for signal processing: DFT, STFT, the window functions and MelWeightMatrix.

A DFT along one axis of known length is a product with a constant matrix of cosines and
sines, so DFT and STFT import as matmuls (in float64, cast back), and are differentiable
like any linear map. Windows and mel filter banks depend only on import-time sizes: they
become constants.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .convert_common import binary, cast, normalize_axes
from .convert_table import converter


def _dft_matrices(n_in: int, length: int, n_out: int, inverse: bool, real_output: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """[n_in, n_out] cosine and sine parts of the (inverse) DFT of `length` points; input
    samples beyond `length` are dropped, missing ones are zeros (ONNX's dft_length)."""
    if real_output:  # inverse one-sided: each bin but DC (and Nyquist) stands for itself and its mirror
        bins, samples = np.arange(min(n_in, length // 2 + 1)), np.arange(n_out)
        angle = 2 * np.pi * bins[:, None] * samples[None, :] / length
        weight = np.where((bins == 0) | ((length % 2 == 0) & (bins == length // 2)), 1.0, 2.0)[:, None]
        return weight * np.cos(angle) / length, weight * np.sin(angle) / length
    j = np.arange(min(n_in, length))[:, None]
    k = np.arange(n_out)[None, :]
    angle = 2 * np.pi * j * k / length
    if inverse:
        return np.cos(angle) / length, np.sin(angle) / length
    return np.cos(angle), -np.sin(angle)


def _along_last(ctx: Any, x: Any, axis: int, fn: Any) -> Any:
    """Apply `fn` to x with `axis` moved last, then move it back."""
    rank = len(x.shape)
    if axis == rank - 1:
        return fn(x)
    perm = [a for a in range(rank) if a != axis] + [axis]
    back = list(np.argsort(perm))
    out = fn(ctx.op("transpose", {"X": x}, perm=perm))
    return ctx.op("transpose", {"X": out}, perm=[int(p) for p in back])


def dft(ctx: Any, x: Any, axis: int, length: int | None, inverse: bool, onesided: bool) -> Any:
    """ONNX DFT of x ([..., 1] real or [..., 2] complex) along `axis`, in x's dtype."""
    rank = len(x.shape)
    axis = normalize_axes([axis], rank)[0]
    n_in = x.shape[axis]
    if n_in < 0:
        raise ctx.unsupported(f"a DFT along axis {axis} of unknown size in {list(x.shape)}")
    if length is None:
        length = 2 * (n_in - 1) if inverse and onesided else n_in
    real_output = inverse and onesided
    n_out = length // 2 + 1 if onesided and not inverse else length
    cos, sin = _dft_matrices(n_in, length, n_out, inverse, real_output)
    used = cos.shape[0]
    signal = cast(ctx, x, "float64")
    parts = ctx.op("split", {"X": signal}, n_out=x.shape[-1], num_or_sections=x.shape[-1], axis=rank - 1)
    parts = [ctx.op("squeeze", {"X": p}, axes=[rank - 1]) for p in parts]

    def product(part, matrix):
        def apply(moved):
            if moved.shape[-1] != used:
                moved = ctx.op("slice", {"X": moved}, axes=[rank - 2], starts=[0], ends=[used])
            return ctx.op("matmul", {"X": moved, "Y": ctx.constant(matrix)})
        return _along_last(ctx, part, axis, apply)

    real = product(parts[0], cos)
    imag = product(parts[0], sin)
    if len(parts) > 1:  # (a + ib)(c + is) = ac - bs + i(as + bc)
        real = binary(ctx, "elementwise_sub", real, product(parts[1], sin))
        imag = binary(ctx, "elementwise_add", imag, product(parts[1], cos))
    outputs = [real] if real_output else [real, imag]
    out = ctx.op("stack", {"X": outputs}, axis=-1)
    return cast(ctx, out, x.dtype)


@converter("DFT", since=17)
def _dft(ctx):
    length = int(ctx.const(1, "dft_length").reshape(-1)[0]) if ctx.has_input(1) else None
    if ctx.opset >= 20:
        axis = int(ctx.const(2, "axis").reshape(-1)[0]) if ctx.has_input(2) else -2
    else:
        axis = int(ctx.attr("axis", 1))
    return dft(ctx, ctx.input(0), axis, length, bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0)))


@converter("STFT", since=17)
def _stft(ctx):
    """Frames (gathered by a constant index), weighted by the window, then a DFT of each."""
    x = ctx.input(0)
    step = int(ctx.const(1, "frame_step").reshape(-1)[0])
    window = ctx.input(2) if ctx.has_input(2) else None
    if ctx.has_input(3):
        length = int(ctx.const(3, "frame_length").reshape(-1)[0])
    else:
        length = window.shape[0] if window is not None else x.shape[-2]
    size = window.shape[0] if window is not None else length
    samples = x.shape[-2]
    if samples < 0 or size < 0:
        raise ctx.unsupported(f"STFT of a signal {list(x.shape)} of unknown length")
    n_frames = 1 + (samples - length) // step
    index = np.arange(n_frames)[:, None] * step + np.arange(size)[None, :]
    frames = ctx.op("gather", {"X": x, "Index": ctx.constant(index.astype("int64"))}, axis=len(x.shape) - 2)
    if window is not None:
        rank = len(frames.shape)
        weights = ctx.op("reshape", {"X": cast(ctx, window, x.dtype)}, shape=[1] * (rank - 2) + [size, 1])
        frames = binary(ctx, "elementwise_mul", frames, weights)
    return dft(ctx, frames, len(frames.shape) - 2, length, False, bool(ctx.attr("onesided", 1)))


def _window(formula: Any):
    def convert(ctx):
        size = int(ctx.const(0, "size").reshape(-1)[0])
        periods = size if ctx.attr("periodic", 1) else size - 1
        dtype = dtypes.to_fluidgrad(ctx.attr("output_datatype", 1), f"{ctx.where()} output_datatype")
        n = np.arange(size, dtype="float64")
        return formula(n, periods).astype(dtype)
    return convert


converter("HannWindow", since=17)(_window(lambda n, p: np.sin(n * np.pi / p) ** 2))
converter("HammingWindow", since=17)(_window(lambda n, p: 25.0 / 46.0 - np.cos(n * np.pi * 2 / p) * (21.0 / 46.0)))
converter("BlackmanWindow", since=17)(_window(
    lambda n, p: 0.42 - 0.5 * np.cos(n * np.pi * 2 / p) + 0.08 * np.cos(n * np.pi * 4 / p)))


@converter("MelWeightMatrix", since=17)
def _mel_weight_matrix(ctx):
    """Triangular filters on the mel scale, [dft_length // 2 + 1, num_mel_bins] (ONNX's formula,
    bins rounded down as its reference does)."""
    mel_bins, length, rate = (int(ctx.const(i, what).reshape(-1)[0]) for i, what in
                              enumerate(("num_mel_bins", "dft_length", "sample_rate")))
    low, high = (float(ctx.const(i, what).reshape(-1)[0]) for i, what in
                 ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")))
    low_mel, high_mel = (2595 * np.log1p(f / 700) / np.log(10) for f in (low, high))
    step = (high_mel - low_mel) / (mel_bins + 2)
    hertz = 700 * np.expm1((np.arange(mel_bins + 2) * step + low_mel) / 2595 * np.log(10))
    edges = (((length + 1) * hertz) // rate).astype(int)
    out = np.zeros((length // 2 + 1, mel_bins))
    for i in range(mel_bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    dtype = dtypes.to_fluidgrad(ctx.attr("output_datatype", 1), f"{ctx.where()} output_datatype")
    return out.astype(dtype)
