"""Normalisation layers."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...eager.tensor import Tensor
from ...initializer import Constant
from .. import functional as NF
from ..layer import Layer

__all__ = ['BatchNorm2D', 'LayerNorm']


class BatchNorm2D(Layer):
    """Normalise each channel of NCHW input: batch statistics while training (updating the
    running ones: running = momentum * running + (1 - momentum) * batch), running ones in eval."""

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-5, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW", use_global_stats: bool | None = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.num_features, self.momentum, self.epsilon = int(num_features), float(momentum), float(epsilon)
        self.data_format, self.use_global_stats = data_format, use_global_stats
        self.weight = self.create_parameter([num_features], weight_attr, default_initializer=Constant(1.0))
        self.bias = self.create_parameter([num_features], bias_attr, is_bias=True, default_initializer=Constant(0.0))
        self.register_buffer("_mean", Tensor(np.zeros([num_features], dtype=self._dtype)))
        self.register_buffer("_variance", Tensor(np.ones([num_features], dtype=self._dtype)))

    def forward(self, x: Any) -> Any:
        return NF.batch_norm(x, self._mean, self._variance, self.weight, self.bias, training=self.training,
                             momentum=self.momentum, epsilon=self.epsilon, data_format=self.data_format,
                             use_global_stats=self.use_global_stats)

    def extra_repr(self) -> str:
        return f"num_features={self.num_features}, momentum={self.momentum}, epsilon={self.epsilon}"


class LayerNorm(Layer):
    """Normalise over the trailing `normalized_shape` axes, then scale and shift."""

    def __init__(self, normalized_shape: int | Sequence[int], epsilon: float = 1e-5, weight_attr: Any = None,
                 bias_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self.normalized_shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self.epsilon = float(epsilon)
        size = int(np.prod(self.normalized_shape))
        self.weight = None if weight_attr is False else self.create_parameter(
            [size], weight_attr, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            [size], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any) -> Any:
        return NF.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.epsilon)
