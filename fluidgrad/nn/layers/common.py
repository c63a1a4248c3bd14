"""Dense (Linear, Bilinear), embedding, dropout and shape layers."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ... import functions as F
from ...framework import ParamAttr
from ..parameter import array_of, bias_attr_of, check_device
from ...initializer import Constant, Normal, Uniform, XavierUniform
from .. import functional as NF
from ..layer import Layer
from .torch_keywords import either

__all__ = ['Linear', 'Bilinear', 'Embedding', 'Dropout', 'AlphaDropout', 'Dropout2D', 'Dropout3D', 'Identity', 'Flatten',
           'Unflatten']


class Linear(Layer):
    """y = x @ weight + bias; weight is [in_features, out_features] (Paddle's layout).

    PyTorch's `bias=False` (keyword, or the third argument, which Paddle calls weight_attr and
    where a bool means nothing else) means bias_attr=False; `dtype=` the parameters' dtype."""

    def __init__(self, in_features: int, out_features: int, weight_attr: Any = None, bias_attr: Any = None,
                 name: str | None = None, *, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(dtype=dtype)
        check_device(type(self).__name__, device)
        if isinstance(weight_attr, bool):   # Linear(3, 2, False): PyTorch's positional bias
            weight_attr, bias = None, bias and weight_attr
        bias_attr = bias_attr_of("Linear", bias, bias_attr)
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = self.create_parameter([self.in_features, self.out_features], weight_attr,
                                            default_initializer=XavierUniform())
        self.bias = None if bias_attr is False else self.create_parameter(
            [self.out_features], bias_attr, is_bias=True, default_initializer=Constant(0.0))

    def forward(self, x: Any) -> Any:
        return NF.linear(x, self.weight_in_out(), self.bias)

    def weight_in_out(self) -> Any:
        """The weight as [in, out]. PyTorch's weight tying, `decoder.weight = embedding.weight`,
        puts a [out, in] weight here (torch's layout): it is used transposed, so its gradient
        reaches the shared embedding. (A square tied weight cannot be told apart: it is read as
        [in, out]; tie it as `F.linear(h, embedding.weight.T)` instead.)"""
        weight, square = self.weight, self.in_features == self.out_features
        shape = tuple(weight.shape)
        if shape == (self.out_features, self.in_features) and not square:
            return F.transpose(weight, [1, 0])
        if len(shape) != 2 or not all(s in (-1, n) for s, n in zip(shape, (self.in_features, self.out_features))):
            raise ValueError(f"Linear({self.in_features}, {self.out_features}): weight of shape {list(shape)} is "
                             f"neither [in_features, out_features] = [{self.in_features}, {self.out_features}] nor, "
                             f"as torch's tied weights, [out_features, in_features]")
        return weight

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class Bilinear(Layer):
    """out = x1 W[o] x2^T + b[o] for every output o: weight [out, in1, in2], bias [1, out]
    (Paddle's shapes), both drawn from U(-1/sqrt(in1), 1/sqrt(in1)) as PyTorch's."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, weight_attr: Any = None,
                 bias_attr: Any = None, name: str | None = None, *, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(dtype=dtype)
        check_device(type(self).__name__, device)
        if isinstance(weight_attr, bool):   # Bilinear(2, 3, 4, False): PyTorch's positional bias
            weight_attr, bias = None, bias and weight_attr
        bias_attr = bias_attr_of("Bilinear", bias, bias_attr)
        self.in1_features, self.in2_features, self.out_features = int(in1_features), int(in2_features), int(out_features)
        if min(self.in1_features, self.in2_features, self.out_features) <= 0:
            raise ValueError(f"Bilinear: the feature sizes must be positive, got {in1_features}, {in2_features}, "
                             f"{out_features}")
        bound = 1.0 / math.sqrt(self.in1_features)
        self.weight = self.create_parameter([self.out_features, self.in1_features, self.in2_features], weight_attr,
                                            default_initializer=Uniform(-bound, bound))
        self.bias = None if bias_attr is False else self.create_parameter(
            [1, self.out_features], bias_attr, is_bias=True, default_initializer=Uniform(-bound, bound))

    def forward(self, x1: Any, x2: Any) -> Any:
        return NF.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in1_features={self.in1_features}, in2_features={self.in2_features}, out_features={self.out_features}"


class Embedding(Layer):
    """Rows of a [num_embeddings, embedding_dim] table picked by integer ids."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 sparse: bool = False, weight_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.weight = self.create_parameter([self.num_embeddings, self.embedding_dim], weight_attr,
                                            default_initializer=Normal(0.0, 1.0 / max(embedding_dim, 1) ** 0.5))
        if padding_idx is not None and not -self.num_embeddings <= padding_idx < self.num_embeddings:
            raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for {num_embeddings} rows")
        self.padding_idx = None if padding_idx is None else padding_idx % self.num_embeddings
        if self.padding_idx is not None:
            self.weight._array[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """PyTorch's constructor from a [num_embeddings, embedding_dim] table (a Tensor or array,
        copied; its dtype kept): frozen (stop_gradient) unless freeze=False. The padding row must
        be zeros: PyTorch reads it as stored, Paddle's Embedding (this one) reads zeros."""
        array = np.array(array_of(embeddings, "Embedding.from_pretrained"))
        if array.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D [num_embeddings, embedding_dim], "
                             f"got shape {list(array.shape)}")
        if max_norm is not None or scale_grad_by_freq:
            raise ValueError("Embedding.from_pretrained: max_norm and scale_grad_by_freq are not supported")
        layer = cls(array.shape[0], array.shape[1], padding_idx=padding_idx, sparse=sparse,
                    weight_attr=ParamAttr(initializer=Constant(0.0)))
        if layer.padding_idx is not None and np.any(array[layer.padding_idx]):
            raise ValueError(f"Embedding.from_pretrained: row padding_idx={padding_idx} of the embeddings is not "
                             f"zeros; PyTorch would read it as stored, fluidgrad's Embedding reads zeros there")
        layer.weight._array = array
        layer.weight.stop_gradient = bool(freeze)
        return layer

    def forward(self, x: Any) -> Any:
        """The padding row reads zeros and gets no gradient, whatever its stored value."""
        return NF.embedding(x, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Dropout(Layer):
    """Zero elements with probability p while training (kept ones scaled by 1/(1-p)); identity in eval."""

    def __init__(self, p: float = 0.5, axis: Any = None, mode: str = "upscale_in_train", name: str | None = None, *,
                 inplace: bool = False) -> None:
        """`inplace` (PyTorch's) is accepted: the result is a new Tensor holding what torch writes in place."""
        super().__init__()
        if axis is not None:
            raise ValueError("Dropout: axis is not supported; leave it None")
        self.p, self.mode = float(p), mode

    def forward(self, x: Any) -> Any:
        return NF.dropout(x, self.p, training=self.training, mode=self.mode)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class AlphaDropout(Layer):
    """Dropout that keeps a SELU network's activations standardised (see functional.alpha_dropout);
    the identity in eval."""

    def __init__(self, p: float = 0.5, name: str | None = None, *, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"AlphaDropout: p must lie in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x: Any) -> Any:
        return NF.alpha_dropout(x, self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Dropout2D(Layer):
    """Zero whole channels of NCHW (or NHWC) input with probability p while training (kept ones
    scaled by 1/(1-p)); identity in eval."""

    _fn, _layout = staticmethod(NF.dropout2d), "NCHW"

    def __init__(self, p: float = 0.5, data_format: str | None = None, name: str | None = None) -> None:
        super().__init__()
        self.p, self.data_format = float(p), data_format or self._layout

    def forward(self, x: Any) -> Any:
        return self._fn(x, self.p, training=self.training, data_format=self.data_format)

    def extra_repr(self) -> str:
        return f"p={self.p}, data_format={self.data_format}"


class Dropout3D(Dropout2D):
    """Zero whole channels of NCDHW (or NDHWC) input with probability p while training."""

    _fn, _layout = staticmethod(NF.dropout3d), "NCDHW"


class Identity(Layer):
    """Returns its input: a placeholder layer in a Sequential (as torch.nn.Identity)."""
    def forward(self, x: Any) -> Any:
        return x


class Flatten(Layer):
    """Merge axes start_axis..stop_axis into one (default: all but the batch axis); PyTorch's
    start_dim= / end_dim= name the same axes."""

    def __init__(self, start_axis: int = 1, stop_axis: int = -1, name: str | None = None, *,
                 start_dim: int | None = None, end_dim: int | None = None) -> None:
        super().__init__()
        start_axis = either("Flatten", "start_axis", start_axis, 1, "start_dim", start_dim)
        stop_axis = either("Flatten", "stop_axis", stop_axis, -1, "end_dim", end_dim)
        self.start_axis, self.stop_axis = int(start_axis), int(stop_axis)

    def forward(self, x: Any) -> Any:
        ndim = len(x.shape)
        start, stop = self.start_axis % ndim, self.stop_axis % ndim
        shape = list(x.shape)
        middle = shape[start:stop + 1]
        merged = int(np.prod(middle)) if all(d >= 0 for d in middle) else -1
        return F.reshape(x, [0] * start + [merged] + shape[stop + 1:])


class Unflatten(Layer):
    """Split axis `axis` into `shape` (one entry may be -1), the inverse of Flatten."""

    def __init__(self, axis: int, shape: Sequence[int], name: str | None = None) -> None:
        super().__init__()
        self.axis = int(axis)
        self.shape = [int(d) for d in (shape.numpy().tolist() if hasattr(shape, "numpy") else shape)]
        if not self.shape or sum(d == -1 for d in self.shape) > 1 or any(d < -1 or d == 0 for d in self.shape):
            raise ValueError(f"Unflatten: shape must be positive sizes with at most one -1, got {shape!r}")

    def forward(self, x: Any) -> Any:
        dims = list(x.shape)
        if not -len(dims) <= self.axis < len(dims):
            raise ValueError(f"Unflatten: axis {self.axis} is out of range for x of shape {dims}")
        axis = self.axis % len(dims)
        size, known = dims[axis], int(np.prod([d for d in self.shape if d != -1]))
        if size >= 0 and (size % known if -1 in self.shape else size != known):
            raise ValueError(f"Unflatten: axis {axis} of x of shape {dims} (size {size}) cannot be split into "
                             f"{self.shape}")
        later = dims[axis + 1:]
        if -1 in self.shape and any(d < 0 for d in later):
            raise ValueError(f"Unflatten: shape {self.shape} with -1 needs the axes after {axis} known, got x of "
                             f"shape {dims}")
        return F.reshape(x, [0] * axis + self.shape + [d if d >= 0 else -1 for d in later])

    def extra_repr(self) -> str:
        return f"axis={self.axis}, shape={self.shape}"
