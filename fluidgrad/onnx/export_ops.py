"""More op exporters: activations, elementwise math, reductions and scans, indexing and shape
ops, interpolate, attention_softmax. export_table.py merges this module's EXPORTERS into its own.

Where the installed opset lacks a single node (Gelu before 20, Mish before 18, BitwiseAnd
before 18), the op is written as the few nodes that compute it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .kernel_dtypes import kernel_dtype, write_in_kernel_dtype

Exporter = Callable[[Any], None]
EXPORTERS: dict[str, Exporter] = {}


def exporter(*op_types: str) -> Callable[[Exporter], Exporter]:
    """Register `fn` as the exporter of `op_types` (the one table export_table.py also fills)."""
    def register(fn: Exporter) -> Exporter:
        for op_type in op_types:
            if op_type in EXPORTERS:
                raise ValueError(f"op {op_type} has two ONNX exporters: {EXPORTERS[op_type].__name__} and {fn.__name__}")
            EXPORTERS[op_type] = fn
        return fn
    return register

_INT_MAX = np.iinfo(np.int64).max


def _c(c, value, dtype=None):
    return c.const(np.asarray(value, dtype or c.dtype_in("X")))


def _i64(c, values):
    return c.const(np.asarray(values, "int64"))


# ---------------------------------------------------------------- activations and elementwise math
@exporter("elu")
def _elu(c):
    c.node("Elu", [c.x("X")], [c.out("Out")], alpha=float(c.attr("alpha")))


@exporter("gelu")
def _gelu(c):
    approximate = bool(c.attr("approximate"))
    if c.opset >= 20:
        c.node("Gelu", [c.x("X")], [c.out("Out")], approximate="tanh" if approximate else "none")
        return
    x = c.x("X")
    if approximate:   # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = c.node("Mul", [c.node("Mul", [x, x]), x])
        inner = c.node("Mul", [c.node("Add", [x, c.node("Mul", [cube, _c(c, 0.044715)])]),
                               _c(c, np.sqrt(2.0 / np.pi))])
        gate = c.node("Tanh", [inner])
    else:             # 0.5 x (1 + erf(x / sqrt(2)))
        gate = c.node("Erf", [c.node("Mul", [x, _c(c, 1.0 / np.sqrt(2.0))])])
    half = c.node("Mul", [x, _c(c, 0.5)])
    c.node("Mul", [half, c.node("Add", [gate, _c(c, 1.0)])], [c.out("Out")])


@exporter("hardswish")
def _hardswish(c):
    c.node("HardSwish", [c.x("X")], [c.out("Out")])


@exporter("mish")
def _mish(c):
    if c.opset >= 18:
        c.node("Mish", [c.x("X")], [c.out("Out")])
    else:
        c.node("Mul", [c.x("X"), c.node("Tanh", [c.node("Softplus", [c.x("X")])])], [c.out("Out")])


@exporter("silu")
def _silu(c):
    c.node("Mul", [c.x("X"), c.node("Sigmoid", [c.x("X")])], [c.out("Out")])


@exporter("log_sigmoid")
def _log_sigmoid(c):
    c.node("Neg", [c.node("Softplus", [c.node("Neg", [c.x("X")])])], [c.out("Out")])


@exporter("logit")
def _logit(c):
    x = c.x("X")
    c.node("Log", [c.node("Div", [x, c.node("Sub", [_c(c, 1.0), x])])], [c.out("Out")])


@exporter("expm1")
def _expm1(c):
    c.node("Sub", [c.node("Exp", [c.x("X")]), _c(c, 1.0)], [c.out("Out")])


@exporter("log1p")
def _log1p(c):
    c.node("Log", [c.node("Add", [c.x("X"), _c(c, 1.0)])], [c.out("Out")])


@exporter("log2", "log10")
def _log_base(c):
    base = 2.0 if c.op.type == "log2" else 10.0
    c.node("Div", [c.node("Log", [c.x("X")]), _c(c, np.log(base))], [c.out("Out")])


@exporter("rsqrt")
def _rsqrt(c):
    c.node("Reciprocal", [c.node("Sqrt", [c.x("X")])], [c.out("Out")])


@exporter("round")
def _round(c):
    c.node("Round", [c.x("X")], [c.out("Out")])


@exporter("trunc")
def _trunc(c):
    x = c.x("X")
    c.node("Mul", [c.node("Sign", [x]), c.node("Floor", [c.node("Abs", [x])])], [c.out("Out")])


def _as_float(c, name: str) -> str:
    """Integers cannot be NaN or infinite; IsNaN / IsInf take only floats."""
    return name if c.dtype_in("X").startswith("float") else c.cast(name, "float64")


@exporter("isnan", "isinf")
def _isnan(c):
    c.node({"isnan": "IsNaN", "isinf": "IsInf"}[c.op.type], [_as_float(c, c.x("X"))], [c.out("Out")])


@exporter("isfinite")
def _isfinite(c):
    x = _as_float(c, c.x("X"))
    c.node("Not", [c.node("Or", [c.node("IsNaN", [x]), c.node("IsInf", [x])])], [c.out("Out")])


@exporter("prelu")
def _prelu(c):
    alpha = c.x("Alpha")
    x_rank, a_shape = len(c.shape_in("X")), list(c.shape_in("Alpha"))
    if len(a_shape) == 1 and x_rank > 2 and a_shape[0] != 1:   # one slope per channel (axis 1)
        alpha = c.node("Reshape", [alpha, _i64(c, [a_shape[0]] + [1] * (x_rank - 2))])
    c.node("PRelu", [c.x("X"), alpha], [c.out("Out")])


@exporter("elementwise_fmod")
def _fmod(c):
    c.node("Mod", [c.x("X"), c.x("Y")], [c.out("Out")], fmod=1)


@exporter("elementwise_mod")
def _mod(c):
    """Python's remainder (the divisor's sign): Mod for integers, x - floor(x / y) y for floats."""
    if not c.dtype_in("X").startswith("float"):
        c.node("Mod", [c.x("X"), c.x("Y")], [c.out("Out")], fmod=0)
        return
    x, y = c.x("X"), c.x("Y")
    c.node("Sub", [x, c.node("Mul", [c.node("Floor", [c.node("Div", [x, y])]), y])], [c.out("Out")])


@exporter("elementwise_floordiv")
def _floordiv(c):
    x, y = c.x("X"), c.x("Y")
    if c.dtype_in("X").startswith("float"):
        c.node("Floor", [c.node("Div", [x, y])], [c.out("Out")])
    else:   # (x - mod(x, y)) / y is exact: ONNX's integer Div truncates
        c.node("Div", [c.node("Sub", [x, c.node("Mod", [x, y], fmod=0)]), y], [c.out("Out")])


def _bitwise(c, onnx_type: str, logical: str):
    inputs = [c.x("X")] + ([c.x("Y")] if c.has("Y") else [])
    if c.dtype_in("X") == "bool":
        c.node(logical, inputs, [c.out("Out")])
    elif c.opset >= 18:
        c.node(onnx_type, inputs, [c.out("Out")])
    else:
        raise c.refuse(f"{onnx_type} on integers before opset 18")


EXPORTERS["bitwise_and"] = lambda c: _bitwise(c, "BitwiseAnd", "And")
EXPORTERS["bitwise_or"] = lambda c: _bitwise(c, "BitwiseOr", "Or")
EXPORTERS["bitwise_xor"] = lambda c: _bitwise(c, "BitwiseXor", "Xor")
EXPORTERS["bitwise_not"] = lambda c: _bitwise(c, "BitwiseNot", "Not")


# ---------------------------------------------------------------- reductions and scans
def reduce_axes(c):
    rank = len(c.shape_in("X"))
    axis = c.attr("axis")
    if axis is None or axis == [] or (c.op.has_attr("reduce_all") and c.attr("reduce_all")):
        return list(range(rank))
    return sorted(int(a) % max(rank, 1) for a in (axis if isinstance(axis, (list, tuple)) else [axis]))


def reduce_node(c, onnx_type: str, x: str, axes: list[int], out: list[str] | None = None) -> str:
    keep = int(bool(c.attr("keepdim")))
    since = 13 if onnx_type == "ReduceSum" else 18
    if not axes:
        return c.node("Identity", [x], out)
    if c.opset >= since:
        return c.node(onnx_type, [x, _i64(c, axes)], out, keepdims=keep)
    return c.node(onnx_type, [x], out, axes=axes, keepdims=keep)


@exporter("logsumexp")
def _logsumexp(c):
    reduce_node(c, "ReduceLogSumExp", c.x("X"), reduce_axes(c), [c.out("Out")])


@exporter("reduce_all", "reduce_any")
def _reduce_bool(c):
    """all / any as the min / max of `X != 0` as int32 (ONNX reduces no bools). The test comes first:
    cast straight to int32, -3 would count as false for any, 0.5 as false for all."""
    x = c.x("X")
    if c.dtype_in("X") != "bool":
        x = c.node("Not", [c.node("Equal", [x, c.const(np.asarray(0, c.dtype_in("X")))])])
    as_int = c.cast(x, "int32")
    kind = "ReduceMin" if c.op.type == "reduce_all" else "ReduceMax"
    c.node("Cast", [reduce_node(c, kind, as_int, reduce_axes(c))], [c.out("Out")], to=c.onnx_dtype("bool"))


@exporter("p_norm")
def _p_norm(c):
    p, axes = float(c.attr("porder")), reduce_axes(c)
    if p == 2.0:
        reduce_node(c, "ReduceL2", c.x("X"), axes, [c.out("Out")])
    elif p == 1.0:
        reduce_node(c, "ReduceL1", c.x("X"), axes, [c.out("Out")])
    elif np.isinf(p):
        reduce_node(c, "ReduceMax", c.node("Abs", [c.x("X")]), axes, [c.out("Out")])
    else:
        powered = c.node("Pow", [c.node("Abs", [c.x("X")]), _c(c, p)])
        c.node("Pow", [reduce_node(c, "ReduceSum", powered, axes), _c(c, 1.0 / p)], [c.out("Out")])


@exporter("cumsum")
def _cumsum(c):
    axis, flags = _i64(c, int(c.attr("axis"))), dict(exclusive=int(bool(c.attr("exclusive"))),
                                                     reverse=int(bool(c.attr("reverse"))))
    write_in_kernel_dtype(c, "CumSum", lambda x, out: c.node("CumSum", [x, axis], out, **flags))


@exporter("logcumsumexp")
def _logcumsumexp(c):
    """ONNX has no running log-add: out_i = m_i + Log(sum over j <= i of Exp(x_j - m_i)) with m_i the
    running maximum, both from an [n, n] lower-triangular table along the axis (exact, n^2 memory).
    An axis of unknown length: one shift by the axis' largest value (prefixes more than ~88 in float32
    below it become -inf)."""
    x, shape = c.x("X"), c.shape_in("X")
    if not shape:
        c.node("Identity", [x], [c.out("Out")])
        return
    axis = int(c.attr("axis")) % len(shape)
    n = shape[axis]

    def reduce(kind, v, axes, keep):
        if c.opset >= 18 or kind == "ReduceSum":
            return c.node(kind, [v, _i64(c, axes)], keepdims=keep)
        return c.node(kind, [v], axes=axes, keepdims=keep)

    def shift_of(peak):
        return c.node("Where", [c.node("IsInf", [peak]), _c(c, 0.0), peak])
    if n < 0:
        shift = shift_of(reduce("ReduceMax", x, [axis], 1))
        running = c.node("CumSum", [c.node("Exp", [c.node("Sub", [x, shift])]), _i64(c, axis)])
        c.node("Add", [c.node("Log", [running]), shift], [c.out("Out")])
        return
    below = c.const(np.tril(np.ones((n, n), bool)).reshape([n, n] + [1] * (len(shape) - 1 - axis)))
    columns = c.node("Unsqueeze", [x, _i64(c, [axis])])               # [.., i (1), j, ..]: x_j
    shift = shift_of(reduce("ReduceMax", c.node("Where", [below, columns, _c(c, -np.inf)]), [axis + 1], 0))
    gaps = c.node("Sub", [columns, c.node("Unsqueeze", [shift, _i64(c, [axis + 1])])])
    terms = c.node("Where", [below, c.node("Exp", [gaps]), _c(c, 0.0)])
    c.node("Add", [c.node("Log", [reduce("ReduceSum", terms, [axis + 1], 0)]), shift], [c.out("Out")])


@exporter("einsum")
def _einsum(c):
    """ONNX's Einsum broadcasts only ellipsis axes: an operand whose index has size 1 where the
    others' is larger is first Expanded to that size (the same sum: its entries repeat)."""
    equation = str(c.attr("equation"))
    subscripts = equation.partition("->")[0].split(",")
    names = c.op.input("Operands")
    shapes = [tuple(c.var(n).shape) for n in names]
    operands = [_einsum_broadcast(c, x, subs, shape, subscripts, shapes)
                for x, subs, shape in zip(c.xs("Operands"), subscripts, shapes)]
    c.node("Einsum", operands, [c.out("Out")], equation=equation)


def _einsum_broadcast(c, x: str, subs: str, shape: tuple, subscripts: list[str], shapes: list[tuple]) -> str:
    """x Expanded over its size-1 indices to the size another operand has there (read from that
    operand's Shape when it is known only at run time); x itself when none broadcasts."""
    pieces, grows = [], False
    for letter, size in zip(subs, shape):
        wider = [(s[k], j) for j, (t, s) in enumerate(zip(subscripts, shapes)) for k, l in enumerate(t)
                 if l == letter and s[k] != 1]
        if size != 1 or not wider:
            pieces.append(_i64(c, [1]))
            continue
        grows = True
        known, j = max(wider)
        if known != -1:
            pieces.append(_i64(c, [known]))
        else:
            axis = subscripts[j].index(letter)
            pieces.append(c.node("Slice", [c.node("Shape", [c.xs("Operands")[j]]), _i64(c, [axis]),
                                           _i64(c, [axis + 1])]))
    return c.node("Expand", [x, c.node("Concat", pieces, axis=0)]) if grows else x


@exporter("arg_max", "arg_min")
def _arg(c):
    onnx_type = "ArgMax" if c.op.type == "arg_max" else "ArgMin"
    x = c.x("X")
    work = kernel_dtype(onnx_type, c.dtype_in("X"))
    if work != c.dtype_in("X"):  # bool or int16: widened, the order kept
        x = c.cast(x, work)
    axis = c.attr("axis")
    if axis is None:   # over the flattened tensor
        x, axis = c.node("Reshape", [x, _i64(c, [-1])]), 0
    keep = int(bool(c.attr("keepdim")))
    out = c.node(onnx_type, [x], axis=int(axis), keepdims=keep,
                 select_last_index=int(bool(c.attr("select_last_index"))))
    if c.attr("axis") is None and keep:
        out = c.node("Reshape", [out, _i64(c, [1] * len(c.shape_in("X")))])
    c.node("Cast", [out], [c.out("Out")], to=c.onnx_dtype(c.dtype_of("Out")))


@exporter("top_k")
def _top_k(c):
    c.node("TopK", [c.x("X"), _i64(c, [int(c.attr("k"))])], [c.out("Out"), c.out("Indices")],
           axis=int(c.attr("axis")), largest=int(bool(c.attr("largest"))), sorted=int(bool(c.attr("sorted"))))


@exporter("argsort")
def _argsort(c):
    axis = int(c.attr("axis"))
    size = c.shape_in("X")[axis]
    if size < 0:
        raise c.refuse("argsort along an axis of unknown size")
    c.node("TopK", [c.x("X"), _i64(c, [size])], [c.out("Out"), c.out("Indices")], axis=axis,
           largest=int(bool(c.attr("descending"))), sorted=1)


# ---------------------------------------------------------------- shapes and indexing
@exporter("expand")
def _expand(c):
    if c.op.input("ShapeTensor"):  # sizes computed at run time; a -1 (keep X's size) is Expand's 1
        sizes = c.x("ShapeTensor")
        if c.dtype_in("ShapeTensor") != "int64":
            sizes = c.node("Cast", [sizes], to=c.onnx_dtype("int64"))
        kept = c.node("Equal", [sizes, _i64(c, [-1])])
        c.node("Expand", [c.x("X"), c.node("Where", [kept, _i64(c, [1]), sizes])], [c.out("Out")])
        return
    shape = [int(d) for d in c.attr("shape")]
    x_shape = c.shape_in("X")
    lead = len(shape) - len(x_shape)
    resolved = [1 if d == -1 else d for d in shape]   # -1 keeps X's size: broadcasting 1 does that
    if any(d == -1 and i < lead for i, d in enumerate(shape)):
        raise c.refuse(f"expand to {shape}: -1 on a new leading axis")
    c.node("Expand", [c.x("X"), _i64(c, resolved)], [c.out("Out")])


@exporter("tile")
def _tile(c):
    repeats = [int(r) for r in c.attr("repeat_times")]
    x, rank = c.x("X"), len(c.shape_in("X"))
    if len(repeats) > rank:   # new leading axes of size 1
        x = c.node("Unsqueeze", [x, _i64(c, list(range(len(repeats) - rank)))])
    repeats = [1] * (max(rank, len(repeats)) - len(repeats)) + repeats
    c.node("Tile", [x, _i64(c, repeats)], [c.out("Out")])


@exporter("flatten")
def _flatten(c):
    shape = list(c.shape_in("X"))
    rank = len(shape)
    if rank == 0:
        c.node("Reshape", [c.x("X"), _i64(c, [1])], [c.out("Out")])
        return
    start, stop = int(c.attr("start_axis")) % rank, int(c.attr("stop_axis")) % rank
    tail = shape[stop + 1:]   # 0 copies X's size at the same position: only the leading axes can use it
    if any(d < 0 for d in tail):
        raise c.refuse("flatten with unknown sizes after the flattened axes")
    target = [0] * start + [-1] + tail
    c.node("Reshape", [c.x("X"), _i64(c, target)], [c.out("Out")])


@exporter("flip")
def _flip(c):
    axes = [int(a) for a in c.attr("axis")]
    c.node("Slice", [c.x("X"), _i64(c, [-1] * len(axes)), _i64(c, [-_INT_MAX] * len(axes)), _i64(c, axes),
                     _i64(c, [-1] * len(axes))], [c.out("Out")])


@exporter("roll")
def _roll(c):
    shape = list(c.shape_in("X"))
    x = c.x("X")
    shifts, axes = [int(s) for s in c.attr("shifts")], [int(a) for a in (c.attr("axis") or [])]
    flat = not axes
    if flat:
        if any(d < 0 for d in shape):
            raise c.refuse("roll of the flattened tensor with unknown sizes")
        x, axes, sizes = c.node("Reshape", [x, _i64(c, [-1])]), [0], [int(np.prod(shape))]
    else:
        sizes = [shape[a] for a in axes]
    for shift, axis, size in zip(shifts, axes, sizes):
        if size < 0:
            raise c.refuse("roll along an axis of unknown size")
        shift %= max(size, 1)
        if shift == 0:
            continue
        tail = c.node("Slice", [x, _i64(c, [size - shift]), _i64(c, [size]), _i64(c, [axis])])
        head = c.node("Slice", [x, _i64(c, [0]), _i64(c, [size - shift]), _i64(c, [axis])])
        x = c.node("Concat", [tail, head], axis=axis)
    if flat:
        x = c.node("Reshape", [x, _i64(c, shape)])
    c.node("Identity", [x], [c.out("Out")])


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge",
              "circular": "wrap", "wrap": "wrap"}


@exporter("pad")
def _pad(c):
    """Pad; negative paddings crop first (a Slice), circular padding before opset 19 is
    written as slices concatenated around each axis."""
    pairs = [(int(lo), int(hi)) for lo, hi in zip(c.attr("paddings")[0::2], c.attr("paddings")[1::2])]
    mode = _PAD_MODES[c.attr("mode")]
    x = c.x("X")
    crop = [(a, -lo, -hi) for a, (lo, hi) in enumerate(pairs) if lo < 0 or hi < 0]
    if crop:
        axes = [a for a, _, _ in crop]
        starts = [max(lo, 0) for _, lo, _ in crop]
        ends = [-hi if hi > 0 else _INT_MAX for _, _, hi in crop]
        x = c.node("Slice", [x, _i64(c, starts), _i64(c, ends), _i64(c, axes)])
        pairs = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if all(lo == hi == 0 for lo, hi in pairs):  # nothing to pad (a 0-D value, say: onnxruntime refuses Pad there)
        c.node("Identity", [x], [c.out("Out")])
        return
    if mode == "wrap" and c.opset < 19:
        shape = c.shape_in("X")
        for axis, (lo, hi) in enumerate(pairs):
            if lo == hi == 0:
                continue
            parts = ([c.node("Slice", [x, _i64(c, [-lo]), _i64(c, [_INT_MAX]), _i64(c, [axis])])] if lo else []) + \
                [x] + ([c.node("Slice", [x, _i64(c, [0]), _i64(c, [hi]), _i64(c, [axis])])] if hi else [])
            if shape[axis] < 0 or lo > shape[axis] or hi > shape[axis]:
                raise c.refuse("circular padding wider than the axis (or of unknown size) before opset 19")
            x = c.node("Concat", parts, axis=axis)
        c.node("Identity", [x], [c.out("Out")])
        return
    inputs = [x, _i64(c, [lo for lo, _ in pairs] + [hi for _, hi in pairs])]
    if mode == "constant":
        inputs.append(_c(c, c.attr("value")))
    c.node("Pad", inputs, [c.out("Out")], mode=mode)


@exporter("tril_triu")
def _tril_triu(c):
    c.node("Trilu", [c.x("X"), _i64(c, int(c.attr("diagonal")))], [c.out("Out")], upper=int(not c.attr("lower")))


@exporter("take_along_axis")
def _take_along_axis(c):
    c.node("GatherElements", [c.x("X"), c.x("Index")], [c.out("Out")], axis=int(c.attr("axis")))


_REDUCTIONS = {"assign": "none", "add": "add", "mul": "mul", "multiply": "mul", "amax": "max", "amin": "min",
               "max": "max", "min": "min"}


@exporter("put_along_axis")
def _put_along_axis(c):
    reduce = str(c.attr("reduce"))
    if reduce not in _REDUCTIONS or (_REDUCTIONS[reduce] in ("max", "min") and c.opset < 18):
        raise c.refuse(f"reduce={reduce!r}")
    value = c.x("Value")
    if list(c.shape_in("Value")) != list(c.shape_in("Index")):
        value = c.node("Expand", [value, c.node("Shape", [c.x("Index")])])
    c.node("ScatterElements", [c.x("X"), c.x("Index"), value], [c.out("Out")], axis=int(c.attr("axis")),
           reduction=_REDUCTIONS[reduce])


@exporter("gather_nd")
def _gather_nd(c):
    c.node("GatherND", [c.x("X"), c.cast(c.x("Index"), "int64")], [c.out("Out")],
           batch_dims=int(c.attr("batch_dims")))


@exporter("scatter_nd")
def _scatter_nd(c):
    reduce = str(c.attr("reduce"))
    if reduce not in _REDUCTIONS or int(c.attr("batch_dims")):
        raise c.refuse(f"reduce={reduce!r} with batch_dims={c.attr('batch_dims')}")
    c.node("ScatterND", [c.x("X"), c.cast(c.x("Index"), "int64"), c.x("Updates")], [c.out("Out")],
           reduction=_REDUCTIONS[reduce])


@exporter("scatter")
def _scatter(c):
    """Rows Ids of X replaced by Updates (overwrite), or zeroed and then summed into."""
    ids = c.node("Unsqueeze", [c.cast(c.x("Ids"), "int64"), _i64(c, [-1])])
    if c.attr("overwrite"):
        c.node("ScatterND", [c.x("X"), ids, c.x("Updates")], [c.out("Out")])
        return
    zeros = c.node("Mul", [c.x("Updates"), _c(c, 0.0)])
    cleared = c.node("ScatterND", [c.x("X"), ids, zeros])
    c.node("ScatterND", [cleared, ids, c.x("Updates")], [c.out("Out")], reduction="add")


@exporter("nonzero")
def _nonzero(c):
    c.node("Transpose", [c.node("NonZero", [c.x("X")])], [c.out("Out")], perm=[1, 0])


@exporter("assign_value")
def _assign_value(c):
    value = np.asarray(c.attr("values"), dtype=c.attr("dtype")).reshape(c.attr("shape"))
    c.node("Identity", [c.const(value)], [c.out("Out")])


@exporter("range")
def _range(c):
    dtype = c.attr("dtype")
    value = np.arange(c.attr("start"), c.attr("end"), c.attr("step")).astype(dtype)
    c.node("Identity", [c.const(value)], [c.out("Out")])


@exporter("arange")
def _arange(c):
    """Start, End and Step computed at run time (single values, possibly [1]): ONNX Range on scalars."""
    scalar = c.const(np.zeros([0], "int64"))
    c.node("Range", [c.node("Reshape", [c.x(slot), scalar]) for slot in ("Start", "End", "Step")], [c.out("Out")])


@exporter("linspace")
def _linspace(c):
    value = np.linspace(c.attr("start"), c.attr("stop"), int(c.attr("num"))).astype(c.attr("dtype"))
    c.node("Identity", [c.const(value)], [c.out("Out")])


# ---------------------------------------------------------------- vision and attention
@exporter("interpolate")
def _interpolate(c):
    """Resize, with the coordinate rules fluidgrad's interpolate shares with PyTorch."""
    mode = str(c.attr("mode"))
    nd = len(c.shape_in("X")) - 2
    align_corners, align_mode = bool(c.attr("align_corners")), int(c.attr("align_mode"))
    attrs = {}
    if mode == "nearest":
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        if align_corners:
            attrs.update(coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil")
    else:
        attrs["mode"] = "cubic" if mode == "bicubic" else "linear"
        attrs["coordinate_transformation_mode"] = ("align_corners" if align_corners else
                                                   "asymmetric" if align_mode == 1 else "half_pixel")
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    if list(c.attr("out_size")):
        sizes = [int(d) for d in c.shape_in("X")[:2]] + [int(s) for s in c.attr("out_size")]
        if any(d < 0 for d in sizes[:2]):
            sizes_name = c.node("Concat", [c.node("Slice", [c.node("Shape", [c.x("X")]), _i64(c, [0]), _i64(c, [2])]),
                                           _i64(c, sizes[2:])], axis=0)
        else:
            sizes_name = _i64(c, sizes)
        c.node("Resize", [c.x("X"), "", "", sizes_name], [c.out("Out")], **attrs)
    else:
        scales = [1.0, 1.0] + [float(s) for s in c.attr("scales")][:nd]
        c.node("Resize", [c.x("X"), "", c.const(np.asarray(scales, "float32"))], [c.out("Out")], **attrs)


@exporter("attention_softmax")
def _attention_softmax(c):
    """softmax(X * scale + Mask) with the keys after each query masked when causal; 0 for a
    query that may see no key, as the kernel."""
    scores = c.node("Mul", [c.x("X"), _c(c, float(c.attr("scale")))])
    if c.has("Mask"):
        if c.dtype_in("Mask") == "bool":
            scores = c.node("Where", [c.x("Mask"), scores, _c(c, -np.inf)])
        else:
            scores = c.node("Add", [scores, c.x("Mask")])
    if c.attr("causal"):
        q, k = c.shape_in("X")[-2:]
        if q < 0 or k < 0:
            raise c.refuse("causal attention_softmax with unknown query or key counts")
        upper = np.triu(np.ones((q, k), bool), 1)
        scores = c.node("Where", [c.const(upper), _c(c, -np.inf), scores])
    if not c.has("Mask"):
        c.node("Softmax", [scores], [c.out("Out")], axis=-1)
        return
    # a query whose every key is masked gets weights 0, not Softmax's NaN (PyTorch's SDPA)
    peak = (c.node("ReduceMax", [scores, _i64(c, [-1])], keepdims=1) if c.opset >= 18 else
            c.node("ReduceMax", [scores], axes=[-1], keepdims=1))
    sees_nothing = c.node("Equal", [peak, _c(c, -np.inf)])
    c.node("Where", [sees_nothing, _c(c, 0.0), c.node("Softmax", [scores], axis=-1)], [c.out("Out")])
