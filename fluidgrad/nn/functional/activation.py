"""Activation functions (Paddle 2 names and signatures), for both modes.

Most are one registered op each with a fused kernel and a fused gradient (gelu, silu, mish,
elu, softplus, log_sigmoid, hardswish, prelu); the rest are short compositions of registered
ops that cost no more (selu and celu scale elu, hardtanh and relu6 are clip, hardsigmoid is
scale + clip, softsign and glu are two or three elementwise ops).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...dispatch import apply_op, axis_of_input
from ...framework import normalize_dtype
from ...functions import abs as _abs
from ...functions import (add, cast, divide, greater_equal, greater_than, log, multiply, reshape, scale, sigmoid,
                          split, subtract, tanh, zeros_like)
from ...tensor.random import uniform
from ...tensor.search import argmax, put_along_axis
from ...framework.torch_forms import torch_keywords

__all__ = [
    'celu',
    'elu',
    'gelu',
    'glu',
    'gumbel_softmax',
    'hardshrink',
    'hardsigmoid',
    'hardswish',
    'hardtanh',
    'leaky_relu',
    'log_sigmoid',
    'log_softmax',
    'logsigmoid',
    'mish',
    'prelu',
    'relu6',
    'rrelu',
    'selu',
    'silu',
    'softmax',
    'softmin',
    'softplus',
    'softshrink',
    'softsign',
    'swish',
    'tanhshrink',
    'threshold',
    'thresholded_relu',
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _softmax_input(caller: str, x: Any, axis: int, dim: int | None, dtype: Any) -> tuple[Any, int]:
    """x cast to `dtype` first (Paddle's and torch's dtype=), and the axis from axis= or PyTorch's dim=."""
    if dim is not None:
        if axis != -1 and axis != dim:
            raise TypeError(f"{caller}: give the axis once, as axis= or dim= (got {axis} and {dim})")
        axis = dim
    if dtype is not None and normalize_dtype(dtype) != x.dtype:
        x = cast(x, dtype)
    return x, int(axis)


def softmax(x: Any, axis: int = -1, dtype: Any = None, name: str | None = None, *, dim: int | None = None) -> Any:
    """exp(x) / sum(exp(x)) along `axis` (or PyTorch's dim=), computed without overflow, in
    `dtype` when given (x is cast first)."""
    x, axis = _softmax_input("softmax", x, axis, dim, dtype)
    return apply_op("softmax", {"X": x}, {"axis": axis})


def log_softmax(x: Any, axis: int = -1, dtype: Any = None, name: str | None = None, *,
                dim: int | None = None) -> Any:
    """log(softmax(x)) along `axis` (or PyTorch's dim=), computed without overflow, in `dtype`
    when given (x is cast first)."""
    x, axis = _softmax_input("log_softmax", x, axis, dim, dtype)
    return apply_op("log_softmax", {"X": x}, {"axis": axis})


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    """x where x > 0, else negative_slope * x."""
    return apply_op("leaky_relu", {"X": x}, {"alpha": float(negative_slope)})


def gelu(x: Any, approximate: bool | str = False, name: str | None = None) -> Any:
    """x * Phi(x); `approximate=True` (or "tanh", as ONNX and PyTorch spell it) uses the tanh
    form (GPT-2's), which is also 4-6x faster here than the exact form's erf."""
    return apply_op("gelu", {"X": x}, {"approximate": gelu_uses_tanh(approximate)})


def gelu_uses_tanh(approximate: bool | str) -> bool:
    """Paddle's bool or PyTorch's string ('none' / 'tanh') as a bool; the string 'none' is truthy,
    so a plain bool() would silently pick the tanh form."""
    if isinstance(approximate, str):
        if approximate not in ("tanh", "none"):
            raise ValueError(f"gelu: approximate must be True/False, 'tanh' or 'none', got {approximate!r}")
        return approximate == "tanh"
    return bool(approximate)


def silu(x: Any, name: str | None = None) -> Any:
    """x * sigmoid(x)."""
    return apply_op("silu", {"X": x})


swish = silu


def mish(x: Any, name: str | None = None) -> Any:
    """x * tanh(softplus(x))."""
    return apply_op("mish", {"X": x})


def elu(x: Any, alpha: float = 1.0, name: str | None = None) -> Any:
    """x above 0, alpha * (exp(x) - 1) below."""
    return apply_op("elu", {"X": x}, {"alpha": float(alpha)})


def selu(x: Any, scale: float = _SELU_SCALE, alpha: float = _SELU_ALPHA, name: str | None = None) -> Any:
    """scale * elu(x, alpha), with the self-normalising constants by default."""
    return _scale(elu(x, alpha), scale)


def _scale(x: Any, factor: float) -> Any:
    return scale(x, float(factor))


def celu(x: Any, alpha: float = 1.0, name: str | None = None) -> Any:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) = alpha * elu(x / alpha)."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    if alpha == 1.0:
        return elu(x, 1.0)
    return _scale(elu(_scale(x, 1.0 / alpha), 1.0), alpha)


def softplus(x: Any, beta: float = 1.0, threshold: float = 20.0, name: str | None = None) -> Any:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    return apply_op("softplus", {"X": x}, {"beta": float(beta), "threshold": float(threshold)})


def softsign(x: Any, name: str | None = None) -> Any:
    """x / (1 + |x|)."""
    return divide(x, scale(_abs(x), 1.0, 1.0))


def hardsigmoid(x: Any, slope: float = 0.1666667, offset: float = 0.5, name: str | None = None) -> Any:
    """clip(slope x + offset, 0, 1) (ONNX HardSigmoid: alpha = slope, beta = offset); its gradient is
    0 at the corners, as PyTorch's."""
    return apply_op("clip", {"X": scale(x, float(slope), float(offset))}, {"min": 0.0, "max": 1.0, "closed": False})


def hardswish(x: Any, name: str | None = None) -> Any:
    """x * relu6(x + 3) / 6."""
    return apply_op("hardswish", {"X": x})


@torch_keywords(min_val="min", max_val="max")
def hardtanh(x: Any, min: float = -1.0, max: float = 1.0, name: str | None = None) -> Any:
    """clip(x, min, max), with gradient 0 at min and max (PyTorch's hardtanh; its clamp has 1 there)."""
    return apply_op("clip", {"X": x}, {"min": float(min), "max": float(max), "closed": False})


def relu6(x: Any, name: str | None = None) -> Any:
    """clip(x, 0, 6)."""
    return hardtanh(x, 0.0, 6.0)


def _check_threshold(fn: str, threshold: float) -> float:
    if not threshold >= 0:
        raise ValueError(f"{fn}: threshold must be non-negative, got {threshold}")
    return float(threshold)


@torch_keywords(lambd="threshold")
def hardshrink(x: Any, threshold: float = 0.5, name: str | None = None) -> Any:
    """x where |x| > threshold, else 0; slope 0 at +-threshold (as PyTorch)."""
    threshold = _check_threshold("hardshrink", threshold)
    return multiply(x, cast(greater_than(_abs(x), threshold), x.dtype))


@torch_keywords(lambd="threshold")
def softshrink(x: Any, threshold: float = 0.5, name: str | None = None) -> Any:
    """x - threshold above threshold, x + threshold below -threshold, else 0: x - clip(x, -t, t),
    whose slope at +-threshold is 0 (as PyTorch)."""
    threshold = _check_threshold("softshrink", threshold)
    return subtract(x, apply_op("clip", {"X": x}, {"min": -threshold, "max": threshold}))


def thresholded_relu(x: Any, threshold: float = 1.0, value: float = 0.0, name: str | None = None) -> Any:
    """x where x > threshold, else `value` (PyTorch's threshold); slope 0 at the threshold. A select, so
    an inf gradient coming back gives 0 below the threshold (as PyTorch), not inf * 0 = nan."""
    fill = apply_op("fill_any_like", {"X": x}, {"value": float(value)})
    return apply_op("where", {"Condition": greater_than(x, float(threshold)), "X": x, "Y": fill})


def tanhshrink(x: Any, name: str | None = None) -> Any:
    """x - tanh(x)."""
    return subtract(x, tanh(x))


def prelu(x: Any, weight: Any, data_format: str = "NCHW", name: str | None = None) -> Any:
    """leaky_relu with a learned slope: `weight` has one entry, or one per channel (axis 1 for
    NC..., the last axis for N...C)."""
    if data_format not in ("NCHW", "NCL", "NCDHW", "NC", "NHWC", "NLC", "NDHWC"):
        raise ValueError(f"prelu: unknown data_format {data_format!r}")
    ndim, size = len(x.shape), 1
    for d in weight.shape:
        size *= d
    if size != 1 and ndim >= 2:
        channel = ndim - 1 if data_format.endswith("C") and data_format != "NC" else 1
        if x.shape[channel] not in (-1, size):
            raise ValueError(f"prelu: weight has {size} entries but x (shape {list(x.shape)}) has "
                             f"{x.shape[channel]} channels on axis {channel}")
        weight = reshape(weight, [size] + [1] * (ndim - 1 - channel))
    return apply_op("prelu", {"X": x, "Alpha": weight})


def log_sigmoid(x: Any, name: str | None = None) -> Any:
    """log(sigmoid(x)) = -softplus(-x), finite for every finite x."""
    return apply_op("log_sigmoid", {"X": x})


logsigmoid = log_sigmoid   # PyTorch's spelling


def softmin(x: Any, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None, *,
            axis: int | None = None) -> Any:
    """softmax(-x) along `dim` (PyTorch's softmin; Paddle has none, axis= is accepted). Without
    an axis, torch's implicit choice: axis 0 for 0-, 1- and 3-D input, else axis 1."""
    if dim is not None and axis is not None and dim != axis:
        raise TypeError(f"softmin: give the axis once, as dim= or axis= (got {dim} and {axis})")
    chosen = dim if dim is not None else axis
    if chosen is None:
        chosen = 0 if len(x.shape) in (0, 1, 3) else 1
    return softmax(scale(x, -1.0), int(chosen), dtype)


def threshold(x: Any, threshold: float, value: float, name: str | None = None) -> Any:
    """x where x > threshold, else `value` (PyTorch's F.threshold: thresholded_relu with both
    arguments required); slope 0 at and below the threshold."""
    return thresholded_relu(x, threshold, value)


def rrelu(x: Any, lower: float = 1.0 / 8.0, upper: float = 1.0 / 3.0, training: bool = True,
          name: str | None = None) -> Any:
    """Randomised leaky ReLU (Xu et al., 2015): x where x >= 0, else a * x with a drawn from
    U(lower, upper) per element while training, and the mean slope (lower + upper) / 2 otherwise.
    training defaults to True as in Paddle's F.rrelu (PyTorch's F.rrelu defaults to False; its
    nn.RReLU, like fluidgrad's, follows the layer's train / eval mode)."""
    if not 0.0 <= lower <= upper:
        raise ValueError(f"rrelu: needs 0 <= lower <= upper, got lower={lower}, upper={upper}")
    if not training or lower == upper:
        return leaky_relu(x, (lower + upper) / 2.0)
    shape = [int(d) for d in x.shape]
    if any(d < 0 for d in shape):
        raise ValueError(f"rrelu: drawing one slope per element while training needs x's whole shape, got "
                         f"{shape} (-1 unknown)")
    slopes = uniform(shape, x.dtype, float(lower), float(upper))
    kept = cast(greater_equal(x, 0.0), x.dtype)
    return multiply(x, add(kept, multiply(scale(kept, -1.0, 1.0), slopes)))


@torch_keywords
def glu(x: Any, axis: int = -1, name: str | None = None) -> Any:
    """a * sigmoid(b), where a and b are the two halves of x along `axis`."""
    axis = axis_of_input("glu", x, axis)
    size = x.shape[axis]
    if size != -1 and size % 2:
        raise ValueError(f"glu: axis {axis} of x (shape {list(x.shape)}) must have an even size")
    a, b = split(x, 2, axis)
    return multiply(a, sigmoid(b))


@torch_keywords(tau="temperature")
def gumbel_softmax(x: Any, temperature: float = 1.0, hard: bool = False, axis: int = -1, name: str | None = None,
                   *, eps: float = 1e-10) -> Any:
    """softmax((x + g) / temperature) along `axis`, g Gumbel(0, 1) noise drawn per element (Paddle's
    gumbel_softmax; PyTorch's tau= and dim= too, its unused eps= accepted). hard=True gives the
    one-hot of each argmax forward and the soft sample's gradient backward (straight-through)."""
    if not temperature > 0:
        raise ValueError(f"gumbel_softmax: temperature must be positive, got {temperature}")
    shape = [int(d) for d in x.shape]
    if any(d < 0 for d in shape):
        raise ValueError(f"gumbel_softmax: drawing the noise needs x's whole shape, got {shape} (-1 unknown)")
    uniforms = uniform(shape, x.dtype, float(np.finfo(normalize_dtype(x.dtype)).tiny), 1.0)
    gumbels = scale(log(scale(log(uniforms), -1.0)), -1.0)
    soft = softmax(scale(add(x, gumbels), 1.0 / float(temperature)), axis)
    if not hard:
        return soft
    index = argmax(soft, axis=axis, keepdim=True)
    one_hot = put_along_axis(zeros_like(soft), index, 1.0, axis)
    return add(subtract(one_hot, soft.detach()), soft)
