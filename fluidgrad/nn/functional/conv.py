"""Convolution and pooling functions (NCHW), for both modes."""
from __future__ import annotations

from typing import Any, Sequence

from ...dispatch import apply_op

__all__ = ['conv2d', 'max_pool2d', 'avg_pool2d']


def _padding(padding: Any, kernel: Sequence[int], dilation: Sequence[int], what: str) -> list[int]:
    """int, [h, w], [top, bottom, left, right], 'valid' or 'same' (stride 1) -> op paddings."""
    if isinstance(padding, str):
        if padding.lower() == "valid":
            return [0, 0]
        if padding.lower() == "same":
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            return pads
        raise ValueError(f"{what}: padding must be a number, a list, 'valid' or 'same', got {padding!r}")
    return [int(padding)] * 2 if isinstance(padding, int) else [int(p) for p in padding]


def _pair(value: Any) -> list[int]:
    return [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]


def conv2d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, data_format: str = "NCHW") -> Any:
    """NCHW cross-correlation; weight is [out_channels, in_channels / groups, KH, KW]."""
    if isinstance(padding, str) and padding.lower() == "same" and _pair(stride) != [1, 1]:
        raise ValueError(f"conv2d: padding='same' needs stride 1, got stride {stride}")
    dilations = _pair(dilation)
    attrs = {"strides": _pair(stride), "paddings": _padding(padding, list(weight.shape[2:]), dilations, "conv2d"),
             "dilations": dilations, "groups": int(groups), "data_format": data_format}
    return apply_op("conv2d", {"Input": x, "Filter": weight, "Bias": bias}, attrs)


def _pool(x: Any, kind: str, kernel_size: Any, stride: Any, padding: Any, exclusive: bool,
          data_format: str) -> Any:
    ksize = _pair(kernel_size)
    attrs = {"pooling_type": kind, "ksize": ksize, "strides": _pair(stride if stride is not None else kernel_size),
             "paddings": _padding(padding, ksize, [1, 1], f"{kind}_pool2d"), "global_pooling": False,
             "exclusive": bool(exclusive), "data_format": data_format}
    return apply_op("pool2d", {"X": x}, attrs)


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, data_format: str = "NCHW") -> Any:
    """Max over windows; stride defaults to kernel_size, padding counts as -inf."""
    return _pool(x, "max", kernel_size, stride, padding, True, data_format)


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, exclusive: bool = True,
               data_format: str = "NCHW") -> Any:
    """Mean over windows; `exclusive` (Paddle's default) leaves padding out of the count, as
    PyTorch's count_include_pad=False."""
    return _pool(x, "avg", kernel_size, stride, padding, exclusive, data_format)
