"""fluidgrad.linalg's solves with a triangular factor and the matrix exponential: Paddle's
`triangular_solve(x, y, upper, transpose, unitriangular)`, torch's `solve_triangular(A, B, *,
upper, left, unitriangular)`, `cholesky_solve(B, L, upper)` (torch's and Paddle's order: the
right-hand side first) and `matrix_exp`. Each is the op of ops/matrix_functions.py or a
composition of it (cholesky_solve is two triangular solves), so gradients, grad of grad and
static programs come with the op. The batch axes of the factor and the right-hand side broadcast."""
from __future__ import annotations

from typing import Any

import numpy as np

from .dispatch import apply_op
from .functions import transpose as _transpose
from .tensor.manipulation import broadcast_to

__all__ = ["triangular_solve", "solve_triangular", "cholesky_solve", "matrix_exp"]


def _swap_last(x: Any) -> Any:
    rank = len(x.shape)
    return _transpose(x, list(range(rank - 2)) + [rank - 1, rank - 2])


def _same_batch(a: Any, b: Any) -> tuple[Any, Any]:
    """a and b broadcast to one batch shape (their last two axes kept), when the batches differ."""
    a_shape, b_shape = list(a.shape), list(b.shape)
    if len(a_shape) < 2 or len(b_shape) < 2 or a_shape[:-2] == b_shape[:-2] or -1 in a_shape[:-2] + b_shape[:-2]:
        return a, b                     # the op checks the shapes and names them if they do not fit
    try:
        batch = list(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    except ValueError:
        return a, b
    if a_shape[:-2] != batch:
        a = broadcast_to(a, batch + a_shape[-2:])
    if b_shape[:-2] != batch:
        b = broadcast_to(b, batch + b_shape[-2:])
    return a, b


def triangular_solve(x: Any, y: Any, upper: bool = True, transpose: bool = False, unitriangular: bool = False,
                     name: str | None = None) -> Any:
    """Out with op(T) @ Out = y (paddle.linalg.triangular_solve): T the upper (or lower) triangle of
    x, the other entries never read; op(T) = T^T with `transpose`; a diagonal of ones with
    `unitriangular`."""
    x, y = _same_batch(x, y)
    return apply_op("triangular_solve", {"X": x, "Y": y},
                    {"upper": bool(upper), "transpose": bool(transpose), "unitriangular": bool(unitriangular)})


def solve_triangular(A: Any, B: Any, *, upper: bool, left: bool = True, unitriangular: bool = False,
                     out: Any = None) -> Any:
    """torch.linalg.solve_triangular: X with T @ X = B (or X @ T = B with left=False), T the upper or
    lower triangle of A; `upper` is required, as in torch."""
    if out is not None:
        raise TypeError("solve_triangular: out= is not supported (fluidgrad returns a new tensor)")
    if left:
        return triangular_solve(A, B, upper, False, unitriangular)
    return _swap_last(triangular_solve(A, _swap_last(B), upper, True, unitriangular))   # T^T X^T = B^T


def cholesky_solve(x: Any, y: Any, upper: bool = False, name: str | None = None) -> Any:
    """Out with A @ Out = x, for A = L L^T given its Cholesky factor y = L (or A = U^T U, y = U,
    with `upper`): torch.cholesky_solve(B, L, upper) and paddle.linalg.cholesky_solve(x, y, upper).
    Two triangular solves; only y's triangle is read."""
    first = triangular_solve(y, x, upper=upper, transpose=upper)
    return triangular_solve(y, first, upper=upper, transpose=not upper)


def matrix_exp(x: Any, name: str | None = None) -> Any:
    """exp(x) = I + x + x^2 / 2! + ... of each square matrix in x's last two axes."""
    return apply_op("matrix_exp", {"X": x})
