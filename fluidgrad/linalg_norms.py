"""fluidgrad.linalg's norms and what is measured with them: norm, vector_norm, matrix_norm, cond,
matrix_rank (paddle.linalg's and torch.linalg's names and keywords).

All are compositions: |x| sums and maxima for the vector norms and the matrix norms p = 1 / inf,
the singular values of the `svd` op (ops/decomposition.py) for p = 2 / -2 / 'nuc' and the
condition number. So their gradients are those of the parts and differentiate again (the
spectral and nuclear norms of regularizers have a grad of grad where the singular values are
distinct).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dispatch import apply_op
from .functions import abs as _abs
from .functions import cast, greater_than, logical_and, not_equal, squeeze, transpose, unsqueeze
from .functions import max as _max
from .functions import min as _min
from .functions import sum as _sum
from .tensor.linalg import inverse
from .tensor.linalg import norm as _p_norm

__all__ = ["cond", "matrix_norm", "matrix_rank", "norm", "vector_norm"]

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def singular_values(x: Any) -> Any:
    """The singular values of each matrix in x's last two axes, descending ([..., min(m, n)])."""
    return apply_op("svd", {"X": x}, {"full_matrices": False})[1]


def _renamed(value: Any, alias: Any, name: str, alias_name: str, default: Any, function: str) -> Any:
    """One argument given by its Paddle name or its torch keyword, not both."""
    if alias is None:
        return value
    if value is not default and value != default:
        raise TypeError(f"linalg.{function}: give {name} or {alias_name} (torch's name), not both")
    return alias


def _as_dtype(x: Any, dtype: Any) -> Any:
    return x if dtype is None else cast(x, dtype)


def vector_norm(x: Any, p: Any = 2.0, axis: Any = None, keepdim: bool = False, name: str | None = None, *,
                ord: Any = None, dim: Any = None, dtype: Any = None) -> Any:
    """The vector p-norm of x over `axis` (all elements when None), as paddle.linalg.vector_norm
    and torch.linalg.vector_norm (`ord`, `dim`, `dtype`): p = inf / -inf the largest / smallest
    |x|, 0 the number of non-zeros (no gradient), any p > 0 (sum |x|^p)^(1/p)."""
    p = _renamed(p, ord, "p", "ord", 2.0, "vector_norm")
    axis = _renamed(axis, dim, "axis", "dim", None, "vector_norm")
    if isinstance(p, str):
        raise ValueError(f"linalg.vector_norm: p={p!r} is a matrix norm; use matrix_norm (or a number, inf, -inf)")
    x = _as_dtype(x, dtype)
    if isinstance(axis, tuple):
        axis = list(axis)
    if p == 0:
        return cast(_sum(cast(not_equal(x, 0.0), "int64"), axis=axis, keepdim=keepdim), x.dtype)
    if not (p > 0 or p == -math.inf):
        raise ValueError(f"linalg.vector_norm: p must be positive, 0, inf or -inf, got {p!r} (shape {list(x.shape)})")
    return _p_norm(x, p, axis, keepdim)


def _two_axes(x: Any, axis: Any, function: str) -> tuple[int, int]:
    rank = len(x.shape)
    if not (isinstance(axis, (list, tuple)) and len(axis) == 2):
        raise ValueError(f"linalg.{function}: axis must name two axes, got {axis!r} (shape {list(x.shape)})")
    if rank < 2 or not all(-rank <= int(a) < rank for a in axis):
        raise ValueError(f"linalg.{function}: axes {list(axis)} are not two axes of shape {list(x.shape)}")
    rows, cols = (int(a) % rank for a in axis)
    if rows == cols:
        raise ValueError(f"linalg.{function}: the two axes {list(axis)} must differ (shape {list(x.shape)})")
    return rows, cols


def matrix_norm(x: Any, p: Any = "fro", axis: Any = (-2, -1), keepdim: bool = False, name: str | None = None, *,
                ord: Any = None, dim: Any = None, dtype: Any = None) -> Any:
    """The matrix norm over the two axes `axis`, as paddle.linalg.matrix_norm and
    torch.linalg.matrix_norm: 'fro' (Frobenius), 'nuc' (sum of singular values), 2 / -2 (the
    largest / smallest singular value), 1 / -1 (largest / smallest column sum of |x|),
    inf / -inf (largest / smallest row sum)."""
    p = _renamed(p, ord, "p", "ord", "fro", "matrix_norm")
    axis = _renamed(axis, dim, "axis", "dim", (-2, -1), "matrix_norm")
    x = _as_dtype(x, dtype)
    rows, cols = _two_axes(x, axis, "matrix_norm")
    if p == "fro":
        return _p_norm(x, 2.0, [rows, cols], keepdim)
    if p in (1, -1, math.inf, -math.inf):
        summed, over = (_sum(_abs(x), axis=rows, keepdim=True), cols) if p in (1, -1) else \
            (_sum(_abs(x), axis=cols, keepdim=True), rows)
        out = (_max if p > 0 else _min)(summed, axis=over, keepdim=True)
        return out if keepdim else squeeze(out, sorted([rows, cols]))
    if p not in ("nuc", 2, -2):
        raise ValueError(f"linalg.matrix_norm: p={p!r} is not a matrix norm; use one of "
                         f"{', '.join(map(repr, _MATRIX_ORDS))} (shape {list(x.shape)})")
    rank = len(x.shape)
    rest = [a for a in range(rank) if a not in (rows, cols)]
    values = singular_values(x if [rows, cols] == [rank - 2, rank - 1] else transpose(x, rest + [rows, cols]))
    out = _sum(values, axis=-1) if p == "nuc" else (_max if p == 2 else _min)(values, axis=-1)
    return unsqueeze(out, sorted([rows, cols])) if keepdim else out


def norm(x: Any, p: Any = "fro", axis: Any = None, keepdim: bool = False, name: str | None = None, *,
         ord: Any = None, dim: Any = None, dtype: Any = None) -> Any:
    """paddle.linalg.norm / torch.linalg.norm: over one axis (or all, when axis is None) the
    vector norm; over two axes the matrix norm of `matrix_norm` (p = 'fro', 'nuc', 1, -1, 2, -2,
    inf, -inf). torch's keyword `ord` with dim=None takes a 1-D x's vector norm and a 2-D x's
    matrix norm, as torch does (Paddle's p with axis=None flattens x: the vector norm)."""
    axis = _renamed(axis, dim, "axis", "dim", None, "norm")
    if ord is not None:
        p = _renamed(p, ord, "p", "ord", "fro", "norm")
        if axis is None and len(x.shape) in (1, 2):
            axis = [0] if len(x.shape) == 1 else [0, 1]
    x = _as_dtype(x, dtype)
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        return matrix_norm(x, p, axis, keepdim)
    if p == "nuc":
        raise ValueError(f"linalg.norm: p='nuc' is a matrix norm: give two axes (shape {list(x.shape)})")
    if isinstance(axis, (list, tuple)) and len(axis) == 1:
        axis = axis[0]
    return vector_norm(x, 2.0 if p == "fro" else p, axis, keepdim)


def cond(x: Any, p: Any = None, name: str | None = None) -> Any:
    """The condition number of each matrix in x's last two axes (paddle.linalg.cond,
    torch.linalg.cond): for p None / 2 (any shape) the ratio of the largest to the smallest
    singular value, for -2 its inverse; for 'fro', 'nuc', 1, -1, inf, -inf (square, invertible x)
    norm(x, p) * norm(inv(x), p)."""
    if len(x.shape) < 2:
        raise ValueError(f"linalg.cond: expects matrices in the last two axes, got shape {list(x.shape)}")
    if p is None or p in (2, -2):
        values = singular_values(x)
        largest, smallest = _max(values, axis=-1), _min(values, axis=-1)
        return largest / smallest if p != -2 else smallest / largest
    if p not in _MATRIX_ORDS:
        raise ValueError(f"linalg.cond: p={p!r} is not supported; use None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")
    return matrix_norm(x, p) * matrix_norm(inverse(x), p)


def matrix_rank(x: Any, tol: Any = None, hermitian: bool = False, atol: Any = None, rtol: Any = None,
                name: str | None = None) -> Any:
    """The number of singular values (|eigenvalues| when hermitian) above the tolerance, int64, as
    paddle.linalg.matrix_rank and torch.linalg.matrix_rank: `tol` (Paddle) or `atol` an absolute
    bound, `rtol` one relative to the largest value; with neither, rtol = eps(dtype) * max(m, n)
    (with atol alone, rtol is 0). No gradient: the result is an integer."""
    if len(x.shape) < 2:
        raise ValueError(f"linalg.matrix_rank: expects matrices in the last two axes, got shape {list(x.shape)}")
    if tol is not None and atol is not None:
        raise TypeError("linalg.matrix_rank: give tol (Paddle's name) or atol (torch's), not both")
    atol = tol if atol is None else atol
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(np.finfo(str(x.dtype)).eps) * max(x.shape[-2:])
    if hermitian:
        values = _abs(apply_op("eigh", {"X": x})[0])
    else:
        values = singular_values(x)
    above = greater_than(values, _max(values, axis=-1, keepdim=True) * float(rtol))
    if atol is not None:
        above = logical_and(above, greater_than(values, float(atol)))
    return _sum(cast(above, "int64"), axis=-1)
