"""Dense layers, embedding and dropout as functions, for both modes."""
from __future__ import annotations

from typing import Any

from ... import functions as F
from ...dispatch import apply_op

__all__ = ['linear', 'embedding', 'dropout', 'pad']


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """x @ weight + bias, weight shaped [in, out] (Paddle's layout)."""
    out = F.matmul(x, weight)
    return out if bias is None else F.add(out, bias)


def embedding(x: Any, weight: Any, padding_idx: int | None = None, sparse: bool = False) -> Any:
    """Rows of `weight` picked by the integer ids `x`: shape x.shape + [dim].

    Ids equal to `padding_idx` (negative: counted from the end) read zeros, and the padding
    row gets no gradient from them. A negative id (or one >= the rows) is an IndexError, as in
    PyTorch and Paddle, not a row counted from the end."""
    out = apply_op("lookup_table_v2", {"W": weight, "Ids": x})
    if padding_idx is None:
        return out
    rows = weight.shape[0]
    if rows > 0 and not -rows <= padding_idx < rows:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for {rows} rows")
    padding_idx = padding_idx % rows if rows > 0 else padding_idx
    keep = F.cast(F.not_equal(x, padding_idx), weight.dtype)
    return F.multiply(out, F.unsqueeze(keep, len(x.shape)))


def dropout(x: Any, p: float = 0.5, training: bool = True, mode: str = "upscale_in_train",
            seed: int = 0) -> Any:
    """Zero each element with probability p. upscale_in_train (default, as PyTorch) scales the
    kept ones by 1/(1-p) while training; downgrade_in_infer scales by (1-p) at inference."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1], got {p}")
    if mode not in ("upscale_in_train", "downgrade_in_infer"):
        raise ValueError(f"dropout: mode must be 'upscale_in_train' or 'downgrade_in_infer', got {mode!r}")
    out, _mask = apply_op("dropout", {"X": x}, {"dropout_prob": float(p), "is_test": not training,
                                               "seed": int(seed), "dropout_implementation": mode})
    return out


_CHANNEL_LAST = ("NLC", "NHWC", "NDHWC")


def pad(x: Any, pad: Any, mode: str = "constant", value: float = 0.0, data_format: str = "NCHW",
        name: str | None = None) -> Any:
    """Pad (negative sizes crop) x; mode 'constant', 'reflect', 'replicate' ('edge') or 'circular'
    ('wrap'), on tensors of any rank.

    As in Paddle: a constant pad of length 2 * rank gives (before, after) for every axis, first
    axis first. Otherwise pad gives (left, right, top, bottom, front, back, ...) pairs for the
    spatial axes from the last one backwards, as PyTorch's F.pad does: the last axes for
    channel-first data formats (NCL, NCHW, NCDHW), the axes before the channel for channel-last ones.
    Reflection and wrapping repeat when a padding is longer than its axis (PyTorch refuses those).
    """
    sizes = [int(p.item()) if hasattr(p, "item") and not isinstance(p, int) else int(p)
             for p in (pad.numpy().reshape(-1).tolist() if hasattr(pad, "numpy") else pad)]
    rank = len(x.shape)
    if len(sizes) % 2:
        raise ValueError(f"pad: needs (before, after) pairs, got {len(sizes)} sizes {sizes}")
    paddings = [0] * (2 * rank)
    if mode == "constant" and len(sizes) == 2 * rank:
        paddings = sizes
    else:
        last = rank - 2 if data_format in _CHANNEL_LAST else rank - 1
        if len(sizes) // 2 > last + 1:
            raise ValueError(f"pad: {len(sizes) // 2} padded axes for x of shape {list(x.shape)} "
                             f"(data_format {data_format})")
        for i in range(len(sizes) // 2):
            axis = last - i
            paddings[2 * axis], paddings[2 * axis + 1] = sizes[2 * i], sizes[2 * i + 1]
    return apply_op("pad", {"X": x}, {"paddings": paddings, "mode": mode, "value": float(value)})
