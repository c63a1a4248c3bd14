"""Activation layers."""
from __future__ import annotations

from typing import Any

from ... import functions as F
from .. import functional as NF
from ..layer import Layer

__all__ = ['ReLU', 'Sigmoid', 'Tanh', 'Softmax', 'LeakyReLU']


class _Activation(Layer):
    fn: Any = None

    def forward(self, x: Any) -> Any:
        return type(self).fn(x)


class ReLU(_Activation):
    fn = staticmethod(F.relu)


class Sigmoid(_Activation):
    fn = staticmethod(F.sigmoid)


class Tanh(_Activation):
    fn = staticmethod(F.tanh)


class Softmax(Layer):
    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x: Any) -> Any:
        return NF.softmax(x, self.axis)


class LeakyReLU(Layer):
    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x: Any) -> Any:
        return NF.leaky_relu(x, self.negative_slope)
