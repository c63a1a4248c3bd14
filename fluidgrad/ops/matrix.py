"""Square-matrix ops over the last two axes: inverse (paddle.inverse) and determinant
(paddle.linalg.det, ONNX Det). Gradients are made of matmul, transpose and inverse, so
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
