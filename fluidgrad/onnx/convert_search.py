"""Converters for selection and indexing: Where, ArgMax, TopK, GatherElements, ScatterND, Pad, ..."""
from __future__ import annotations

import numpy as np

from .convert_common import binary, cast, full, normalize_axes, required_const
from .convert_table import converter


@converter("Where")
def _where(ctx):
    condition, x, y = ctx.input(0), ctx.input(1), ctx.input(2)
    if not ctx.has_op("where") and all(d == 1 for d in condition.shape) and x.shape == y.shape:
        return ctx.op("select_input", {"X": [y, x], "Mask": condition})  # one condition for all
    return ctx.op("where", {"Condition": condition, "X": x, "Y": y})


def _arg(op_type):
    def convert(ctx):
        x = ctx.input(0)
        axis = normalize_axes([ctx.attr("axis", 0)], len(x.shape))[0]
        return ctx.op(op_type, {"X": x}, axis=axis, keepdim=bool(ctx.attr("keepdims", 1)),
                      select_last_index=bool(ctx.attr("select_last_index", 0)), dtype="int64")
    return convert


converter("ArgMax")(_arg("arg_max"))
converter("ArgMin")(_arg("arg_min"))


@converter("TopK")
def _top_k(ctx):
    x = ctx.input(0)
    k = int(ctx.attr("k")) if ctx.opset < 10 else int(ctx.const(1, "k").reshape(-1)[0])
    values, indices = ctx.op("top_k", {"X": x}, k=k, axis=int(ctx.attr("axis", -1)),
                             largest=bool(ctx.attr("largest", 1)), sorted=bool(ctx.attr("sorted", 1)))
    return [values, indices]


def _wrapped(ctx, index, x, axis):
    """Negative indices count from the end (ONNX), as int64."""
    index = cast(ctx, index, "int64")
    size = x.shape[axis]
    if size < 0:
        return index
    negative = cast(ctx, ctx.op("less_than", {"X": index, "Y": ctx.scalar(0, "int64")}), "int64")
    return binary(ctx, "elementwise_add", index, binary(ctx, "elementwise_mul", negative, ctx.scalar(size, "int64")))


@converter("GatherElements")
def _gather_elements(ctx):
    x = ctx.input(0)
    axis = normalize_axes([ctx.attr("axis", 0)], len(x.shape))[0]
    return ctx.op("take_along_axis", {"X": x, "Index": _wrapped(ctx, ctx.input(1), x, axis)}, axis=axis)


_REDUCTIONS = {"none": "assign", "add": "add", "mul": "mul", "max": "amax", "min": "amin"}


@converter("ScatterElements", "Scatter")
def _scatter_elements(ctx):
    x = ctx.input(0)
    axis = normalize_axes([ctx.attr("axis", 0)], len(x.shape))[0]
    reduce = _REDUCTIONS[ctx.attr("reduction", "none")]
    return ctx.op("put_along_axis", {"X": x, "Index": _wrapped(ctx, ctx.input(1), x, axis), "Value": ctx.input(2)},
                  axis=axis, reduce=reduce)


@converter("GatherND")
def _gather_nd(ctx):
    return ctx.op("gather_nd", {"X": ctx.input(0), "Index": cast(ctx, ctx.input(1), "int64")},
                  batch_dims=int(ctx.attr("batch_dims", 0)))


@converter("ScatterND")
def _scatter_nd(ctx):
    reduce = {"none": "assign", "add": "add", "mul": "mul", "max": "max", "min": "min"}[ctx.attr("reduction", "none")]
    return ctx.op("scatter_nd", {"X": ctx.input(0), "Index": cast(ctx, ctx.input(1), "int64"),
                                 "Updates": ctx.input(2)}, reduce=reduce)


@converter("NonZero")
def _non_zero(ctx):
    return ctx.op("transpose", {"X": ctx.op("nonzero", {"X": ctx.input(0)})}, perm=[1, 0])


@converter("Trilu")
def _trilu(ctx):
    k = int(ctx.const(1, "k").reshape(-1)[0]) if ctx.has_input(1) else 0
    return ctx.op("tril_triu", {"X": ctx.input(0)}, diagonal=k, lower=not ctx.attr("upper", 1))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


@converter("Pad")
def _pad(ctx):
    x = ctx.input(0)
    rank = len(x.shape)
    if ctx.opset < 11:
        pads, value = list(ctx.attr("pads")), float(ctx.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = [int(p) for p in required_const(ctx, 1, "pads")]
        value = ctx.maybe_const(2) if ctx.has_input(2) else None
        if ctx.has_input(2) and value is None:
            value = required_const(ctx, 2, "constant value")
        value = float(value.reshape(-1)[0]) if value is not None and value.size else 0.0
        axes = normalize_axes([int(a) for a in ctx.const(3, "axes")], rank) if ctx.has_input(3) else list(range(rank))
    n = len(axes)
    pairs = [0] * (2 * rank)
    for i, axis in enumerate(axes):
        pairs[2 * axis], pairs[2 * axis + 1] = pads[i], pads[n + i]
    if any(p < 0 for p in pairs):
        raise ctx.unsupported(f"negative pads {pads} (cropping)")
    return ctx.op("pad", {"X": x}, paddings=pairs, mode=_PAD_MODES[ctx.attr("mode", "constant")], value=value)


def _scan(op_type):
    def convert(ctx):
        x = ctx.input(0)
        axis = normalize_axes([int(ctx.const(1, "axis").reshape(-1)[0])], len(x.shape))[0]
        out = ctx.op(op_type, {"X": x}, axis=axis, exclusive=bool(ctx.attr("exclusive", 0)),
                     reverse=bool(ctx.attr("reverse", 0)))
        return cast(ctx, out, x.dtype)  # fluidgrad sums small integers in int64; ONNX keeps the type
    return convert


converter("CumSum")(_scan("cumsum"))
converter("CumProd")(_scan("cumprod"))


@converter("Hardmax")
def _hardmax(ctx):
    x = ctx.input(0)
    axis = normalize_axes([ctx.attr("axis", -1 if ctx.opset >= 13 else 1)], len(x.shape))[0]
    if ctx.opset < 13 and axis != len(x.shape) - 1:
        raise ctx.unsupported("Hardmax before opset 13 on an inner axis")
    index = ctx.op("arg_max", {"X": x}, axis=axis, keepdim=True, select_last_index=False, dtype="int64")
    size = x.shape[axis]
    positions = ctx.constant(np.arange(size, dtype="int64").reshape([size] + [1] * (len(x.shape) - 1 - axis)))
    return cast(ctx, ctx.op("equal", {"X": positions, "Y": index}), x.dtype)


@converter("Unique", since=11)
def _unique(ctx):
    axis = ctx.attr("axis")
    return list(ctx.op("unique", {"X": ctx.input(0)}, axis=[] if axis is None else [int(axis)],
                       sorted=bool(ctx.attr("sorted", 1)), dtype="int64"))


@converter("NonMaxSuppression", since=10)
def _non_max_suppression(ctx):
    def scalar(index, what, default):
        return ctx.const(index, what).reshape(-1)[0].item() if ctx.has_input(index) and \
            ctx.const(index, what).size else default
    return ctx.op("non_max_suppression", {"Boxes": ctx.input(0), "Scores": ctx.input(1)},
                  max_output_boxes_per_class=int(scalar(2, "max_output_boxes_per_class", 0)),
                  iou_threshold=float(scalar(3, "iou_threshold", 0.0)),
                  score_threshold=float(scalar(4, "score_threshold", float("-inf"))),
                  center_point_box=bool(ctx.attr("center_point_box", 0)))


@converter("TfIdfVectorizer", since=9)
def _tfidf_vectorizer(ctx):
    if ctx.attr("pool_strings"):
        raise ctx.unsupported("a pool of strings (fluidgrad counts integer token ids)")
    return ctx.op("tfidf_vectorizer", {"X": ctx.input(0)}, mode=ctx.attr("mode"),
                  min_gram_length=int(ctx.attr("min_gram_length")), max_gram_length=int(ctx.attr("max_gram_length")),
                  max_skip_count=int(ctx.attr("max_skip_count")),
                  ngram_counts=[int(v) for v in ctx.attr("ngram_counts")],
                  ngram_indexes=[int(v) for v in ctx.attr("ngram_indexes")],
                  pool_int64s=[int(v) for v in ctx.attr("pool_int64s") or []],
                  weights=[float(v) for v in ctx.attr("weights") or []])


@converter("TensorScatter", since=24)
def _tensor_scatter(ctx):
    """The update written into the cache from each batch row's write index on (wrapping in
    circular mode): one put_along_axis with an index built from the write indices."""
    cache, update = ctx.input(0), ctx.input(1)
    rank = len(cache.shape)
    axis = normalize_axes([ctx.attr("axis", -2)], rank)[0]
    steps, capacity = update.shape[axis], cache.shape[axis]
    if steps < 0 or capacity < 0:
        raise ctx.unsupported(f"a sequence axis of unknown size ({list(cache.shape)}, {list(update.shape)})")
    if ctx.has_input(2):
        starts = ctx.op("reshape", {"X": cast(ctx, ctx.input(2), "int64")}, shape=[-1] + [1] * (rank - 1))
    else:
        starts = ctx.constant(np.zeros([1] * rank, dtype="int64"))
    offsets = ctx.constant(np.arange(steps, dtype="int64").reshape([1] * axis + [steps] + [1] * (rank - axis - 1)))
    index = binary(ctx, "elementwise_add", starts, offsets)
    if ctx.attr("mode", "linear") == "circular":
        index = binary(ctx, "elementwise_mod", index, ctx.scalar(capacity, "int64"))
    index = ctx.op("expand", {"X": index}, shape=list(update.shape))
    return ctx.op("put_along_axis", {"X": cache, "Index": index, "Value": update}, axis=axis, reduce="assign")


@converter("MaxUnpool", since=9)
def _max_unpool(ctx):
    """Each value written at its flat index (from MaxPool) into zeros of the pooled input's
    shape, then zero-padded at the end up to output_shape if one is given."""
    x, indices = ctx.input(0), ctx.input(1)
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    n = len(kernel)
    strides = [int(s) for s in ctx.attr("strides") or [1] * n]
    pads = [int(p) for p in ctx.attr("pads") or [0] * (2 * n)]
    if any(d < 0 for d in x.shape):
        raise ctx.unsupported(f"MaxUnpool of an input of unknown size {list(x.shape)}")
    inferred = list(x.shape[:2]) + [(x.shape[2 + d] - 1) * strides[d] - pads[d] - pads[n + d] + kernel[d]
                                    for d in range(n)]
    zeros = full(ctx, [int(np.prod(inferred))], 0, x.dtype)
    flat = ctx.op("put_along_axis", {"X": zeros, "Index": ctx.op("reshape", {"X": cast(ctx, indices, "int64")}, shape=[-1]),
                                     "Value": ctx.op("reshape", {"X": x}, shape=[-1])}, axis=0, reduce="assign")
    out = ctx.op("reshape", {"X": flat}, shape=inferred)
    if ctx.has_input(2):
        wanted = [int(d) for d in ctx.const(2, "output_shape").reshape(-1)]
        extra = [0] * (2 * len(wanted))
        for i, (have, want) in enumerate(zip(inferred, wanted)):
            extra[2 * i + 1] = want - have
        if any(extra):
            out = ctx.op("pad", {"X": out}, paddings=extra, mode="constant", value=0.0)
    return out


@converter("RoiAlign", since=10)
def _roi_align(ctx):
    aligned = ctx.opset >= 16 and ctx.attr("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    x = ctx.input(0)
    return ctx.op("roi_align", {"X": x, "Rois": cast(ctx, ctx.input(1), x.dtype),
                                "BatchIndices": cast(ctx, ctx.input(2), "int64")},
                  output_height=int(ctx.attr("output_height", 1)), output_width=int(ctx.attr("output_width", 1)),
                  sampling_ratio=int(ctx.attr("sampling_ratio", 0)), spatial_scale=float(ctx.attr("spatial_scale", 1.0)),
                  aligned=aligned, mode=ctx.attr("mode", "avg"))
