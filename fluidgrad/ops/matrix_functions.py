"""Triangular solves and the matrix exponential (fluidgrad.linalg's triangular_solve /
solve_triangular / cholesky_solve and matrix_exp), over the last two axes, batched over the rest.

Both gradients are written in ops, so they differentiate again: a triangular solve's in two more
triangular solves and a matmul (kept to the triangle the kernel reads), the exponential's by the
block identity exp([[A^T, G], [0, A^T]]) = [[e^{A^T}, L], [0, e^{A^T}]], whose corner L is the
gradient (the Frechet derivative of exp at A^T in the direction G; Mathias 1996).

SciPy (the `fast` extra) does the triangular solves and the exponential when installed; without it,
NumPy: a solve of the masked matrix, and scaling and squaring with a degree-13 Pade approximant
(Higham 2005, SciPy's and torch's algorithm).
"""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .matrix import _solve_infer, _square_infer, _swap_last  # a triangular solve's shapes are solve's
from .registry import register_op


def _scipy_linalg():
    try:
        from scipy import linalg  # optional (the `fast` extra)
    except ImportError:
        return None
    return linalg


# ---------------------------------------------------------------- triangular_solve
def _triangle(a: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    """The triangle of `a` the solve reads (the rest counts as zero; a unit diagonal if asked)."""
    part = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        diagonal = np.arange(a.shape[-1])
        part[..., diagonal, diagonal] = 1
    return part


def _triangular_solve_kernel(x, y, upper=True, transpose=False, unitriangular=False):
    """Out with op(T) @ Out = Y, T the upper or lower triangle of X, op transposing if asked."""
    linalg = _scipy_linalg()
    if linalg is None or not x.size:
        t = _triangle(x, upper, unitriangular)
        return np.linalg.solve(np.swapaxes(t, -1, -2) if transpose else t, y).astype(y.dtype)
    out = np.empty(y.shape, dtype=y.dtype)
    for index in np.ndindex(*x.shape[:-2]):
        out[index] = linalg.solve_triangular(x[index], y[index], trans=1 if transpose else 0, lower=not upper,
                                             unit_diagonal=unitriangular, check_finite=False)
    return out


def _triangular_solve_grad(g: GradBuilder) -> None:
    """Out = op(T)^-1 Y: dL/dY = op(T)^-T dOut (a solve with the other transpose); dL/dop(T) =
    -dL/dY Out^T, transposed back when op transposes, kept to the triangle read (strictly, with a
    unit diagonal)."""
    x, out = g.input("X"), g.output("Out")
    upper, transpose, unit = g.attr("upper"), g.attr("transpose"), g.attr("unitriangular")
    dy = g.op("triangular_solve", {"X": x, "Y": g.output_grad("Out")}, upper=upper, transpose=not transpose,
              unitriangular=unit)
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", dy)
    if g.needs_input_grad("X"):
        first, second = (out, dy) if transpose else (dy, out)
        product = g.op("matmul", {"X": first, "Y": second}, transpose_y=True)
        diagonal = (1 if upper else -1) if unit else 0
        kept = g.op("tril_triu", {"X": product}, diagonal=diagonal, lower=not upper)
        g.set_input_grad("X", g.op("scale", {"X": kept}, scale=-1.0))


register_op("triangular_solve", inputs=("X", "Y"), outputs="Out",
            attrs={"upper": True, "transpose": False, "unitriangular": False}, kernel=_triangular_solve_kernel,
            infer=_solve_infer, grad=_triangular_solve_grad,
            doc="Out with op(T) @ Out = Y for T the upper or lower triangle of X (paddle.linalg.triangular_solve).")


# ---------------------------------------------------------------- matrix_exp
# the coefficients of the degree-13 Pade approximant and the 1-norm bound up to which it is exact
# to double precision (Higham 2005, table 10.4)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
           960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm_pade(a: np.ndarray) -> np.ndarray:
    """exp(a) of one batch of square matrices (float64): a scaled down by 2^s below theta_13,
    the [13/13] Pade approximant, then squared s times."""
    norms = np.abs(a).sum(axis=-2).max(axis=-1) if a.size else np.zeros(a.shape[:-2])
    squarings = int(max(0, np.ceil(np.log2(max(float(np.max(norms, initial=0.0)), 1e-300) / _THETA13))))
    a = a / 2.0 ** squarings
    b, eye = _PADE13, np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    result = np.linalg.solve(v - u, v + u)
    for _ in range(squarings):
        result = result @ result
    return result


def _matrix_exp_kernel(x):
    linalg = _scipy_linalg()
    wide = x.astype(np.float64)
    if linalg is not None and x.size:
        return np.asarray(linalg.expm(wide)).astype(x.dtype)
    return _expm_pade(wide).astype(x.dtype)


def _matrix_exp_infer(ctx):
    ctx.set_output("Out", _square_infer(ctx), ctx.dtype("X"))


def _matrix_exp_grad(g: GradBuilder) -> None:
    """dL/dX = the top-right n x n block of exp([[X^T, dOut], [0, X^T]])."""
    x = g.input("X")
    rank, n = len(g.shape(x)), g.shape(x)[-1]
    xt = g.op("transpose", {"X": x}, perm=_swap_last(rank))
    top = g.op("concat", {"X": [xt, g.output_grad("Out")]}, axis=rank - 1)
    bottom = g.op("concat", {"X": [g.op("fill_zeros_like", {"X": xt}), xt]}, axis=rank - 1)
    block = g.op("matrix_exp", {"X": g.op("concat", {"X": [top, bottom]}, axis=rank - 2)})
    g.set_input_grad("X", g.op("slice", {"X": block}, axes=[rank - 2, rank - 1], starts=[0, n],
                               ends=[n, 2 * n]))


register_op("matrix_exp", inputs="X", outputs="Out", kernel=_matrix_exp_kernel, infer=_matrix_exp_infer,
            grad=_matrix_exp_grad,
            doc="The exponential of each square matrix in the last two axes (torch.linalg.matrix_exp).")
