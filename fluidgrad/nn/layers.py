"""Eager layers (Paddle 2 names and layouts). Each owns its parameters and calls
`fluidgrad.nn.functional`, so it runs the same registered ops as the static builders."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Sequence

import numpy as np

from .. import functions as F
from ..eager.tensor import Tensor
from ..initializer import Constant, KaimingNormal, Normal, XavierUniform
from . import functional as NF
from .layer import Layer

__all__ = ["AvgPool2D", "BatchNorm2D", "Conv2D", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten",
           "Identity", "LayerList", "LayerNorm", "LeakyReLU", "Linear", "MSELoss", "MaxPool2D", "ReLU",
           "Sequential", "Sigmoid", "Softmax", "Tanh"]


def _pair(value: Any) -> list[int]:
    return [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]


class Linear(Layer):
    """y = x @ weight + bias; weight is [in_features, out_features] (Paddle's layout)."""

    def __init__(self, in_features: int, out_features: int, weight_attr: Any = None, bias_attr: Any = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = self.create_parameter([self.in_features, self.out_features], weight_attr,
                                            default_initializer=XavierUniform())
        self.bias = None if bias_attr is False else self.create_parameter(
            [self.out_features], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any) -> Any:
        return NF.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class Embedding(Layer):
    """Rows of a [num_embeddings, embedding_dim] table picked by integer ids."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 sparse: bool = False, weight_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.weight = self.create_parameter([self.num_embeddings, self.embedding_dim], weight_attr,
                                            default_initializer=Normal(0.0, 1.0 / max(embedding_dim, 1) ** 0.5))
        self.padding_idx = padding_idx
        if padding_idx is not None:
            self.weight.data[padding_idx] = 0.0

    def forward(self, x: Any) -> Any:
        if self.padding_idx is None:
            return NF.embedding(x, self.weight)
        # the padding row reads as zeros and receives no gradient: mask it out of the output
        ids = np.asarray(x.data if isinstance(x, Tensor) else x)
        out = NF.embedding(x, self.weight)
        keep = Tensor((ids != self.padding_idx)[..., None].astype(self.weight.data.dtype))
        return out * keep

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Conv2D(Layer):
    """NCHW convolution; weight is [out_channels, in_channels / groups, KH, KW]."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, padding_mode: str = "zeros", weight_attr: Any = None,
                 bias_attr: Any = None, data_format: str = "NCHW") -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"Conv2D: only padding_mode='zeros' is supported, got {padding_mode!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: in_channels {in_channels} and out_channels {out_channels} must be "
                             f"divisible by groups {groups}")
        self.kernel_size = _pair(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, int(groups)
        self.data_format = data_format
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.weight = self.create_parameter([out_channels, in_channels // groups] + self.kernel_size, weight_attr,
                                            default_initializer=KaimingNormal())
        self.bias = None if bias_attr is False else self.create_parameter(
            [out_channels], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any) -> Any:
        return NF.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                         self.data_format)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class MaxPool2D(Layer):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, data_format: str = "NCHW") -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.data_format = kernel_size, stride, padding, data_format

    def forward(self, x: Any) -> Any:
        return NF.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.data_format)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2D(Layer):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, exclusive: bool = True,
                 data_format: str = "NCHW") -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.exclusive, self.data_format = exclusive, data_format

    def forward(self, x: Any) -> Any:
        return NF.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.exclusive, self.data_format)


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


class Dropout(Layer):
    """Zero elements with probability p while training (kept ones scaled by 1/(1-p)); identity in eval."""

    def __init__(self, p: float = 0.5, axis: Any = None, mode: str = "upscale_in_train", name: str | None = None) -> None:
        super().__init__()
        if axis is not None:
            raise ValueError("Dropout: axis is not supported; leave it None")
        self.p, self.mode = float(p), mode

    def forward(self, x: Any) -> Any:
        return NF.dropout(x, self.p, training=self.training, mode=self.mode)

    def extra_repr(self) -> str:
        return f"p={self.p}"


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


class Identity(Layer):
    def forward(self, x: Any) -> Any:
        return x


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


class Flatten(Layer):
    """Merge axes start_axis..stop_axis into one (default: all but the batch axis)."""

    def __init__(self, start_axis: int = 1, stop_axis: int = -1) -> None:
        super().__init__()
        self.start_axis, self.stop_axis = int(start_axis), int(stop_axis)

    def forward(self, x: Any) -> Any:
        ndim = len(x.shape)
        start, stop = self.start_axis % ndim, self.stop_axis % ndim
        shape = list(x.shape)
        middle = shape[start:stop + 1]
        merged = int(np.prod(middle)) if all(d >= 0 for d in middle) else -1
        return F.reshape(x, [0] * start + [merged] + shape[stop + 1:])


class CrossEntropyLoss(Layer):
    def __init__(self, reduction: str = "mean", soft_label: bool = False, axis: int = -1) -> None:
        super().__init__()
        self.reduction, self.soft_label, self.axis = reduction, soft_label, axis

    def forward(self, input: Any, label: Any) -> Any:
        return NF.cross_entropy(input, label, reduction=self.reduction, soft_label=self.soft_label, axis=self.axis)


class MSELoss(Layer):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Any, label: Any) -> Any:
        return NF.mse_loss(input, label, self.reduction)


class Sequential(Layer):
    """Layers called in order: Sequential(l1, l2), Sequential(("a", l1), ...) or an OrderedDict."""

    def __init__(self, *layers: Any) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, OrderedDict)):
            items: Iterable[tuple[str, Layer]] = layers[0].items()
        elif layers and all(isinstance(item, (tuple, list)) and len(item) == 2 for item in layers):
            items = layers
        else:
            items = ((str(i), layer) for i, layer in enumerate(layers))
        for name, layer in items:
            self.add_sublayer(str(name), layer)

    def forward(self, x: Any) -> Any:
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    def __getitem__(self, index: int | slice | str) -> Any:
        if isinstance(index, str):
            return self._sub_layers[index]
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        return layers[index]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


class LayerList(Layer):
    """A list of sublayers whose parameters the parent sees."""

    def __init__(self, sublayers: Iterable[Layer] | None = None) -> None:
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def append(self, layer: Layer) -> "LayerList":
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def __getitem__(self, index: int) -> Layer:
        return list(self._sub_layers.values())[index]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())
