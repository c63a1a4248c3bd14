"""PyTorch's spellings of the layers Paddle names otherwise (Conv2d for Conv2D, ConvTranspose2d for
Conv2DTranspose, MultiheadAttention for MultiHeadAttention); the normalisation layers' (BatchNorm2d,
InstanceNorm2d) are in norm.py, the padding layers' (ConstantPad2d, ReflectionPad2d, ...) in padding.py.

Where only the name's case differs and the constructor reads the same, the torch name is the
Paddle class itself. Elsewhere it is a thin subclass taking torch's constructor: its positional
order and keywords (bias=, return_indices=, count_include_pad=, inplace=, device=, dtype=)
with torch's meaning, mapped onto Paddle's, e.g. AvgPool2d counts the padding (torch's
count_include_pad=True) where Paddle's AvgPool2D does not, and MultiheadAttention is
sequence-first and reads a bool mask's True as "do not attend", as torch does.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import functions as F
from ...tensor.search import where
from .. import functional as NF
from ...initializer import Uniform
from ..layer import Layer, initial_value
from ..parameter import bias_attr_of, check_device
from .common import Dropout2D, Dropout3D
from .conv import Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose
from .pooling import (AdaptiveAvgPool1D, AdaptiveAvgPool2D, AdaptiveAvgPool3D, AdaptiveMaxPool1D,
                      AdaptiveMaxPool2D, AdaptiveMaxPool3D, AvgPool1D, AvgPool2D, AvgPool3D, MaxPool1D, MaxPool2D,
                      MaxPool3D, MaxUnPool1D, MaxUnPool2D, MaxUnPool3D, LPPool1D, LPPool2D, _LPPoolNd)
from .activation import Softmax2D
from .transformer import MultiHeadAttention
from .vision import UpsamplingBilinear2D, UpsamplingNearest2D

__all__ = ['Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d', 'ConvTranspose2d', 'ConvTranspose3d',
           'MaxPool1d', 'MaxPool2d', 'MaxPool3d', 'AvgPool1d', 'AvgPool2d', 'AvgPool3d',
           'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d', 'AdaptiveAvgPool3d',
           'AdaptiveMaxPool1d', 'AdaptiveMaxPool2d', 'AdaptiveMaxPool3d', 'MaxUnpool1d', 'MaxUnpool2d', 'MaxUnpool3d',
           'LPPool1d', 'LPPool2d', 'LPPool3d', 'Dropout1d', 'Dropout2d', 'Dropout3d', 'Softmax2d', 'UpsamplingBilinear2d', 'UpsamplingNearest2d', 'MultiheadAttention']

# The same constructor under torch's name.
AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d = AdaptiveAvgPool1D, AdaptiveAvgPool2D, AdaptiveAvgPool3D
MaxUnpool1d, MaxUnpool2d, MaxUnpool3d = MaxUnPool1D, MaxUnPool2D, MaxUnPool3D
Softmax2d, UpsamplingBilinear2d, UpsamplingNearest2d = Softmax2D, UpsamplingBilinear2D, UpsamplingNearest2D


def _cast(layer: Layer, dtype: Any) -> None:
    if dtype is not None:
        layer.to(dtype=dtype)


# ---------------------------------------------------------------- convolutions
def _torch_initialised(layer: Layer) -> None:
    """torch's initialisation of a convolution (reset_parameters): weight kaiming_uniform with
    a = sqrt(5), which is U(-b, b) with b = 1 / sqrt(fan_in), and bias U(-b, b) too; fan_in is the
    weight's axis 1 times its kernel size (for a transposed convolution too, as torch computes it)."""
    shape = [int(n) for n in layer.weight.shape]
    fan_in = int(np.prod(shape[1:]))
    if fan_in <= 0:
        raise ValueError(f"{type(layer).__name__}: kernel_size and channels must be positive, got a weight of "
                         f"shape {shape}")
    bound = 1.0 / np.sqrt(fan_in)
    for param in (layer.weight, layer.bias):
        if param is not None:
            dtype = str(param.numpy().dtype)
            param.set_value(initial_value(Uniform(-bound, bound), list(param.shape), dtype))


class _TorchConv:
    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,  # type: ignore
                         padding_mode, bias=bias, device=device, dtype=dtype)
        _torch_initialised(self)  # type: ignore[arg-type]


class Conv1d(_TorchConv, Conv1D):
    """torch.nn.Conv1d(in, out, kernel_size, stride, padding, dilation, groups, bias, padding_mode)."""


class Conv2d(_TorchConv, Conv2D):
    """torch.nn.Conv2d(in, out, kernel_size, stride, padding, dilation, groups, bias, padding_mode)."""


class Conv3d(_TorchConv, Conv3D):
    """torch.nn.Conv3d(in, out, kernel_size, stride, padding, dilation, groups, bias, padding_mode)."""


class _TorchConvTranspose:
    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"{type(self).__name__}: only padding_mode='zeros' is supported (as in PyTorch), "
                             f"got {padding_mode!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding,  # type: ignore
                         groups, dilation, bias=bias, device=device, dtype=dtype)
        _torch_initialised(self)  # type: ignore[arg-type]


class ConvTranspose1d(_TorchConvTranspose, Conv1DTranspose):
    """torch.nn.ConvTranspose1d(in, out, kernel_size, stride, padding, output_padding, groups, bias, dilation)."""


class ConvTranspose2d(_TorchConvTranspose, Conv2DTranspose):
    """torch.nn.ConvTranspose2d(in, out, kernel_size, stride, padding, output_padding, groups, bias, dilation)."""


class ConvTranspose3d(_TorchConvTranspose, Conv3DTranspose):
    """torch.nn.ConvTranspose3d(in, out, kernel_size, stride, padding, output_padding, groups, bias, dilation)."""


# ---------------------------------------------------------------- pooling
class _TorchMaxPool:
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding, return_mask=return_indices, ceil_mode=ceil_mode,  # type: ignore
                         dilation=dilation)


class MaxPool1d(_TorchMaxPool, MaxPool1D):
    """torch.nn.MaxPool1d(kernel_size, stride, padding, dilation, return_indices, ceil_mode)."""


class MaxPool2d(_TorchMaxPool, MaxPool2D):
    """torch.nn.MaxPool2d(kernel_size, stride, padding, dilation, return_indices, ceil_mode)."""


class MaxPool3d(_TorchMaxPool, MaxPool3D):
    """torch.nn.MaxPool3d(kernel_size, stride, padding, dilation, return_indices, ceil_mode)."""


class AvgPool1d(AvgPool1D):
    """torch.nn.AvgPool1d(kernel_size, stride, padding, ceil_mode, count_include_pad=True)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, padding, exclusive=not count_include_pad, ceil_mode=ceil_mode)


class _TorchAvgPool:
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode=ceil_mode,  # type: ignore[call-arg]
                         exclusive=not count_include_pad, divisor_override=divisor_override)


class AvgPool2d(_TorchAvgPool, AvgPool2D):
    """torch.nn.AvgPool2d(kernel_size, stride, padding, ceil_mode, count_include_pad=True, divisor_override)."""


class AvgPool3d(_TorchAvgPool, AvgPool3D):
    """torch.nn.AvgPool3d(kernel_size, stride, padding, ceil_mode, count_include_pad=True, divisor_override)."""


class _TorchAdaptiveMaxPool:
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size, return_mask=return_indices)  # type: ignore[call-arg]


class AdaptiveMaxPool1d(_TorchAdaptiveMaxPool, AdaptiveMaxPool1D):
    """torch.nn.AdaptiveMaxPool1d(output_size, return_indices)."""


class AdaptiveMaxPool2d(_TorchAdaptiveMaxPool, AdaptiveMaxPool2D):
    """torch.nn.AdaptiveMaxPool2d(output_size, return_indices)."""


class AdaptiveMaxPool3d(_TorchAdaptiveMaxPool, AdaptiveMaxPool3D):
    """torch.nn.AdaptiveMaxPool3d(output_size, return_indices)."""


class _TorchLPPool:
    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__(norm_type, kernel_size, stride, 0, ceil_mode)  # type: ignore[call-arg]


class LPPool1d(_TorchLPPool, LPPool1D):
    """torch.nn.LPPool1d(norm_type, kernel_size, stride=None, ceil_mode=False)."""


class LPPool2d(_TorchLPPool, LPPool2D):
    """torch.nn.LPPool2d(norm_type, kernel_size, stride=None, ceil_mode=False)."""


class LPPool3d(_TorchLPPool, _LPPoolNd):
    """torch.nn.LPPool3d(norm_type, kernel_size, stride=None, ceil_mode=False) (Paddle has no 3-D one)."""
    nd, layout = 3, "NCDHW"


# ---------------------------------------------------------------- dropout
class _TorchDropout:
    """`inplace` is accepted; the result is a new Tensor holding what torch writes in place."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must lie in [0, 1], got {p}")
        super().__init__(p)  # type: ignore[call-arg]


class Dropout1d(Layer):
    """torch.nn.Dropout1d(p, inplace): whole channels of [N, C, L] (or [C, L]) input zeroed while training."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= float(p) <= 1.0:
            raise ValueError(f"Dropout1d: p must lie in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x: Any) -> Any:
        return NF.dropout1d(x, self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Dropout2d(_TorchDropout, Dropout2D):
    """torch.nn.Dropout2d(p, inplace): whole channels of NCHW input zeroed while training."""


class Dropout3d(_TorchDropout, Dropout3D):
    """torch.nn.Dropout3d(p, inplace): whole channels of NCDHW input zeroed while training."""


# ---------------------------------------------------------------- attention
class MultiheadAttention(MultiHeadAttention):
    """torch.nn.MultiheadAttention: sequence-first [L, N, E] input unless batch_first; forward
    returns (output, weights averaged over heads, or None when need_weights=False); a bool mask
    is True where attention is NOT allowed (Paddle's: where it is); key_padding_mask [N, S]
    marks padded keys; a float mask is added to the scores. The parameters are Paddle's
    (q_proj, k_proj, v_proj, out_proj), not torch's in_proj_weight."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        if add_bias_kv or add_zero_attn:
            raise ValueError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        check_device("MultiheadAttention", device)
        super().__init__(embed_dim, num_heads, dropout, kdim, vdim, need_weights=False,
                         bias_attr=bias_attr_of("MultiheadAttention", bias, None))
        self.batch_first = bool(batch_first)
        _cast(self, dtype)

    def forward(self, query: Any, key: Any, value: Any, key_padding_mask: Any = None, need_weights: bool = True,
                attn_mask: Any = None, average_attn_weights: bool = True, is_causal: bool = False) -> Any:
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal is a hint that attn_mask is the causal mask; give "
                             "attn_mask too (as PyTorch requires)")
        unbatched = len(query.shape) == 2
        batch_axis = 0 if self.batch_first or unbatched else 1
        query, key, value = (F.unsqueeze(t, batch_axis) if unbatched else t for t in (query, key, value))
        if not self.batch_first and not unbatched:
            query, key, value = (F.transpose(t, [1, 0, 2]) for t in (query, key, value))
        mask = self._mask(attn_mask, key_padding_mask, query)
        q, k, v = self._heads(self.q_proj(query)), self._heads(self.k_proj(key)), self._heads(self.v_proj(value))
        if need_weights:
            out, weights = self._attend_with_weights(q, k, v, mask, False)
            if average_attn_weights:
                weights = F.mean(weights, axis=1)
        else:
            out, weights = NF.scaled_dot_product_attention(q, k, v, mask, self.dropout, False, self.training), None
        out = self.out_proj(F.reshape(out, [0, 0, self.embed_dim]))
        if unbatched:
            out = F.squeeze(out, 0)
            weights = None if weights is None else F.squeeze(weights, 0)
        elif not self.batch_first:
            out = F.transpose(out, [1, 0, 2])
        return out, weights

    def _mask(self, attn_mask: Any, key_padding_mask: Any, query: Any) -> Any:
        """torch's masks as one Paddle mask broadcasting to [N, heads, L, S]: bool True = attend,
        or float (added)."""
        batch, q_len = query.shape[0], query.shape[1]
        masks = []
        if attn_mask is not None:
            if len(attn_mask.shape) == 3:  # [N * heads, L, S]
                attn_mask = F.reshape(attn_mask, [batch, self.num_heads, q_len, attn_mask.shape[-1]])
            masks.append(attn_mask)
        if key_padding_mask is not None:
            if len(key_padding_mask.shape) == 1:   # unbatched: [S]
                key_padding_mask = F.unsqueeze(key_padding_mask, 0)
            masks.append(F.unsqueeze(key_padding_mask, [1, 2]))
        masks = [F.logical_not(m) if m.dtype == "bool" else m for m in masks]
        if len(masks) == 2 and all(m.dtype == "bool" for m in masks):
            return F.logical_and(masks[0], masks[1])
        if len(masks) == 2:
            return F.add(*(m if m.dtype != "bool" else _additive(m, query.dtype) for m in masks))
        return masks[0] if masks else None


def _additive(attend: Any, dtype: str) -> Any:
    """A bool mask (True: attend) as the float mask adding 0 or -inf."""
    zeros = F.zeros_like(attend, dtype=dtype)
    return where(attend, zeros, F.full_like(zeros, float("-inf")))
