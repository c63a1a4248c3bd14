"""Convolution and transposed convolution over 1-3 spatial axes, for both modes.

Paddle 2 names and signatures. `padding` is an int, one int per axis, (lo, hi) per axis as
[lo0, hi0, lo1, hi1, ...] or [[lo0, hi0], ...] (Paddle also allows the batch and channel
pairs [[0, 0], [0, 0], ...]), or "same" (output ceil(size / stride), for any stride; the odd
pixel of padding goes at the end, as TensorFlow and ONNX SAME_UPPER) or "valid".

The ops convolve channel-first input; a channel-last `data_format` (NLC, NHWC, NDHWC) runs them
on the input moved to channel-first (see layout.py). The filter keeps its layout [out, in /
groups, *kernel] either way, as Paddle's.
"""
from __future__ import annotations

from typing import Any

from ...dispatch import apply_op
from ...ops.conv import transpose_out_len
from ...ops.geometry import pad_pairs, per_axis
from .layout import CHANNEL_FIRST, run_channel_first

__all__ = ['conv1d', 'conv2d', 'conv3d', 'conv1d_transpose', 'conv2d_transpose', 'conv3d_transpose',
           'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d']

_LAYOUTS = {nd: names[0] for nd, names in CHANNEL_FIRST.items()}


def padding_attrs(padding: Any, nd: int, fn: str) -> tuple[list[int], str]:
    """(explicit [lo, hi] per axis, padding_algorithm) from any of the accepted forms."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise ValueError(f"{fn}: padding must be a number, a list, 'same' or 'valid', got {padding!r}")
        return [0] * (2 * nd), algorithm
    if isinstance(padding, (list, tuple)) and padding and isinstance(padding[0], (list, tuple)):
        pairs = [list(p) for p in padding]
        if len(pairs) == nd + 2:
            if any(p != [0, 0] for p in pairs[:2]):
                raise ValueError(f"{fn}: the batch and channel axes cannot be padded, got {padding!r}")
            pairs = pairs[2:]
        if len(pairs) != nd or any(len(p) != 2 for p in pairs):
            raise ValueError(f"{fn}: padding pairs must be {nd} [lo, hi] pairs, got {padding!r}")
        return [int(v) for p in pairs for v in p], "EXPLICIT"
    try:
        pairs = pad_pairs(padding, nd)
    except ValueError as err:
        raise ValueError(f"{fn}: {err}") from None
    return [v for p in pairs for v in p], "EXPLICIT"


def _conv(nd: int, x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int,
          data_format: str | None) -> Any:
    fn = f"conv{nd}d"
    pads, algorithm = padding_attrs(padding, nd, fn)
    attrs = {"strides": per_axis(stride, nd, f"{fn}: stride"), "paddings": pads,
             "dilations": per_axis(dilation, nd, f"{fn}: dilation"), "groups": int(groups),
             "data_format": _LAYOUTS[nd], "padding_algorithm": algorithm}
    return run_channel_first(x, data_format or _LAYOUTS[nd], nd, fn,
                             lambda x: apply_op(fn, {"Input": x, "Filter": weight, "Bias": bias}, attrs))


def conv1d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, data_format: str = "NCL", name: str | None = None) -> Any:
    """NCL (or channel-last) cross-correlation; weight is [out_channels, in_channels / groups, K]."""
    return _conv(1, x, weight, bias, stride, padding, dilation, groups, data_format)


def conv2d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, data_format: str = "NCHW", name: str | None = None) -> Any:
    """NCHW (or channel-last) cross-correlation; weight is [out_channels, in_channels / groups, KH, KW]."""
    return _conv(2, x, weight, bias, stride, padding, dilation, groups, data_format)


def conv3d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, data_format: str = "NCDHW", name: str | None = None) -> Any:
    """NCDHW (or channel-last) cross-correlation; weight is [out_channels, in_channels / groups, KD, KH, KW]."""
    return _conv(3, x, weight, bias, stride, padding, dilation, groups, data_format)


def _transpose_padding(nd: int, x: Any, weight: Any, padding: Any, strides: list[int], dilations: list[int],
                       output_padding: list[int], fn: str) -> tuple[list[int], list[int]]:
    """Explicit paddings and output_padding; 'same' gives output size = input size * stride."""
    pads, algorithm = padding_attrs(padding, nd, fn)
    if algorithm != "SAME":
        return pads, output_padding
    spatial, kernel = list(x.shape[2:]), list(weight.shape[2:])
    if any(s < 0 for s in spatial):
        raise ValueError(f"{fn}: padding='same' needs known spatial sizes, got input shape {list(x.shape)}")
    pads, extra = [], []
    for size, k, st, d, e in zip(spatial, kernel, strides, dilations, output_padding):
        total = (size - 1) * st + d * (k - 1) + 1 + e - size * st   # padding that gives size * stride
        pads += [max(total, 0) // 2, max(total, 0) - max(total, 0) // 2]
        extra.append(e - min(total, 0))   # a short output grows by output_padding instead
    return pads, extra


def _conv_transpose(nd: int, x: Any, weight: Any, bias: Any, stride: Any, padding: Any, output_padding: Any,
                    dilation: Any, groups: int, output_size: Any, data_format: str | None) -> Any:
    fn = f"conv{nd}d_transpose"
    return run_channel_first(x, data_format or _LAYOUTS[nd], nd, fn, lambda x: _conv_transpose_first(
        nd, x, weight, bias, stride, padding, output_padding, dilation, groups, output_size))


def _conv_transpose_first(nd: int, x: Any, weight: Any, bias: Any, stride: Any, padding: Any, output_padding: Any,
                          dilation: Any, groups: int, output_size: Any) -> Any:
    """The transposed convolution of channel-first x."""
    fn = f"conv{nd}d_transpose"
    strides, dilations = per_axis(stride, nd, f"{fn}: stride"), per_axis(dilation, nd, f"{fn}: dilation")
    extra = per_axis(output_padding, nd, f"{fn}: output_padding")
    pads, extra = _transpose_padding(nd, x, weight, padding, strides, dilations, extra, fn)
    if output_size is not None:
        wanted = per_axis(output_size, nd, f"{fn}: output_size")
        default = [transpose_out_len(s, k, pads[2 * i], pads[2 * i + 1], st, d, 0) for i, (s, k, st, d)
                   in enumerate(zip(x.shape[2:], weight.shape[2:], strides, dilations))]
        extra = [w - o for w, o in zip(wanted, default)]
        if any(o < 0 for o in default) or any(not 0 <= e < st for e, st in zip(extra, strides)):
            raise ValueError(f"{fn}: output_size {wanted} is not reachable from input shape {list(x.shape)}: "
                             f"the sizes lie in [{default}, {default} + stride)")
    attrs = {"strides": strides, "paddings": pads, "dilations": dilations, "groups": int(groups),
             "data_format": _LAYOUTS[nd], "padding_algorithm": "EXPLICIT", "output_padding": extra}
    return apply_op(f"conv{nd}d_transpose", {"Input": x, "Filter": weight, "Bias": bias}, attrs)


def conv1d_transpose(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1, output_size: Any = None,
                     data_format: str = "NCL", name: str | None = None) -> Any:
    """The transpose (adjoint) of conv1d; weight is [in_channels, out_channels / groups, K]."""
    return _conv_transpose(1, x, weight, bias, stride, padding, output_padding, dilation, groups, output_size,
                           data_format)


def conv2d_transpose(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, dilation: Any = 1, groups: int = 1, output_size: Any = None,
                     data_format: str = "NCHW", name: str | None = None) -> Any:
    """The transpose (adjoint) of conv2d; weight is [in_channels, out_channels / groups, KH, KW]."""
    return _conv_transpose(2, x, weight, bias, stride, padding, output_padding, dilation, groups, output_size,
                           data_format)


def conv3d_transpose(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1, output_size: Any = None,
                     data_format: str = "NCDHW", name: str | None = None) -> Any:
    """The transpose (adjoint) of conv3d; weight is [in_channels, out_channels / groups, KD, KH, KW]."""
    return _conv_transpose(3, x, weight, bias, stride, padding, output_padding, dilation, groups, output_size,
                           data_format)


# PyTorch's spellings: conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups,
# dilation), the positional order of all three (Paddle's conv2d_transpose puts dilation before groups); the
# weight layout [in_channels, out_channels / groups, *kernel] is the same in both libraries.
def conv_transpose1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """torch.nn.functional.conv_transpose1d: conv1d_transpose in torch's argument order."""
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, dilation, groups, None, None)


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """torch.nn.functional.conv_transpose2d: conv2d_transpose in torch's argument order."""
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, dilation, groups, None, None)


def conv_transpose3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """torch.nn.functional.conv_transpose3d: conv3d_transpose in torch's argument order."""
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, dilation, groups, None, None)
