"""Converters for elementwise maths, activations, reductions and matrix products."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .convert_common import axes_input, binary, cast, mul_scalar, normalize_axes, via_float
from .convert_table import converter

# ---------------------------------------------------------------- unary
_UNARY = {
    "Abs": "abs", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Relu": "relu", "Sigmoid": "sigmoid",
    "Tanh": "tanh", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan",
    "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh", "Erf": "erf",
    "Floor": "floor", "Ceil": "ceil", "Round": "round", "Reciprocal": "reciprocal", "Sign": "sign",
    "Softplus": "softplus", "Softsign": "softsign", "HardSwish": "hardswish", "Mish": "mish",
    "BitwiseNot": "bitwise_not",
}
_INT_OK = {"Abs", "Sign", "Relu"}  # also defined on integers: through float64


def _unary(op_type: str, ctx: Any) -> Any:
    x = ctx.input(0)
    if op_type in _INT_OK:
        return via_float(ctx, x, lambda v: ctx.op(op_type, {"X": v}))
    return ctx.op(op_type, {"X": x})


for _onnx, _ours in _UNARY.items():
    converter(_onnx)(functools.partial(_unary, _ours))


@converter("Neg")
def _neg(ctx):
    x = ctx.input(0)
    return binary(ctx, "elementwise_sub", ctx.op("fill_zeros_like", {"X": x}), x)


@converter("Not")
def _not(ctx):
    return ctx.op("logical_not", {"X": ctx.input(0)})


@converter("Identity")
def _identity(ctx):
    const = ctx.maybe_const(0)
    return const if const is not None else ctx.op("assign", {"X": ctx.input(0)})


@converter("IsNaN")
def _isnan(ctx):
    x = ctx.input(0)
    return ctx.op("not_equal", {"X": x, "Y": x})


@converter("IsInf")
def _isinf(ctx):
    x = ctx.input(0)
    pos, neg = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    checks = []
    if pos:
        checks.append(ctx.op("equal", {"X": x, "Y": ctx.scalar(np.inf, x.dtype)}))
    if neg:
        checks.append(ctx.op("equal", {"X": x, "Y": ctx.scalar(-np.inf, x.dtype)}))
    if not checks:  # nothing detected: all false
        return ctx.op("logical_and", {"X": ctx.op("equal", {"X": x, "Y": x}), "Y": ctx.op("not_equal", {"X": x, "Y": x})})
    return checks[0] if len(checks) == 1 else ctx.op("logical_or", {"X": checks[0], "Y": checks[1]})


# ---------------------------------------------------------------- binary
_BINARY = {"Add": "elementwise_add", "Sub": "elementwise_sub", "Mul": "elementwise_mul",
           "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor",
           "Equal": "equal", "Less": "less_than", "Greater": "greater_than",
           "LessOrEqual": "less_equal", "GreaterOrEqual": "greater_equal",
           "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}


def _binary(op_type: str, ctx: Any) -> Any:
    return binary(ctx, op_type, ctx.input(0), ctx.input(1))


for _onnx, _ours in _BINARY.items():
    converter(_onnx)(functools.partial(_binary, _ours))


@converter("Div")
def _div(ctx):
    x, y = ctx.input(0), ctx.input(1)
    out = binary(ctx, "elementwise_div", x, y)
    return cast(ctx, out, x.dtype)  # integer division truncates, as in C


@converter("Pow")
def _pow(ctx):
    x, y = ctx.input(0), ctx.input(1)
    if not x.dtype.startswith("float"):
        return cast(ctx, binary(ctx, "elementwise_pow", cast(ctx, x, "float64"), cast(ctx, y, "float64")), x.dtype)
    return binary(ctx, "elementwise_pow", x, cast(ctx, y, x.dtype))


@converter("Mod")
def _mod(ctx):
    op_type = "elementwise_fmod" if ctx.attr("fmod", 0) else "elementwise_mod"
    return binary(ctx, op_type, ctx.input(0), ctx.input(1))


def _variadic(op_type: str, ctx: Any) -> Any:
    values = ctx.inputs()
    return functools.reduce(lambda a, b: binary(ctx, op_type, a, b), values[1:], values[0]) \
        if len(values) > 1 else ctx.op("assign", {"X": values[0]})


converter("Max")(functools.partial(_variadic, "elementwise_max"))
converter("Min")(functools.partial(_variadic, "elementwise_min"))
converter("Sum")(functools.partial(_variadic, "elementwise_add"))


@converter("Mean")
def _mean(ctx):
    total = _variadic("elementwise_add", ctx)
    return binary(ctx, "elementwise_div", total, ctx.scalar(len(ctx.inputs()), total.dtype))


# ---------------------------------------------------------------- activations
@converter("LeakyRelu")
def _leaky_relu(ctx):
    return ctx.op("leaky_relu", {"X": ctx.input(0)}, alpha=float(ctx.attr("alpha", 0.01)))


@converter("Elu")
def _elu(ctx):
    return ctx.op("elu", {"X": ctx.input(0)}, alpha=float(ctx.attr("alpha", 1.0)))


@converter("Gelu")
def _gelu(ctx):
    return ctx.op("gelu", {"X": ctx.input(0)}, approximate=ctx.attr("approximate", "none") == "tanh")


@converter("PRelu")
def _prelu(ctx):
    x, slope = ctx.input(0), ctx.input(1)
    zero = ctx.scalar(0.0, x.dtype)
    positive = binary(ctx, "elementwise_max", x, zero)
    negative = binary(ctx, "elementwise_min", x, zero)
    return binary(ctx, "elementwise_add", positive, binary(ctx, "elementwise_mul", negative, slope))


@converter("Clip")
def _clip(ctx):
    x = ctx.input(0)
    if ctx.opset < 11:
        low, high = ctx.attr("min", -np.inf), ctx.attr("max", np.inf)
    else:
        low = float(ctx.const(1, "minimum")) if ctx.has_input(1) else -np.inf
        high = float(ctx.const(2, "maximum")) if ctx.has_input(2) else np.inf
    if low > high:  # ONNX: every value becomes max
        return binary(ctx, "elementwise_add", ctx.op("fill_zeros_like", {"X": x}), ctx.scalar(high, x.dtype))
    return via_float(ctx, x, lambda v: ctx.op("clip", {"X": v}, min=float(low), max=float(high)))


def _softmax_like(op_type: str, ctx: Any) -> Any:
    x = ctx.input(0)
    rank = len(x.shape)
    if ctx.opset >= 13:
        return ctx.op(op_type, {"X": x}, axis=int(ctx.attr("axis", -1)))
    axis = normalize_axes([ctx.attr("axis", 1)], rank)[0]
    if axis == rank - 1:
        return ctx.op(op_type, {"X": x}, axis=-1)
    outer = int(np.prod(x.shape[:axis])) if all(d >= 0 for d in x.shape[:axis]) else -1
    flat = ctx.op("reshape", {"X": x}, shape=[outer, -1] if outer >= 0 else [-1, int(np.prod(x.shape[axis:]))])
    return ctx.op("reshape_as", {"X": ctx.op(op_type, {"X": flat}, axis=-1), "Target": x})


converter("Softmax")(functools.partial(_softmax_like, "softmax"))
converter("LogSoftmax")(functools.partial(_softmax_like, "log_softmax"))


# ---------------------------------------------------------------- reductions
def _reduce_axes(ctx: Any, attr_until: int) -> tuple[list[int] | None, bool]:
    axes = axes_input(ctx, attr_until)
    if axes == []:
        axes = None
    keepdims = bool(ctx.attr("keepdims", 1))
    return axes, keepdims


def _reduce(ctx: Any, op_type: str, x: Any, attr_until: int) -> Any:
    axes, keepdims = _reduce_axes(ctx, attr_until)
    if axes is None and ctx.attr("noop_with_empty_axes", 0) and ctx.opset >= attr_until:
        return ctx.op("assign", {"X": x})
    if axes is None:
        axes = list(range(len(x.shape)))
    return ctx.op(op_type, {"X": x}, axis=normalize_axes(axes, len(x.shape)), keepdim=keepdims)


def _reduction(op_type: str, attr_until: int, pre: Any = None, post: Any = None):
    def convert(ctx):
        x = ctx.input(0)
        if pre is not None:
            x = pre(ctx, x)
        out = _reduce(ctx, op_type, x, attr_until)
        return post(ctx, out) if post is not None else out
    return convert


def _square(ctx, x):
    return binary(ctx, "elementwise_mul", x, x)


converter("ReduceSum")(_reduction("reduce_sum", 13))
converter("ReduceMean")(_reduction("reduce_mean", 18))
converter("ReduceMax")(_reduction("reduce_max", 18))
converter("ReduceMin")(_reduction("reduce_min", 18))
@converter("ReduceProd")
def _reduce_prod(ctx):
    """fluidgrad's reduce_prod takes one axis: one op per axis, the highest first."""
    x = ctx.input(0)
    axes, keepdims = _reduce_axes(ctx, 18)
    if axes is None and ctx.attr("noop_with_empty_axes", 0) and ctx.opset >= 18:
        return ctx.op("assign", {"X": x})
    axes = normalize_axes(axes if axes is not None else range(len(x.shape)), len(x.shape))
    for axis in sorted(set(axes), reverse=True):
        x = ctx.op("reduce_prod", {"X": x}, axis=axis, keepdim=keepdims)
    return x
converter("ReduceSumSquare")(_reduction("reduce_sum", 18, pre=_square))
converter("ReduceL1")(_reduction("reduce_sum", 18, pre=lambda ctx, x: via_float(
    ctx, x, lambda v: ctx.op("abs", {"X": v}))))
converter("ReduceL2")(_reduction("reduce_sum", 18, pre=_square, post=lambda ctx, s: via_float(
    ctx, s, lambda v: ctx.op("sqrt", {"X": v}))))
converter("ReduceLogSum")(_reduction("reduce_sum", 18, post=lambda ctx, s: ctx.op("log", {"X": s})))


@converter("ReduceLogSumExp")
def _reduce_log_sum_exp(ctx):
    x = ctx.input(0)
    axes, keepdims = _reduce_axes(ctx, 18)
    if axes is None and ctx.attr("noop_with_empty_axes", 0) and ctx.opset >= 18:
        return ctx.op("assign", {"X": x})
    axes = normalize_axes(axes if axes is not None else range(len(x.shape)), len(x.shape))
    peak = ctx.op("reduce_max", {"X": x}, axis=axes, keepdim=True)
    peak = binary(ctx, "elementwise_add", ctx.op("fill_zeros_like", {"X": peak}), peak)
    shifted = ctx.op("exp", {"X": binary(ctx, "elementwise_sub", x, peak)})
    total = ctx.op("log", {"X": ctx.op("reduce_sum", {"X": shifted}, axis=axes, keepdim=True)})
    out = binary(ctx, "elementwise_add", total, peak)
    return out if keepdims else ctx.op("squeeze", {"X": out}, axes=axes)


# ---------------------------------------------------------------- products
@converter("MatMul")
def _matmul(ctx):
    x, y = ctx.input(0), ctx.input(1)
    return via_float(ctx, x, lambda v: ctx.op("matmul", {"X": v, "Y": cast(ctx, y, v.dtype)}))


@converter("Gemm")
def _gemm(ctx):
    a, b = ctx.input(0), ctx.input(1)
    product = ctx.op("matmul", {"X": a, "Y": b}, transpose_x=bool(ctx.attr("transA", 0)),
                     transpose_y=bool(ctx.attr("transB", 0)))
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if alpha != 1.0:
        product = mul_scalar(ctx, product, alpha)
    if not ctx.has_input(2):
        return product
    c = ctx.input(2)
    if beta != 1.0:
        c = mul_scalar(ctx, c, beta)
    return binary(ctx, "elementwise_add", product, c)


@converter("Einsum")
def _einsum(ctx):
    return ctx.op("einsum", {"Operands": ctx.inputs()}, equation=ctx.attr("equation").replace(" ", ""))

