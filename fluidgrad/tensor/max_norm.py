"""renorm (torch.renorm / paddle.renorm): each slice along an axis whose p-norm exceeds max_norm
scaled down to that norm (the max-norm constraint on a weight's rows). Composed of registered ops,
so both modes and the gradient through the norm, as torch's."""
from __future__ import annotations

import math
from typing import Any

from ..dispatch import axis_of_input
from ..framework.torch_forms import torch_keywords
from ..functions import abs, divide, full_like, greater_than, pow, sqrt, square
from ..functions import sum as _sum
from .math import amax
from .search import where

__all__ = ["renorm"]


def _norms(x: Any, p: float, others: list[int]) -> Any:
    if p == math.inf:
        return amax(abs(x), axis=others, keepdim=True)
    if p == 2:
        return sqrt(_sum(square(x), axis=others, keepdim=True))
    if p == 1:
        return _sum(abs(x), axis=others, keepdim=True)
    return pow(_sum(pow(abs(x), float(p)), axis=others, keepdim=True), 1.0 / p)


@torch_keywords(maxnorm="max_norm")
def renorm(x: Any, p: float, axis: int, max_norm: float, name: str | None = None) -> Any:
    """x with every slice x[..., i, ...] along `axis` whose p-norm (over the slice's other axes)
    exceeds max_norm scaled by max_norm / (norm + 1e-7); the others unchanged. torch's spelling
    renorm(x, p, dim, maxnorm) and Paddle's renorm(x, p, axis, max_norm) both work."""
    p, max_norm = float(p), float(max_norm)
    if not p > 0:
        raise ValueError(f"renorm: p must be positive, got {p}")
    if max_norm < 0:
        raise ValueError(f"renorm: max_norm must not be negative, got {max_norm}")
    if "float" not in str(x.dtype):
        raise TypeError(f"renorm: x must be a float tensor, got {x.dtype}")
    along = axis_of_input("renorm", x, axis)
    norms = _norms(x, p, [a for a in range(len(x.shape)) if a != along])
    scale = where(greater_than(norms, full_like(norms, max_norm)), divide(full_like(norms, max_norm), norms + 1e-7),
                  full_like(norms, 1.0))
    return x * scale
