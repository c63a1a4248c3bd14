"""Convolution and pooling layers (NCHW)."""
from __future__ import annotations

from typing import Any

from ...initializer import Constant, KaimingNormal
from .. import functional as NF
from ..layer import Layer

__all__ = ['Conv2D', 'MaxPool2D', 'AvgPool2D']


def _pair(value: Any) -> list[int]:
    return [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]


class Conv2D(Layer):
    """NCHW convolution; weight is [out_channels, in_channels / groups, KH, KW]."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, padding_mode: str = "zeros", weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW") -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"Conv2D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: in_channels {in_channels} and out_channels {out_channels} must be "
                             f"divisible by groups {groups}")
        self.kernel_size = _pair(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, int(groups)
        self.data_format = data_format
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.weight = self.create_parameter([out_channels, in_channels // groups] + self.kernel_size, weight_attr,
                                            default_initializer=KaimingNormal())
        self.bias = None if bias_attr is False else self.create_parameter(
            [out_channels], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any) -> Any:
        return NF.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                         self.data_format)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class MaxPool2D(Layer):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, data_format: str = "NCHW") -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.data_format = kernel_size, stride, padding, data_format

    def forward(self, x: Any) -> Any:
        return NF.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2D(Layer):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, exclusive: bool = True,
                 data_format: str = "NCHW") -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.exclusive, self.data_format = exclusive, data_format

    def forward(self, x: Any) -> Any:
        return NF.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.exclusive, self.data_format)
