"""Linear algebra: einsum, bmm, norm."""
from __future__ import annotations

import math
import string
from typing import Any

from ..dispatch import apply_op
from ..functions import _axis_attrs, matmul
from ..functions import abs as _abs
from ..functions import max as _max
from ..functions import min as _min
from ..functions import sum as _sum

__all__ = ["bmm", "det", "einsum", "inverse", "norm"]


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
