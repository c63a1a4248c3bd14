"""Arithmetic ops: elementwise binary ops with NumPy broadcasting, matmul, scale, sum, casts."""
from __future__ import annotations

import numpy as np

from ..framework import dtypes
from ..framework.variable import normalize_dtype
from . import cast_formats
from .grad_builder import GradBuilder
from .outer import outer
from .reduce import block_sum
from .registry import NO_GRADIENT, ZERO_GRADIENT, register_op
from .shape_rules import (
    binary_broadcast,
    broadcast_shapes,
    float_only,
    same_as,
    same_dtype,
)


# ---------------------------------------------------------------- elementwise binary
def _add_grad(g: GradBuilder):
    dout = g.output_grad("Out")
    g.set_input_grad("X", dout)
    g.set_input_grad("Y", dout)


def _sub_grad(g: GradBuilder):
    dout = g.output_grad("Out")
    g.set_input_grad("X", dout)
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", g.op("scale", {"X": dout}, scale=-1.0))


def _mul_grad(g: GradBuilder):
    # each input is read only where it is needed, so eager mode keeps X alive only when Y
    # needs a gradient, and Y only when X does (eager/saved.py)
    dout = g.output_grad("Out")
    if g.needs_input_grad("X"):
        g.set_input_grad("X", g.op("elementwise_mul", {"X": dout, "Y": g.input("Y")}))
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", g.op("elementwise_mul", {"X": dout, "Y": g.input("X")}))


def _div_grad(g: GradBuilder):
    y, out, dout = g.input("Y"), g.output("Out"), g.output_grad("Out")
    dx = g.op("elementwise_div", {"X": dout, "Y": y})
    g.set_input_grad("X", dx)
    if g.needs_input_grad("Y"):
        # d(x/y)/dy = -out / y, so dy = -dx * out
        g.set_input_grad("Y", g.op("scale", {"X": g.op("elementwise_mul", {"X": dx, "Y": out})}, scale=-1.0))


def _pow_grad(g: GradBuilder):
    x, y, out, dout = g.input("X"), g.input("Y"), g.output("Out"), g.output_grad("Out")
    if g.needs_input_grad("X"):
        # d(x^y)/dx = y x^(y-1); where y = 0 take y x^0 = 0, never 0 * x^-1 = 0 * inf at x = 0
        y_nonzero = g.op("cast", {"X": g.op("not_equal", {"X": y, "Y": g.op("fill_zeros_like", {"X": y})})},
                         dtype=g.dtype(y))
        exponent = g.op("elementwise_sub", {"X": y, "Y": y_nonzero})
        dpow = g.op("elementwise_mul", {"X": y, "Y": g.op("elementwise_pow", {"X": x, "Y": exponent})})
        g.set_input_grad("X", g.op("elementwise_mul", {"X": dout, "Y": dpow}))
    if g.needs_input_grad("Y"):
        # d(x^y)/dy = x^y log x, which is 0 (not 0 * -inf) at x = 0: take log(1) there, as PyTorch does
        at_zero = g.op("cast", {"X": g.op("equal", {"X": x, "Y": g.op("fill_zeros_like", {"X": x})})},
                       dtype=g.dtype(x))
        log_x = g.op("log", {"X": g.op("elementwise_add", {"X": x, "Y": at_zero})})
        dlog = g.op("elementwise_mul", {"X": out, "Y": log_x})
        g.set_input_grad("Y", g.op("elementwise_mul", {"X": dout, "Y": dlog}))


def _div_infer(ctx):
    """True division, as in PyTorch: bool and integer inputs give the default float dtype."""
    dtype = same_dtype(ctx, "X", "Y")
    shape = broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"),
                             lambda: f"{ctx.describe('X')} with {ctx.describe('Y')}")
    ctx.set_output("Out", shape, dtypes.true_divide_dtype(dtype))


def _true_divide(x, y):
    if x.dtype.kind == "f":
        return x / y
    return np.true_divide(x, y, dtype=dtypes.true_divide_dtype(x.dtype.name))


def _power(x, y):
    """x ** y; integers to negative integer powers as PyTorch gives them (NumPy refuses): 1 ** -n
    is 1, (-1) ** -n is +-1, any other base gives 0 (the truncated reciprocal)."""
    if x.dtype.kind not in "iu" or not (y < 0).any():
        return np.power(x, y)
    negative = y < 0
    out = np.power(x, np.where(negative, 0, y))
    odd = (np.abs(y) % 2).astype(bool)
    at_negative = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)).astype(out.dtype)
    return np.where(negative, at_negative, out)


def _no_bool(rule, what):
    """`rule`, refusing bool inputs as PyTorch does (`what`: the operation it refuses)."""
    def infer(ctx):
        for slot in ("X", "Y"):
            if ctx.has_input(slot) and ctx.dtype(slot) == "bool":
                raise ctx.dtype_error(f"{what} of bool values is not supported, got {ctx.describe(slot)}; "
                                      f"use logical_xor / logical_not, or cast to an integer dtype first")
        rule(ctx)
    return infer


register_op("elementwise_add", inputs="X Y", outputs="Out", kernel=np.add, inline="{X} + {Y}",
            infer=binary_broadcast(), grad=_add_grad)
register_op("elementwise_sub", inputs="X Y", outputs="Out", kernel=np.subtract, inline="{X} - {Y}",
            infer=_no_bool(binary_broadcast(), "subtraction"), grad=_sub_grad)
register_op("elementwise_mul", inputs="X Y", outputs="Out", kernel=np.multiply, inline="{X} * {Y}",
            infer=binary_broadcast(), grad=_mul_grad)
register_op("elementwise_div", inputs="X Y", outputs="Out", kernel=_true_divide,
            infer=_div_infer, grad=_div_grad)
register_op("elementwise_pow", inputs="X Y", outputs="Out", kernel=_power,
            infer=_no_bool(binary_broadcast(), "power"), grad=_pow_grad)


def _elementwise_max_grad(g: GradBuilder) -> None:
    _select_grad(g, "greater_than")


register_op("elementwise_max", inputs="X Y", outputs="Out", kernel=np.maximum,
            infer=binary_broadcast(), grad=_elementwise_max_grad)


def _elementwise_min_grad(g: GradBuilder) -> None:
    _select_grad(g, "less_than")


register_op("elementwise_min", inputs="X Y", outputs="Out", kernel=np.minimum,
            infer=binary_broadcast(), grad=_elementwise_min_grad)


def _select_grad(g: GradBuilder, compare):
    """max/min: the gradient goes to the input that won; a tie splits it in half (as PyTorch
    does, and as central differences measure), like reduce_max sharing among equal elements."""
    x, y, dout = g.input("X"), g.input("Y"), g.output_grad("Out")
    dtype = g.dtype(x)
    won = g.op("cast", {"X": g.op(compare, {"X": x, "Y": y})}, dtype=dtype)
    tie = g.op("cast", {"X": g.op("equal", {"X": x, "Y": y})}, dtype=dtype)
    share = g.op("elementwise_add", {"X": won, "Y": g.op("scale", {"X": tie}, scale=0.5)})
    g.set_input_grad("X", _share_of(g, dout, share))
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", _share_of(g, dout, g.op("scale", {"X": share}, scale=-1.0, bias=1.0)))


def _share_of(g: GradBuilder, dout, share):
    """DOut * share where share > 0, else 0 (selected, so an inf DOut gives torch's 0 to the input
    that lost, never inf * 0 = nan)."""
    zeros = g.op("fill_zeros_like", {"X": share})
    taken = g.op("greater_than", {"X": share, "Y": zeros})
    scaled = g.op("elementwise_mul", {"X": dout, "Y": share})
    return g.op("where", {"Condition": taken, "X": scaled, "Y": g.op("fill_zeros_like", {"X": scaled})})


# ---------------------------------------------------------------- comparisons and logic
def _compare(name, fn, symbol):
    register_op(name, inputs="X Y", outputs="Out", kernel=fn, inline=f"{{X}} {symbol} {{Y}}",
                infer=binary_broadcast("bool"), grad=NO_GRADIENT)


_compare("less_than", np.less, "<")
_compare("less_equal", np.less_equal, "<=")
_compare("greater_than", np.greater, ">")
_compare("greater_equal", np.greater_equal, ">=")
_compare("equal", np.equal, "==")
_compare("not_equal", np.not_equal, "!=")


def _logic_infer(ctx):
    for slot in ("X", "Y"):
        if ctx.has_input(slot) and ctx.dtype(slot) != "bool":
            raise ctx.dtype_error(f"expects bool inputs, got {ctx.describe(slot)}")
    shape = ctx.shape("X")
    if ctx.has_input("Y"):
        shape = broadcast_shapes(ctx, shape, ctx.shape("Y"),
                                 lambda: f"{ctx.describe('X')} with {ctx.describe('Y')}")
    ctx.set_output("Out", shape, "bool")


register_op("logical_and", inputs="X Y", outputs="Out", kernel=np.logical_and, infer=_logic_infer,
            grad=NO_GRADIENT)
register_op("logical_or", inputs="X Y", outputs="Out", kernel=np.logical_or, infer=_logic_infer,
            grad=NO_GRADIENT)
register_op("logical_xor", inputs="X Y", outputs="Out", kernel=np.logical_xor, infer=_logic_infer,
            grad=NO_GRADIENT)
register_op("logical_not", inputs="X", outputs="Out", kernel=np.logical_not, infer=_logic_infer,
            grad=NO_GRADIENT)


# ---------------------------------------------------------------- matmul
def _matmul_kernel(x, y, transpose_x=False, transpose_y=False):
    if x.dtype.kind == "V":  # bfloat16 (ml_dtypes): NumPy's matmul answers float32; round back
        return _matmul_kernel(x.astype(np.float32), y.astype(np.float32), transpose_x, transpose_y).astype(x.dtype)
    if transpose_x and x.ndim > 1:
        x = np.swapaxes(x, -1, -2)
    if transpose_y and y.ndim > 1:
        y = np.swapaxes(y, -1, -2)
    if x.ndim >= 2 and y.ndim >= 2 and x.shape[-1] == 1:
        # an outer product (a weight gradient at batch 1): OpenBLAS's K=1 GEMM is 10-20x slower
        # than einsum's outer loop (benchmarks/bench_matmul.py); batches broadcast-multiply
        if x.ndim == 2 and y.ndim == 2:
            return outer(x[:, 0], y[0])
        return np.multiply(x, y)
    if x.ndim > 2 and y.ndim == 2:
        # a stack of rows times one matrix (linear on [batch, seq, features]): one GEMM, not
        # one per batch entry; only when the rows are contiguous (else reshape would copy)
        rows = x.reshape(-1, x.shape[-1]) if x.flags.c_contiguous else None
        if rows is not None:
            return np.matmul(rows, y).reshape(x.shape[:-1] + y.shape[-1:])
    return np.matmul(x, y)


_BLAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def matmul_into(out: np.ndarray, inputs: dict, transpose_x: bool = False,
                transpose_y: bool = False) -> np.ndarray | None:
    """The 2-D product `_matmul_kernel` makes, written into `out` (the same GEMM call, so the
    same bits), and `out` returned; None where the kernel takes another road (vectors,
    batches, K=1 outer products, other dtypes) or `out` does not fit."""
    x, y = inputs["X"], inputs["Y"]
    if not (type(x) is np.ndarray and type(y) is np.ndarray and x.ndim == 2 and y.ndim == 2
            and x.dtype in _BLAS_DTYPES and y.dtype == x.dtype == out.dtype
            and out.flags.c_contiguous and out.flags.writeable):
        return None
    a, b = (x.T if transpose_x else x), (y.T if transpose_y else y)
    if a.shape[1] != b.shape[0] or a.shape[1] == 1 or out.shape != (a.shape[0], b.shape[1]):
        return None
    return np.matmul(a, b, out=out)


def _matmul_infer(ctx):
    float_only(ctx, "X", "Y")
    dtype = ctx.dtype("X")
    if ctx.dtype("Y") != dtype:
        raise ctx.dtype_error(f"inputs must have one dtype, got {ctx.describe('X')} and {ctx.describe('Y')}")
    x, y = list(ctx.shape("X")), list(ctx.shape("Y"))
    if not x or not y:
        raise ctx.shape_error(f"needs at least 1-D inputs, got {ctx.describe('X')} and {ctx.describe('Y')}")
    if ctx.attr("transpose_x") and len(x) > 1:
        x[-1], x[-2] = x[-2], x[-1]
    if ctx.attr("transpose_y") and len(y) > 1:
        y[-1], y[-2] = y[-2], y[-1]
    x_vec, y_vec = len(x) == 1, len(y) == 1
    if x_vec:
        x = [1] + x
    if y_vec:
        y = y + [1]
    k1, k2 = x[-1], y[-2]
    if k1 != k2 and k1 != -1 and k2 != -1:
        raise ctx.shape_error(
            f"inner dimensions differ: {ctx.describe('X')} (transpose_x={ctx.attr('transpose_x')}) "
            f"cannot multiply {ctx.describe('Y')} (transpose_y={ctx.attr('transpose_y')}): {k1} != {k2}")
    batch = broadcast_shapes(ctx, x[:-2], y[:-2],
                             lambda: f"batch dims of {ctx.describe('X')} and {ctx.describe('Y')}")
    out = list(batch) + ([] if x_vec else [x[-2]]) + ([] if y_vec else [y[-1]])
    ctx.set_output("Out", out, dtype)


def _matmul_grad(g: GradBuilder):
    x, y, dout = g.input("X"), g.input("Y"), g.output_grad("Out")
    if len(g.shape(x)) == 1 or len(g.shape(y)) == 1:
        _matmul_vector_grad(g, x, y, dout)
        return
    tx, ty = g.attr("transpose_x"), g.attr("transpose_y")
    if len(g.shape(x)) > 2 and len(g.shape(y)) == 2 and not tx and -1 not in (g.shape(x)[-1], g.shape(dout)[-1]):
        _matmul_rows_grad(g, x, y, dout, ty)
        return
    dx, dy = _matmul_grad_2d(g, x, y, dout, tx, ty)
    g.set_input_grad("X", dx)
    g.set_input_grad("Y", dy)


def _matmul_rows_grad(g: GradBuilder, x, y, dout, ty):
    """[..., M, K] @ [K, N]: the weight gradient is one GEMM over all rows, not a batch of
    GEMMs summed afterwards (linear on [batch, seq, features])."""
    if g.needs_input_grad("X"):
        g.set_input_grad("X", g.op("matmul", {"X": dout, "Y": y}, transpose_y=not ty))
    if g.needs_input_grad("Y"):
        rows = g.op("reshape", {"X": x}, shape=[-1, g.shape(x)[-1]])
        drows = g.op("reshape", {"X": dout}, shape=[-1, g.shape(dout)[-1]])
        if ty:
            g.set_input_grad("Y", g.op("matmul", {"X": drows, "Y": rows}, transpose_x=True))
        else:
            g.set_input_grad("Y", g.op("matmul", {"X": rows, "Y": drows}, transpose_x=True))


def _matmul_vector_grad(g: GradBuilder, x, y, dout):
    """A vector operand is a one-row (X) or one-column (Y) matrix whose extra axis is dropped:
    promote it, use the matrix rule, and squeeze the gradient back. The builder then sums
    any batch dimensions away (a vector times a batch of matrices)."""
    x_vec, y_vec = len(g.shape(x)) == 1, len(g.shape(y)) == 1
    tx = g.attr("transpose_x") and not x_vec  # the kernel ignores transposing a vector
    ty = g.attr("transpose_y") and not y_vec
    if x_vec:
        x = g.op("unsqueeze", {"X": x}, axes=[0])
    if y_vec:
        y = g.op("unsqueeze", {"X": y}, axes=[1])
    dout = g.op("unsqueeze", {"X": dout}, axes=[0, 1] if x_vec and y_vec else [-2] if x_vec else [-1])
    dx, dy = _matmul_grad_2d(g, x, y, dout, tx, ty)
    if dx is not None and x_vec:
        dx = g.op("squeeze", {"X": dx}, axes=[-2])
    if dy is not None and y_vec:
        dy = g.op("squeeze", {"X": dy}, axes=[-1])
    g.set_input_grad("X", dx)
    g.set_input_grad("Y", dy)


def _matmul_grad_2d(g: GradBuilder, x, y, dout, tx, ty):
    dx = dy = None
    if g.needs_input_grad("X"):
        if tx:
            dx = g.grad_op("X", "matmul", {"X": y, "Y": dout}, transpose_x=ty, transpose_y=True)
        else:
            dx = g.grad_op("X", "matmul", {"X": dout, "Y": y}, transpose_y=not ty)
    if g.needs_input_grad("Y"):
        if ty:
            dy = g.grad_op("Y", "matmul", {"X": dout, "Y": x}, transpose_x=True, transpose_y=tx)
        else:
            dy = g.grad_op("Y", "matmul", {"X": x, "Y": dout}, transpose_x=not tx)
    return dx, dy


register_op("matmul", inputs="X Y", outputs="Out", attrs={"transpose_x": False, "transpose_y": False},
            kernel=_matmul_kernel, infer=_matmul_infer, grad=_matmul_grad)


# ---------------------------------------------------------------- scale, sum, assign, cast
def _scale_kernel(x, scale=1.0, bias=0.0, bias_after_scale=True):
    if x.dtype == np.float16:  # as PyTorch: compute in float32, round once
        return _scale_kernel(x.astype(np.float32), scale, bias, bias_after_scale).astype(np.float16)
    if x.dtype.kind in "iu" and float(scale).is_integer() and float(bias).is_integer():
        # exact integer arithmetic (no rounding through float64); the factors wrap into x's
        # dtype as PyTorch's do (uint8 - 2 is uint8 + 254, modulo 256)
        scale, bias = wrap_integer(scale, x.dtype), wrap_integer(bias, x.dtype)
    if bias_after_scale:
        out = x * scale + bias if bias else x * scale
    else:
        out = (x + bias) * scale
    # integers stay integers (truncated), as the shape rule declares; floats keep their width
    return out if out.dtype == x.dtype else out.astype(x.dtype)


def _scale_infer(ctx):
    """The output keeps X's dtype (Paddle's scale); for integer X that holds only for integral
    scale and bias: anything else would silently truncate, so it is refused (x * 2.5 promotes)."""
    if dtypes.dtype_kind(ctx.dtype("X")) == dtypes.INTEGER:
        for attr in ("scale", "bias"):
            if not float(ctx.attr(attr)).is_integer():
                raise ctx.dtype_error(f"{attr} {ctx.attr(attr)} on integer {ctx.describe('X')} would truncate; "
                                      f"cast X to a float dtype first (x * {ctx.attr(attr)} does, as in PyTorch)")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _scale_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("scale", {"X": g.output_grad("Out")},
                               scale=g.attr("scale")))


register_op("scale", inputs="X", outputs="Out",
            attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True},
            kernel=_scale_kernel, infer=_no_bool(_scale_infer, "scaling (or negation)"),
            grad=_scale_grad)


def _sum_kernel(xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def _sum_infer(ctx):
    shapes, dtypes = ctx.shapes("X"), ctx.dtypes("X")
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        if dtype != dtypes[0]:
            raise ctx.dtype_error(f"inputs must share one dtype: {ctx.describe('X', 0)} vs {ctx.describe('X', i)}")
        if len(shape) != len(shapes[0]) or any(a != b and a != -1 and b != -1 for a, b in zip(shape, shapes[0])):
            raise ctx.shape_error(f"inputs must share one shape: {ctx.describe('X', 0)} vs {ctx.describe('X', i)}")
    ctx.set_output("Out", shapes[0], dtypes[0])


def _sum_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", [g.output_grad("Out")] * len(g.input_like("X")))


register_op("sum", inputs="X*", outputs="Out", kernel=_sum_kernel, infer=_sum_infer,
            grad=_sum_grad,
            doc="Adds any number of same-shaped inputs; the backward builder uses it for shared gradients.")


def _assign_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.output_grad("Out"))


register_op("assign", inputs="X", outputs="Out", kernel=lambda x: x, inline="{X}", infer=same_as(),
            grad=_assign_grad,
            doc="Copies X. Arrays are never written in place, so the executor aliases instead of copying.")


def _cast_infer(ctx):
    ctx.set_output("Out", ctx.shape("X"), normalize_dtype(ctx.attr("dtype")))


def _cast_grad(g: GradBuilder):
    x = g.input_like("X")
    g.set_input_grad("X", g.op("cast", {"X": g.output_grad("Out")}, dtype=g.dtype(x)))


register_op("cast", inputs="X", outputs="Out", attrs={"dtype": "float32", "saturate": True, "round_mode": "up"},
            kernel=cast_formats.cast, infer=_cast_infer, grad=_cast_grad,
            doc="Converts X to `dtype`. `saturate` and `round_mode` follow ONNX's Cast for the float8 formats "
                "(see cast_formats.py); other dtypes convert as NumPy's astype.")


# ---------------------------------------------------------------- broadcasting helpers
def _reduce_as_kernel(x, target):
    """Sum `x` down to `target`'s shape: the transpose of NumPy broadcasting (bool and integers
    accumulate in int64, as every sum does: dtypes.accumulate_dtype)."""
    if x.dtype.kind != "f":
        x = x.astype(dtypes.accumulate_dtype(x.dtype.name))
    if x.shape == target.shape:
        return x
    if x.ndim < target.ndim:  # e.g. a 0-D gradient for a [1, 1] input
        x = x.reshape((1,) * (target.ndim - x.ndim) + x.shape)
    lead = x.ndim - target.ndim
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(target.shape)
                                      if d == 1 and x.shape[i + lead] != 1)
    if not axes:
        return x.reshape(target.shape)
    fast = block_sum(x, axes)   # e.g. a conv bias's gradient: two BLAS products
    if fast is not None:
        return fast.reshape(target.shape)
    return x.sum(axis=axes, keepdims=True).reshape(target.shape)


def _expand_as_kernel(x, target):
    if x.shape == target.shape:
        return x
    if x.ndim > target.ndim and all(d == 1 for d in x.shape[:x.ndim - target.ndim]):
        x = x.reshape(x.shape[x.ndim - target.ndim:])  # the transpose of reduce_as adding axes
    return np.broadcast_to(x, target.shape)


def _like_target(ctx):
    ctx.set_output("Out", ctx.shape("Target"), ctx.dtype("X"))


def _reduce_as_infer(ctx):
    ctx.set_output("Out", ctx.shape("Target"), dtypes.accumulate_dtype(ctx.dtype("X")))


def _reduce_as_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("expand_as", {"X": g.output_grad("Out"),
                                             "Target": g.input_like("X")}))


register_op("reduce_as", inputs="X Target", outputs="Out", kernel=_reduce_as_kernel, infer=_reduce_as_infer,
            grad=_reduce_as_grad,
            doc="Sums a broadcast gradient back to the shape of Target.")


def _expand_as_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("reduce_as", {"X": g.output_grad("Out"),
                                             "Target": g.input_like("X")}))


register_op("expand_as", inputs="X Target", outputs="Out", kernel=_expand_as_kernel, infer=_like_target,
            grad=_expand_as_grad,
            doc="Broadcasts X to the shape of Target.")


# ---------------------------------------------------------------- constants
def wrap_integer(value, dtype):
    """An integral Python number as a scalar of integer `dtype`, wrapping modulo 2**bits like
    PyTorch (NumPy refuses a Python integer out of the dtype's range)."""
    return np.array(int(value), dtype=np.int64 if int(value) < 2 ** 63 else np.uint64).astype(dtype)


def _fill_constant_kernel(shape_tensor=None, shape=(1,), value=0.0, dtype="float32"):
    if shape_tensor is not None:  # sizes computed at run time (zeros([x.shape[0], 3]) while tracing)
        shape = [int(d) for d in np.asarray(shape_tensor).reshape(-1)]
        if any(d < 0 for d in shape):
            raise ValueError(f"fill_constant: the ShapeTensor's value {shape} at run time has a negative size")
    if np.dtype(dtype).kind in "iu" and float(value).is_integer():
        value = wrap_integer(value, dtype)
    return np.full(shape, value, dtype=dtype)


def _fill_constant_infer(ctx):
    """`shape` gives the sizes; with a ShapeTensor (sizes computed at run time), those known
    when the program is built and -1 for the others."""
    if ctx.has_input("ShapeTensor"):
        shape = ctx.attr("shape")
        if not ctx.dtype("ShapeTensor").startswith(("int", "uint")) or len(ctx.shape("ShapeTensor")) != 1 or \
                ctx.shape("ShapeTensor")[0] not in (-1, len(shape)):
            raise ctx.shape_error(f"ShapeTensor must be a 1-D integer tensor with {len(shape)} entries (one per "
                                  f"entry of shape {list(shape)}), got {ctx.describe('ShapeTensor')}")
    ctx.set_output("Out", ctx.attr("shape"), normalize_dtype(ctx.attr("dtype")))


register_op("fill_constant", inputs="ShapeTensor?", outputs="Out", attrs={"shape": [1], "value": 0.0, "dtype": "float32"},
            kernel=_fill_constant_kernel, infer=_fill_constant_infer, grad=NO_GRADIENT)


def _fill_like_infer(ctx):
    dtype = ctx.attr("dtype")
    ctx.set_output("Out", ctx.shape("X"), normalize_dtype(dtype) if dtype else ctx.dtype("X"))


def _fill_zeros_like_kernel(x, dtype):
    """No value for no value: X is None only for an output of a branch that did not run, and the
    gradient fed for it then reaches only control-flow grad ops, which read None as zero."""
    return None if x is None else np.zeros(x.shape, dtype=dtype or x.dtype)


register_op("fill_zeros_like", inputs="X", outputs="Out", attrs={"dtype": None},
            kernel=_fill_zeros_like_kernel, infer=_fill_like_infer,
            grad=ZERO_GRADIENT,  # constant in X: the gradient is a (symbolic) zero
            doc="Zeros shaped like X; the backward builder feeds it where no gradient flows.")
register_op("fill_any_like", inputs="X", outputs="Out", attrs={"value": 0.0, "dtype": None},
            kernel=lambda x, value, dtype: np.full(x.shape, value, dtype=dtype or x.dtype),
            infer=_fill_like_infer, grad=ZERO_GRADIENT)
