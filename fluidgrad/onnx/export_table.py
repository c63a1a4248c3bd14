"""The table of op exporters: fluidgrad op type -> function writing ONNX nodes.

An exporter gets an `OpContext` (see exporter.py): the op, `x(slot)` for the ONNX name of
an input, `out(slot)` for a fresh ONNX name of an output, `node(...)` to emit a node and
`const(array)` for an initializer (export_ops.py adds the exporters of more ops). Ops absent
from the table have no ONNX equivalent, and export refuses them with an error naming the op.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import export_indexing  # noqa: F401  (adds set_value, x[...] = v, to the table)
from . import export_loss  # noqa: F401  (adds the cross-entropy exporters to the table)
from . import export_special  # noqa: F401  (adds atan2, erfinv, isin, eye, cumprod to the table)
from .export_ops import EXPORTERS, Exporter, reduce_axes, reduce_node, exporter  # one table (newer ops there)
from .kernel_dtypes import write_in_kernel_dtype
from ..ops.norm_grad_grad import running_statistics


def _simple(onnx_type: str, in_slots: tuple[str, ...] = ("X",), out_slot: str = "Out", **fixed: Any) -> Exporter:
    def export(c):
        c.node(onnx_type, [c.x(s) for s in in_slots], [c.out(out_slot)], **fixed)
    return export


for _ours, _theirs in {"elementwise_add": "Add", "elementwise_sub": "Sub", "elementwise_mul": "Mul",
                       "elementwise_max": "Max", "elementwise_min": "Min", "elementwise_pow": "Pow",
                       "equal": "Equal", "less_than": "Less", "greater_than": "Greater",
                       "less_equal": "LessOrEqual", "greater_equal": "GreaterOrEqual",
                       "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}.items():
    EXPORTERS[_ours] = _simple(_theirs, ("X", "Y"))

for _ours, _theirs in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
                       "sqrt": "Sqrt", "abs": "Abs", "sin": "Sin", "cos": "Cos", "sign": "Sign",
                       "logical_not": "Not", "assign": "Identity", "floor": "Floor", "ceil": "Ceil",
                       "erf": "Erf", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
                       "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
                       "reciprocal": "Reciprocal", "softsign": "Softsign"}.items():
    EXPORTERS[_ours] = _simple(_theirs)


@exporter("softplus")
def _softplus(c):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (Paddle's rule), blended
    with a 0/1 mask (both sides are finite)."""
    dtype = c.dtype_in("X")
    beta, threshold = c.const(np.asarray(c.attr("beta"), dtype)), c.const(np.asarray(c.attr("threshold"), dtype))
    scaled = c.node("Mul", [c.x("X"), beta])
    smooth = c.node("Div", [c.node("Softplus", [scaled]), beta])
    linear = c.cast(c.node("Greater", [scaled, threshold]), dtype)
    rest = c.node("Sub", [c.const(np.asarray(1, dtype)), linear])
    c.node("Add", [c.node("Mul", [linear, c.x("X")]), c.node("Mul", [rest, smooth])], [c.out("Out")])


@exporter("elementwise_div")
def _div(c):
    x, y = c.x("X"), c.x("Y")
    dtype = c.dtype_of("Out")
    if c.dtype_in("X") != dtype:  # true division of integers: in floating point
        x, y = c.cast(x, dtype), c.cast(y, dtype)
    c.node("Div", [x, y], [c.out("Out")])


@exporter("not_equal")
def _not_equal(c):
    c.node("Not", [c.node("Equal", [c.x("X"), c.x("Y")])], [c.out("Out")])


@exporter("square")
def _square(c):
    c.node("Mul", [c.x("X"), c.x("X")], [c.out("Out")])


@exporter("pow")
def _pow(c):
    c.node("Pow", [c.x("X"), c.const(np.asarray(c.attr("factor"), c.dtype_in("X")))], [c.out("Out")])


@exporter("leaky_relu")
def _leaky_relu(c):
    c.node("LeakyRelu", [c.x("X")], [c.out("Out")], alpha=float(c.attr("alpha")))


@exporter("scale")
def _scale(c):
    dtype = c.dtype_in("X")
    scale, bias = c.const(np.asarray(c.attr("scale"), dtype)), c.const(np.asarray(c.attr("bias"), dtype))
    if c.attr("bias_after_scale"):
        c.node("Add", [c.node("Mul", [c.x("X"), scale]), bias], [c.out("Out")])
    else:
        c.node("Mul", [c.node("Add", [c.x("X"), bias]), scale], [c.out("Out")])


@exporter("increment")
def _increment(c):
    c.node("Add", [c.x("X"), c.const(np.asarray(c.attr("step"), c.dtype_in("X")))], [c.out("Out")])


@exporter("sum")
def _sum(c):
    inputs = c.xs("X")
    if c.dtype_of("Out").startswith("float"):
        c.node("Sum", inputs, [c.out("Out")])
        return
    if len(inputs) == 1:
        c.node("Identity", inputs, [c.out("Out")])
        return
    add = "Or" if c.dtype_of("Out") == "bool" else "Add"  # True + True is True, as in NumPy
    total = inputs[0]  # onnxruntime's Sum adds floats only: integers as a chain of Adds
    for x in inputs[1:-1]:
        total = c.node(add, [total, x])
    c.node(add, [total, inputs[-1]], [c.out("Out")])


@exporter("cast")
def _cast(c):
    c.node("Cast", [c.x("X")], [c.out("Out")], to=c.onnx_dtype(c.attr("dtype")))


@exporter("clip")
def _clip(c):
    dtype = c.dtype_in("X")
    low, high = c.attr("min"), c.attr("max")
    inputs = [c.x("X"), c.const(np.asarray(low, dtype)) if np.isfinite(low) else "",
              c.const(np.asarray(high, dtype)) if np.isfinite(high) else ""]
    while inputs[-1] == "":
        inputs.pop()
    c.node("Clip", inputs, [c.out("Out")])


# ---------------------------------------------------------------- reductions
def _reduce(onnx_type: str):
    """A Reduce* node on X in a dtype onnxruntime reduces (bool and integers sum into int64)."""
    def export(c):
        axes = reduce_axes(c)
        write_in_kernel_dtype(c, onnx_type, lambda x, out: reduce_node(c, onnx_type, x, axes, out))
    return export


EXPORTERS["reduce_sum"] = _reduce("ReduceSum")
EXPORTERS["reduce_mean"] = _reduce("ReduceMean")
EXPORTERS["reduce_max"] = _reduce("ReduceMax")
EXPORTERS["reduce_min"] = _reduce("ReduceMin")
EXPORTERS["reduce_prod"] = _reduce("ReduceProd")


@exporter("mean")
def _mean(c):
    rank = len(c.shape_in("X"))
    if c.opset >= 18:
        c.node("ReduceMean", [c.x("X"), c.const(np.arange(rank, dtype="int64"))], [c.out("Out")], keepdims=0)
    else:
        c.node("ReduceMean", [c.x("X")], [c.out("Out")], axes=list(range(rank)), keepdims=0)


@exporter("softmax", "log_softmax")
def _softmax(c):
    c.node({"softmax": "Softmax", "log_softmax": "LogSoftmax"}[c.op.type], [c.x("X")], [c.out("Out")],
           axis=int(c.attr("axis")))


# ---------------------------------------------------------------- shapes
@exporter("reshape")
def _reshape(c):
    if c.op.input("ShapeTensor"):  # sizes computed at run time (Shape, Slice, Concat before it)
        c.node("Reshape", [c.x("X"), _int64(c, c.x("ShapeTensor"), "ShapeTensor")], [c.out("Out")])
        return
    c.node("Reshape", [c.x("X"), c.const(np.asarray(c.attr("shape"), "int64"))], [c.out("Out")])


@exporter("shape")
def _shape(c):
    c.node("Shape", [c.x("X")], [c.out("Out")])


def _int64(c, name: str, slot: str) -> str:
    """An integer shape input as the int64 ONNX's Reshape, Expand and ConstantOfShape take."""
    return name if c.dtype_in(slot) == "int64" else c.node("Cast", [name], to=c.onnx_dtype("int64"))


@exporter("reshape_as")
def _reshape_as(c):
    c.node("Reshape", [c.x("X"), c.node("Shape", [c.x("Target")])], [c.out("Out")])


@exporter("transpose")
def _transpose(c):
    rank = len(c.shape_in("X"))
    c.node("Transpose", [c.x("X")], [c.out("Out")], perm=[int(p) % max(rank, 1) for p in c.attr("perm")])


@exporter("concat")
def _concat(c):
    c.node("Concat", c.xs("X"), [c.out("Out")], axis=int(c.attr("axis")))


@exporter("stack")
def _stack(c):
    axis = int(c.attr("axis"))
    axes = c.const(np.asarray([axis], "int64"))
    c.node("Concat", [c.node("Unsqueeze", [x, axes]) for x in c.xs("X")], [c.out("Out")], axis=axis)


@exporter("split")
def _split(c):
    """Known sizes as constants. Along an axis of run-time size: sections with a -1 as Slices
    counted from the start before the -1 and from the end after it; `num_or_sections` equal
    parts as Split without sizes (num_outputs from opset 18); a chunk's ceil(n / k) parts, the
    last smaller, as num_outputs (opset 18) or sizes computed from the Shape before."""
    axis = int(c.attr("axis")) % len(c.shape_in("X"))
    sizes = [int(framework_shape[axis]) for framework_shape in c.shapes_out("Out")]
    sections = c.attr("num_or_sections")
    chunked = any(name in c.exporter.shape_reads.chunks for name in c.op.output("Out"))
    if any(s < 0 for s in sizes) and not chunked and not isinstance(sections, int):
        _split_by_slices(c, axis, [int(s) for s in sections])
        return
    inputs = [c.x("X")]
    if all(s >= 0 for s in sizes):
        inputs.append(c.const(np.asarray(sizes, "int64")))
    elif chunked and c.opset < 18:
        inputs.append(_chunk_sizes_at_run_time(c, axis, len(sizes)))
    outs = [c.out("Out", i) for i in range(len(sizes))]
    c.node("Split", inputs, outs, axis=axis, **({"num_outputs": len(outs)} if len(inputs) == 1 and c.opset >= 18
                                                 else {}))


def _split_by_slices(c, axis: int, sections: list[int]) -> None:
    """Sections with one -1 along an axis of run-time size: the parts up to the -1 start where
    the sections before them end, those after it start as far from the axis's end as the
    sections from them on take; each part ends where the next starts."""
    end = np.iinfo(np.int64).max
    middle = sections.index(-1)
    starts = [sum(sections[:i]) if i <= middle else -sum(sections[i:]) or end for i in range(len(sections))]
    for i, (start, stop) in enumerate(zip(starts, starts[1:] + [end])):
        c.node("Slice", [c.x("X")] + [c.const(np.asarray([v], "int64")) for v in (start, stop, axis)],
               [c.out("Out", i)])


def _chunk_sizes_at_run_time(c, axis: int, parts: int) -> str:
    """ceil(n / parts) each, the last what is left, for n the axis's length read at run time."""
    i64 = lambda values: c.const(np.asarray(values, "int64"))  # noqa: E731
    n = c.node("Gather", [c.node("Shape", [c.x("X")]), i64([axis])], axis=0)
    step = c.node("Div", [c.node("Add", [n, i64([parts - 1])]), i64([parts])])
    left = c.node("Sub", [n, c.node("Mul", [i64(list(range(parts))), step])])
    return c.node("Max", [c.node("Min", [left, step]), i64([0])])


@exporter("slice")
def _slice(c):
    const = lambda values: c.const(np.asarray(values, "int64"))  # noqa: E731
    inputs = [c.x("X"), const(c.attr("starts")), const(c.attr("ends")), const(c.attr("axes"))]
    strides = c.attr("strides") if c.op.has_attr("strides") else None
    if strides:  # ONNX's steps: negative ones walk backwards with Python's bounds, as ours do
        inputs.append(const(strides))
    c.node("Slice", inputs, [c.out("Out")])


@exporter("gather")
def _gather(c):
    c.node("Gather", [c.x("X"), c.x("Index")], [c.out("Out")], axis=int(c.attr("axis")))


@exporter("lookup_table_v2")
def _lookup_table(c):
    c.node("Gather", [c.x("W"), c.x("Ids")], [c.out("Out")], axis=0)


@exporter("squeeze", "unsqueeze")
def _squeeze(c):
    if c.op.type == "squeeze" and not c.shape_in("X"):   # a 0-D X stays as it is
        c.node("Identity", [c.x("X")], [c.out("Out")])
        return
    if c.op.type == "squeeze" and not c.attr("axes"):  # every size-1 axis: ONNX's Squeeze without axes
        c.node("Squeeze", [c.x("X")], [c.out("Out")])
        return
    c.node(c.op.type.capitalize(), [c.x("X"), c.const(np.asarray(c.attr("axes"), "int64"))], [c.out("Out")])


@exporter("expand_as")
def _expand_as(c):
    shape = c.node("Shape", [c.x("Target")])
    if len(c.shape_in("X")) > len(c.shape_in("Target")):  # fluidgrad drops leading 1s; Expand cannot
        c.node("Reshape", [c.node("Expand", [c.x("X"), shape]), shape], [c.out("Out")])
    else:
        c.node("Expand", [c.x("X"), shape], [c.out("Out")])


@exporter("fill_constant")
def _fill_constant(c):
    if c.op.input("ShapeTensor"):  # sized at run time
        c.node("ConstantOfShape", [_int64(c, c.x("ShapeTensor"), "ShapeTensor")], [c.out("Out")],
               value=c.tensor(np.asarray([c.attr("value")], c.attr("dtype"))))
        return
    value = np.full(c.attr("shape"), c.attr("value"), dtype=c.attr("dtype"))
    c.node("Identity", [c.const(value)], [c.out("Out")])


@exporter("fill_zeros_like", "fill_any_like")
def _fill_like(c):
    dtype = c.dtype_of("Out")
    value = c.attr("value") if c.op.type == "fill_any_like" else 0
    c.node("ConstantOfShape", [c.node("Shape", [c.x("X")])], [c.out("Out")],
           value=c.tensor(np.asarray([value], dtype)))


@exporter("one_hot")
def _one_hot(c):
    """unsqueeze(X, axis) == arange(depth) laid along `axis`, cast: exact, and runs where OneHot
    lacks a kernel. Negative labels count from the end (X + depth where X < 0), as ONNX OneHot."""
    depth, dtype = int(c.attr("depth")), c.dtype_in("X")
    rank = len(c.shape_in("X"))
    axis = int(c.attr("axis")) % (rank + 1)
    x = c.x("X")
    negative = c.cast(c.node("Less", [x, c.const(np.zeros((), dtype))]), dtype)
    wrapped = c.node("Add", [x, c.node("Mul", [negative, c.const(np.asarray(depth, dtype))])])
    positions = c.const(np.arange(depth, dtype=dtype).reshape([depth] + [1] * (rank - axis)))
    column = c.node("Unsqueeze", [wrapped, c.const(np.asarray([axis], "int64"))])
    c.node("Cast", [c.node("Equal", [column, positions])], [c.out("Out")], to=c.onnx_dtype(c.attr("dtype")))


@exporter("select_input")
def _select_input(c):
    inputs = c.xs("X")
    if len(inputs) != 2:
        raise c.refuse("select_input of more than two inputs")
    mask = c.cast(c.node("Reshape", [c.x("Mask"), c.const(np.asarray([], "int64"))]), "bool")
    c.node("Where", [mask, inputs[1], inputs[0]], [c.out("Out")])


@exporter("where")
def _where(c):
    c.node("Where", [c.x("Condition"), c.x("X"), c.x("Y")], [c.out("Out")])


# ---------------------------------------------------------------- products and nn
@exporter("matmul")
def _matmul(c):
    def operand(slot, flag):
        name = c.x(slot)
        rank = len(c.shape_in(slot))
        if c.attr(flag) and rank > 1:
            perm = list(range(rank))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            name = c.node("Transpose", [name], perm=perm)
        return name
    x, y = operand("X", "transpose_x"), operand("Y", "transpose_y")
    if len(c.shape_in("Y")) == 1 and c.attr("transpose_x") and len(c.shape_in("X")) > 1:
        # onnxruntime's Transpose+MatMul fusion gets a vector right operand wrong (1.32): use a column
        last = c.const(np.asarray([-1], "int64"))
        c.node("Squeeze", [c.node("MatMul", [x, c.node("Unsqueeze", [y, last])]), last], [c.out("Out")])
        return
    c.node("MatMul", [x, y], [c.out("Out")])


def _window(c, nd: int) -> dict:
    """strides, dilations, pads / auto_pad of a window op, in ONNX's terms."""
    attrs = dict(strides=_per_axis(c.attr("strides"), nd), dilations=_per_axis(c.attr("dilations"), nd))
    algorithm = str(c.attr("padding_algorithm")).upper()
    if algorithm == "EXPLICIT":
        pairs = _pad_pairs(c.attr("paddings"), nd)
        attrs["pads"] = [lo for lo, _ in pairs] + [hi for _, hi in pairs]
    else:
        attrs["auto_pad"] = {"SAME": "SAME_UPPER"}.get(algorithm, algorithm)
    return attrs


def _ceil_as_padding(c, attrs, nd, kind):
    """ceil_mode as extra end padding: fluidgrad (like PyTorch) drops a last window that would
    start in the end padding, which ONNX's ceil_mode keeps; explicit padding says it exactly."""
    sizes = c.shape_in("X")[2:]
    if "pads" not in attrs or any(s < 0 for s in sizes):
        attrs["ceil_mode"] = 1
        return
    if kind != "max" and not c.attr("exclusive"):
        raise c.refuse("ceil_mode with padding counted in the average")
    pads = attrs["pads"]
    for i, (size, k, s, d) in enumerate(zip(sizes, attrs["kernel_shape"], attrs["strides"], attrs["dilations"])):
        lo, hi = pads[i], pads[nd + i]
        span = size + lo + hi - d * (k - 1) - 1
        out = -(-span // s) + 1
        if (out - 1) * s >= size + lo:
            out -= 1
        pads[nd + i] = max(hi, (out - 1) * s + d * (k - 1) + 1 - size - lo)


def _per_axis(value, nd):
    values = [value] if isinstance(value, int) else list(value)
    return [int(v) for v in (values * nd if len(values) == 1 else values)]


def _pad_pairs(paddings, nd):
    values = [paddings] if isinstance(paddings, int) else [int(p) for p in paddings]
    values = values * nd if len(values) == 1 else values
    if len(values) == nd:
        return [(v, v) for v in values]
    return [(values[2 * i], values[2 * i + 1]) for i in range(nd)]


def _channel_first(c, slot: str) -> int:
    fmt = c.attr("data_format")
    if fmt not in ("NCL", "NCHW", "NCDHW"):
        raise c.refuse(f"data_format {fmt} (ONNX is channel-first)")
    return len(c.shape_in(slot)) - 2


@exporter("conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose")
def _conv(c):
    nd = _channel_first(c, "Input")
    inputs = [c.x("Input"), c.x("Filter")] + ([c.x("Bias")] if c.has("Bias") else [])
    attrs = dict(kernel_shape=list(c.shape_in("Filter")[2:]), group=int(c.attr("groups")), **_window(c, nd))
    if c.op.type.endswith("_transpose"):
        attrs["output_padding"] = _per_axis(c.attr("output_padding"), nd)
        c.node("ConvTranspose", inputs, [c.out("Output")], **attrs)
    else:
        c.node("Conv", inputs, [c.out("Output")], **attrs)


@exporter("pool1d", "pool2d", "pool3d", "max_pool1d_with_index", "max_pool2d_with_index", "max_pool3d_with_index")
def _pool(c):
    nd = _channel_first(c, "X")
    kind = c.attr("pooling_type") if c.op.has_attr("pooling_type") else "max"
    mask = c.op.type.endswith("_with_index") and c.exporter.is_read(c.op.output("Mask")[0])
    if c.attr("global_pooling") or (c.attr("adaptive") and all(k == 1 for k in _per_axis(c.attr("ksize"), nd))):
        c.node("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", [c.x("X")], [c.out("Out")])
        if mask:  # the first maximum of each plane (ArgMax and fluidgrad agree on ties)
            planes = c.node("Reshape", [c.x("X"), c.const(np.asarray([0, 0, -1], "int64"))])
            c.node("Reshape", [c.node("ArgMax", [planes], axis=2, keepdims=1),
                               c.const(np.asarray([0, 0] + [1] * nd, "int64"))], [c.out("Mask")])
        return
    if c.attr("adaptive"):
        raise c.refuse("adaptive pooling to more than one output per axis")
    attrs = dict(kernel_shape=_per_axis(c.attr("ksize"), nd), **_window(c, nd))
    if c.attr("ceil_mode"):
        _ceil_as_padding(c, attrs, nd, kind)
    if kind != "max":
        attrs["count_include_pad"] = 0 if c.attr("exclusive") else 1
        if any(d != 1 for d in attrs["dilations"]) and c.opset < 19:
            raise c.refuse("dilated average pooling before opset 19")
        if c.opset < 19:
            del attrs["dilations"]
    if mask:
        indices = c.exporter.fresh("indices")
        c.node("MaxPool", [c.x("X")], [c.out("Out"), indices], **attrs)
        _indices_in_plane(c, indices, nd)
        return
    c.node("MaxPool" if kind == "max" else "AveragePool", [c.x("X")], [c.out("Out")], **attrs)


def _indices_in_plane(c, indices: str, nd: int) -> None:
    """ONNX MaxPool's Indices count over the whole N*C*spatial tensor; fluidgrad's (Paddle's and
    PyTorch's) mask counts within each input plane: the remainder modulo the plane's size."""
    spatial = c.shape_in("X")[2:]
    if all(d >= 0 for d in spatial):
        size = c.const(np.asarray(int(np.prod(spatial)), "int64"))
    else:
        dims = c.node("Slice", [c.node("Shape", [c.x("X")]), c.const(np.asarray([2], "int64")),
                                c.const(np.asarray([2 + nd], "int64"))])
        size = c.node("ReduceProd", [dims], keepdims=0)
    c.node("Mod", [indices, size], [c.out("Mask")])


@exporter("batch_norm")
def _batch_norm(c):
    """BatchNormalization on the running statistics; with the batch's (F.batch_norm's explicit
    use_global_stats=False, kept by clone(for_test=True)) ReduceMean and the normalisation."""
    if running_statistics(c.attr("is_test"), c.attr("use_global_stats"), c.attr("trainable_statistics")):
        c.node("BatchNormalization", [c.x(s) for s in ("X", "Scale", "Bias", "Mean", "Variance")], [c.out("Y")],
               epsilon=float(c.attr("epsilon")))
        return
    rank, dtype = len(c.shape_in("X")), c.dtype_in("X")
    axes = [a for a in range(rank) if a != 1]
    channel = c.const(np.asarray([1, -1] + [1] * (rank - 2), "int64"))
    def mean(v: str) -> str:   # over every axis but the channels, kept
        if c.opset >= 18:
            return c.node("ReduceMean", [v, c.const(np.asarray(axes, "int64"))], keepdims=1)
        return c.node("ReduceMean", [v], axes=axes, keepdims=1)
    centered = c.node("Sub", [c.x("X"), mean(c.x("X"))])
    variance = mean(c.node("Mul", [centered, centered]))
    inv_std = c.node("Reciprocal", [c.node("Sqrt", [c.node("Add", [variance, c.const(
        np.asarray(c.attr("epsilon"), dtype))])])])
    scale = c.node("Mul", [inv_std, c.node("Reshape", [c.x("Scale"), channel])])
    c.node("Add", [c.node("Mul", [centered, scale]), c.node("Reshape", [c.x("Bias"), channel])], [c.out("Y")])


@exporter("layer_norm")
def _layer_norm(c):
    shape = c.shape_in("X")
    axis = int(c.attr("begin_norm_axis"))
    normalized = [d for d in shape[axis:]]
    if any(d < 0 for d in normalized):
        raise c.refuse("layer_norm over dimensions of unknown size")
    norm_shape = c.const(np.asarray(normalized, "int64")) if c.has("Scale") or c.has("Bias") else None
    dtype = c.dtype_in("X")
    scale = c.node("Reshape", [c.x("Scale"), norm_shape]) if c.has("Scale") else c.const(np.ones(normalized, dtype))
    inputs = [c.x("X"), scale] + ([c.node("Reshape", [c.x("Bias"), norm_shape])] if c.has("Bias") else [])
    if c.opset < 17:
        raise c.refuse("layer_norm before opset 17 (LayerNormalization)")
    c.node("LayerNormalization", inputs, [c.out("Y")], axis=axis, epsilon=float(c.attr("epsilon")))


@exporter("dropout")
def _dropout(c):
    if not c.attr("is_test") and c.attr("dropout_prob") > 0:
        raise c.refuse("dropout in training mode (export the program for inference: clone(for_test=True))")
    if c.attr("dropout_implementation") == "downgrade_in_infer":
        keep = np.asarray(1.0 - c.attr("dropout_prob"), c.dtype_in("X"))
        c.node("Mul", [c.x("X"), c.const(keep)], [c.out("Out")])
    else:
        c.node("Identity", [c.x("X")], [c.out("Out")])
