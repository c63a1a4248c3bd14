"""Convolution layers over 1-3 spatial axes (channel-first, or channel-last by data_format), and their transposes."""
from __future__ import annotations

from typing import Any

from ...initializer import Constant, KaimingNormal
from ...ops.geometry import pad_pairs, per_axis
from .. import functional as NF
from ..layer import Layer
from ..parameter import bias_attr_of, check_device

__all__ = ['Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose', 'Conv3DTranspose']

_LAYOUTS = {1: "NCL", 2: "NCHW", 3: "NCDHW"}
_CONV = {1: NF.conv1d, 2: NF.conv2d, 3: NF.conv3d}
_TRANSPOSE = {1: NF.conv1d_transpose, 2: NF.conv2d_transpose, 3: NF.conv3d_transpose}
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Layer):
    """Owns the filter (Kaiming-normal) and the bias (zeros; bias_attr=False or PyTorch's
    bias=False: none). padding_mode
    'reflect' / 'replicate' / 'circular' (PyTorch's and Paddle's) pads the input in that mode
    before a convolution without padding."""

    nd = 2
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, padding_mode: str = "zeros", weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str | None = None, output_padding: Any = 0, *,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(dtype=dtype)
        name = type(self).__name__
        check_device(name, device)
        if isinstance(padding_mode, bool):   # Conv2d(1, 1, 3, 1, 0, 1, 1, False): PyTorch's positional bias
            padding_mode, bias = "zeros", bias and padding_mode
        bias_attr = bias_attr_of(name, bias, bias_attr)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        self.padding_mode, self._mode_pads = padding_mode, None
        if padding_mode != "zeros":   # the input padded by F.pad in that mode, then an unpadded convolution
            if isinstance(padding, str):
                raise ValueError(f"{name}: padding_mode={padding_mode!r} needs padding as sizes, got {padding!r}")
            pairs = pad_pairs(padding, self.nd)
            self._mode_pads = [size for lo, hi in reversed(pairs) for size in (lo, hi)]  # F.pad: last axis first
            padding = 0
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels {in_channels} and out_channels {out_channels} must be "
                             f"divisible by groups {groups}")
        self.kernel_size = per_axis(kernel_size, self.nd, f"{name}: kernel_size")
        if any(k <= 0 for k in self.kernel_size) or int(in_channels) <= 0 or int(out_channels) <= 0:
            raise ValueError(f"{name}: kernel_size {self.kernel_size}, in_channels {in_channels} and out_channels "
                             f"{out_channels} must be positive")
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, int(groups)
        self.output_padding = output_padding
        self.data_format = data_format or _LAYOUTS[self.nd]
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        shape = ([in_channels, out_channels // groups] if self.transposed else
                 [out_channels, in_channels // groups]) + self.kernel_size
        self.weight = self.create_parameter(shape, weight_attr, default_initializer=KaimingNormal())
        self.bias = None if bias_attr is False else self.create_parameter(
            [out_channels], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any, output_size: Any = None) -> Any:
        if self.transposed:
            return _TRANSPOSE[self.nd](x, self.weight, self.bias, stride=self.stride, padding=self.padding,
                                       output_padding=self.output_padding, dilation=self.dilation,
                                       groups=self.groups, output_size=output_size, data_format=self.data_format)
        if self._mode_pads is not None:
            x = NF.pad(x, self._mode_pads, mode=self.padding_mode, data_format=self.data_format)
        return _CONV[self.nd](x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                              self.data_format)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class Conv1D(_ConvNd):
    """NCL convolution; weight is [out_channels, in_channels / groups, K]."""
    nd = 1


class Conv2D(_ConvNd):
    """NCHW convolution; weight is [out_channels, in_channels / groups, KH, KW]."""
    nd = 2


class Conv3D(_ConvNd):
    """NCDHW convolution; weight is [out_channels, in_channels / groups, KD, KH, KW]."""
    nd = 3


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, dilation: Any = 1, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str | None = None, *, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, "zeros",
                         weight_attr, bias_attr, data_format, output_padding, bias=bias, device=device, dtype=dtype)


class Conv1DTranspose(_ConvTransposeNd):
    """The transpose of Conv1D; weight is [in_channels, out_channels / groups, K]."""
    nd = 1


class Conv2DTranspose(_ConvTransposeNd):
    """The transpose of Conv2D; weight is [in_channels, out_channels / groups, KH, KW]."""
    nd = 2


class Conv3DTranspose(_ConvTransposeNd):
    """The transpose of Conv3D; weight is [in_channels, out_channels / groups, KD, KH, KW]."""
    nd = 3
