"""Converters for elementwise maths, activations, reductions and matrix products."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..tensor.linalg import _explicit_equation
from .convert_common import axes_input, binary, cast, full, mul_scalar, normalize_axes, via_float
from .convert_table import converter

# ---------------------------------------------------------------- unary
_UNARY = {
    "Abs": "abs", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Relu": "relu", "Sigmoid": "sigmoid",
    "Tanh": "tanh", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan",
    "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh", "Erf": "erf",
    "Floor": "floor", "Ceil": "ceil", "Round": "round", "Reciprocal": "reciprocal", "Sign": "sign",
    "Softplus": "softplus", "HardSwish": "hardswish", "Mish": "mish",
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


_FOLDABLE = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
             "less_equal": np.less_equal, "greater_equal": np.greater_equal}


def _binary(op_type: str, ctx: Any) -> Any:
    a, b = ctx.maybe_const(0), ctx.maybe_const(1)
    if op_type in _FOLDABLE and a is not None and b is not None and \
            all(v.dtype.kind in "iub" and v.size <= 64 for v in (a, b)):
        return _FOLDABLE[op_type](a, b)  # shape arithmetic (a GQA head-count test), folded
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


@converter("HardSigmoid")
def _hard_sigmoid(ctx):
    """clip(alpha * x + beta, 0, 1)."""
    x = ctx.input(0)
    line = binary(ctx, "elementwise_add", mul_scalar(ctx, x, float(ctx.attr("alpha", 0.2))),
                  ctx.scalar(float(ctx.attr("beta", 0.5)), x.dtype))
    return ctx.op("clip", {"X": line}, min=0.0, max=1.0)


@converter("Selu")
def _selu(ctx):
    """gamma * elu(x, alpha), with ONNX's default constants."""
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    return mul_scalar(ctx, ctx.op("elu", {"X": ctx.input(0)}, alpha=alpha), gamma)


@converter("Celu")
def _celu(ctx):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) = alpha * elu(x / alpha, 1)."""
    alpha = float(ctx.attr("alpha", 1.0))
    return mul_scalar(ctx, ctx.op("elu", {"X": mul_scalar(ctx, ctx.input(0), 1.0 / alpha)}, alpha=1.0), alpha)


@converter("ThresholdedRelu")
def _thresholded_relu(ctx):
    """x where x > alpha, else 0."""
    x = ctx.input(0)
    above = ctx.op("greater_than", {"X": x, "Y": ctx.scalar(float(ctx.attr("alpha", 1.0)), x.dtype)})
    return ctx.op("where", {"Condition": above, "X": x, "Y": ctx.op("fill_zeros_like", {"X": x})})


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
    axes = normalize_axes(axes, len(x.shape))
    if op_type in _EMPTY_IDENTITY and any(x.shape[a] == 0 for a in axes):
        return _empty_reduction(ctx, op_type, x, axes, keepdims)
    if op_type == "reduce_prod":  # one axis at a time, the last first (so the others keep their place)
        out = x
        for axis in sorted(axes, reverse=True):
            out = ctx.op(op_type, {"X": out}, axis=axis, keepdim=keepdims)
        return cast(ctx, out, x.dtype)
    return ctx.op(op_type, {"X": x}, axis=axes, keepdim=keepdims)


def _identity_value(op_type: str, dtype: str) -> float:
    """What max / min / prod of no elements is (ONNX: the reduction's identity element)."""
    if op_type == "reduce_prod":
        return 1.0
    low = op_type == "reduce_max"
    if dtype == "bool":
        return 0.0 if low else 1.0
    if dtype.startswith("float"):
        return -np.inf if low else np.inf
    info = np.iinfo(dtype)
    return float(info.min if low else info.max)


_EMPTY_IDENTITY = ("reduce_max", "reduce_min", "reduce_prod")


def _empty_reduction(ctx: Any, op_type: str, x: Any, axes: list[int], keepdims: bool) -> Any:
    """A reduction over axes that hold no elements: its identity, in the output's shape."""
    shape = [1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes]
    return full(ctx, shape, _identity_value(op_type, x.dtype), x.dtype)


def _reduction(op_type: str, attr_until: int, pre: Any = None, post: Any = None):
    """An ONNX Reduce*: its output keeps the input's dtype (fluidgrad sums integers into int64, and
    averages floats only: an integer mean is taken in float64 and truncated, as onnxruntime does)."""
    def convert(ctx):
        x = ctx.input(0)
        dtype = x.dtype
        if op_type == "reduce_mean" and not dtype.startswith("float"):
            x = cast(ctx, x, "float64")
        if pre is not None:
            x = pre(ctx, x)
        out = _reduce(ctx, op_type, x, attr_until)
        return cast(ctx, post(ctx, out) if post is not None else out, dtype)
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
    out = x
    for axis in sorted(set(axes), reverse=True):
        out = ctx.op("reduce_prod", {"X": out}, axis=axis, keepdim=keepdims)
    return cast(ctx, out, x.dtype)  # fluidgrad multiplies integers into int64; ONNX keeps the dtype
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
    if any(x.shape[a] == 0 for a in axes):  # log(sum of no exps) = log 0
        shape = [1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes]
        return full(ctx, shape, -np.inf, x.dtype)
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
    operands = ctx.inputs()
    equation = _explicit_equation(ctx.attr("equation"), [len(v.shape) for v in operands])
    return ctx.op("einsum", {"Operands": operands}, equation=equation)



@converter("Shrink")
def _shrink(ctx):
    """x + bias below -lambd, x - bias above lambd, 0 between (made of where, so differentiable)."""
    x = ctx.input(0)
    lambd, bias = float(ctx.attr("lambd", 0.5)), float(ctx.attr("bias", 0.0))

    def build(v):
        zero = ctx.op("fill_zeros_like", {"X": v})
        low = ctx.op("less_than", {"X": v, "Y": ctx.scalar(-lambd, v.dtype)})
        high = ctx.op("greater_than", {"X": v, "Y": ctx.scalar(lambd, v.dtype)})
        upper = ctx.op("where", {"Condition": high, "X": binary(ctx, "elementwise_sub", v, ctx.scalar(bias, v.dtype)),
                                 "Y": zero})
        return ctx.op("where", {"Condition": low, "X": binary(ctx, "elementwise_add", v, ctx.scalar(bias, v.dtype)),
                                "Y": upper})
    return via_float(ctx, x, build)


@converter("Softsign")
def _softsign(ctx):
    """x / (1 + |x|), made of registered ops (differentiable twice)."""
    x = ctx.input(0)
    denominator = binary(ctx, "elementwise_add", ctx.op("abs", {"X": x}), ctx.scalar(1.0, x.dtype))
    return binary(ctx, "elementwise_div", x, denominator)


@converter("Det", since=11)
def _det(ctx):
    return ctx.op("determinant", {"X": ctx.input(0)})


@converter("LRN")
def _lrn(ctx):
    """x / (bias + alpha / size * (sum of x^2 over a window of channels))^beta: the window sum is
    a sum of shifted slices of the zero-padded squares (made of registered ops)."""
    x = ctx.input(0)
    size = int(ctx.attr("size"))
    alpha, beta, bias = float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75)), float(ctx.attr("bias", 1.0))
    channels = x.shape[1]
    if channels < 0:
        raise ctx.unsupported(f"LRN over an unknown number of channels in {list(x.shape)}")
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    paddings = [0] * (2 * len(x.shape))
    paddings[2], paddings[3] = before, after
    squares = ctx.op("pad", {"X": binary(ctx, "elementwise_mul", x, x)}, paddings=paddings, mode="constant",
                     value=0.0)
    windows = [ctx.op("slice", {"X": squares}, axes=[1], starts=[k], ends=[k + channels]) for k in range(size)]
    total = functools.reduce(lambda a, b: binary(ctx, "elementwise_add", a, b), windows)
    base = binary(ctx, "elementwise_add", mul_scalar(ctx, total, alpha / size), ctx.scalar(bias, x.dtype))
    return binary(ctx, "elementwise_div", x, binary(ctx, "elementwise_pow", base, ctx.scalar(beta, x.dtype)))
