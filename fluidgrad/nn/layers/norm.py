"""Normalisation layers."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...eager.tensor import Tensor
from ...initializer import Constant
from ...ops.comm import get_world
from .. import functional as NF
from ..layer import Layer

__all__ = ['BatchNorm', 'BatchNorm1D', 'BatchNorm2D', 'BatchNorm3D', 'SyncBatchNorm', 'LayerNorm', 'GroupNorm', 'InstanceNorm1D',
           'InstanceNorm2D', 'InstanceNorm3D', 'RMSNorm', 'LocalResponseNorm']


def _layout(layer: Layer, data_format: str | None) -> str:
    """The layer's data_format (its first layout by default), checked against its layouts."""
    data_format = data_format or layer.layouts[0]
    if data_format not in layer.layouts:
        raise ValueError(f"{type(layer).__name__}: data_format must be one of {list(layer.layouts)}, "
                         f"got {data_format!r}")
    return data_format


class _BatchNormNd(Layer):
    """Normalise each channel (axis 1, or the last axis for a channel-last data_format): batch
    statistics while training (updating the running ones: running = momentum * running +
    (1 - momentum) * batch), running ones in eval; use_global_stats True / False picks the running /
    the batch statistics in both phases. weight_attr / bias_attr False: no scale / shift."""

    layouts: tuple[str, ...] = ("NCHW", "NHWC")

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-5, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str | None = None, use_global_stats: bool | None = None,
                 name: str | None = None) -> None:
        super().__init__()
        data_format = _layout(self, data_format)
        self.num_features, self.momentum, self.epsilon = int(num_features), float(momentum), float(epsilon)
        self.data_format, self.use_global_stats = data_format, use_global_stats
        self.weight = None if weight_attr is False else self.create_parameter(
            [num_features], weight_attr, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            [num_features], bias_attr, is_bias=True, default_initializer=Constant(0.0))
        self.register_buffer("_mean", Tensor(np.zeros([num_features], dtype=self._dtype)))
        self.register_buffer("_variance", Tensor(np.ones([num_features], dtype=self._dtype)))

    def forward(self, x: Any) -> Any:
        return NF.batch_norm(x, self._mean, self._variance, self.weight, self.bias, training=self.training,
                             momentum=self.momentum, epsilon=self.epsilon, data_format=self.data_format,
                             use_global_stats=self.use_global_stats)

    def extra_repr(self) -> str:
        return f"num_features={self.num_features}, momentum={self.momentum}, epsilon={self.epsilon}"


class BatchNorm1D(_BatchNormNd):
    """[N, C], [N, C, L] or (data_format "NLC") [N, L, C] input."""
    layouts = ("NCL", "NC", "NLC")


class BatchNorm2D(_BatchNormNd):
    """Batch normalisation of NCHW (or NHWC) input over N, H, W per channel, with running statistics."""
    layouts = ("NCHW", "NHWC")


class BatchNorm3D(_BatchNormNd):
    """Batch normalisation of NCDHW (or NDHWC) input over N, D, H, W per channel, with running statistics."""
    layouts = ("NCDHW", "NDHWC")


class BatchNorm(_BatchNormNd):
    """Any rank, channels on axis 1 or last (Fluid's dygraph BatchNorm)."""
    layouts = ("NCHW", "NCL", "NC", "NCDHW", "NHWC", "NLC", "NDHWC")


class SyncBatchNorm(_BatchNormNd):
    """Batch normalisation with the statistics of the global batch when data parallel: while
    training under a launcher, every rank's per-channel sums are all-reduced (forward and backward),
    so each rank normalises with the mean and variance of all ranks' samples, as PyTorch's
    SyncBatchNorm. In a world of one (and in eval) it is BatchNorm. Any rank, channels on axis 1
    (NCHW...) or last (NHWC...)."""
    layouts = BatchNorm.layouts

    def forward(self, x: Any) -> Any:
        if not self.training or self.use_global_stats is not None or get_world().size == 1:
            return super().forward(x)
        return NF.sync_batch_norm(x, self._mean, self._variance, self.weight, self.bias, training=True,
                                  momentum=self.momentum, epsilon=self.epsilon, data_format=self.data_format)

    @classmethod
    def convert_sync_batchnorm(cls, layer: Layer) -> Layer:
        """`layer` with every BatchNorm* in it (itself included) replaced by a SyncBatchNorm holding the
        same parameters and running statistics (Paddle's and PyTorch's helper)."""
        if isinstance(layer, _BatchNormNd) and not isinstance(layer, cls):
            sync = cls(layer.num_features, layer.momentum, layer.epsilon, False, False, layer.data_format,
                       layer.use_global_stats)
            for name in ("weight", "bias"):
                sync.add_parameter(name, getattr(layer, name))
            sync.register_buffer("_mean", layer._mean)
            sync.register_buffer("_variance", layer._variance)
            sync.train(layer.training)
            return sync
        for name, sub in list(layer.named_children()):
            setattr(layer, name, cls.convert_sync_batchnorm(sub))
        return layer


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


class GroupNorm(Layer):
    """Normalise groups of channels per sample, then scale (init 1) and shift (init 0) per channel."""

    def __init__(self, num_groups: int, num_channels: int, epsilon: float = 1e-5, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels {num_channels} must divide by num_groups {num_groups}")
        self.num_groups, self.num_channels, self.epsilon = int(num_groups), int(num_channels), float(epsilon)
        self.data_format = data_format
        self.weight = None if weight_attr is False else self.create_parameter(
            [num_channels], weight_attr, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            [num_channels], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any) -> Any:
        return NF.group_norm(x, self.num_groups, self.epsilon, self.weight, self.bias, self.data_format)

    def extra_repr(self) -> str:
        return f"num_groups={self.num_groups}, num_channels={self.num_channels}, epsilon={self.epsilon}"


class _InstanceNormNd(Layer):
    """Normalise each channel of each sample over its positions, then scale and shift per channel."""

    layouts: tuple[str, ...] = ("NCHW", "NHWC")

    def __init__(self, num_features: int, epsilon: float = 1e-5, momentum: float = 0.9, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__()
        self.num_features, self.epsilon = int(num_features), float(epsilon)
        self.data_format = _layout(self, data_format)
        self.weight = None if weight_attr is False else self.create_parameter(
            [num_features], weight_attr, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            [num_features], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any) -> Any:
        return NF.instance_norm(x, weight=self.weight, bias=self.bias, eps=self.epsilon, data_format=self.data_format)

    def extra_repr(self) -> str:
        return f"num_features={self.num_features}, epsilon={self.epsilon}, data_format={self.data_format}"


class InstanceNorm1D(_InstanceNormNd):
    """Normalises each sample and channel of NCL (or NLC) input over L."""
    layouts = ("NCL", "NLC")


class InstanceNorm2D(_InstanceNormNd):
    """Normalises each sample and channel of NCHW (or NHWC) input over H, W."""
    layouts = ("NCHW", "NHWC")


class InstanceNorm3D(_InstanceNormNd):
    """Normalises each sample and channel of NCDHW (or NDHWC) input over D, H, W."""
    layouts = ("NCDHW", "NDHWC")


class RMSNorm(Layer):
    """x / rms(x over the trailing normalized_shape axes) * weight (init 1)."""

    def __init__(self, normalized_shape: int | Sequence[int], epsilon: float = 1e-6, weight_attr: Any = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.normalized_shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self.epsilon = float(epsilon)
        self.weight = None if weight_attr is False else self.create_parameter(
            self.normalized_shape, weight_attr, default_initializer=Constant(1.0))

    def forward(self, x: Any) -> Any:
        return NF.rms_norm(x, self.normalized_shape, self.weight, self.epsilon)


class LocalResponseNorm(Layer):
    """Divides each channel by a power of the summed squares of its `size` neighbours (AlexNet's LRN)."""
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k, self.data_format = int(size), alpha, beta, k, data_format

    def forward(self, x: Any) -> Any:
        return NF.local_response_norm(x, self.size, self.alpha, self.beta, self.k, self.data_format)
