"""Pooling layers over 1-3 spatial axes: max, average, adaptive (channel-first, or channel-last by data_format),
max unpooling, and power-average (LPPool1D / LPPool2D, Paddle's; torch's LPPool1d-3d in torch_spellings.py)."""
from __future__ import annotations

from typing import Any

from .. import functional as NF
from ..layer import Layer

__all__ = ['MaxPool1D', 'MaxPool2D', 'MaxPool3D', 'AvgPool1D', 'AvgPool2D', 'AvgPool3D',
           'AdaptiveAvgPool1D', 'AdaptiveAvgPool2D', 'AdaptiveAvgPool3D',
           'AdaptiveMaxPool1D', 'AdaptiveMaxPool2D', 'AdaptiveMaxPool3D', 'MaxUnPool1D', 'MaxUnPool2D', 'MaxUnPool3D',
           'LPPool1D', 'LPPool2D']

_LAYOUTS = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


class _MaxPoolNd(Layer):
    nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, return_mask: bool = False,
                 ceil_mode: bool = False, data_format: str | None = None, name: str | None = None,
                 dilation: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.return_mask, self.ceil_mode, self.dilation = return_mask, ceil_mode, dilation
        self.data_format = data_format or _LAYOUTS[self.nd]

    def forward(self, x: Any) -> Any:
        fn = {1: NF.max_pool1d, 2: NF.max_pool2d, 3: NF.max_pool3d}[self.nd]
        return fn(x, self.kernel_size, self.stride, self.padding, return_mask=self.return_mask,
                  ceil_mode=self.ceil_mode, dilation=self.dilation, data_format=self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1D(_MaxPoolNd):
    """Max pooling of NCL (or NLC) input over kernel_size windows."""
    nd = 1


class MaxPool2D(_MaxPoolNd):
    """Max pooling of NCHW (or NHWC) input over kernel_size windows."""
    nd = 2


class MaxPool3D(_MaxPoolNd):
    """Max pooling of NCDHW (or NDHWC) input over kernel_size windows."""
    nd = 3


class _AvgPoolNd(Layer):
    nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 exclusive: bool = True, divisor_override: float | None = None, data_format: str | None = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.exclusive, self.divisor_override = ceil_mode, exclusive, divisor_override
        self.data_format = data_format or _LAYOUTS[self.nd]

    def forward(self, x: Any) -> Any:
        if self.nd == 1:
            return NF.avg_pool1d(x, self.kernel_size, self.stride, self.padding, exclusive=self.exclusive,
                                 ceil_mode=self.ceil_mode, data_format=self.data_format)
        fn = NF.avg_pool2d if self.nd == 2 else NF.avg_pool3d
        return fn(x, self.kernel_size, self.stride, self.padding, ceil_mode=self.ceil_mode, exclusive=self.exclusive,
                  divisor_override=self.divisor_override, data_format=self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1D(_AvgPoolNd):
    """Paddle's argument order: (kernel_size, stride, padding, exclusive, ceil_mode)."""
    nd = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, exclusive: bool = True,
                 ceil_mode: bool = False, name: str | None = None, data_format: str = "NCL") -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, exclusive, data_format=data_format)


class AvgPool2D(_AvgPoolNd):
    """Average pooling of NCHW (or NHWC) input over kernel_size windows."""
    nd = 2


class AvgPool3D(_AvgPoolNd):
    """Average pooling of NCDHW (or NDHWC) input over kernel_size windows."""
    nd = 3


class _AdaptiveAvgPoolNd(Layer):
    nd = 2

    def __init__(self, output_size: Any, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__()
        self.output_size = output_size
        self.data_format = data_format or _LAYOUTS[self.nd]

    def forward(self, x: Any) -> Any:
        fn = {1: NF.adaptive_avg_pool1d, 2: NF.adaptive_avg_pool2d, 3: NF.adaptive_avg_pool3d}[self.nd]
        return fn(x, self.output_size, data_format=self.data_format)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1D(_AdaptiveAvgPoolNd):
    """Average pooling of NCL (or NLC) input to a fixed output length."""
    nd = 1


class AdaptiveAvgPool2D(_AdaptiveAvgPoolNd):
    """Average pooling of NCHW (or NHWC) input to a fixed output size."""
    nd = 2


class AdaptiveAvgPool3D(_AdaptiveAvgPoolNd):
    """Average pooling of NCDHW (or NDHWC) input to a fixed output size."""
    nd = 3


class _AdaptiveMaxPoolNd(Layer):
    nd = 2

    def __init__(self, output_size: Any, return_mask: bool = False, name: str | None = None) -> None:
        super().__init__()
        self.output_size, self.return_mask = output_size, return_mask

    def forward(self, x: Any) -> Any:
        fn = {1: NF.adaptive_max_pool1d, 2: NF.adaptive_max_pool2d, 3: NF.adaptive_max_pool3d}[self.nd]
        return fn(x, self.output_size, self.return_mask)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1D(_AdaptiveMaxPoolNd):
    """Max pooling of NCL input to a fixed output length."""
    nd = 1


class AdaptiveMaxPool2D(_AdaptiveMaxPoolNd):
    """Max pooling of NCHW input to a fixed output size."""
    nd = 2


class AdaptiveMaxPool3D(_AdaptiveMaxPoolNd):
    """Max pooling of NCDHW input to a fixed output size."""
    nd = 3


class _MaxUnPoolNd(Layer):
    nd, layout = 2, "NCHW"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, data_format: str | None = None,
                 output_size: Any = None, name: str | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.data_format, self.output_size = data_format or self.layout, output_size

    def forward(self, x: Any, indices: Any, output_size: Any = None) -> Any:
        """`indices`: the mask of max_poolNd(..., return_mask=True); output_size here (PyTorch's
        place) or in the constructor (Paddle's)."""
        fn = getattr(NF, f"max_unpool{self.nd}d")
        return fn(x, indices, self.kernel_size, self.stride, self.padding, self.data_format,
                  self.output_size if output_size is None else output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnPool1D(_MaxUnPoolNd):
    """The partial inverse of MaxPool1D: maxima back at their places, zeros elsewhere."""
    nd, layout = 1, "NCL"


class MaxUnPool2D(_MaxUnPoolNd):
    """The partial inverse of MaxPool2D: maxima back at their places, zeros elsewhere."""
    nd, layout = 2, "NCHW"


class MaxUnPool3D(_MaxUnPoolNd):
    """The partial inverse of MaxPool3D: maxima back at their places, zeros elsewhere."""
    nd, layout = 3, "NCDHW"


class _LPPoolNd(Layer):
    nd = 2
    layout = "NCHW"

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.padding = float(norm_type), kernel_size, stride, padding
        self.ceil_mode, self.data_format = bool(ceil_mode), data_format or self.layout

    def forward(self, x: Any) -> Any:
        pool = {1: NF.lp_pool1d, 2: NF.lp_pool2d, 3: NF.lp_pool3d}[self.nd]
        return pool(x, self.norm_type, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.data_format)

    def extra_repr(self) -> str:
        return f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}"


class LPPool1D(_LPPoolNd):
    """(sum of x^p)^(1/p) over windows of NCL (or NLC) input (paddle.nn.LPPool1D)."""
    nd, layout = 1, "NCL"


class LPPool2D(_LPPoolNd):
    """(sum of x^p)^(1/p) over windows of NCHW (or NHWC) input (paddle.nn.LPPool2D)."""
    nd, layout = 2, "NCHW"
