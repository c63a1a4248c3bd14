"""Linear algebra: einsum, tensordot, bmm, norm."""
from __future__ import annotations

import math
import string
from numbers import Integral
from typing import Any

from ..dispatch import apply_op
from ..functions import _axis_attrs, matmul, reshape, transpose
from ..functions import abs as _abs
from ..functions import max as _max
from ..functions import min as _min
from ..functions import sum as _sum
from ..framework.torch_forms import torch_keywords

__all__ = ["bmm", "det", "einsum", "inverse", "norm", "tensordot"]


def _explicit_equation(equation: str, ndims: list[int]) -> str:
    """Paddle's / NumPy's einsum shorthand -> the op's explicit form: '...' becomes letters of
    its own, and a missing output becomes the indices seen once, in alphabetical order."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    subscripts = inputs.split(",")
    if len(subscripts) != len(ndims):
        raise ValueError(f"einsum: equation {equation!r} names {len(subscripts)} operands, got {len(ndims)}")
    spare = [c for c in string.ascii_letters[::-1] if c not in equation]
    width = max([n - (len(s) - 3) for s, n in zip(subscripts, ndims) if "..." in s] or [0])
    ellipsis = "".join(spare[:width][::-1])
    explicit = []
    for subs, ndim in zip(subscripts, ndims):
        if "..." in subs:
            own = ndim - (len(subs) - 3)
            subs = subs.replace("...", ellipsis[width - own:] if own else "")
        if len(subs) != ndim:
            raise ValueError(f"einsum: subscripts {subs!r} do not fit an operand of rank {ndim}")
        explicit.append(subs)
    if arrow:
        output = output.replace("...", ellipsis)
    else:
        letters = "".join(explicit)
        output = ellipsis + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ellipsis))
    return ",".join(explicit) + "->" + output


def einsum(equation: str, *operands: Any) -> Any:
    """Einstein summation, as `paddle.einsum` / `numpy.einsum` (with '...' and implicit output)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    explicit = _explicit_equation(equation, [len(o.shape) for o in operands])
    return apply_op("einsum", {"Operands": list(operands)}, {"equation": explicit})


def inverse(x: Any, name: str | None = None) -> Any:
    """The inverse of each square matrix in x's last two axes (paddle.inverse)."""
    return apply_op("inverse", {"X": x})


def det(x: Any, name: str | None = None) -> Any:
    """The determinant of each square matrix in x's last two axes (paddle.linalg.det)."""
    return apply_op("determinant", {"X": x})


def bmm(x: Any, y: Any, name: str | None = None) -> Any:
    """Batched matrix product of [b, m, k] and [b, k, n]."""
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise ValueError(f"bmm: expects two 3-D inputs, got shapes {list(x.shape)} and {list(y.shape)}")
    if x.shape[0] != y.shape[0] and -1 not in (x.shape[0], y.shape[0]):
        raise ValueError(f"bmm: batch sizes differ: {list(x.shape)} and {list(y.shape)}")
    return matmul(x, y)


@torch_keywords
def norm(x: Any, p: Any = "fro", axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """The vector p-norm over `axis` (all elements when None): p = 'fro', 1, 2, inf, -inf or any p > 0.
    The gradient at a zero vector is 0 (as PyTorch), never nan."""
    if p == "fro" or p == 2:
        p = 2.0
    if isinstance(p, str):
        raise ValueError(  # noqa: TRY004  (a wrong value, as NumPy's norm says)
            f"norm: p={p!r} is not supported; use 'fro', 1, 2, inf, -inf or a positive number")
    p = float(p)
    if p == 1.0:
        return _sum(_abs(x), axis=axis, keepdim=keepdim)
    if p == math.inf:
        return _max(_abs(x), axis=axis, keepdim=keepdim)
    if p == -math.inf:
        return _min(_abs(x), axis=axis, keepdim=keepdim)
    if not p > 0:
        raise ValueError(f"norm: p must be positive, inf or -inf, got {p}")
    return apply_op("p_norm", {"X": x}, {"porder": p, **_axis_attrs(axis, keepdim)})


def _contracted_axes(axes: Any, x_rank: int, y_rank: int) -> tuple[list[int], list[int]]:
    """tensordot's axes as two lists of axes of x and of y: an int n pairs x's last n axes with
    y's first n; one list is used for both; two lists (or ints) pair up in order."""
    if isinstance(axes, Integral):
        n = int(axes)
        if not 0 <= n <= min(x_rank, y_rank):
            raise ValueError(f"tensordot: axes={n} must lie in [0, {min(x_rank, y_rank)}] for inputs of "
                             f"{x_rank} and {y_rank} dimensions")
        return list(range(x_rank - n, x_rank)), list(range(n))
    pairs = [[a] if isinstance(a, Integral) else list(a) for a in axes]
    if len(pairs) == 0 or len(pairs) > 2:
        raise ValueError(f"tensordot: axes must be an int, a list of axes or two lists of axes, got {axes!r}")
    x_axes, y_axes = pairs[0], pairs[-1]
    for axis, rank, which in [(a, x_rank, "x") for a in x_axes] + [(a, y_rank, "y") for a in y_axes]:
        if not -rank <= int(axis) < max(rank, 1):
            raise ValueError(f"tensordot: axis {axis} is out of range for {which} of {rank} dimensions")
    return [int(a) % x_rank for a in x_axes], [int(a) % y_rank for a in y_axes]


@torch_keywords(dims="axes")
def tensordot(x: Any, y: Any, axes: Any = 2, name: str | None = None) -> Any:
    """Sums of products over x's axes axes[0] paired with y's axes[1]; the result has x's other
    axes, then y's (paddle.tensordot, torch.tensordot, np.tensordot). One transpose and reshape of
    each side and a single matmul, so its gradients are those of matmul."""
    x_shape, y_shape = list(x.shape), list(y.shape)
    x_axes, y_axes = _contracted_axes(axes, len(x_shape), len(y_shape))
    if len(x_axes) != len(y_axes) or len(set(x_axes)) != len(x_axes) or len(set(y_axes)) != len(y_axes) \
            or any(x_shape[a] != y_shape[b] or x_shape[a] < 0 for a, b in zip(x_axes, y_axes)):
        raise ValueError(f"tensordot: axes {x_axes} of x (shape {x_shape}) and {y_axes} of y (shape {y_shape}) "
                         f"must pair up, once each, with equal known sizes")
    x_free = [a for a in range(len(x_shape)) if a not in x_axes]
    y_free = [a for a in range(len(y_shape)) if a not in y_axes]
    sizes = [x_shape[a] for a in x_free] + [y_shape[a] for a in y_free]
    if sizes.count(-1) > 1 or any(x_shape[a] < 0 for a in x_free) and any(y_shape[a] < 0 for a in y_free):
        raise ValueError(f"tensordot: at most one free axis may have a run-time size (-1), got shapes "
                         f"{x_shape} and {y_shape}")
    inner = math.prod(x_shape[a] for a in x_axes)
    left = reshape(transpose(x, x_free + x_axes), [-1 if x_free else 1, inner])
    right = reshape(transpose(y, y_axes + y_free), [inner, -1 if y_free else 1])
    return reshape(matmul(left, right), sizes)
