"""Exporters of ops ONNX has no single node for, written as the few nodes that compute them:
atan2 (Atan and quadrant fixes), erfinv (Wichura's rational approximation), isin (Equal and a
count), and of ops whose node arrived in a late opset or whose onnxruntime kernel is narrow
(eye: EyeLike; cumprod: CumProd from opset 26, a Scan of Mul before).

onnxruntime's CPU kernels decide some choices: it has no float64 Atan or Erf, and no float16
Where, so float64 atan2 refines a float32 angle with one step on Sin / Cos (float64 kernels),
erfinv needs no Erf at all, and float16 / bfloat16 are computed in float32 and rounded back
(every half value is a float32 value, so the answer is the correctly rounded one). onnxruntime's
Where returns +0 for a -0 it takes (1.32): the sign of a result that may be -0 is set last, by
multiplying its magnitude by +-1.
"""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from .export_ops import exporter
from .kernel_dtypes import kernel_dtype, write_in_kernel_dtype

_HALF = ("float16", "bfloat16")


def _const(c, value, dtype: str) -> str:
    return c.const(np.asarray(value, dtype))


def _in_float32(c, slots: tuple[str, ...], compute) -> None:
    """Out = compute(*inputs, dtype) in the inputs' float dtype; half precision through float32."""
    dtype = c.dtype_of("Out")
    work = "float32" if dtype in _HALF else dtype
    inputs = [c.x(s) if c.dtype_in(s) == work else c.cast(c.x(s), work) for s in slots]
    result = compute(*inputs, work)
    if work == dtype:
        c.node("Identity", [result], [c.out("Out")])
    else:
        c.node("Cast", [result], [c.out("Out")], to=c.onnx_dtype(dtype))


def _polynomial(c, t: str, coefficients: tuple[float, ...], dtype: str) -> str:
    """sum_k coefficients[k] t^k by Horner's rule."""
    value = _const(c, coefficients[-1], dtype)
    for a in reversed(coefficients[:-1]):
        value = c.node("Add", [c.node("Mul", [value, t]), _const(c, a, dtype)])
    return value


# ---------------------------------------------------------------- eye
# onnxruntime's EyeLike kernels; the other dtypes take the float32 identity through a Cast (exact)
_EYE_KERNELS = ("float32", "float64", "int32", "int64", "uint64")


@exporter("eye")
def _eye(c):
    """EyeLike of a zero [rows, columns] tensor (no initializer of rows x columns values)."""
    dtype = c.dtype_of("Out")
    rows, columns = c.shapes_out("Out")[0]
    work = dtype if dtype in _EYE_KERNELS else "float32"
    zeros = c.node("ConstantOfShape", [c.const(np.asarray([rows, columns], "int64"))],
                   value=numpy_helper.from_array(np.zeros([1], work)))
    if work == dtype:
        c.node("EyeLike", [zeros], [c.out("Out")], dtype=c.onnx_dtype(dtype))
    else:
        c.node("Cast", [c.node("EyeLike", [zeros], dtype=c.onnx_dtype(work))], [c.out("Out")],
               to=c.onnx_dtype(dtype))


# ---------------------------------------------------------------- atan2
def _sign_factor(c, v: str, dtype: str) -> str:
    """-1 where v is negative or -0, else 1."""
    negative = c.cast(_signbit(c, v, dtype), dtype)
    return c.node("Sub", [_const(c, 1, dtype), c.node("Add", [negative, negative])])


def _signbit(c, v: str, dtype: str) -> str:
    """Whether v is negative, -0 included (1 / -0 = -inf): the quadrant of a point on an axis."""
    zero = _const(c, 0, dtype)
    negative_zero = c.node("And", [c.node("Equal", [v, zero]),
                                   c.node("Less", [c.node("Reciprocal", [v]), zero])])
    return c.node("Or", [c.node("Less", [v, zero]), negative_zero])


def _atan2_nodes(c, x: str, y: str, dtype: str) -> str:
    """The angle of the point (y, x) as NumPy's arctan2, signed zeros, infinities and NaN
    included. Its magnitude: atan(|x| / |y|), or pi less that when y is negative or -0, on a point
    moved off infinity (an infinite coordinate becomes +-1 and a finite one beside it 0: the
    same angle; a NaN stays NaN); both zero: 0, or pi for y = -0. Its sign is always x's."""
    zero = _const(c, 0, dtype)
    sign = _sign_factor(c, x, dtype)
    x_inf, y_inf = c.node("IsInf", [x]), c.node("IsInf", [y])
    x, y = (c.node("Where", [v_inf, c.node("Sign", [v]), c.node("Where", [w_inf, c.node("Mul", [v, zero]), v])])
            for v, v_inf, w_inf in ((x, x_inf, y_inf), (y, y_inf, x_inf)))
    both_zero = c.node("And", [c.node("Equal", [x, zero]), c.node("Equal", [y, zero])])
    ratio = c.node("Div", [c.node("Abs", [x]), c.node("Abs", [y])])
    ratio = c.node("Where", [both_zero, zero, ratio])
    if dtype == "float64":   # onnxruntime has no float64 Atan: a float32 angle, refined below
        base = c.cast(c.node("Atan", [c.cast(ratio, "float32")]), "float64")
    else:
        base = c.node("Atan", [ratio])
    turned = c.node("Sub", [_const(c, np.pi, dtype), base])
    angle = c.node("Mul", [c.node("Where", [_signbit(c, y, dtype), turned, base]), sign])
    if dtype == "float64":
        angle = c.node("Mul", [c.node("Abs", [_refine_angle(c, angle, x, y)]), sign])
    return angle


def _refine_angle(c, angle: str, x: str, y: str) -> str:
    """One step from a float32 angle t of the finite point (y, x) to the float64 one: the error
    d satisfies tan d = (x cos t - y sin t) / (y cos t + x sin t), and d ~ 1e-7 makes tan d = d
    to double precision. Points with x = +-0 keep t (+-0 or +-pi: exact already)."""
    cos, sin = c.node("Cos", [angle]), c.node("Sin", [angle])
    across = c.node("Sub", [c.node("Mul", [x, cos]), c.node("Mul", [y, sin])])
    along = c.node("Add", [c.node("Mul", [y, cos]), c.node("Mul", [x, sin])])
    step_ok = c.node("Not", [c.node("Equal", [x, _const(c, 0, "float64")])])
    step = c.node("Div", [across, c.node("Where", [step_ok, along, _const(c, 1, "float64")])])
    return c.node("Where", [step_ok, c.node("Add", [angle, step]), angle])


@exporter("atan2")
def _atan2(c):
    _in_float32(c, ("X", "Y"), lambda x, y, dtype: _atan2_nodes(c, x, y, dtype))


# ---------------------------------------------------------------- erfinv
# Wichura's algorithm AS241 (PPND16, Applied Statistics 37 (1988) 477-484): the normal quantile
# to about 1e-16 relatively, as rational functions in three ranges; erfinv(y) = ndtri((1 + y) / 2)
# / sqrt(2). Coefficients from low to high degree; each denominator's constant term is 1.
_AS241_CENTRAL = ((3.3871328727963666080, 1.3314166789178437745e+2, 1.9715909503065514427e+3,
                   1.3731693765509461125e+4, 4.5921953931549871457e+4, 6.7265770927008700853e+4,
                   3.3430575583588128105e+4, 2.5090809287301226727e+3),
                  (1.0, 4.2313330701600911252e+1, 6.8718700749205790830e+2, 5.3941960214247511077e+3,
                   2.1213794301586595867e+4, 3.9307895800092710610e+4, 2.8729085735721942674e+4,
                   5.2264952788528545610e+3))
_AS241_NEAR = ((1.42343711074968357734, 4.63033784615654529590, 5.76949722146069140550,
                3.64784832476320460504, 1.27045825245236838258, 2.41780725177450611770e-1,
                2.27238449892691845833e-2, 7.74545014278341407640e-4),
               (1.0, 2.05319162663775882187, 1.67638483018380384940, 6.89767334985100004550e-1,
                1.48103976427480074590e-1, 1.51986665636164571966e-2, 5.47593808499534494600e-4,
                1.05075007164441684324e-9))
_AS241_FAR = ((6.65790464350110377720, 5.46378491116411436990, 1.78482653991729133580,
               2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
               2.71155556874348757815e-5, 2.01033439929228813265e-7),
              (1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2,
               7.86869131145613259100e-4, 1.84631831751005468180e-5, 1.42151175831644588870e-7,
               2.04426310338993978564e-15))


def _rational(c, t: str, pair: tuple, dtype: str) -> str:
    return c.node("Div", [_polynomial(c, t, pair[0], dtype), _polynomial(c, t, pair[1], dtype)])


def _erfinv_nodes(c, y: str, dtype: str) -> str:
    """On |y|, then y's sign: |y| <= 0.85: q R(0.180625 - q^2) with q = |y| / 2 (exact, so tiny y
    keep their digits); beyond: R(r - 1.6) or R(r - 5) with r = sqrt(-log((1 - |y|) / 2)), 1 - |y|
    being exact there. inf at |y| = 1, NaN beyond (the log of a negative number)."""
    size = c.node("Abs", [y])
    q = c.node("Mul", [size, _const(c, 0.5, dtype)])
    central = c.node("Mul", [q, _rational(c, c.node("Sub", [_const(c, 0.180625, dtype), c.node("Mul", [q, q])]),
                                          _AS241_CENTRAL, dtype)])
    tail_p = c.node("Mul", [c.node("Sub", [_const(c, 1, dtype), size]), _const(c, 0.5, dtype)])
    r = c.node("Sqrt", [c.node("Neg", [c.node("Log", [tail_p])])])
    near = _rational(c, c.node("Sub", [r, _const(c, 1.6, dtype)]), _AS241_NEAR, dtype)
    far = _rational(c, c.node("Sub", [r, _const(c, 5.0, dtype)]), _AS241_FAR, dtype)
    tail = c.node("Where", [c.node("LessOrEqual", [r, _const(c, 5.0, dtype)]), near, far])
    tail = c.node("Where", [c.node("Equal", [size, _const(c, 1, dtype)]), _const(c, np.inf, dtype), tail])
    normal = c.node("Where", [c.node("LessOrEqual", [size, _const(c, 0.85, dtype)]), central, tail])
    return c.node("Mul", [normal, c.node("Mul", [_sign_factor(c, y, dtype), _const(c, 1 / np.sqrt(2.0), dtype)])])


@exporter("erfinv")
def _erfinv(c):
    _in_float32(c, ("X",), lambda y, dtype: _erfinv_nodes(c, y, dtype))


# ---------------------------------------------------------------- isin
@exporter("isin")
def _isin(c):
    """Each element of X against every element of TestX (Equal broadcast to X's shape + [n]),
    counted: in when the count is positive. Memory |X| x |TestX| bools; NaN is in nothing
    (NaN != NaN), -0 matches 0, as np.isin."""
    rank = len(c.shape_in("X"))
    x = c.node("Unsqueeze", [c.x("X"), c.const(np.asarray([rank], "int64"))])
    tests = c.node("Reshape", [c.x("TestX"), c.const(np.asarray([-1], "int64"))])
    matches = c.cast(c.node("Equal", [x, tests]), "int32")
    count = c.node("ReduceSum", [matches, c.const(np.asarray([rank], "int64"))], keepdims=0)
    compare = "Equal" if c.attr("invert") else "Greater"
    c.node(compare, [count, c.const(np.asarray(0, "int32"))], [c.out("Out")])


# ---------------------------------------------------------------- cumprod
CUMPROD_OPSET = 26


@exporter("cumprod")
def _cumprod(c):
    """CumProd from opset 26; before, a Scan along the axis carrying the running product."""
    axis = int(c.attr("axis")) % max(len(c.shape_in("X")), 1)
    exclusive, reverse = bool(c.attr("exclusive")), bool(c.attr("reverse"))
    if c.opset >= CUMPROD_OPSET:
        write_in_kernel_dtype(c, "CumProd", lambda x, out: c.node(
            "CumProd", [x, c.const(np.asarray(axis, "int64"))], out, exclusive=int(exclusive), reverse=int(reverse)))
    else:
        dtype = kernel_dtype("CumProd", c.dtype_of("Out"))    # what write_in_kernel_dtype hands over
        write_in_kernel_dtype(c, "CumProd", lambda x, out: _cumprod_scan(c, x, out, dtype, axis, exclusive, reverse))


def _cumprod_scan(c, x: str, out: list[str] | None, dtype: str, axis: int, exclusive: bool, reverse: bool) -> str:
    """Scan over x's slices along `axis` (in reverse when asked), state = the product so far,
    starting at ones of a slice's shape (read at run time: the other axes may be dynamic)."""
    rank = len(c.shape_in("X"))
    others = c.const(np.asarray([a for a in range(rank) if a != axis], "int64"))
    slice_shape = c.node("Gather", [c.node("Shape", [x]), others], axis=0)
    ones = c.node("ConstantOfShape", [slice_shape], value=numpy_helper.from_array(np.ones([1], dtype)))
    names = [c.exporter.fresh(n) for n in ("product_in", "slice", "product", "product_out", "running")]
    product_in, piece, product, product_out, running = names
    elem = c.onnx_dtype(dtype)
    body = helper.make_graph(
        [helper.make_node("Mul", [product_in, piece], [product]),
         helper.make_node("Identity", [product], [product_out]),
         helper.make_node("Identity", [product_in if exclusive else product], [running])],
        c.exporter.fresh("cumprod_body"),
        [helper.make_tensor_value_info(product_in, elem, None), helper.make_tensor_value_info(piece, elem, None)],
        [helper.make_tensor_value_info(product_out, elem, None), helper.make_tensor_value_info(running, elem, None)])
    direction = [int(reverse)]
    outputs = [c.exporter.fresh("cumprod_total")] + (out if out is not None else [c.exporter.fresh("cumprod")])
    c.node("Scan", [ones, x], outputs, body=body, num_scan_inputs=1, scan_input_axes=[axis],
           scan_output_axes=[axis], scan_input_directions=direction, scan_output_directions=direction)
    return outputs[1]
