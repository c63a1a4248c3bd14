"""Resizing, pixel shuffling and im2col layers (no parameters)."""
from __future__ import annotations

from typing import Any

from .. import functional as NF
from ..layer import Layer

__all__ = ['Upsample', 'UpsamplingNearest2D', 'UpsamplingBilinear2D', 'PixelShuffle', 'PixelUnshuffle', 'ChannelShuffle',
           'Unfold', 'Fold']


class Upsample(Layer):
    """`interpolate` as a layer."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool = False,
                 align_mode: int = 0, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.align_mode, self.data_format = align_corners, align_mode, data_format

    def forward(self, x: Any) -> Any:
        return NF.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners, self.align_mode,
                              self.data_format)

    def extra_repr(self) -> str:
        return f"size={self.size}, scale_factor={self.scale_factor}, mode={self.mode!r}"


class UpsamplingNearest2D(Upsample):
    """Nearest-neighbour upsampling of NCHW input by a size or scale factor."""
    def __init__(self, size: Any = None, scale_factor: Any = None, data_format: str = "NCHW",
                 name: str | None = None) -> None:
        super().__init__(size, scale_factor, "nearest", data_format=data_format)


class UpsamplingBilinear2D(Upsample):
    """Bilinear with align_corners=True (as Paddle's and PyTorch's layer of this name)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, data_format: str = "NCHW",
                 name: str | None = None) -> None:
        super().__init__(size, scale_factor, "bilinear", align_corners=True, data_format=data_format)


class PixelShuffle(Layer):
    """Rearranges [N, C*r*r, H, W] into [N, C, H*r, W*r] (sub-pixel upsampling)."""
    def __init__(self, upscale_factor: int, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.upscale_factor, self.data_format = int(upscale_factor), data_format

    def forward(self, x: Any) -> Any:
        return NF.pixel_shuffle(x, self.upscale_factor, self.data_format)


class PixelUnshuffle(Layer):
    """Rearranges [N, C, H*r, W*r] into [N, C*r*r, H, W]: the inverse of PixelShuffle."""
    def __init__(self, downscale_factor: int, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.downscale_factor, self.data_format = int(downscale_factor), data_format

    def forward(self, x: Any) -> Any:
        return NF.pixel_unshuffle(x, self.downscale_factor, self.data_format)


class ChannelShuffle(Layer):
    """Interleaves the channels of `groups` groups (ShuffleNet; see functional.channel_shuffle)."""

    def __init__(self, groups: int, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.groups, self.data_format = groups, data_format

    def forward(self, x: Any) -> Any:
        return NF.channel_shuffle(x, self.groups, self.data_format)

    def extra_repr(self) -> str:
        return f"groups={self.groups}, data_format={self.data_format}"


class Unfold(Layer):
    """Extracts sliding blocks of NCHW input as columns (im2col), as `nn.functional.unfold`."""
    def __init__(self, kernel_sizes: Any, dilations: Any = 1, paddings: Any = 0, strides: Any = 1,
                 name: str | None = None) -> None:
        super().__init__()
        self.kernel_sizes, self.dilations, self.paddings, self.strides = kernel_sizes, dilations, paddings, strides

    def forward(self, x: Any) -> Any:
        return NF.unfold(x, self.kernel_sizes, self.strides, self.paddings, self.dilations)


class Fold(Layer):
    """Adds columns [N, C * KH * KW, L] back into their windows of [N, C, *output_sizes] (col2im,
    the adjoint of Unfold), as `nn.functional.fold`."""
    def __init__(self, output_sizes: Any, kernel_sizes: Any, dilations: Any = 1, paddings: Any = 0, strides: Any = 1,
                 name: str | None = None) -> None:
        super().__init__()
        self.output_sizes, self.kernel_sizes = output_sizes, kernel_sizes
        self.dilations, self.paddings, self.strides = dilations, paddings, strides

    def forward(self, x: Any) -> Any:
        return NF.fold(x, self.output_sizes, self.kernel_sizes, self.strides, self.paddings, self.dilations)
