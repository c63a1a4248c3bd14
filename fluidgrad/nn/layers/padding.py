"""Padding layers (Paddle 2): Pad1D / Pad2D / Pad3D (constant, reflect, replicate, circular) and
ZeroPad1D / ZeroPad2D / ZeroPad3D. `padding` is one int for every side or (left, right[, top,
bottom[, front, back]]) from the last spatial axis backwards, as `nn.functional.pad`."""
from __future__ import annotations

from typing import Any

from .. import functional as NF
from ..layer import Layer

__all__ = ['Pad1D', 'Pad2D', 'Pad3D', 'ZeroPad1D', 'ZeroPad2D', 'ZeroPad3D']

_MODES = ("constant", "reflect", "replicate", "circular")


class _PadNd(Layer):
    nd = 2
    layouts: tuple[str, str] = ("NCHW", "NHWC")

    def __init__(self, padding: Any, mode: str = "constant", value: float = 0.0, data_format: str | None = None,
                 name: str | None = None) -> None:
        super().__init__()
        owner = type(self).__name__
        if mode not in _MODES:
            raise ValueError(f"{owner}: mode must be one of {list(_MODES)}, got {mode!r}")
        data_format = data_format or self.layouts[0]
        if data_format not in self.layouts:
            raise ValueError(f"{owner}: data_format must be one of {list(self.layouts)}, got {data_format!r}")
        sizes = [int(padding)] * (2 * self.nd) if isinstance(padding, int) else padding
        if not hasattr(sizes, "numpy") and len(sizes) != 2 * self.nd:
            raise ValueError(f"{owner}: padding must be an int or {2 * self.nd} ints, got {padding!r}")
        self.padding, self.mode, self.value, self.data_format = sizes, mode, float(value), data_format

    def forward(self, x: Any) -> Any:
        if len(x.shape) != self.nd + 2:
            raise ValueError(f"{type(self).__name__}: expects a {self.nd + 2}-D {self.data_format} input, got "
                             f"shape {list(x.shape)}")
        return NF.pad(x, self.padding, self.mode, self.value, self.data_format)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, mode={self.mode!r}, value={self.value}, data_format={self.data_format}"


class Pad1D(_PadNd):
    """Pad the L axis of NCL (or NLC) input: padding (left, right)."""
    nd, layouts = 1, ("NCL", "NLC")


class Pad2D(_PadNd):
    """Pad H and W of NCHW (or NHWC) input: padding (left, right, top, bottom)."""
    nd, layouts = 2, ("NCHW", "NHWC")


class Pad3D(_PadNd):
    """Pad D, H and W of NCDHW (or NDHWC) input: padding (left, right, top, bottom, front, back)."""
    nd, layouts = 3, ("NCDHW", "NDHWC")


class ZeroPad1D(Pad1D):
    """Zeros around L: Pad1D in constant mode with value 0."""
    def __init__(self, padding: Any, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__(padding, "constant", 0.0, data_format)


class ZeroPad2D(Pad2D):
    """Zeros around H and W: Pad2D in constant mode with value 0."""
    def __init__(self, padding: Any, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__(padding, "constant", 0.0, data_format)


class ZeroPad3D(Pad3D):
    """Zeros around D, H and W: Pad3D in constant mode with value 0."""
    def __init__(self, padding: Any, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__(padding, "constant", 0.0, data_format)
