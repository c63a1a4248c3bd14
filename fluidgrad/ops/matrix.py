"""Matrix ops over the last two axes: inverse (paddle.inverse), determinant (paddle.linalg.det, ONNX
Det), and for fluidgrad.linalg solve, cholesky, log_abs_det (slogdet) and pinv. Gradients are made of matmul, transpose and inverse, so
they differentiate again. A singular matrix has no inverse: NumPy's LinAlgError says so."""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only


def _square_infer(ctx):
    float_only(ctx, "X")
    if ctx.dtype("X") not in ("float32", "float64"):  # as np.linalg and torch.linalg
        raise ctx.dtype_error(f"linear algebra in float32 or float64 only, got {ctx.describe('X')}")
    shape = ctx.shape("X")
    if len(shape) < 2 or (shape[-1] != shape[-2] and min(shape[-2:]) >= 0):
        raise ctx.shape_error(f"expects square matrices in the last two axes, got {ctx.describe('X')}")
    return shape


def _swap_last(rank):
    return list(range(rank - 2)) + [rank - 1, rank - 2]


def _inverse_infer(ctx):
    ctx.set_output("Out", _square_infer(ctx), ctx.dtype("X"))


def _inverse_grad(g: GradBuilder) -> None:
    """d(X^-1) = -X^-1 dX X^-1, so dL/dX = -Out^T dOut Out^T."""
    out = g.output("Out")
    left = g.op("matmul", {"X": out, "Y": g.output_grad("Out")}, transpose_x=True)
    g.set_input_grad("X", g.op("scale", {"X": g.op("matmul", {"X": left, "Y": out}, transpose_y=True)}, scale=-1.0))


register_op("inverse", inputs="X", outputs="Out", kernel=lambda x: np.linalg.inv(x).astype(x.dtype),
            infer=_inverse_infer, grad=_inverse_grad, doc="The inverse of each square matrix in the last two axes.")


def _determinant_infer(ctx):
    ctx.set_output("Out", _square_infer(ctx)[:-2], ctx.dtype("X"))


def _determinant_grad(g: GradBuilder) -> None:
    """d det(X) / dX = det(X) X^-T (Jacobi's formula)."""
    x = g.input("X")
    rank = len(g.shape(x))
    scale = g.op("unsqueeze", {"X": g.op("elementwise_mul", {"X": g.output_grad("Out"), "Y": g.output("Out")})},
                 axes=[rank - 2, rank - 1])
    inverse_t = g.op("transpose", {"X": g.op("inverse", {"X": x})}, perm=_swap_last(rank))
    g.set_input_grad("X", g.op("elementwise_mul", {"X": scale, "Y": inverse_t}))


register_op("determinant", inputs="X", outputs="Out",
            kernel=lambda x: np.asarray(np.linalg.det(x), dtype=x.dtype),
            infer=_determinant_infer, grad=_determinant_grad,
            doc="The determinant of each square matrix in the last two axes.")


# ---------------------------------------------------------------- solve, cholesky, log |det|, pinv (fluidgrad.linalg)
def _t(g: GradBuilder, x):
    """x with its last two axes swapped."""
    return g.op("transpose", {"X": x}, perm=_swap_last(len(g.shape(x))))


def _solve_infer(ctx):
    a = _square_infer(ctx)
    b = ctx.shape("Y")
    if ctx.dtype("Y") != ctx.dtype("X"):
        raise ctx.dtype_error(f"X and Y must have one dtype, got {ctx.describe('X')} and {ctx.describe('Y')}")
    if len(b) != len(a) or (b[-2] != a[-1] and min(b[-2], a[-1]) >= 0) or \
            any(p != q and min(p, q) >= 0 for p, q in zip(a[:-2], b[:-2])):
        raise ctx.shape_error(f"solves X @ Out = Y for Y of shape [..., n, k] with X's batch axes and n rows, "
                              f"got {ctx.describe('X')} and {ctx.describe('Y')}")
    ctx.set_output("Out", b, ctx.dtype("Y"))


def _solve_grad(g: GradBuilder) -> None:
    """Out = X^-1 Y: dL/dY = X^-T dOut (one more solve), dL/dX = -dL/dY Out^T."""
    dy = g.op("solve", {"X": _t(g, g.input("X")), "Y": g.output_grad("Out")})
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", dy)
    if g.needs_input_grad("X"):
        g.set_input_grad("X", g.op("scale", {"X": g.op("matmul", {"X": dy, "Y": g.output("Out")}, transpose_y=True)},
                                   scale=-1.0))


register_op("solve", inputs=("X", "Y"), outputs="Out",
            kernel=lambda x, y: np.linalg.solve(x, y).astype(y.dtype), infer=_solve_infer, grad=_solve_grad,
            doc="Out with X @ Out = Y for square X (torch.linalg.solve with a matrix right-hand side).")


def _cholesky_kernel(x):
    """The lower factor of the symmetric part of x: the derivative is then the symmetric one
    PyTorch's backward gives (np.linalg.cholesky alone would read only the lower triangle)."""
    return np.linalg.cholesky((x + np.swapaxes(x, -1, -2)) / 2).astype(x.dtype)


def _cholesky_grad(g: GradBuilder) -> None:
    """dL/dA = sym(L^-T Phi(L^T dL) L^-1), Phi keeping the lower triangle with the diagonal halved
    (Murray 2016; PyTorch's cholesky_backward)."""
    lower = g.output("Out")
    product = g.op("matmul", {"X": lower, "Y": g.output_grad("Out")}, transpose_x=True)
    phi = g.op("scale", {"X": g.op("elementwise_add", {
        "X": g.op("tril_triu", {"X": product}, diagonal=0, lower=True),
        "Y": g.op("tril_triu", {"X": product}, diagonal=-1, lower=True)})}, scale=0.5)
    inverse = g.op("inverse", {"X": lower})
    grad = g.op("matmul", {"X": g.op("matmul", {"X": inverse, "Y": phi}, transpose_x=True), "Y": inverse})
    g.set_input_grad("X", g.op("scale", {"X": g.op("elementwise_add", {"X": grad, "Y": _t(g, grad)})}, scale=0.5))


register_op("cholesky", inputs="X", outputs="Out", kernel=_cholesky_kernel, infer=_inverse_infer,
            grad=_cholesky_grad,
            doc="The lower Cholesky factor L (L L^T = X) of each symmetric positive-definite matrix.")


def _log_abs_det_grad(g: GradBuilder) -> None:
    """d log|det X| / dX = X^-T."""
    x = g.input("X")
    rank = len(g.shape(x))
    scale = g.op("unsqueeze", {"X": g.output_grad("Out")}, axes=[rank - 2, rank - 1])
    g.set_input_grad("X", g.op("elementwise_mul", {"X": scale, "Y": _t(g, g.op("inverse", {"X": x}))}))


register_op("log_abs_det", inputs="X", outputs="Out",
            kernel=lambda x: np.asarray(np.linalg.slogdet(x)[1], dtype=x.dtype),
            infer=_determinant_infer, grad=_log_abs_det_grad,
            doc="log |det X| of each square matrix, without the overflow of det (slogdet's second part).")


def _pinv_infer(ctx):
    float_only(ctx, "X")
    if ctx.dtype("X") not in ("float32", "float64"):
        raise ctx.dtype_error(f"linear algebra in float32 or float64 only, got {ctx.describe('X')}")
    shape = ctx.shape("X")
    if len(shape) < 2:
        raise ctx.shape_error(f"expects matrices in the last two axes, got {ctx.describe('X')}")
    ctx.set_output("Out", list(shape[:-2]) + [shape[-1], shape[-2]], ctx.dtype("X"))


def _pinv_grad(g: GradBuilder) -> None:
    """For P = pinv(A) of constant rank (Golub & Pereyra): dL/dA = -P^T G P^T
    + (I - A P) G^T P P^T + P^T P G^T (I - P A), each (I - ...) applied as a subtraction."""
    a, p, dout = g.input("X"), g.output("Out"), g.output_grad("Out")

    def mm(x, y, tx=False, ty=False):
        return g.op("matmul", {"X": x, "Y": y}, transpose_x=tx, transpose_y=ty)

    def sub(x, y):
        return g.op("elementwise_sub", {"X": x, "Y": y})

    first = g.op("scale", {"X": mm(mm(p, dout, tx=True), p, ty=True)}, scale=-1.0)
    gt_p_pt = mm(mm(dout, p, tx=True), p, ty=True)                       # G^T P P^T
    second = sub(gt_p_pt, mm(a, mm(p, gt_p_pt)))
    pt_p_gt = mm(mm(p, p, tx=True), dout, ty=True)                       # P^T P G^T
    third = sub(pt_p_gt, mm(mm(pt_p_gt, p), a))
    g.set_input_grad("X", g.op("elementwise_add", {"X": g.op("elementwise_add", {"X": first, "Y": second}),
                                                   "Y": third}))


register_op("pinv", inputs="X", outputs="Out", attrs={"rcond": 1e-15},
            kernel=lambda x, rcond: np.linalg.pinv(x, rcond=rcond).astype(x.dtype),
            infer=_pinv_infer, grad=_pinv_grad,
            doc="The Moore-Penrose pseudo-inverse of each matrix in the last two axes (by SVD).")
