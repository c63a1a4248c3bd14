"""Attention masks for the Transformer layers, in the convention the attention op reads
(bool True / int 1: attend; float: added to the scores), made from either library's.

Paddle's masks are that convention already. PyTorch's bool attn_mask means the opposite (True:
masked out), its key_padding_mask [batch, src_len] marks padding (True, or a float added), its
3-D attn_mask is [batch * heads, tgt_len, src_len], and is_causal hints that the mask is the
causal one. A layer built with torch's keywords reads its masks torch's way (see transformer.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import functions as F
from ...indexing import constant

# added to a score that a bool mask excludes, when it is combined with a float mask (exp() of it
# is 0 in every float dtype; float16 saturates to -inf, which is what torch adds)
_EXCLUDED = -1e30


def _is_float(mask: Any) -> bool:
    return str(mask.dtype).startswith(("float", "bfloat"))


def paddle_mask(mask: Any) -> Any:
    """Integer masks (1: attend) become bool; bool and float masks pass through."""
    if mask is None or mask.dtype == "bool" or _is_float(mask):
        return mask
    return F.cast(mask, "bool")


def _from_torch(name: str, what: str, mask: Any) -> Any:
    """torch's bool (True: masked out) or float (added) mask in the attention op's convention."""
    if mask.dtype == "bool":
        return F.logical_not(mask)
    if _is_float(mask):
        return mask
    raise TypeError(f"{name}: {what} must be bool (PyTorch's convention: True is masked out) or float (added to the "
                    f"scores), got {mask.dtype}")


def _additive(mask: Any, dtype: Any) -> Any:
    """A bool attend-mask as a float one: 0 where attended, _EXCLUDED elsewhere."""
    return F.scale(F.cast(F.logical_not(mask), dtype), _EXCLUDED)


def combined(first: Any, second: Any, dtype: Any) -> Any:
    """Both masks at once (broadcasting): bool and bool is their `and`, otherwise the sum of their
    float forms."""
    if first is None or second is None:
        return second if first is None else first
    if not _is_float(first) and not _is_float(second):
        return F.logical_and(first, second)
    return F.add(*(m if _is_float(m) else _additive(m, dtype) for m in (first, second)))


def causal(query: Any, key: Any) -> Any:
    """[q_len, k_len] bool, True where key j <= query i (torch's top-left alignment); axis 1 of
    query and key is their sequence axis."""
    q_len, k_len = query.shape[1], key.shape[1]
    if q_len < 0 or k_len < 0:
        raise ValueError(f"is_causal with a key_padding_mask needs known sequence lengths, got shapes "
                         f"{list(query.shape)} and {list(key.shape)}")
    return constant(np.tril(np.ones((q_len, k_len), dtype=bool)), query)


def attention_mask(name: str, attn_mask: Any, key_padding_mask: Any, num_heads: int, dtype: Any,
                   torch_convention: bool) -> Any:
    """attn_mask (torch's convention or Paddle's) and key_padding_mask (torch's: [batch, src_len],
    True or -inf at padding) as one mask that broadcasts to [batch, heads, tgt_len, src_len]."""
    mask = attn_mask
    if mask is not None and torch_convention:
        mask = _from_torch(name, "attn_mask", mask)
        if len(mask.shape) == 3:                                    # [batch * heads, tgt_len, src_len]
            mask = F.reshape(mask, [-1, num_heads, mask.shape[1], mask.shape[2]])
    mask = paddle_mask(mask)
    if key_padding_mask is not None:
        if len(key_padding_mask.shape) != 2:
            raise ValueError(f"{name}: key_padding_mask must be [batch, src_len], got shape "
                             f"{list(key_padding_mask.shape)}")
        padding = F.unsqueeze(_from_torch(name, "key_padding_mask", key_padding_mask), [1, 2])
        mask = combined(mask, padding, dtype)
    return mask
