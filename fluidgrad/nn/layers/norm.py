"""Normalisation layers."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...eager.tensor import Tensor
from ...initializer import Constant
from ...ops.comm import get_world
from ...tensor.dtype_info import finfo
from .. import functional as NF
from ..layer import Layer
from .torch_keywords import affine_attrs, either

__all__ = ['BatchNorm', 'BatchNorm1D', 'BatchNorm2D', 'BatchNorm3D', 'SyncBatchNorm', 'LayerNorm', 'GroupNorm', 'InstanceNorm1D',
           'InstanceNorm2D', 'InstanceNorm3D', 'RMSNorm', 'LocalResponseNorm', 'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d',
           'InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d']


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
    the batch statistics in both phases. weight_attr / bias_attr False: no scale / shift.

    PyTorch's keywords: eps= (epsilon), affine=False (no scale, no shift), track_running_stats=False
    (use_global_stats=False: batch statistics in both phases). `momentum` here is Paddle's, the
    weight of the old running value; torch's momentum (the batch's weight, 1 - Paddle's) is that
    of the torch-cased BatchNorm1d / 2d / 3d, and a momentum given beside torch's keywords is
    refused as ambiguous."""

    layouts: tuple[str, ...] = ("NCHW", "NHWC")

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-5, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str | None = None, use_global_stats: bool | None = None,
                 name: str | None = None, *, eps: float | None = None, affine: bool | None = None,
                 track_running_stats: bool | None = None) -> None:
        super().__init__()
        owner = type(self).__name__
        torch_keywords = [k for k, v in (("eps", eps), ("affine", affine), ("track_running_stats",
                                                                            track_running_stats)) if v is not None]
        if torch_keywords and momentum != 0.9 and not isinstance(self, _TorchBatchNorm):
            raise TypeError(f"{owner}: momentum={momentum} is Paddle's (running = momentum * running + (1 - momentum)"
                            f" * batch) but {', '.join(torch_keywords)} are PyTorch's keywords; for torch's momentum "
                            f"use {owner[:-1]}d, or spell them epsilon= / weight_attr= / use_global_stats=")
        epsilon = either(owner, "epsilon", epsilon, 1e-5, "eps", eps)
        weight_attr, bias_attr = affine_attrs(owner, weight_attr, bias_attr, affine)
        if track_running_stats is False:
            use_global_stats = either(owner, "use_global_stats", use_global_stats, None, "track_running_stats",
                                      False)
        data_format = _layout(self, data_format)
        self.num_features, self.momentum, self.epsilon = int(num_features), float(momentum), float(epsilon)
        self.data_format, self.use_global_stats = data_format, use_global_stats
        self.weight = None if weight_attr is False else self.create_parameter(
            [num_features], weight_attr, default_initializer=Constant(1.0))
        self.bias = None if bias_attr is False else self.create_parameter(
            [num_features], bias_attr, is_bias=True, default_initializer=Constant(0.0))
        self.register_buffer("_mean", Tensor(np.zeros([num_features], dtype=self._dtype)))
        self.register_buffer("_variance", Tensor(np.ones([num_features], dtype=self._dtype)))

    @property
    def _running_momentum(self) -> float:
        """Paddle's momentum, the weight of the old running statistics (what the op takes)."""
        return self.momentum

    # PyTorch's names of the running statistics and of epsilon: the same Tensors, the same value
    @property
    def running_mean(self) -> Tensor:
        return self._mean

    @property
    def running_var(self) -> Tensor:
        return self._variance

    @property
    def eps(self) -> float:
        return self.epsilon

    @eps.setter
    def eps(self, value: float) -> None:
        self.epsilon = float(value)

    def reset_running_stats(self) -> None:
        """Running mean 0 and variance 1, as when built (torch's method; SWA's update_bn calls it)."""
        self._mean.set_value(np.zeros(self._mean.shape, dtype=self._mean.numpy().dtype))
        self._variance.set_value(np.ones(self._variance.shape, dtype=self._variance.numpy().dtype))

    def reset_parameters(self) -> None:
        """The running statistics reset, weight 1 and bias 0 (torch's method)."""
        self.reset_running_stats()
        for param, value in ((self.weight, 1.0), (self.bias, 0.0)):
            if param is not None:
                param.set_value(np.full(param.shape, value, dtype=param.numpy().dtype))

    def forward(self, x: Any) -> Any:
        return NF.batch_norm(x, self._mean, self._variance, self.weight, self.bias, training=self.training,
                             momentum=self._running_momentum, epsilon=self.epsilon, data_format=self.data_format,
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
                                  momentum=self._running_momentum, epsilon=self.epsilon, data_format=self.data_format)

    @classmethod
    def convert_sync_batchnorm(cls, layer: Layer) -> Layer:
        """`layer` with every BatchNorm* in it (itself included) replaced by a SyncBatchNorm holding the
        same parameters and running statistics (Paddle's and PyTorch's helper)."""
        if isinstance(layer, _BatchNormNd) and not isinstance(layer, cls):
            sync = cls(layer.num_features, layer._running_momentum, layer.epsilon, False, False, layer.data_format,
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


class _TorchBatchNorm(_BatchNormNd):
    """PyTorch's signature and momentum: the weight of the batch in the running statistics,
    running = (1 - momentum) * running + momentum * batch (Paddle's momentum is 1 - that).
    `momentum` reads back as torch's. momentum=None (torch's cumulative average) is refused."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:
        if momentum is None:
            raise ValueError(f"{type(self).__name__}: momentum=None (a cumulative average of the batch statistics) "
                             f"is not supported; give a number in [0, 1]")
        super().__init__(num_features, 1.0 - float(momentum), eps=eps, affine=affine,
                         track_running_stats=track_running_stats)
        self.momentum = float(momentum)
        if device is not None or dtype is not None:
            self.to(device, dtype)

    @property
    def _running_momentum(self) -> float:
        return 1.0 - self.momentum


class BatchNorm1d(_TorchBatchNorm, BatchNorm1D):
    """torch.nn.BatchNorm1d: [N, C] or [N, C, L] input, torch's momentum (see _TorchBatchNorm)."""


class BatchNorm2d(_TorchBatchNorm, BatchNorm2D):
    """torch.nn.BatchNorm2d: [N, C, H, W] input, torch's momentum (see _TorchBatchNorm)."""


class BatchNorm3d(_TorchBatchNorm, BatchNorm3D):
    """torch.nn.BatchNorm3d: [N, C, D, H, W] input, torch's momentum (see _TorchBatchNorm)."""


class LayerNorm(Layer):
    """Normalise over the trailing `normalized_shape` axes, then scale and shift. PyTorch's
    keywords: eps= (epsilon), elementwise_affine=False (neither), bias=False (no shift)."""

    def __init__(self, normalized_shape: int | Sequence[int], epsilon: float = 1e-5, weight_attr: Any = None,
                 bias_attr: Any = None, name: str | None = None, *, eps: float | None = None,
                 elementwise_affine: bool | None = None, bias: bool | None = None) -> None:
        super().__init__()
        epsilon = either("LayerNorm", "epsilon", epsilon, 1e-5, "eps", eps)
        weight_attr, bias_attr = affine_attrs("LayerNorm", weight_attr, bias_attr, elementwise_affine,
                                              "elementwise_affine")
        if bias is False and bias_attr is not False:
            bias_attr = either("LayerNorm", "bias_attr", bias_attr, None, "bias", False)
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
    """Normalise groups of channels per sample, then scale (init 1) and shift (init 0) per channel.
    PyTorch's keywords: eps= (epsilon), affine=False (no scale, no shift)."""

    def __init__(self, num_groups: int, num_channels: int, epsilon: float = 1e-5, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW", name: str | None = None, *,
                 eps: float | None = None, affine: bool | None = None) -> None:
        super().__init__()
        epsilon = either("GroupNorm", "epsilon", epsilon, 1e-5, "eps", eps)
        weight_attr, bias_attr = affine_attrs("GroupNorm", weight_attr, bias_attr, affine)
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
    """Normalise each channel of each sample over its positions, then scale and shift per channel.
    PyTorch's keywords: eps= (epsilon), affine= (weight_attr / bias_attr False when False);
    track_running_stats=True (normalising with running statistics in eval) is refused."""

    layouts: tuple[str, ...] = ("NCHW", "NHWC")

    def __init__(self, num_features: int, epsilon: float = 1e-5, momentum: float = 0.9, weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str | None = None, name: str | None = None, *,
                 eps: float | None = None, affine: bool | None = None, track_running_stats: bool | None = None) -> None:
        super().__init__()
        owner = type(self).__name__
        if track_running_stats:
            raise ValueError(f"{owner}: track_running_stats=True (running statistics in eval) is not supported; "
                             f"instance normalisation here always uses each sample's own statistics")
        epsilon = either(owner, "epsilon", epsilon, 1e-5, "eps", eps)
        weight_attr, bias_attr = affine_attrs(owner, weight_attr, bias_attr, affine)
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


class _TorchInstanceNorm(_InstanceNormNd):
    """PyTorch's signature, whose default is no scale and no shift (affine=False)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps=eps, affine=affine, track_running_stats=track_running_stats)
        self.momentum = momentum
        if device is not None or dtype is not None:
            self.to(device, dtype)


class InstanceNorm1d(_TorchInstanceNorm, InstanceNorm1D):
    """torch.nn.InstanceNorm1d: [N, C, L] input, no affine part unless affine=True."""


class InstanceNorm2d(_TorchInstanceNorm, InstanceNorm2D):
    """torch.nn.InstanceNorm2d: [N, C, H, W] input, no affine part unless affine=True."""


class InstanceNorm3d(_TorchInstanceNorm, InstanceNorm3D):
    """torch.nn.InstanceNorm3d: [N, C, D, H, W] input, no affine part unless affine=True."""


class RMSNorm(Layer):
    """x / rms(x over the trailing normalized_shape axes) * weight (init 1). PyTorch's keywords:
    eps= (epsilon), elementwise_affine=False (no weight). Given neither epsilon= nor eps=, epsilon
    is torch's default (eps=None): the machine epsilon of the input's dtype, 1.2e-7 in float32."""

    def __init__(self, normalized_shape: int | Sequence[int], epsilon: float | None = None, weight_attr: Any = None,
                 name: str | None = None, *, eps: float | None = None, elementwise_affine: bool | None = None) -> None:
        super().__init__()
        if epsilon is not None and eps is not None:
            raise TypeError("RMSNorm: give epsilon= or eps=, not both")
        epsilon = eps if epsilon is None else epsilon
        weight_attr, _ = affine_attrs("RMSNorm", weight_attr, None, elementwise_affine, "elementwise_affine")
        self.normalized_shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self.epsilon = None if epsilon is None else float(epsilon)
        self.weight = None if weight_attr is False else self.create_parameter(
            self.normalized_shape, weight_attr, default_initializer=Constant(1.0))

    def forward(self, x: Any) -> Any:
        epsilon = float(finfo(x.dtype).eps) if self.epsilon is None else self.epsilon
        return NF.rms_norm(x, self.normalized_shape, self.weight, epsilon)


class LocalResponseNorm(Layer):
    """Divides each channel by a power of the summed squares of its `size` neighbours (AlexNet's LRN)."""
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0,
                 data_format: str = "NCHW", name: str | None = None) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k, self.data_format = int(size), alpha, beta, k, data_format

    def forward(self, x: Any) -> Any:
        return NF.local_response_norm(x, self.size, self.alpha, self.beta, self.k, self.data_format)
