"""fluidgrad.linalg: paddle.linalg's (and torch.linalg's) names for the matrix functions, over the
last two axes, differentiable (twice) in both modes: the ops of ops/matrix.py (inverse,
determinant, solve, cholesky, log_abs_det, pinv) and compositions of them with matmul."""
from __future__ import annotations

from typing import Any

import numpy as np

from .dispatch import apply_op
from .functions import abs as _abs
from .functions import matmul, sign, squeeze, transpose, unsqueeze
from .functions import max as _max
from .functions import min as _min
from .functions import sum as _sum
from .indexing import constant
from .tensor.linalg import det, inverse
from .tensor.linalg import norm as _vector_norm

__all__ = ["inv", "det", "solve", "cholesky", "norm", "matrix_power", "slogdet", "pinv"]


def norm(x: Any, p: Any = "fro", axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """The vector p-norm, or over two axes the matrix norm as torch.linalg.norm / Paddle's
    linalg.norm: p = 1 / -1 the largest / smallest column sum of |x|, inf / -inf the largest /
    smallest row sum, 'fro' the Frobenius norm. p = 2, -2 and 'nuc' (singular values) are refused
    rather than answered with the vector norm."""
    if not (isinstance(axis, (list, tuple)) and len(axis) == 2) or p == "fro":
        return _vector_norm(x, p, axis, keepdim)
    rank = len(x.shape)
    rows, cols = (int(a) % max(rank, 1) for a in axis)
    if rows == cols:
        raise ValueError(f"linalg.norm: the two axes {list(axis)} must differ (shape {list(x.shape)})")
    if p in (1, -1):
        summed, over = _sum(_abs(x), axis=rows, keepdim=True), cols
    elif p in (np.inf, -np.inf):
        summed, over = _sum(_abs(x), axis=cols, keepdim=True), rows
    else:
        raise ValueError(f"linalg.norm: the matrix norm p={p!r} over axes {list(axis)} is not supported (p = 2, "
                         f"-2 and 'nuc' need singular values); use 'fro', 1, -1, inf or -inf")
    out = (_max if p > 0 else _min)(summed, axis=over, keepdim=True)
    return out if keepdim else squeeze(out, sorted([rows, cols]))


def inv(x: Any, name: str | None = None) -> Any:
    """The inverse of each square matrix in x's last two axes (paddle.linalg.inv)."""
    return inverse(x)


def solve(x: Any, y: Any, name: str | None = None) -> Any:
    """Out with x @ Out = y, for square x: y is a matrix [..., n, k] or, as in torch.linalg.solve,
    a vector [..., n] (one axis fewer than x)."""
    if len(y.shape) == len(x.shape) - 1:
        return squeeze(apply_op("solve", {"X": x, "Y": unsqueeze(y, -1)}), -1)
    return apply_op("solve", {"X": x, "Y": y})


def cholesky(x: Any, upper: bool = False, name: str | None = None) -> Any:
    """The Cholesky factor of each symmetric positive-definite matrix: lower L with L L^T = x, or
    its transpose with `upper`. Only x's symmetric part is read (its gradient is symmetric)."""
    lower = apply_op("cholesky", {"X": x})
    return _swap_last(lower) if upper else lower


def matrix_power(x: Any, n: int, name: str | None = None) -> Any:
    """x @ x @ ... (n times) for square x, by repeated squaring; n = 0 gives the identity and a
    negative n the power of the inverse."""
    if int(n) != n:
        raise TypeError(f"matrix_power: n must be an integer, got {n!r}")
    shape = list(x.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"matrix_power: expects square matrices in the last two axes, got shape {shape}")
    n = int(n)
    if n == 0:
        if min(shape) < 0:
            raise ValueError(f"matrix_power: n=0 needs a fully known shape, got {shape}")
        return constant(np.broadcast_to(np.eye(shape[-1], dtype=str(x.dtype)), shape).copy(), x)
    base = inverse(x) if n < 0 else x
    result, n = None, abs(n)
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def slogdet(x: Any, name: str | None = None) -> tuple[Any, Any]:
    """(sign, log |det x|) of each square matrix, as torch.linalg.slogdet: the log without the
    overflow of det for large matrices. The sign has no gradient."""
    return sign(det(x)), apply_op("log_abs_det", {"X": x})


def pinv(x: Any, rcond: float = 1e-15, hermitian: bool = False, name: str | None = None) -> Any:
    """The Moore-Penrose pseudo-inverse of each matrix in x's last two axes (singular values below
    rcond times the largest count as zero); the gradient assumes the rank stays the same."""
    return apply_op("pinv", {"X": x}, {"rcond": float(rcond)})


def _swap_last(x: Any) -> Any:
    rank = len(x.shape)
    return transpose(x, list(range(rank - 2)) + [rank - 1, rank - 2])

