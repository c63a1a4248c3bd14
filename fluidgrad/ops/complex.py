"""Complex values as pairs of real ones: `real`, `imag`, `complex` (from real and imaginary
parts), `conj`, and the gradient of `abs` for complex inputs.

Gradients follow PyTorch's convention for a real loss L of a complex z = x + iy: the gradient
of z is dL/dx + i dL/dy. Then every linear map's gradient is its adjoint (conjugate transpose),
`real`'s is `complex(g, 0)`, `complex`'s is `(real(g), imag(g))`, and `abs`'s is g z / |z|.
Gradients are written with these ops, so they differentiate again."""
from __future__ import annotations

import numpy as np

from ..framework.dtypes import COMPLEX_OF, REAL_OF
from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import broadcast_shapes


def complex_only(ctx, slot: str = "X") -> str:
    """The complex dtype of `slot`, refusing real ones."""
    dtype = ctx.dtype(slot)
    if dtype not in REAL_OF:
        raise ctx.dtype_error(f"expects a complex input (complex64 or complex128), got {ctx.describe(slot)}")
    return dtype


def real_only(ctx, slot: str = "X") -> str:
    """The float32 / float64 dtype of `slot` (those with a complex counterpart)."""
    dtype = ctx.dtype(slot)
    if dtype not in COMPLEX_OF:
        raise ctx.dtype_error(f"expects float32 or float64 input, got {ctx.describe(slot)}")
    return dtype


def _part_infer(ctx):
    ctx.set_output("Out", ctx.shape("X"), REAL_OF[complex_only(ctx)])


def _zeros(g: GradBuilder, like):
    return g.op("fill_zeros_like", {"X": like})


def _real_grad(g: GradBuilder) -> None:
    dout = g.output_grad("Out")
    g.set_input_grad("X", g.op("complex", {"X": dout, "Y": _zeros(g, dout)}))


def _imag_grad(g: GradBuilder) -> None:
    dout = g.output_grad("Out")
    g.set_input_grad("X", g.op("complex", {"X": _zeros(g, dout), "Y": dout}))


def _complex_infer(ctx):
    dtype = real_only(ctx, "X")
    if ctx.dtype("Y") != dtype:
        raise ctx.dtype_error(f"the real and imaginary parts must have one dtype, got {ctx.describe('X')} and "
                              f"{ctx.describe('Y')}")
    shape = broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"), lambda: f"{ctx.describe('X')} with {ctx.describe('Y')}")
    ctx.set_output("Out", shape, COMPLEX_OF[dtype])


def _complex_kernel(x, y):
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), COMPLEX_OF[x.dtype.name])
    out.real, out.imag = x, y
    return out


def _complex_grad(g: GradBuilder) -> None:
    dout = g.output_grad("Out")
    if g.needs_input_grad("X"):
        g.set_input_grad("X", g.op("real", {"X": dout}))
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", g.op("imag", {"X": dout}))


def _conj_infer(ctx):
    ctx.set_output("Out", ctx.shape("X"), complex_only(ctx))


def _conj_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("conj", {"X": g.output_grad("Out")}))


register_op("real", inputs="X", outputs="Out", kernel=lambda x: np.ascontiguousarray(x.real), infer=_part_infer,
            grad=_real_grad, doc="The real part of a complex tensor (float32 / float64).")
register_op("imag", inputs="X", outputs="Out", kernel=lambda x: np.ascontiguousarray(x.imag), infer=_part_infer,
            grad=_imag_grad, doc="The imaginary part of a complex tensor.")
register_op("complex", inputs="X Y", outputs="Out", kernel=_complex_kernel, infer=_complex_infer,
            grad=_complex_grad, doc="X + iY from real X and Y of one dtype (broadcast together).")
register_op("conj", inputs="X", outputs="Out", kernel=np.conj, infer=_conj_infer, grad=_conj_grad,
            doc="The complex conjugate.")


def complex_abs_grad(g: GradBuilder) -> None:
    """|z|' applied to a real g: g z / |z|, as complex(g x / |z|, g y / |z|); 0 at z = 0 (as PyTorch)."""
    z, out, dout = g.input("X"), g.output("Out"), g.output_grad("Out")
    at_zero = g.op("cast", {"X": g.op("equal", {"X": out, "Y": _zeros(g, out)})}, dtype=g.dtype(out))
    weight = g.op("elementwise_div", {"X": dout, "Y": g.op("elementwise_add", {"X": out, "Y": at_zero})})
    parts = [g.op("elementwise_mul", {"X": weight, "Y": g.op(part, {"X": z})}) for part in ("real", "imag")]
    g.set_input_grad("X", g.op("complex", {"X": parts[0], "Y": parts[1]}))

