"""Resizing, pixel and channel shuffling, im2col and col2im, for both modes. Paddle 2 names. Resizing and pixel
shuffling take channel-last input too (data_format NWC / NHWC / NDHWC: run on the input moved to
channel-first, see layout.py)."""
from __future__ import annotations

import math
from typing import Any

from ... import functions as F
from ...dispatch import apply_op
from ...framework.torch_forms import torch_keywords
from ...ops.geometry import per_axis
from .layout import run_channel_first
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ['interpolate', 'upsample', 'upsample_nearest', 'upsample_bilinear', 'pixel_shuffle', 'pixel_unshuffle',
           'channel_shuffle', 'unfold', 'fold']

# PyTorch's keywords of unfold / fold (positionally Paddle's order: strides before paddings and dilations)
_WINDOW_KEYWORDS = {"kernel_size": "kernel_sizes", "stride": "strides", "padding": "paddings",
                    "dilation": "dilations", "output_size": "output_sizes"}

_LAYOUTS = {1: ("NCL", "NCW"), 2: ("NCHW",), 3: ("NCDHW",)}
_AREA = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}


def interpolate(x: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool = False, align_mode: int = 0, data_format: str | None = None,
                name: str | None = None, *, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Any:
    """Resize the spatial axes to `size`, or by `scale_factor` (output floor(size * scale); source
    coordinates then use 1 / scale, as PyTorch). Modes: nearest, linear (1-D), bilinear and
    bicubic (2-D), trilinear (3-D), area (adaptive average pooling). Without align_corners the
    pixel centres are aligned (half-pixel); align_mode=1 is Paddle's asymmetric rule. PyTorch's
    recompute_scale_factor=True resizes to that output size (coordinates then use the size ratio);
    its antialias=True is refused (no anti-aliasing filter here)."""
    nd = len(x.shape) - 2
    if nd not in _LAYOUTS:
        raise ValueError(f"interpolate: expects a 3-D, 4-D or 5-D input, got shape {list(x.shape)}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True (PyTorch's anti-aliased resampling) is not supported")
    if recompute_scale_factor and scale_factor is not None and size is None:
        channel_last = (data_format or _LAYOUTS[nd][0])[-1] == "C"
        spatial = x.shape[1:-1] if channel_last else x.shape[2:]
        if any(d < 0 for d in spatial):
            raise ValueError(f"interpolate: recompute_scale_factor=True needs the spatial sizes, got shape "
                             f"{list(x.shape)}")
        size = [int(math.floor(d * f)) for d, f in zip(spatial, _per_axis_float(scale_factor, nd))]
        scale_factor = None
    return run_channel_first(x, data_format or _LAYOUTS[nd][0], nd, "interpolate", lambda x: _resize(
        x, nd, size, scale_factor, mode.lower(), align_corners, align_mode))


def _resize(x: Any, nd: int, size: Any, scale_factor: Any, mode: str, align_corners: bool, align_mode: int) -> Any:
    """interpolate of channel-first x."""
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if mode == "nearest" and align_corners:
        raise ValueError("interpolate: align_corners applies to the linear and cubic modes, not 'nearest'")
    if mode == "area":
        if size is None:
            size = [int(s * f) for s, f in zip(x.shape[2:], _per_axis_float(scale_factor, nd))]
        return _AREA[nd](x, size)
    attrs = {"mode": mode, "align_corners": bool(align_corners), "align_mode": int(align_mode)}
    if size is not None:
        attrs.update(out_size=per_axis(size, nd, "interpolate: size"), scales=[])
    else:
        scales = _per_axis_float(scale_factor, nd)
        if any(s <= 0 for s in scales):
            raise ValueError(f"interpolate: scale_factor must be positive, got {scale_factor!r}")
        attrs.update(out_size=[], scales=scales)
    return apply_op("interpolate", {"X": x}, attrs)


def _per_axis_float(value: Any, nd: int) -> list[float]:
    values = [value] * nd if isinstance(value, (int, float)) else list(value)
    if len(values) != nd:
        raise ValueError(f"interpolate: scale_factor must be a number or {nd} numbers, got {value!r}")
    return [float(v) for v in values]


def upsample(x: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool = False, align_mode: int = 0, data_format: str | None = None,
             name: str | None = None, *, recompute_scale_factor: bool | None = None, antialias: bool = False) -> Any:
    """Same as `interpolate`."""
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format,
                       recompute_scale_factor=recompute_scale_factor, antialias=antialias)


def upsample_nearest(input: Any, size: Any = None, scale_factor: Any = None) -> Any:
    """PyTorch's (deprecated) upsample_nearest: interpolate(mode='nearest')."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Any, size: Any = None, scale_factor: Any = None) -> Any:
    """PyTorch's (deprecated) upsample_bilinear: interpolate(mode='bilinear', align_corners=True), as torch."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _known(x: Any, fn: str) -> list[int]:
    shape = list(x.shape)
    if len(shape) != 4 or any(d < 0 for d in shape[1:]):
        raise ValueError(f"{fn}: expects a 4-D input with known C, H, W, got channel-first shape {shape}")
    return shape


def pixel_shuffle(x: Any, upscale_factor: int, data_format: str = "NCHW", name: str | None = None) -> Any:
    """[N, C * r * r, H, W] -> [N, C, H * r, W * r] (ONNX DepthToSpace, mode CRD); NHWC: the same
    with channels last."""
    return run_channel_first(x, data_format, 2, "pixel_shuffle", lambda x: _shuffle(x, int(upscale_factor)))


def _shuffle(x: Any, r: int) -> Any:
    _, c, h, w = _known(x, "pixel_shuffle")
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: needs input whose channels {c} divide by {r * r}, got channel-first "
                         f"shape {list(x.shape)}")
    y = F.reshape(x, [0, c // (r * r), r, r, h, w])
    y = F.transpose(y, [0, 1, 4, 2, 5, 3])
    return F.reshape(y, [0, c // (r * r), h * r, w * r])


def pixel_unshuffle(x: Any, downscale_factor: int, data_format: str = "NCHW", name: str | None = None) -> Any:
    """[N, C, H * r, W * r] -> [N, C * r * r, H, W], the inverse of pixel_shuffle; NHWC: the same
    with channels last."""
    return run_channel_first(x, data_format, 2, "pixel_unshuffle", lambda x: _unshuffle(x, int(downscale_factor)))


def _unshuffle(x: Any, r: int) -> Any:
    _, c, h, w = _known(x, "pixel_unshuffle")
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: needs input whose H, W divide by {r}, got channel-first shape "
                         f"{list(x.shape)}")
    y = F.reshape(x, [0, c, h // r, r, w // r, r])
    y = F.transpose(y, [0, 1, 3, 5, 2, 4])
    return F.reshape(y, [0, c * r * r, h // r, w // r])


def channel_shuffle(x: Any, groups: int, data_format: str = "NCHW", name: str | None = None) -> Any:
    """Interleaves the channels of `groups` groups (ShuffleNet): [N, g * k, H, W] is read as
    [N, g, k, H, W], the two channel axes swapped; NHWC: the same with channels last (Paddle's
    and PyTorch's channel_shuffle)."""
    return run_channel_first(x, data_format, 2, "channel_shuffle", lambda x: _channel_shuffle(x, groups))


def _channel_shuffle(x: Any, groups: Any) -> Any:
    _, c, h, w = _known(x, "channel_shuffle")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0 or c % groups:
        raise ValueError(f"channel_shuffle: groups must be a positive integer dividing the {c} channels, got "
                         f"{groups!r} for channel-first shape {list(x.shape)}")
    y = F.reshape(x, [0, groups, c // groups, h, w])
    return F.reshape(F.transpose(y, [0, 2, 1, 3, 4]), [0, c, h, w])


def _window_attrs(fn: str, kernel_sizes: Any, strides: Any, paddings: Any, dilations: Any) -> dict[str, Any]:
    """unfold / fold attributes; paddings: an int, [h, w], or Paddle's [top, left, bottom, right]."""
    pads = [paddings] * 2 if isinstance(paddings, int) else [int(p) for p in paddings]
    if len(pads) == 2:
        pads = [pads[0], pads[0], pads[1], pads[1]]
    elif len(pads) == 4:
        pads = [pads[0], pads[2], pads[1], pads[3]]   # [top, left, bottom, right] -> lo, hi per axis
    else:
        raise ValueError(f"{fn}: paddings must be an int, 2 ints or 4 ints, got {paddings!r}")
    return {"kernel_sizes": per_axis(kernel_sizes, 2, f"{fn}: kernel_sizes"),
            "strides": per_axis(strides, 2, f"{fn}: strides"), "paddings": pads,
            "dilations": per_axis(dilations, 2, f"{fn}: dilations")}


@torch_keywords(**_WINDOW_KEYWORDS)
def unfold(x: Any, kernel_sizes: Any, strides: Any = 1, paddings: Any = 0, dilations: Any = 1,
           name: str | None = None) -> Any:
    """im2col: [N, C, H, W] -> [N, C * KH * KW, L], one column per window position. paddings:
    an int, [h, w], or Paddle's [top, left, bottom, right]. PyTorch's keywords kernel_size=,
    stride=, padding=, dilation= are accepted too."""
    return apply_op("unfold", {"X": x}, _window_attrs("unfold", kernel_sizes, strides, paddings, dilations))


@torch_keywords(**_WINDOW_KEYWORDS)
def fold(x: Any, output_sizes: Any, kernel_sizes: Any, strides: Any = 1, paddings: Any = 0, dilations: Any = 1,
         name: str | None = None) -> Any:
    """col2im, the adjoint of unfold: [N, C * KH * KW, L] columns added back into their windows of
    [N, C, H, W] (output_sizes [H, W]; overlapping windows summed), as torch.nn.functional.fold."""
    attrs = _window_attrs("fold", kernel_sizes, strides, paddings, dilations)
    return apply_op("fold", {"X": x}, {"output_sizes": per_axis(output_sizes, 2, "fold: output_sizes"), **attrs})
