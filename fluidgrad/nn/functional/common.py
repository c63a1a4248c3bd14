"""Dense layers, embedding and dropout as functions, for both modes."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ... import functions as F
from ...dispatch import apply_op, beside, is_tensor
from ...tensor.random import bernoulli
from ...framework.torch_forms import torch_keywords

__all__ = ['linear', 'bilinear', 'embedding', 'one_hot', 'dropout', 'alpha_dropout', 'dropout1d', 'dropout2d', 'dropout3d', 'pad', 'zeropad2d',
           'label_smooth']


def linear(x: Any, weight: Any, bias: Any = None, name: str | None = None) -> Any:
    """x @ weight + bias, weight shaped [in, out] (Paddle's layout)."""
    out = F.matmul(x, weight)
    return out if bias is None else F.add(out, bias)


def bilinear(x1: Any, x2: Any, weight: Any, bias: Any = None, name: str | None = None) -> Any:
    """out[..., o] = x1 W[o] x2^T + b[o] (paddle and torch's bilinear): weight [out, in1, in2],
    bias [out] or Paddle's [1, out]; x1 [..., in1] and x2 [..., in2] share their leading axes.
    Written as one matmul, a product and a sum, so gradients follow."""
    if len(weight.shape) != 3 or len(x1.shape) < 1 or len(x1.shape) != len(x2.shape) or \
            x1.shape[-1] != weight.shape[1] or x2.shape[-1] != weight.shape[2] or \
            any(a >= 0 and b >= 0 and a != b for a, b in zip(x1.shape[:-1], x2.shape[:-1])):
        raise ValueError(f"bilinear: needs x1 [..., in1], x2 [..., in2] with the same leading axes and weight "
                         f"[out, in1, in2], got x1 {list(x1.shape)}, x2 {list(x2.shape)}, weight {list(weight.shape)}")
    out_features, in1, in2 = (int(d) for d in weight.shape)
    if bias is not None and int(math.prod(bias.shape)) != out_features:
        raise ValueError(f"bilinear: bias must hold {out_features} values ([out] or [1, out]), got shape "
                         f"{list(bias.shape)}")
    lead = list(x1.shape[:-1])
    weight, bias = beside(weight, x1), beside(bias, x1)     # reshaped before they meet x1
    flat1, flat2 = F.reshape(x1, [-1, in1]), F.reshape(x2, [-1, in2])
    w = F.reshape(F.transpose(weight, [1, 0, 2]), [in1, out_features * in2])
    left = F.reshape(F.matmul(flat1, w), [-1, out_features, in2])             # x1 W[o], every o
    out = F.sum(F.multiply(left, F.unsqueeze(flat2, [1])), axis=-1)             # [rows, out]
    if bias is not None:
        out = F.add(out, F.reshape(bias, [out_features]))
    if len(lead) == 1:
        return out
    return F.reshape(out, [d if d >= 0 else -1 for d in lead] + [out_features])



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


@torch_keywords
def one_hot(x: Any, num_classes: int = -1, axis: int = -1, name: str | None = None) -> Any:
    """float32 one-hot vectors of the integer labels x on a new axis (Paddle's one_hot; a negative
    label is an error, as in torch and Paddle). Without num_classes (or -1, PyTorch's default) an
    eager Tensor's labels give it, max + 1, as torch's F.one_hot does."""
    if num_classes is None or int(num_classes) == -1:
        num_classes = _classes_of(x)
    return F.one_hot(x, int(num_classes), axis)


def _classes_of(x: Any) -> int:
    """max(x) + 1 of eager labels, as torch's F.one_hot(labels) infers the class count."""
    if not is_tensor(x):
        raise ValueError(f"one_hot: num_classes is needed for {getattr(x, 'name', 'x')} (shape {list(x.shape)}) "
                         f"in a static program: the class count can only be read from an eager Tensor's labels")
    labels = x.numpy()
    if labels.size == 0:
        raise ValueError("one_hot: cannot infer num_classes from an empty Tensor; give num_classes")
    if labels.dtype.kind not in "iu":
        raise TypeError(f"one_hot: labels must be integers, got {labels.dtype}")
    if labels.min() < 0:
        raise ValueError(f"one_hot: inferring num_classes needs non-negative labels, got {int(labels.min())}")
    return int(labels.max()) + 1


@torch_keywords
def dropout(x: Any, p: float = 0.5, training: bool = True, mode: str = "upscale_in_train",
            seed: int = 0, axis: int | Sequence[int] | None = None, name: str | None = None) -> Any:
    """Zero each element with probability p. upscale_in_train (default, as PyTorch) scales the
    kept ones by 1/(1-p) while training; downgrade_in_infer scales by (1-p) at inference.
    axis (Paddle's): one draw per index of those axes, shared along the others (dropout2d:
    axis [0, 1] drops whole channels)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1], got {p}")
    if mode not in ("upscale_in_train", "downgrade_in_infer"):
        raise ValueError(f"dropout: mode must be 'upscale_in_train' or 'downgrade_in_infer', got {mode!r}")
    if axis is not None:
        return _shared_dropout(x, p, training, mode, seed, axis)
    out, _mask = apply_op("dropout", {"X": x}, {"dropout_prob": float(p), "is_test": not training,
                                               "seed": int(seed), "dropout_implementation": mode})
    return out


# SELU's constants: a dropped element becomes its negative saturation, -alpha * scale
_SELU_SATURATION = 1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


def alpha_dropout(x: Any, p: float = 0.5, training: bool = True, name: str | None = None) -> Any:
    """Dropout for SELU networks (Klambauer et al., 2017): an element is dropped with probability p
    to SELU's negative saturation -s (not 0), then a x + b restores a standardised input's mean 0
    and variance 1 (a = ((1 - p)(1 + p s^2))^-1/2, b = a s p); the identity outside training
    (Paddle's and PyTorch's alpha_dropout; p = 1 gives zeros, as PyTorch)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"alpha_dropout: p must lie in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return F.scale(x, 0.0)
    s = _SELU_SATURATION
    a = 1.0 / math.sqrt((1.0 - p) * (1.0 + p * s * s))
    keep = bernoulli(F.full_like(x, 1.0 - p))
    # kept: a (x + s p); dropped: a s (p - 1)
    return F.scale(F.add(F.multiply(x, keep), F.scale(keep, s, s * (p - 1.0))), a)


def _shared_dropout(x: Any, p: float, training: bool, mode: str, seed: int, axis: int | Sequence[int]) -> Any:
    """x times a dropped-out mask of ones that is 1 long on every axis not in `axis` (broadcast)."""
    rank = len(x.shape)
    axes = [axis] if isinstance(axis, int) else list(axis)
    if not axes or any(not -rank <= a < rank for a in axes):
        raise ValueError(f"dropout: axis {axis!r} is out of range for x of shape {list(x.shape)}")
    kept = {a % rank for a in axes}
    shared = [a for a in range(rank) if a not in kept]
    corner = F.slice(x, shared, [0] * len(shared), [1] * len(shared)) if shared else x
    mask = dropout(F.ones_like(corner), p, training, mode, seed)
    return F.multiply(x, mask)


def _channel_dropout(fn: str, x: Any, p: float, training: bool, data_format: str, layouts: tuple[str, str]) -> Any:
    if data_format not in layouts:
        raise ValueError(f"{fn}: data_format must be one of {list(layouts)}, got {data_format!r}")
    if len(x.shape) != len(layouts[0]):
        raise ValueError(f"{fn}: expects a {len(layouts[0])}-D {data_format} input, got shape {list(x.shape)}")
    return dropout(x, p, training, axis=[0, 1 if data_format == layouts[0] else len(x.shape) - 1])


def dropout1d(x: Any, p: float = 0.5, training: bool = True, name: str | None = None) -> Any:
    """Zero whole channels of [N, C, L] (or unbatched [C, L]) input with probability p, the kept ones
    scaled by 1/(1-p) (PyTorch's dropout1d)."""
    if len(x.shape) not in (2, 3):
        raise ValueError(f"dropout1d: expects a 2-D [C, L] or 3-D [N, C, L] input, got shape {list(x.shape)}")
    return dropout(x, p, training, axis=[0, 1] if len(x.shape) == 3 else [0])


def dropout2d(x: Any, p: float = 0.5, training: bool = True, data_format: str = "NCHW", name: str | None = None) -> Any:
    """Zero whole channels of NCHW (or NHWC) input with probability p, the kept ones scaled by 1/(1-p)."""
    return _channel_dropout("dropout2d", x, p, training, data_format, ("NCHW", "NHWC"))


def dropout3d(x: Any, p: float = 0.5, training: bool = True, data_format: str = "NCDHW",
              name: str | None = None) -> Any:
    """Zero whole channels of NCDHW (or NDHWC) input with probability p, the kept ones scaled by 1/(1-p)."""
    return _channel_dropout("dropout3d", x, p, training, data_format, ("NCDHW", "NDHWC"))


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


def zeropad2d(x: Any, padding: Any, data_format: str = "NCHW", name: str | None = None) -> Any:
    """Zeros around H and W: padding [left, right, top, bottom] (or one int for all four)."""
    sizes = [int(padding)] * 4 if isinstance(padding, int) else padding
    return pad(x, sizes, mode="constant", value=0.0, data_format=data_format)


def label_smooth(label: Any, prior_dist: Any = None, epsilon: float = 0.1, name: str | None = None) -> Any:
    """(1 - epsilon) * label + epsilon * prior_dist for one-hot (or soft) labels [..., C]; the
    prior is uniform (1 / C) unless given ([1, C] or [C]). Differentiable in both."""
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"label_smooth: epsilon must lie in [0, 1], got {epsilon}")
    if len(label.shape) == 0:
        raise ValueError("label_smooth: label must have a class axis (shape [..., C]), got shape []")
    classes = label.shape[-1]
    if prior_dist is not None:
        if prior_dist.shape[-1] not in (classes, -1) and classes != -1 or len(prior_dist.shape) > 2 \
                or len(prior_dist.shape) == 2 and prior_dist.shape[0] not in (1, -1):
            raise ValueError(f"label_smooth: prior_dist of shape {list(prior_dist.shape)} does not fit label of "
                             f"shape {list(label.shape)} (expected [1, {classes}] or [{classes}])")
        return F.add(F.scale(label, 1.0 - epsilon), F.scale(prior_dist, epsilon))
    if classes >= 0:
        return F.scale(label, 1.0 - epsilon, epsilon / classes) if classes else F.scale(label, 1.0 - epsilon)
    uniform = F.divide(F.full_like(label, epsilon), F.sum(F.ones_like(label), axis=-1, keepdim=True))
    return F.add(F.scale(label, 1.0 - epsilon), uniform)   # the class count known only at run time
