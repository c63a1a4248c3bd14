"""torch.nn.MultiheadAttention under its own name, with torch's parameters, signature and call.

Paddle's MultiHeadAttention (transformer.py) differs from it in every habit a torch user relies
on, so the torch-cased name is its own class rather than an alias: the packed `in_proj_weight`
[3 * embed_dim, embed_dim] and `in_proj_bias` (separate q/k/v_proj_weight when kdim / vdim differ),
[seq, batch, embed_dim] tensors unless batch_first=True, forward(query, key, value,
key_padding_mask=None, need_weights=True, attn_mask=None, average_attn_weights=True,
is_causal=False) returning (output, weights or None), and bool masks whose True means masked out.
out_proj is a Linear, whose weight is [in, out] as every fluidgrad Linear's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import functions as F
from ...dispatch import apply_op
from ...initializer import Constant, XavierUniform
from .. import functional as NF
from ..layer import Layer
from .attention_masks import attention_mask, causal, combined
from .common import Linear

__all__ = ['MultiheadAttention']


class MultiheadAttention(Layer):
    """Attention over `num_heads` heads with torch's layout and call (see the module docstring)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise ValueError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads, self.head_dim = int(embed_dim), int(num_heads), embed_dim // num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.dropout, self.batch_first = float(dropout), bool(batch_first)
        self._packed = self.kdim == self.vdim == embed_dim
        if self._packed:
            self.in_proj_weight = self.create_parameter([3 * embed_dim, embed_dim], default_initializer=XavierUniform())
        else:
            for name, width in (("q", embed_dim), ("k", self.kdim), ("v", self.vdim)):
                self.add_parameter(f"{name}_proj_weight", self.create_parameter(
                    [embed_dim, width], default_initializer=XavierUniform()))
        self.in_proj_bias = self.create_parameter([3 * embed_dim], is_bias=True,
                                                  default_initializer=Constant(0.0)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias_attr=None if bias else False)
        if device is not None or dtype is not None:
            self.to(device, dtype)

    def _project(self, x: Any, index: int) -> Any:
        """x W^T + b for query (0), key (1) or value (2), split into heads [B, L, H, D]."""
        if self._packed:
            weight = F.split(self.in_proj_weight, 3, axis=0)[index]
        else:
            weight = getattr(self, f"{'qkv'[index]}_proj_weight")
        y = F.matmul(x, weight, transpose_y=True)
        if self.in_proj_bias is not None:
            y = F.add(y, F.split(self.in_proj_bias, 3, axis=0)[index])
        return F.reshape(y, [0, 0, self.num_heads, self.head_dim])

    def forward(self, query: Any, key: Any, value: Any, key_padding_mask: Any = None, need_weights: bool = True,
                attn_mask: Any = None, average_attn_weights: bool = True, is_causal: bool = False) -> tuple[Any, Any]:
        unbatched = len(query.shape) == 2
        if unbatched:                      # torch's [seq, embed_dim]
            query, key, value = (F.unsqueeze(t, [0]) for t in (query, key, value))
            key_padding_mask = None if key_padding_mask is None else F.unsqueeze(key_padding_mask, [0])
        elif not self.batch_first:
            query, key, value = (F.transpose(t, [1, 0, 2]) for t in (query, key, value))
        q, k, v = self._project(query, 0), self._project(key, 1), self._project(value, 2)
        mask = attention_mask("MultiheadAttention", attn_mask, key_padding_mask, self.num_heads, query.dtype, True)
        is_causal = bool(is_causal) and attn_mask is None           # torch: a hint that attn_mask is causal
        if is_causal and mask is not None:
            mask, is_causal = combined(mask, causal(query, key), query.dtype), False
        if need_weights:
            out, weights = self._attend_with_weights(q, k, v, mask, is_causal)
            weights = F.mean(weights, axis=1) if average_attn_weights else weights
        else:
            out, weights = NF.scaled_dot_product_attention(q, k, v, mask, self.dropout, is_causal, self.training), None
        out = self.out_proj(F.reshape(out, [0, 0, self.embed_dim]))
        if unbatched:
            return F.squeeze(out, [0]), None if weights is None else F.squeeze(weights, [0])
        return (out if self.batch_first else F.transpose(out, [1, 0, 2])), weights

    def _attend_with_weights(self, q: Any, k: Any, v: Any, mask: Any, is_causal: bool) -> tuple[Any, Any]:
        """(output [B, L, H, D], the weights [B, H, L, S] after dropout, as torch returns them)."""
        scores = F.matmul(F.transpose(q, [0, 2, 1, 3]), F.transpose(k, [0, 2, 1, 3]), transpose_y=True)
        weights = apply_op("attention_softmax", {"X": scores, "Mask": mask},
                           {"scale": 1.0 / float(np.sqrt(self.head_dim)), "causal": bool(is_causal)})
        if self.dropout:
            weights = NF.dropout(weights, self.dropout, training=self.training)
        return F.transpose(F.matmul(weights, F.transpose(v, [0, 2, 1, 3])), [0, 2, 1, 3]), weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"
