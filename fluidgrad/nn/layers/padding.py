"""Padding layers. Paddle 2's: Pad1D / Pad2D / Pad3D (constant, reflect, replicate, circular) and
ZeroPad1D / ZeroPad2D / ZeroPad3D, on batched input in a data_format. PyTorch's: ConstantPad{1,2,3}d
(padding, value), ZeroPad{1,2,3}d, ReflectionPad{1,2,3}d, ReplicationPad{1,2,3}d and
CircularPad{1,2,3}d, channel-first, batched or not (the constant ones pad the last axes of any
input, as torch's). `padding` is one int for every side or (left, right[, top, bottom[, front,
back]]) from the last axis backwards, as `nn.functional.pad`; negative sizes crop."""
from __future__ import annotations

from typing import Any

from .. import functional as NF
from ..layer import Layer

__all__ = ['Pad1D', 'Pad2D', 'Pad3D', 'ZeroPad1D', 'ZeroPad2D', 'ZeroPad3D',
           'ConstantPad1d', 'ConstantPad2d', 'ConstantPad3d', 'ZeroPad1d', 'ZeroPad2d', 'ZeroPad3d',
           'ReflectionPad1d', 'ReflectionPad2d', 'ReflectionPad3d', 'ReplicationPad1d', 'ReplicationPad2d',
           'ReplicationPad3d', 'CircularPad1d', 'CircularPad2d', 'CircularPad3d']

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


# ---------------------------------------------------------------- PyTorch's padding layers
class _TorchPad(Layer):
    """torch's {Mode}Pad{nd}d: padding an int or 2 * nd ints (left, right, top, bottom, front, back)."""
    nd, mode = 2, "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        owner, count = type(self).__name__, 2 * self.nd
        if isinstance(padding, bool) or not isinstance(padding, (int, tuple, list)) or \
                not isinstance(padding, int) and (len(padding) != count or not all(isinstance(p, int) for p in padding)):
            raise ValueError(f"{owner}: padding must be an int or a tuple of {count} ints, got {padding!r}")
        self.padding = (int(padding),) * count if isinstance(padding, int) else tuple(int(p) for p in padding)
        self.value = float(value)

    def forward(self, x: Any) -> Any:
        rank, owner = len(x.shape), type(self).__name__
        if self.mode == "constant":
            if rank < self.nd:
                raise ValueError(f"{owner}: pads the last {self.nd} axes, got input of shape {list(x.shape)}")
            paddings = [0] * (2 * rank)   # Paddle's every-axis form, first axis first
            for i in range(self.nd):
                axis = rank - 1 - i
                paddings[2 * axis], paddings[2 * axis + 1] = self.padding[2 * i], self.padding[2 * i + 1]
            return NF.pad(x, paddings, "constant", self.value)
        if rank not in (self.nd + 1, self.nd + 2):
            raise ValueError(f"{owner}: expects a {self.nd + 1}-D (unbatched) or {self.nd + 2}-D (batched) input, "
                             f"got shape {list(x.shape)}")
        return NF.pad(x, list(self.padding), self.mode)

    def extra_repr(self) -> str:
        return f"padding={self.padding}" + (f", value={self.value}" if self.mode == "constant" else "")


def _torch_pad(kind: str, mode: str, nd: int) -> type:
    """torch's `{kind}Pad{nd}d(padding)` (constant: `(padding, value)`)."""
    body: dict[str, Any] = {"nd": nd, "mode": mode, "__module__": __name__}
    if kind == "Constant":
        body["__doc__"] = f"torch.nn.ConstantPad{nd}d(padding, value): `value` around the last {nd} axes."

        def __init__(self: Any, padding: Any, value: float) -> None:
            _TorchPad.__init__(self, padding, value)
    elif kind == "Zero":
        body["__doc__"] = f"torch.nn.ZeroPad{nd}d(padding): zeros around the last {nd} axes."

        def __init__(self: Any, padding: Any) -> None:
            _TorchPad.__init__(self, padding, 0.0)
    else:
        body["__doc__"] = f"torch.nn.{kind}Pad{nd}d(padding): {mode} padding of [N, C, ...] or [C, ...] input."

        def __init__(self: Any, padding: Any) -> None:
            _TorchPad.__init__(self, padding)
    body["__init__"] = __init__
    return type(f"{kind}Pad{nd}d", (_TorchPad,), body)


ConstantPad1d, ConstantPad2d, ConstantPad3d = (_torch_pad("Constant", "constant", nd) for nd in (1, 2, 3))
ZeroPad1d, ZeroPad2d, ZeroPad3d = (_torch_pad("Zero", "constant", nd) for nd in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_torch_pad("Reflection", "reflect", nd) for nd in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_torch_pad("Replication", "replicate", nd)
                                                        for nd in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_torch_pad("Circular", "circular", nd) for nd in (1, 2, 3))
