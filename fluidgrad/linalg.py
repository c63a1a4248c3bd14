"""fluidgrad.linalg: paddle.linalg's (and torch.linalg's) names for the matrix functions, over the
last two axes and batched over the leading ones, differentiable (twice) in both modes: the ops of
ops/matrix.py (inverse, determinant, solve, cholesky, log_abs_det, pinv) and
ops/decomposition.py (svd, eigh, qr), compositions of them with matmul, the norms of
linalg_norms.py, the triangular solves and matrix exponential of linalg_solves.py, and cov and
corrcoef (tensor/covariance.py)."""
from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .dispatch import apply_op
from .functions import cast, matmul, sign, square, squeeze, transpose, unsqueeze
from .functions import max as _max
from .functions import sum as _sum
from .indexing import constant
from .linalg_norms import cond, matrix_norm, matrix_rank, norm, singular_values, vector_norm
from .linalg_solves import cholesky_solve, matrix_exp, solve_triangular, triangular_solve
from .tensor.covariance import corrcoef, cov
from .tensor.linalg import det, inverse

__all__ = ["inv", "det", "solve", "cholesky", "norm", "matrix_power", "slogdet", "pinv", "svd", "svdvals", "qr",
           "eigh", "eigvalsh", "lstsq", "multi_dot", "cond", "matrix_rank", "vector_norm", "matrix_norm",
           "cholesky_solve", "triangular_solve", "solve_triangular", "matrix_exp", "cov", "corrcoef"]


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



# ---------------------------------------------------------------- decompositions (ops/decomposition.py)
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


def svd(x: Any, full_matrices: bool = False, name: str | None = None, *, driver: str | None = None) -> SVDResult:
    """(U, S, Vh) with x = U diag(S) Vh for each matrix in x's last two axes: S descending, and
    each column of U's largest-magnitude entry positive (the signs are otherwise arbitrary).
    full_matrices=False (Paddle's default; torch's is True) gives the reduced factors, U [m, k]
    and Vh [k, n] for k = min(m, n). The gradient needs distinct singular values (non-zero ones
    for a non-square x): with repeated ones the singular vectors are not unique and it is
    undefined, as in PyTorch; that of S alone (svdvals, the norms) always exists. `driver`
    (torch's, CUDA only) is accepted and ignored."""
    u, s, vh = apply_op("svd", {"X": x}, {"full_matrices": bool(full_matrices)})
    return SVDResult(u, s, vh)


def svdvals(x: Any, name: str | None = None) -> Any:
    """The singular values of each matrix in x's last two axes, descending (torch.linalg.svdvals)."""
    return singular_values(x)


def qr(x: Any, mode: str = "reduced", name: str | None = None) -> Any:
    """(Q, R) with x = Q R for each matrix in x's last two axes: 'reduced' (Q [m, k], R [k, n],
    k = min(m, n)), 'complete' (Q [m, m]) or 'r' (R alone, as paddle.linalg.qr). R's diagonal
    signs are LAPACK's, as np.linalg.qr and torch.linalg.qr. The gradient assumes a full-rank x
    (for mode='complete' with m > n there is none, as in torch)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    q, r = apply_op("qr", {"X": x}, {"mode": "complete" if mode == "complete" else "reduced"})
    return r if mode == "r" else QRResult(q, r)


def _symmetric_from(x: Any, uplo: str, function: str) -> Any:
    """The symmetric matrix of x's lower ('L') or upper ('U') triangle, the only one torch's and
    Paddle's eigh read (its gradient goes to that triangle alone)."""
    shape = list(x.shape)
    if len(shape) < 2 or (shape[-1] != shape[-2] and min(shape[-2:]) >= 0):
        raise ValueError(f"linalg.{function}: expects square (symmetric) matrices in the last two axes, "
                         f"got shape {shape}")
    if uplo not in ("L", "U"):
        raise ValueError(f"linalg.{function}: UPLO must be 'L' or 'U', got {uplo!r}")
    lower = uplo == "L"
    triangle = apply_op("tril_triu", {"X": x}, {"diagonal": 0, "lower": lower})
    strict = apply_op("tril_triu", {"X": x}, {"diagonal": -1 if lower else 1, "lower": lower})
    return triangle + _swap_last(strict)


def eigh(x: Any, UPLO: str = "L", name: str | None = None) -> EighResult:
    """(eigenvalues ascending, orthonormal eigenvectors as columns) of each symmetric matrix in
    x's last two axes, read from its UPLO triangle; each eigenvector's largest-magnitude entry is
    positive. The gradient needs distinct eigenvalues (that of the eigenvalues alone does not)."""
    values, vectors = apply_op("eigh", {"X": _symmetric_from(x, UPLO, "eigh")})
    return EighResult(values, vectors)


def eigvalsh(x: Any, UPLO: str = "L", name: str | None = None) -> Any:
    """The eigenvalues (ascending) of each symmetric matrix in x's last two axes (UPLO as eigh)."""
    return apply_op("eigh", {"X": _symmetric_from(x, UPLO, "eigvalsh")})[0]


def lstsq(x: Any, y: Any, rcond: float | None = None, driver: str | None = None,
          name: str | None = None) -> LstsqResult:
    """The least-squares solution of x @ solution = y (paddle.linalg.lstsq, torch.linalg.lstsq):
    (solution, residuals, rank, singular_values). The solution is pinv(x) @ y, the minimum-norm
    one, singular values below rcond (default eps * max(m, n)) times the largest counting as zero;
    its gradient assumes the rank does not change. residuals (m > n) are the squared column
    norms of x @ solution - y, else empty. Every driver ('gels', 'gelsy', 'gelsd', 'gelss')
    computes the same results: all four fields, as torch's 'gelsd'."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"linalg.lstsq: driver must be None, 'gels', 'gelsy', 'gelsd' or 'gelss', got {driver!r}")
    x_shape, y_shape = list(x.shape), list(y.shape)
    vector = len(y_shape) == len(x_shape) - 1
    if len(x_shape) < 2 or len(y_shape) < 1 or (y_shape[-1 if vector else -2] != x_shape[-2]
                                                and min(y_shape[-1 if vector else -2], x_shape[-2]) >= 0):
        raise ValueError(f"linalg.lstsq: x must be [..., m, n] and y [..., m, k] (or [..., m]) with the same m, "
                         f"got x of shape {x_shape} and y of shape {y_shape}")
    m, n = x_shape[-2:]
    if rcond is None:
        rcond = float(np.finfo(str(x.dtype)).eps) * max(m, n)
    rhs = unsqueeze(y, -1) if vector else y
    solution = matmul(pinv(x, rcond), rhs)
    values = singular_values(x)
    rank = _sum(cast(values > _max(values, axis=-1, keepdim=True) * float(rcond), "int64"), axis=-1)
    if m > n:
        residuals = _sum(square(matmul(x, solution) - rhs), axis=-2)
        residuals = squeeze(residuals, -1) if vector else residuals
    else:
        residuals = constant(np.zeros((0,), dtype=str(x.dtype)), x)
    return LstsqResult(squeeze(solution, -1) if vector else solution, residuals, rank, values)


def multi_dot(x: Any, name: str | None = None) -> Any:
    """x[0] @ x[1] @ ... in the cheapest order (the matrix-chain order, as numpy.linalg.multi_dot
    and torch.linalg.multi_dot): the first may be a 1-D row vector and the last a 1-D column
    vector, the others are matrices. Made of matmul, so differentiable twice."""
    tensors = list(x)
    if len(tensors) < 2:
        raise ValueError(f"linalg.multi_dot: expects at least two tensors, got {len(tensors)}")
    shapes = [list(t.shape) for t in tensors]
    first_vector, last_vector = len(shapes[0]) == 1, len(shapes[-1]) == 1
    if first_vector:
        tensors[0], shapes[0] = unsqueeze(tensors[0], 0), [1] + shapes[0]
    if last_vector:
        tensors[-1], shapes[-1] = unsqueeze(tensors[-1], -1), shapes[-1] + [1]
    for i, shape in enumerate(shapes):
        if len(shape) != 2:
            raise ValueError(f"linalg.multi_dot: tensor {i} must be a matrix (the first and last may be 1-D), "
                             f"got shapes {[list(t.shape) for t in x]}")
        if i and shapes[i - 1][1] != shape[0] and min(shapes[i - 1][1], shape[0]) >= 0:
            raise ValueError(f"linalg.multi_dot: tensor {i - 1} of shape {shapes[i - 1]} cannot multiply tensor {i} "
                             f"of shape {shape}")
    out = _chain(tensors, _chain_order([s[0] for s in shapes] + [shapes[-1][1]]), 0, len(tensors) - 1)
    if first_vector or last_vector:
        out = squeeze(out, [a for a, flag in ((0, first_vector), (1, last_vector)) if flag])
    return out


def _chain_order(dims: list[int]) -> list[list[int]]:
    """split[i][j]: where the cheapest product of matrices i..j splits (dims: the chain's sizes;
    unknown sizes count as 1)."""
    dims = [max(d, 1) for d in dims]
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                          for k in range(i, j))
    return split


def _chain(tensors: list[Any], split: list[list[int]], i: int, j: int) -> Any:
    if i == j:
        return tensors[i]
    k = split[i][j]
    return matmul(_chain(tensors, split, i, k), _chain(tensors, split, k + 1, j))
