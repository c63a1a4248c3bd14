"""Scaled dot-product attention on Paddle's [batch, seq, heads, dim] layout, for both modes."""
from __future__ import annotations

import math
from typing import Any

from ... import functions as F
from ...dispatch import apply_op
from .common import dropout

__all__ = ['scaled_dot_product_attention']


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, training: bool = True, scale: float | None = None) -> Any:
    """softmax(q k^T / sqrt(dim) + mask) v per batch and head.

    query [B, Lq, H, D], key [B, Lk, H, D], value [B, Lk, H, Dv] -> [B, Lq, H, Dv].
    attn_mask broadcasts to [B, H, Lq, Lk]: bool (True: attend) or float (added to the scores).
    is_causal masks key j > query i (PyTorch's top-left alignment). dropout_p drops attention
    weights while `training`.
    """
    for name, x in (("query", query), ("key", key), ("value", value)):
        if len(x.shape) != 4:
            raise ValueError(f"scaled_dot_product_attention: {name} must be [batch, seq, heads, dim], "
                             f"got shape {list(x.shape)}")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or is_causal=True, not both")
    dim = query.shape[-1]
    if scale is None:
        if dim <= 0:
            raise ValueError("scaled_dot_product_attention: the head dim of query must be known to scale by it")
        scale = 1.0 / math.sqrt(dim)
    q = F.transpose(query, [0, 2, 1, 3])                     # [B, H, Lq, D]
    k = F.transpose(key, [0, 2, 1, 3])
    v = F.transpose(value, [0, 2, 1, 3])
    scores = F.matmul(q, k, transpose_y=True)                # [B, H, Lq, Lk]
    weights = apply_op("attention_softmax", {"X": scores, "Mask": attn_mask},
                       {"scale": float(scale), "causal": bool(is_causal)})
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, training=True)
    return F.transpose(F.matmul(weights, v), [0, 2, 1, 3])
