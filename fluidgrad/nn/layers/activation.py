"""Activation layers: each calls its function in `fluidgrad.nn.functional`."""
from __future__ import annotations

from typing import Any

from ... import functions as F
from ...initializer import Constant
from .. import functional as NF
from ..layer import Layer
from .torch_keywords import either

__all__ = [
    'CELU',
    'ELU',
    'GELU',
    'GLU',
    'Hardshrink',
    'SELU',
    'Hardsigmoid',
    'Hardswish',
    'Hardtanh',
    'LeakyReLU',
    'LogSigmoid',
    'LogSoftmax',
    'Mish',
    'PReLU',
    'ReLU',
    'ReLU6',
    'RReLU',
    'SiLU',
    'Sigmoid',
    'Softmax',
    'Softmax2D',
    'Softmin',
    'Softplus',
    'Softshrink',
    'Softsign',
    'Swish',
    'Tanh',
    'Tanhshrink',
    'Threshold',
    'ThresholdedReLU',
]


class _Activation(Layer):
    """A layer without parameters: forward(x) = fn(x, **its keyword arguments).

    PyTorch's inplace= (ReLU(True), ReLU(inplace=True)) is accepted and changes nothing: the result is a new Tensor either way
    (the input stays as it was, which the tape needs for the gradient), and that result is what
    code reading the layer's output sees."""

    fn: Any = None

    def __init__(self, inplace: bool = False, name: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        self._kwargs = kwargs

    def forward(self, x: Any) -> Any:
        return type(self).fn(x, **self._kwargs)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._kwargs.items())


class ReLU(_Activation):
    """The Layer form of `nn.functional.relu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(F.relu)


class Sigmoid(_Activation):
    """The Layer form of `nn.functional.sigmoid`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(F.sigmoid)


class Tanh(_Activation):
    """The Layer form of `nn.functional.tanh`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(F.tanh)


def _axis(layer: str, axis: int, dim: int | None) -> int:
    """Paddle's axis= or PyTorch's dim= (the default of both here: the last axis)."""
    return int(either(layer, "axis", axis, -1, "dim", dim))


class Softmax(_Activation):
    """The Layer form of `nn.functional.softmax`, along `axis` (or PyTorch's dim=)."""
    fn = staticmethod(NF.softmax)

    def __init__(self, axis: int = -1, name: str | None = None, *, dim: int | None = None) -> None:
        super().__init__(axis=_axis("Softmax", axis, dim))


class Softmin(_Activation):
    """softmax(-x) along `dim` (PyTorch's nn.Softmin; axis= as Paddle spells it)."""

    def __init__(self, dim: int | None = None, *, axis: int | None = None) -> None:
        super().__init__(axis=_axis("Softmin", -1 if axis is None else axis, dim))

    @staticmethod
    def fn(x: Any, axis: int) -> Any:
        return NF.softmax(F.scale(x, -1.0), axis=axis)


class Softmax2D(Layer):
    """Softmax over the channels at every position of [N, C, H, W] or [C, H, W] input (axis -3)."""

    def forward(self, x: Any) -> Any:
        if len(x.shape) not in (3, 4):
            raise ValueError(f"Softmax2D: expects a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape "
                             f"{list(x.shape)}")
        return NF.softmax(x, axis=-3)


class LogSoftmax(_Activation):
    """The Layer form of `nn.functional.log_softmax`, along `axis` (or PyTorch's dim=)."""
    fn = staticmethod(NF.log_softmax)

    def __init__(self, axis: int = -1, name: str | None = None, *, dim: int | None = None) -> None:
        super().__init__(axis=_axis("LogSoftmax", axis, dim))


class LeakyReLU(_Activation):
    """The Layer form of `nn.functional.leaky_relu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.leaky_relu)

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False, name: str | None = None) -> None:
        super().__init__(negative_slope=float(negative_slope))


class GELU(_Activation):
    """The Layer form of `nn.functional.gelu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.gelu)

    def __init__(self, approximate: bool | str = False) -> None:
        super().__init__(approximate=NF.activation.gelu_uses_tanh(approximate))


class SiLU(_Activation):
    """The Layer form of `nn.functional.silu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.silu)


class Swish(_Activation):
    """The Layer form of `nn.functional.swish`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.swish)


class Mish(_Activation):
    """The Layer form of `nn.functional.mish`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.mish)


class ELU(_Activation):
    """The Layer form of `nn.functional.elu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False, name: str | None = None) -> None:
        super().__init__(alpha=float(alpha))


class SELU(_Activation):
    """The Layer form of `nn.functional.selu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.selu)

    def __init__(self, scale: float = 1.0507009873554804934193349852946,
                 alpha: float = 1.6732632423543772848170429916717, name: str | None = None, *,
                 inplace: bool = False) -> None:
        super().__init__(scale=float(scale), alpha=float(alpha))


class CELU(_Activation):
    """The Layer form of `nn.functional.celu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.celu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False, name: str | None = None) -> None:
        super().__init__(alpha=float(alpha))


class Softplus(_Activation):
    """The Layer form of `nn.functional.softplus`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.softplus)

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__(beta=float(beta), threshold=float(threshold))


class Softsign(_Activation):
    """The Layer form of `nn.functional.softsign`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.softsign)


class Hardsigmoid(_Activation):
    """The Layer form of `nn.functional.hardsigmoid`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.hardsigmoid)

    def __init__(self, slope: float = 0.1666667, offset: float = 0.5, name: str | None = None, *,
                 inplace: bool = False) -> None:
        super().__init__(slope=float(slope), offset=float(offset))


class Hardswish(_Activation):
    """The Layer form of `nn.functional.hardswish`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.hardswish)


class Hardtanh(_Activation):
    """The Layer form of `nn.functional.hardtanh`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.hardtanh)

    def __init__(self, min: float = -1.0, max: float = 1.0, name: str | None = None, *,
                 min_val: float | None = None, max_val: float | None = None, inplace: bool = False) -> None:
        super().__init__(min=float(either("Hardtanh", "min", min, -1.0, "min_val", min_val)),
                         max=float(either("Hardtanh", "max", max, 1.0, "max_val", max_val)))


class ReLU6(_Activation):
    """The Layer form of `nn.functional.relu6`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.relu6)


class Hardshrink(_Activation):
    """The Layer form of `nn.functional.hardshrink`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.hardshrink)

    def __init__(self, threshold: float = 0.5, name: str | None = None, *, lambd: float | None = None) -> None:
        super().__init__(threshold=float(either(type(self).__name__, "threshold", threshold, 0.5, "lambd", lambd)))


class Softshrink(_Activation):
    """The Layer form of `nn.functional.softshrink`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.softshrink)

    def __init__(self, threshold: float = 0.5, name: str | None = None, *, lambd: float | None = None) -> None:
        super().__init__(threshold=float(either(type(self).__name__, "threshold", threshold, 0.5, "lambd", lambd)))


class ThresholdedReLU(_Activation):
    """The Layer form of `nn.functional.thresholded_relu`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.thresholded_relu)

    def __init__(self, threshold: float = 1.0, value: float = 0.0, name: str | None = None) -> None:
        super().__init__(threshold=float(threshold), value=float(value))


class Threshold(_Activation):
    """torch.nn.Threshold(threshold, value): x where x > threshold, else `value`."""
    fn = staticmethod(NF.threshold)

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__(threshold=float(threshold), value=float(value))


class RReLU(Layer):
    """Randomised leaky ReLU (torch's and Paddle's RReLU): while training the slope of each negative
    element is drawn from U(lower, upper); in eval it is the mean slope (lower + upper) / 2."""

    def __init__(self, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, inplace: bool = False,
                 name: str | None = None) -> None:
        super().__init__()
        if not 0.0 <= lower <= upper:
            raise ValueError(f"RReLU: needs 0 <= lower <= upper, got lower={lower}, upper={upper}")
        self.lower, self.upper = float(lower), float(upper)

    def forward(self, x: Any) -> Any:
        return NF.rrelu(x, self.lower, self.upper, training=self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"


class Tanhshrink(_Activation):
    """The Layer form of `nn.functional.tanhshrink`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.tanhshrink)


class LogSigmoid(_Activation):
    """The Layer form of `nn.functional.log_sigmoid`: forward(x) applies it with the constructor's arguments."""
    fn = staticmethod(NF.log_sigmoid)


class GLU(_Activation):
    """The Layer form of `nn.functional.glu`, halving along `axis` (or PyTorch's dim=)."""
    fn = staticmethod(NF.glu)

    def __init__(self, axis: int = -1, name: str | None = None, *, dim: int | None = None) -> None:
        super().__init__(axis=_axis("GLU", axis, dim))


class PReLU(Layer):
    """prelu with its own slope: one shared (num_parameters=1) or one per channel."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, weight_attr: Any = None,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.num_parameters, self.data_format = int(num_parameters), data_format
        self.weight = self.create_parameter([self.num_parameters], weight_attr,
                                            default_initializer=Constant(float(init)))

    def forward(self, x: Any) -> Any:
        return NF.prelu(x, self.weight, self.data_format)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}, data_format={self.data_format}"
