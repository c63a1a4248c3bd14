"""Max, average and adaptive pooling over 1-3 spatial axes, for both modes.

Paddle 2 names and signatures (plus PyTorch's `dilation` and `count_include_pad` keywords, and
`data_format` for the 1-D ones). The ops pool channel-first input; a channel-last `data_format`
(NLC, NHWC, NDHWC) runs them on the input moved to channel-first (see layout.py).
Max pooling always runs the op that saves each window's argmax, so the backward scatters at
those indices; `return_mask=True` also hands them back (flat indices into each input plane,
as PyTorch's `return_indices`), which max_unpool1d-3d take to put each maximum back (a scatter
into zeros). Padding takes the forms of `conv2d`'s, "same" and "valid".
"""
from __future__ import annotations

import math
from typing import Any

from ... import functions as F
from ...dispatch import apply_op, is_tensor
from ...ops.geometry import per_axis
from ...tensor.manipulation import tile
from ...tensor.search import put_along_axis
from .conv import padding_attrs
from .layout import CHANNEL_FIRST, is_channel_last, run_channel_first, to_channel_first, to_channel_last

__all__ = ['max_pool1d', 'max_pool2d', 'max_pool3d', 'avg_pool1d', 'avg_pool2d', 'avg_pool3d',
           'adaptive_avg_pool1d', 'adaptive_avg_pool2d', 'adaptive_avg_pool3d',
           'adaptive_max_pool1d', 'adaptive_max_pool2d', 'adaptive_max_pool3d',
           'max_unpool1d', 'max_unpool2d', 'max_unpool3d', 'lp_pool1d', 'lp_pool2d', 'lp_pool3d']


def _window_attrs(nd: int, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool, dilation: Any,
                  fn: str) -> dict[str, Any]:
    ksize = per_axis(kernel_size, nd, f"{fn}: kernel_size")
    pads, algorithm = padding_attrs(padding, nd, fn)
    return {"ksize": ksize, "strides": per_axis(kernel_size if stride is None else stride, nd, f"{fn}: stride"),
            "paddings": pads, "padding_algorithm": algorithm, "ceil_mode": bool(ceil_mode),
            "dilations": per_axis(dilation, nd, f"{fn}: dilation"), "global_pooling": False, "adaptive": False,
            "data_format": CHANNEL_FIRST[nd][0]}


def _max_pool(nd: int, x: Any, attrs: dict[str, Any], return_mask: bool) -> Any:
    out, mask = apply_op(f"max_pool{nd}d_with_index", {"X": x}, attrs)
    return (out, mask) if return_mask else out


def _windowed_max(nd: int, x: Any, kernel_size: Any, stride: Any, padding: Any, return_mask: bool,
                  ceil_mode: bool, dilation: Any, data_format: str) -> Any:
    """Channel-last: the output and the mask (flat indices into each channel's input plane)
    come back channel-last."""
    fn = f"max_pool{nd}d"
    attrs = _window_attrs(nd, kernel_size, stride, padding, ceil_mode, dilation, fn)
    return run_channel_first(x, data_format, nd, fn, lambda x: _max_pool(nd, x, attrs, return_mask))


def max_pool1d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
               ceil_mode: bool = False, name: str | None = None, dilation: Any = 1, data_format: str = "NCL") -> Any:
    """Max over windows of NCL (or NLC) input; stride defaults to kernel_size; padding counts as -inf."""
    return _windowed_max(1, x, kernel_size, stride, padding, return_mask, ceil_mode, dilation, data_format)


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
               ceil_mode: bool = False, data_format: str = "NCHW", name: str | None = None,
               dilation: Any = 1) -> Any:
    """Max over windows of NCHW (or NHWC) input; stride defaults to kernel_size; padding counts as -inf."""
    return _windowed_max(2, x, kernel_size, stride, padding, return_mask, ceil_mode, dilation, data_format)


def max_pool3d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
               ceil_mode: bool = False, data_format: str = "NCDHW", name: str | None = None,
               dilation: Any = 1) -> Any:
    """Max over windows of NCDHW (or NDHWC) input; stride defaults to kernel_size; padding counts as -inf."""
    return _windowed_max(3, x, kernel_size, stride, padding, return_mask, ceil_mode, dilation, data_format)


def _avg_pool(nd: int, x: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool, exclusive: bool,
              divisor_override: float | None, data_format: str, count_include_pad: bool | None,
              dilation: Any = 1) -> Any:
    fn = f"avg_pool{nd}d"
    attrs = _window_attrs(nd, kernel_size, stride, padding, ceil_mode, dilation, fn)
    if count_include_pad is not None:
        exclusive = not count_include_pad
    if divisor_override is not None:
        if divisor_override <= 0:
            raise ValueError(f"{fn}: divisor_override must be positive, got {divisor_override}")
        exclusive = False
    attrs.update(pooling_type="avg", exclusive=bool(exclusive))
    window = 1
    for k in attrs["ksize"]:
        window *= k
    rescale = 1.0 if divisor_override is None else window / float(divisor_override)

    def pool(x: Any) -> Any:
        out = apply_op(f"pool{nd}d", {"X": x}, attrs)
        return out if divisor_override is None else F.scale(out, rescale)
    return run_channel_first(x, data_format, nd, fn, pool)


def avg_pool1d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, exclusive: bool = True,
               ceil_mode: bool = False, name: str | None = None, count_include_pad: bool | None = None,
               data_format: str = "NCL") -> Any:
    """Mean over windows of NCL (or NLC) input; `exclusive` (Paddle's default) leaves padding out of
    the count, as PyTorch's count_include_pad=False (which may be passed instead)."""
    return _avg_pool(1, x, kernel_size, stride, padding, ceil_mode, exclusive, None, data_format, count_include_pad)


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               exclusive: bool = True, divisor_override: float | None = None, data_format: str = "NCHW",
               name: str | None = None, count_include_pad: bool | None = None, dilation: Any = 1) -> Any:
    """Mean over windows of NCHW (or NHWC) input; `exclusive` (Paddle's default) leaves padding out of the
    count, as PyTorch's count_include_pad=False (which may be passed instead)."""
    return _avg_pool(2, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format,
                     count_include_pad, dilation)


def avg_pool3d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               exclusive: bool = True, divisor_override: float | None = None, data_format: str = "NCDHW",
               name: str | None = None, count_include_pad: bool | None = None, dilation: Any = 1) -> Any:
    """Mean over windows of NCDHW (or NDHWC) input (see avg_pool2d)."""
    return _avg_pool(3, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format,
                     count_include_pad, dilation)


def _adaptive_attrs(nd: int, x: Any, output_size: Any, fn: str) -> dict[str, Any]:
    """Attributes for channel-first x."""
    sizes = [output_size] * nd if isinstance(output_size, int) or output_size is None else list(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{fn}: output_size must be an int or {nd} sizes, got {output_size!r}")
    if any(s is not None and int(s) < 1 for s in sizes):
        raise ValueError(f"{fn}: output_size must be positive, got {output_size!r} for input of shape "
                         f"{list(x.shape)}")
    spatial = list(x.shape[2:])
    sizes = [spatial[i] if s is None else int(s) for i, s in enumerate(sizes)]   # None keeps the input size
    if any(s < 0 for s in sizes):
        raise ValueError(f"{fn}: output_size {output_size!r} needs the input size, unknown in {list(x.shape)}")
    return {"ksize": sizes, "adaptive": True, "global_pooling": False, "strides": [1] * nd,
            "paddings": [0] * nd, "dilations": [1] * nd, "data_format": CHANNEL_FIRST[nd][0]}


def _adaptive_avg(nd: int, x: Any, output_size: Any, data_format: str) -> Any:
    fn = f"adaptive_avg_pool{nd}d"
    return run_channel_first(x, data_format, nd, fn, lambda x: apply_op(
        f"pool{nd}d", {"X": x}, {**_adaptive_attrs(nd, x, output_size, fn), "pooling_type": "avg"}))


def _adaptive_max(nd: int, x: Any, output_size: Any, return_mask: bool) -> Any:
    attrs = _adaptive_attrs(nd, x, output_size, f"adaptive_max_pool{nd}d")
    return _max_pool(nd, x, attrs, return_mask)


def adaptive_avg_pool1d(x: Any, output_size: Any, name: str | None = None, data_format: str = "NCL") -> Any:
    """Mean over PyTorch's adaptive windows of NCL (or NLC) input, giving `output_size` positions."""
    return _adaptive_avg(1, x, output_size, data_format)


def adaptive_avg_pool2d(x: Any, output_size: Any, data_format: str = "NCHW", name: str | None = None) -> Any:
    """Mean over PyTorch's adaptive windows of NCHW (or NHWC) input; an output size of None keeps that axis."""
    return _adaptive_avg(2, x, output_size, data_format)


def adaptive_avg_pool3d(x: Any, output_size: Any, data_format: str = "NCDHW", name: str | None = None) -> Any:
    """Average pooling of NCDHW (or NDHWC) input to the output size given (each window covers its share of
    the input)."""
    return _adaptive_avg(3, x, output_size, data_format)


def adaptive_max_pool1d(x: Any, output_size: Any, return_mask: bool = False, name: str | None = None) -> Any:
    """Max over PyTorch's adaptive windows (and the argmax indices with return_mask)."""
    return _adaptive_max(1, x, output_size, return_mask)


def adaptive_max_pool2d(x: Any, output_size: Any, return_mask: bool = False, name: str | None = None) -> Any:
    """Max pooling of NCHW input to the output size given; `return_mask` also returns the argmax indices."""
    return _adaptive_max(2, x, output_size, return_mask)


def adaptive_max_pool3d(x: Any, output_size: Any, return_mask: bool = False, name: str | None = None) -> Any:
    """Max pooling of NCDHW input to the output size given; `return_mask` also returns the argmax indices."""
    return _adaptive_max(3, x, output_size, return_mask)


# ---------------------------------------------------------------- max unpooling
def _unpool_size(fn: str, output_size: Any, default: list[int], strides: list[int], nd: int) -> list[int]:
    """The spatial output size: the pooling's input size by default; a given one (spatial, or
    with N and C in front) must lie strictly within stride of it, as Paddle and PyTorch check."""
    if output_size is None:
        return default
    sizes = [int(d) for d in output_size]
    sizes = sizes[2:] if len(sizes) == nd + 2 else sizes
    if len(sizes) != nd or any(not d - s < o < d + s for o, d, s in zip(sizes, default, strides)):
        raise ValueError(f"{fn}: output_size {list(output_size)} must give {nd} spatial sizes, each strictly "
                         f"within stride {strides} of the default {default}")
    return sizes


def _max_unpool(nd: int, x: Any, indices: Any, kernel_size: Any, stride: Any, padding: Any, data_format: str,
                output_size: Any) -> Any:
    """Each value of x written at its flat index (max_pool's mask) into a zero plane of the
    output size: one put_along_axis per call, whose gradient gathers at the same indices."""
    fn = f"max_unpool{nd}d"
    channel_last = is_channel_last(data_format, nd, fn)
    x, indices = (to_channel_first(x), to_channel_first(indices)) if channel_last else (x, indices)
    if len(x.shape) != nd + 2 or list(indices.shape) != list(x.shape) or \
            str(indices.dtype) not in ("int32", "int64") or any(d < 0 for d in x.shape[1:]):
        raise ValueError(f"{fn}: needs x of {nd + 2} axes with known channels and sizes and integer indices of "
                         f"the same shape (max_pool{nd}d's mask), got x {list(x.shape)} ({x.dtype}) and indices "
                         f"{list(indices.shape)} ({indices.dtype})")
    ksize = per_axis(kernel_size, nd, f"{fn}: kernel_size")
    strides = per_axis(kernel_size if stride is None else stride, nd, f"{fn}: stride")
    pads = per_axis(padding, nd, f"{fn}: padding")
    default = [(n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], strides, pads, ksize)]
    size = _unpool_size(fn, output_size, default, strides, nd)
    plane = math.prod(size)
    if is_tensor(indices) and indices.numpy().size and not 0 <= int(indices.numpy().min()) <= \
            int(indices.numpy().max()) < plane:
        raise ValueError(f"{fn}: indices must lie in [0, {plane}) for the output size {size}, got values in "
                         f"[{int(indices.numpy().min())}, {int(indices.numpy().max())}]")
    channels = int(x.shape[1])
    values = F.reshape(x, [0, channels, -1])
    zeros = tile(F.zeros_like(F.slice(values, [2], [0], [1])), [1, 1, plane])
    out = put_along_axis(zeros, F.reshape(indices, [0, channels, -1]), values, axis=2)
    out = F.reshape(out, [0, channels] + size)
    return to_channel_last(out) if channel_last else out


def max_unpool1d(x: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 data_format: str = "NCL", output_size: Any = None, name: str | None = None) -> Any:
    """The partial inverse of max_pool1d: each maximum back at its place (`indices`, the mask of
    max_pool1d(..., return_mask=True)), zeros elsewhere."""
    return _max_unpool(1, x, indices, kernel_size, stride, padding, data_format, output_size)


def max_unpool2d(x: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 data_format: str = "NCHW", output_size: Any = None, name: str | None = None) -> Any:
    """The partial inverse of max_pool2d: each maximum back at its place (`indices`, the mask of
    max_pool2d(..., return_mask=True)), zeros elsewhere; the output is [N, C, H, W] with H =
    (h - 1) stride - 2 padding + kernel_size unless output_size says otherwise."""
    return _max_unpool(2, x, indices, kernel_size, stride, padding, data_format, output_size)


def max_unpool3d(x: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 data_format: str = "NCDHW", output_size: Any = None, name: str | None = None) -> Any:
    """The partial inverse of max_pool3d (see max_unpool2d)."""
    return _max_unpool(3, x, indices, kernel_size, stride, padding, data_format, output_size)


def _lp_pool(nd: int, x: Any, norm_type: float, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
             data_format: str) -> Any:
    """(sum over each window of x^p)^(1/p), as torch computes it: the average of x^p times the
    window size, its sign kept through a relu of |.| (so a window of zeros gives 0)."""
    fn = f"lp_pool{nd}d"
    p = float(norm_type)
    if not p > 0:
        raise ValueError(f"{fn}: norm_type must be positive, got {norm_type}")
    size = math.prod(per_axis(kernel_size, nd, f"{fn}: kernel_size"))
    pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[nd]
    out = pool(F.pow(x, p), kernel_size, stride, padding, exclusive=False, ceil_mode=ceil_mode,
               data_format=data_format)
    out = F.multiply(F.sign(out), F.relu(F.abs(out)))
    return F.pow(F.scale(out, float(size)), 1.0 / p)


def lp_pool1d(x: Any, norm_type: float, kernel_size: Any, stride: Any = None, padding: Any = 0,
              ceil_mode: bool = False, data_format: str = "NCL", name: str | None = None) -> Any:
    """Power-average pooling over windows of NCL (or NLC) input: (sum of x^p)^(1/p) per window
    (Paddle's and PyTorch's lp_pool1d; Paddle's order: padding before ceil_mode)."""
    return _lp_pool(1, x, norm_type, kernel_size, stride, padding, ceil_mode, data_format)


def lp_pool2d(x: Any, norm_type: float, kernel_size: Any, stride: Any = None, padding: Any = 0,
              ceil_mode: bool = False, data_format: str = "NCHW", name: str | None = None) -> Any:
    """Power-average pooling over windows of NCHW (or NHWC) input (see lp_pool1d)."""
    return _lp_pool(2, x, norm_type, kernel_size, stride, padding, ceil_mode, data_format)


def lp_pool3d(x: Any, norm_type: float, kernel_size: Any, stride: Any = None, padding: Any = 0,
              ceil_mode: bool = False, data_format: str = "NCDHW", name: str | None = None) -> Any:
    """Power-average pooling over windows of NCDHW (or NDHWC) input (PyTorch's lp_pool3d)."""
    return _lp_pool(3, x, norm_type, kernel_size, stride, padding, ceil_mode, data_format)
