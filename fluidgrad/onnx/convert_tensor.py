"""Converters for shapes and data movement: constants, casts, reshapes, slicing, gathering."""
from __future__ import annotations


import numpy as np

from ..framework.dtypes import require_extension_dtype
from . import dtypes
from .convert_common import add_scalar, binary, cast, full, mul_scalar, normalize_axes, required_const, via_float
from .convert_table import converter
from .errors import UnsupportedOnnxOpError
from .fold import SymDim, symbolic
from .load import tensor_to_array


def _known(shape) -> bool:
    return all(d >= 0 for d in shape)


# ---------------------------------------------------------------- constants and shapes
@converter("Constant")
def _constant(ctx):
    attrs = ctx.attrs
    if "value" in attrs:
        return tensor_to_array(attrs["value"], f"{ctx.where()} value")
    for name, dtype in (("value_float", "float32"), ("value_floats", "float32"), ("value_int", "int64"),
                        ("value_ints", "int64")):
        if name in attrs:
            return np.asarray(attrs[name], dtype=dtype)
    raise ctx.unsupported(f"constant attribute {sorted(attrs)} (sparse and string constants are not supported)")


@converter("Shape")
def _shape(ctx):
    shape = ctx.shape(0)
    start, end = ctx.attr("start", 0), ctx.attr("end", None)
    picked = list(shape)[slice(start, end)]
    if not _known(picked):
        raise ctx.unsupported(f"the shape {list(shape)} is not known when the program is built")
    return np.asarray(picked, dtype="int64")


@converter("Size")
def _size(ctx):
    shape = ctx.shape(0)
    if not _known(shape):
        raise ctx.unsupported(f"the shape {list(shape)} is not known when the program is built")
    return np.asarray(int(np.prod(shape)), dtype="int64")


@converter("ConstantOfShape")
def _constant_of_shape(ctx):
    value = ctx.attr("value")
    array = tensor_to_array(value, ctx.where()) if value is not None else np.zeros([1], "float32")
    if symbolic(ctx.maybe_const(0)):  # sizes of a dynamic batch: filled like the variable they are read from
        try:
            return _filled_like(ctx, list(ctx.maybe_const(0).reshape(-1)), array.reshape(-1)[0].item(),
                                array.dtype.name)
        except UnsupportedOnnxOpError:
            out = _constant_at_run_time(ctx, array)
            if out is None:
                raise
            return out
    if ctx.maybe_const(0) is None:
        out = _constant_at_run_time(ctx, array)
        if out is not None:
            return out
    shape = [int(d) for d in ctx.const(0, "shape").reshape(-1)]
    if array.dtype.kind in "iub" and int(np.prod(shape)) <= 64:  # shape arithmetic: folded
        return np.full(shape, array.reshape(-1)[0], dtype=array.dtype)
    return full(ctx, shape, float(array.reshape(-1)[0]), array.dtype.name)


def _constant_at_run_time(ctx, array):
    """ConstantOfShape of a shape known only when the program runs (see `run_time_shape`), or None."""
    shape = run_time_shape(ctx, 0)
    if shape is None:
        return None
    return ctx.op("fill_constant", {"ShapeTensor": shape[0]}, shape=shape[1], value=array.reshape(-1)[0].item(),
                  dtype=array.dtype.name)


def _filled_like(ctx, target: list, value, dtype: str):
    """`value` in a shape holding sizes unknown when the program is built (SymDims), all read
    from one variable (`torch.zeros(x.shape[0], 5)`, `zeros_like(x)` under a dynamic batch):
    that variable cut to one element along the axes the shape does not read, laid out in the
    shape's order, filled (fill_any_like), then broadcast to the known sizes."""
    names = {d.var for d in target if isinstance(d, SymDim)}
    block = ctx.graph.model.program.current_block()
    read = [d.axis for d in target if isinstance(d, SymDim)]
    if len(names) != 1 or None in names or not block.has_var_recursive(next(iter(names))) or \
            len(set(read)) != len(read):
        raise ctx.unsupported(f"a shape {target} computed from dimensions unknown when the program is built "
                              f"(only sizes read from one variable, each once, are resolved)")
    like = block.var_recursive(names.pop())
    unread = [a for a in range(len(like.shape)) if a not in read]
    if any(like.shape[a] == 0 for a in unread):
        raise ctx.unsupported(f"a shape {target} read from {like.name} {list(like.shape)}, which is empty")
    if unread:
        like = ctx.op("slice", {"X": like}, axes=unread, starts=[0] * len(unread), ends=[1] * len(unread))
        like = ctx.op("squeeze", {"X": like}, axes=unread)
    perm = [sorted(read).index(a) for a in read]
    if perm != sorted(perm):
        like = ctx.op("transpose", {"X": like}, perm=perm)
    out = ctx.op("fill_any_like", {"X": like}, value=value, dtype=dtype)
    known = [k for k, d in enumerate(target) if not isinstance(d, SymDim)]
    if known:
        out = ctx.op("unsqueeze", {"X": out}, axes=known)
        out = ctx.op("expand", {"X": out}, shape=[-1 if isinstance(d, SymDim) else int(d) for d in target])
    return out


def expand_to_symbolic(ctx, x, target: list):
    """Expand(x, shape) whose shape holds sizes unknown when the program is built, all read from
    one variable: `expand_as` to zeros of that shape (made by `_filled_like`), which broadcasts
    size-1 axes of x whatever x's recorded size (-1 "keep x's size" cannot: x[:1] of a dynamic
    batch is recorded as -1). None where that does not apply (the caller resolves it otherwise)."""
    offset = len(target) - len(x.shape)
    if offset < 0:
        return None
    target = list(target)
    for k, d in enumerate(target):
        own = x.shape[k - offset] if k >= offset else 1
        if not isinstance(d, SymDim) and int(d) == 1 and own != 1:  # ONNX broadcasts both ways
            if own < 0:
                return None
            target[k] = own
    try:
        zeros = _filled_like(ctx, target, 0, x.dtype)
    except UnsupportedOnnxOpError:
        return None
    return ctx.op("expand_as", {"X": x, "Target": zeros})


def sizes_as_data(ctx, value: np.ndarray):
    """A shape value holding sizes unknown when the program is built (SymDims read from
    variables: Shape -> Gather under a dynamic batch), used as data (a count dividing a sum):
    each size counted at run time as the sum of ones along its axis. None where a size is
    derived from others (the caller says why it cannot)."""
    flat = list(value.reshape(-1))
    pieces = []
    for d in flat:
        count = _count(ctx, d)
        if count is None:
            return None
        pieces.append(count)
    out = pieces[0] if len(pieces) == 1 else ctx.op("concat", {"X": pieces}, axis=0)
    return cast(ctx, ctx.op("reshape", {"X": out}, shape=list(value.shape)), value.dtype.name
                if value.dtype != object else "int64")


def run_time_shape(ctx, i: int, allow_zero: bool = False):
    """Input `i`, a shape known only when the program runs, as (a 1-D integer Variable, the sizes
    known now with -1 for the others): a shape holding sizes unknown at build time (SymDims read
    from variables: torch's dynamo exporter writes `x.view(x.size(0), -1)` as Shape -> Gather ->
    Concat -> Reshape) or computed from the graph's inputs. None where that cannot be said: a
    size derived from unknown ones, or (`allow_zero`: ONNX's allowzero=1, where 0 is a size,
    which fluidgrad's reshape reads as "copy") a zero that may be literal."""
    value = ctx.maybe_const(i)
    if value is not None and not symbolic(value):
        return None
    if value is None:
        if not ctx.has_input(i) or allow_zero:
            return None
        tensor = ctx.input(i)
        if not hasattr(tensor, "shape") or len(tensor.shape) != 1 or tensor.shape[0] < 0:
            return None
        hint = [-1] * tensor.shape[0]
    else:
        flat = list(value.reshape(-1))
        if value.ndim != 1 or (allow_zero and any(not isinstance(d, SymDim) and int(d) == 0 for d in flat)):
            return None
        tensor = sizes_as_data(ctx, value)
        if tensor is None:
            return None
        hint = [-1 if isinstance(d, SymDim) else int(d) for d in flat]
    if not str(tensor.dtype).startswith(("int", "uint")):
        return None
    return tensor, hint


def reshape_at_run_time(ctx):
    """Reshape to a shape known only when the program runs (see `run_time_shape`), or None."""
    shape = run_time_shape(ctx, 1, allow_zero=bool(ctx.attr("allowzero", 0)))
    if shape is None:
        return None
    return ctx.op("reshape", {"X": ctx.input(0), "ShapeTensor": shape[0]}, shape=shape[1])


def expand_at_run_time(ctx):
    """Expand to a shape known only when the program runs: x plus zeros of that shape, which
    broadcasts both ways as ONNX's Expand does (or None, see `run_time_shape`)."""
    shape = run_time_shape(ctx, 1)
    if shape is None:
        return None
    x = ctx.input(0)
    zeros = ctx.op("fill_constant", {"ShapeTensor": shape[0]}, shape=shape[1], value=0.0,
                   dtype="bool" if x.dtype == "bool" else x.dtype)
    return ctx.op("logical_or" if x.dtype == "bool" else "elementwise_add", {"X": x, "Y": zeros})


_SIZE_OPS = {"add": "elementwise_add", "sub": "elementwise_sub", "mul": "elementwise_mul",
             "floordiv": "elementwise_floordiv", "mod": "elementwise_mod"}


def _count(ctx, d):
    """A [1] int64 Variable of the size `d` at run time: a number, a dimension of a variable (the
    sum of ones along it), or arithmetic on those (SymDim.expr); None where a size's origin is lost."""
    if not isinstance(d, SymDim):
        return ctx.constant(np.asarray([int(d)], "int64"))
    if d.var is not None:
        try:
            ones = _filled_like(ctx, [d], 1, "int64")
        except UnsupportedOnnxOpError:
            return None
        return ctx.op("reduce_sum", {"X": ones}, axis=[0], keepdim=True)
    if d.expr is None:
        return None
    left, right = _count(ctx, d.expr[1]), _count(ctx, d.expr[2])
    return None if left is None or right is None else binary(ctx, _SIZE_OPS[d.expr[0]], left, right)


@converter("Range")
def _range(ctx):
    if any(ctx.maybe_const(i) is None for i in range(3)):  # computed by other nodes: sized at run time
        return ctx.op("arange", {"Start": ctx.input(0), "End": ctx.input(1), "Step": ctx.input(2)})
    start, limit, delta = (ctx.const(i, what) for i, what in enumerate(("start", "limit", "delta")))
    dtype = start.dtype.name
    values = [v.item() for v in (start, limit, delta)]
    return ctx.op("range", {}, start=values[0], end=values[1], step=values[2], dtype=dtype)


@converter("Cast")
def _cast(ctx):
    dtype = dtypes.to_fluidgrad(ctx.attr("to"), f"{ctx.where()} target type")
    const = ctx.maybe_const(0)
    if const is not None and const.dtype.kind in "iub" and const.size <= 64:
        return const.astype(dtype)  # shape arithmetic, folded
    if _scalar_foldable(const, dtype):
        return const.astype(dtype)
    return _cast_as_onnx(ctx, dtype)


def _scalar_foldable(const, dtype: str) -> bool:
    """A one-element constant (a pad value, -inf) cast between plain dtypes is folded: NumPy
    casts it as the op would (non-finite floats only to floats)."""
    if const is None or const.size != 1 or const.dtype.name not in _PLAIN:
        return False
    if dtype == "bfloat16":
        require_extension_dtype(dtype)  # NumPy learns the name from ml_dtypes
        return True
    return dtype in _PLAIN_FLOATS or (dtype in _PLAIN and bool(np.isfinite(const).all()))


_PLAIN_FLOATS = ("float16", "float32", "float64")
_PLAIN = _PLAIN_FLOATS + ("int8", "int16", "int32", "int64", "uint8", "bool")


@converter("CastLike")
def _cast_like(ctx):
    const = ctx.maybe_const(0)
    if _scalar_foldable(const, ctx.dtype(1)):
        return const.astype(ctx.dtype(1))
    return _cast_as_onnx(ctx, ctx.dtype(1))


def _cast_as_onnx(ctx, dtype):
    """ONNX's float8 casts saturate unless told not to; float8_e8m0fnu rounds up by default."""
    x = ctx.input(0)
    if x.dtype == dtype:
        return x
    return ctx.op("cast", {"X": x}, dtype=dtype, saturate=bool(ctx.attr("saturate", 1)),
                  round_mode=ctx.attr("round_mode", "up"))


# ---------------------------------------------------------------- reshaping
def _reshape_target(ctx, in_shape, shape, allowzero):
    target = [int(d) for d in shape]
    if not allowzero:
        target = [in_shape[i] if d == 0 and i < len(in_shape) else d for i, d in enumerate(target)]
    if -1 in target and _known(in_shape):
        known = int(np.prod([d for d in target if d != -1]))
        total = int(np.prod(in_shape))
        target[target.index(-1)] = total // known if known else 0
    return target


@converter("Reshape")
def _reshape(ctx):
    x = ctx.input(0)
    if ctx.opset < 5:
        shape = ctx.attr("shape")
    else:
        out = reshape_at_run_time(ctx) if ctx.maybe_const(1) is None else None
        if out is not None:
            return out
        shape = required_const(ctx, 1, "shape").reshape(-1)
    target = _reshape_target(ctx, x.shape, shape, ctx.attr("allowzero", 0))
    # dims still unknown (-1 twice is impossible in ONNX): copy them from the input by position
    if target.count(-1) > 1:
        target = [0 if d == -1 and i < len(x.shape) and x.shape[i] == -1 else d for i, d in enumerate(target)]
    if 0 in target and ctx.attr("allowzero", 0) and _known(x.shape) and int(np.prod(x.shape)) == 0:
        return full(ctx, target, 0, x.dtype)  # a literal 0 size (the op's 0 would copy the input's)
    return ctx.op("reshape", {"X": x}, shape=target)


@converter("Flatten")
def _flatten(ctx):
    x = ctx.input(0)
    rank = len(x.shape)
    axis = normalize_axes([ctx.attr("axis", 1)], rank)[0]
    before, after = x.shape[:axis], x.shape[axis:]
    if _known(after):
        shape = [-1, int(np.prod(after))] if before else [1, int(np.prod(after))]
    elif _known(before):
        shape = [int(np.prod(before)), -1]
    else:
        raise ctx.unsupported(f"flattening {list(x.shape)} at axis {axis} needs one side known")
    return ctx.op("reshape", {"X": x}, shape=shape)


@converter("Squeeze")
def _squeeze(ctx):
    x = ctx.input(0)
    axes = ctx.attr("axes") if ctx.opset < 13 else (
        [int(a) for a in ctx.const(1, "axes").reshape(-1)] if ctx.has_input(1) else None)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    return ctx.op("squeeze", {"X": x}, axes=normalize_axes(axes, len(x.shape)))


@converter("Unsqueeze")
def _unsqueeze(ctx):
    axes = ctx.attr("axes") if ctx.opset < 13 else [int(a) for a in ctx.const(1, "axes").reshape(-1)]
    const = ctx.maybe_const(0)
    out_rank = ctx.rank(0) + len(axes)
    axes = sorted(normalize_axes(axes, out_rank))
    if const is not None and const.dtype.kind in "iub" and const.size <= 64:
        value = const
        for axis in axes:
            value = np.expand_dims(value, axis)
        return value
    return ctx.op("unsqueeze", {"X": ctx.input(0)}, axes=axes)


@converter("Transpose")
def _transpose(ctx):
    x = ctx.input(0)
    perm = ctx.attr("perm") or list(reversed(range(len(x.shape))))
    return ctx.op("transpose", {"X": x}, perm=[int(p) for p in perm])


@converter("Concat")
def _concat(ctx):
    consts = [ctx.maybe_const(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    axis = int(ctx.attr("axis"))
    if all(c is not None and c.dtype.kind in "iub" and c.size <= 64 for c in consts):
        return np.concatenate(consts, axis=axis)
    return ctx.op("concat", {"X": ctx.inputs()}, axis=axis)


@converter("Split")
def _split(ctx):
    x = ctx.input(0)
    axis = normalize_axes([ctx.attr("axis", 0)], len(x.shape))[0]
    n = len(ctx.node.output)
    if ctx.opset < 13:
        sizes = ctx.attr("split")
    else:
        sizes = [int(s) for s in ctx.const(1, "split sizes")] if ctx.has_input(1) else None
    if sizes is None:
        size = x.shape[axis]
        if size < 0:
            if ctx.opset >= 18:
                return _chunks_at_run_time(ctx, x, axis, n)
            return ctx.op("split", {"X": x}, n_out=n, num_or_sections=n, axis=axis)
        if ctx.opset >= 18 and size % n:
            chunk = -(-size // n)
            sizes = [chunk] * (n - 1) + [size - chunk * (n - 1)]
        else:
            sizes = [size // n] * n
    return ctx.op("split", {"X": x}, n_out=len(sizes), num_or_sections=[int(s) for s in sizes], axis=axis)


def _chunks_at_run_time(ctx, x, axis: int, n: int) -> list:
    """Split into n outputs of an axis of unknown size (opset 18): ceil(size / n) each, the last
    smaller (torch.chunk's cut), which fluidgrad's even split cannot say: gathers of the ranges
    [i c, min((i + 1) c, size)) computed at run time."""
    size = ctx.op("reduce_sum", {"X": _filled_like(ctx, [SymDim(x.name, axis)], 1, "int64")}, axis=[0],
                  keepdim=True)
    chunk = binary(ctx, "elementwise_floordiv", add_scalar(ctx, size, n - 1), ctx.scalar(n, "int64"))
    step = ctx.scalar(1, "int64")
    bounds = [binary(ctx, "elementwise_min", mul_scalar(ctx, chunk, i), size) for i in range(n + 1)]
    return [ctx.op("gather", {"X": x, "Index": ctx.op("arange", {"Start": bounds[i], "End": bounds[i + 1],
                                                                  "Step": step})}, axis=axis)
            for i in range(n)]


@converter("Slice")
def _slice(ctx):
    x = ctx.input(0)
    rank = len(x.shape)
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes, steps = ctx.attr("axes") or list(range(len(starts))), [1] * len(starts)
    else:
        starts = [int(v) for v in ctx.const(1, "starts")]
        ends = [int(v) for v in ctx.const(2, "ends")]
        axes = [int(v) for v in ctx.const(3, "axes")] if ctx.has_input(3) else list(range(len(starts)))
        steps = [int(v) for v in ctx.const(4, "steps")] if ctx.has_input(4) else [1] * len(starts)
    axes = normalize_axes(axes, rank)
    plain = [(a, s, e) for a, s, e, st in zip(axes, starts, ends, steps) if st == 1]
    out = x
    if plain:
        big = 2**62
        out = ctx.op("slice", {"X": out}, axes=[a for a, _, _ in plain],
                     starts=[max(min(s, big), -big) for _, s, _ in plain],
                     ends=[max(min(e, big), -big) for _, _, e in plain])
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if step == 1:
            continue
        size = x.shape[axis]
        if size < 0:
            out = _strided_slice(ctx, out, axis, start, end, step)
            continue
        index = np.arange(*slice(start, end, step).indices(size), dtype="int64")
        out = ctx.op("gather", {"X": out, "Index": ctx.constant(index)}, axis=axis)
    return out


def _strided_slice(ctx, x, axis: int, start: int, end: int, step: int):
    """A step other than 1 on an axis of unknown size: fluidgrad's strided slice (Python's bounds).
    ONNX clamps bounds as Python does, except a negative step's start below -size, which ONNX
    clamps to 0 and Python to -1 (nothing): with the size unknown, only starts >= -1 are sure."""
    if step < 0 and start < -1:
        raise ctx.unsupported(f"a step of {step} from start {start} on axis {axis} of unknown size")
    big = 2**62
    return ctx.op("slice", {"X": x}, axes=[axis], starts=[max(min(start, big), -big)],
                  ends=[max(min(end, big), -big)], strides=[step])


@converter("Gather")
def _gather(ctx):
    data, index = ctx.maybe_const(0), ctx.maybe_const(1)
    axis = int(ctx.attr("axis", 0))
    if data is not None and index is not None and data.dtype.kind in "iub" and data.size <= 64:
        return np.take(data, index, axis=axis)
    x = ctx.input(0)
    axis = normalize_axes([axis], len(x.shape))[0]
    return ctx.op("gather", {"X": x, "Index": ctx.input(1)}, axis=axis, wrap_negative=True)   # ONNX's rule


@converter("Expand")
def _expand(ctx):
    x = ctx.input(0)
    out = expand_at_run_time(ctx) if ctx.maybe_const(1) is None else None
    if out is not None:
        return out
    shape = [int(d) for d in required_const(ctx, 1, "shape")]
    rank = max(len(shape), len(x.shape))
    a = [1] * (rank - len(x.shape)) + list(x.shape)
    b = [1] * (rank - len(shape)) + shape
    out_shape = [db if da == 1 else da for da, db in zip(a, b)]
    if ctx.has_op("expand"):
        return ctx.op("expand", {"X": x}, shape=out_shape)  # ONNX Expand broadcasts: never lowers the rank
    if not _known(out_shape):
        raise ctx.unsupported(f"expanding {list(x.shape)} to {shape} with unknown sizes")
    target = full(ctx, out_shape, 0, x.dtype)
    return ctx.op("expand_as", {"X": x, "Target": target})


@converter("Tile")
def _tile(ctx):
    repeats = [int(r) for r in ctx.const(1, "repeats")]
    if ctx.has_op("tile"):
        return ctx.op("tile", {"X": ctx.input(0)}, repeat_times=repeats)
    out = ctx.input(0)
    for axis, times in enumerate(int(r) for r in ctx.const(1, "repeats")):
        if times != 1:
            out = ctx.op("concat", {"X": [out] * times}, axis=axis)
    return out


@converter("Dropout")
def _dropout(ctx):
    """Inference: the identity, and a mask of ones."""
    x = ctx.input(0)
    training = ctx.maybe_const(2) if ctx.num_inputs > 2 else None
    if training is not None and bool(training) and ctx.has_input(1) and float(ctx.const(1, "ratio")) != 0:
        raise ctx.unsupported("dropout in training mode (random masks differ between frameworks)")
    out = ctx.op("assign", {"X": x})
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        mask = ctx.op("cast", {"X": ctx.op("fill_zeros_like", {"X": x})}, dtype="bool")
        return [out, ctx.op("logical_not", {"X": mask})]
    return out


@converter("OneHot")
def _one_hot(ctx):
    indices = ctx.input(0)
    depth = int(ctx.const(1, "depth").reshape(-1)[0])
    values = ctx.const(2, "values").reshape(-1)
    axis = ctx.attr("axis", -1)
    index = cast(ctx, via_float(ctx, indices, lambda v: ctx.op("trunc", {"X": v})), "int64")
    wrapped = binary(ctx, "elementwise_add", index, binary(ctx, "elementwise_mul", cast(
        ctx, ctx.op("less_than", {"X": index, "Y": ctx.scalar(0, "int64")}), "int64"), ctx.scalar(depth, "int64")))
    # indices outside [-depth, depth) give a row of `off` values (ONNX), not an error
    valid = ctx.op("logical_and", {"X": ctx.op("greater_equal", {"X": wrapped, "Y": ctx.scalar(0, "int64")}),
                                   "Y": ctx.op("less_than", {"X": wrapped, "Y": ctx.scalar(depth, "int64")})})
    wrapped = ctx.op("where", {"Condition": valid, "X": wrapped, "Y": ctx.op("fill_zeros_like", {"X": wrapped})})
    hot = ctx.op("one_hot", {"X": wrapped}, depth=depth, dtype="float64")
    hot = binary(ctx, "elementwise_mul", hot, ctx.op("unsqueeze", {"X": cast(ctx, valid, "float64")}, axes=[-1]))
    off, on = float(values[0]), float(values[1])
    out = binary(ctx, "elementwise_add", binary(ctx, "elementwise_mul", hot, ctx.scalar(on - off, "float64")),
                 ctx.scalar(off, "float64"))
    out = cast(ctx, out, values.dtype.name)
    rank = len(indices.shape) + 1
    axis = normalize_axes([axis], rank)[0]
    if axis != rank - 1:
        perm = list(range(rank - 1))
        perm.insert(axis, rank - 1)
        out = ctx.op("transpose", {"X": out}, perm=perm)
    return out


@converter("EyeLike")
def _eye_like(ctx):
    shape = ctx.shape(0)
    if len(shape) != 2 or not _known(shape):
        raise ctx.unsupported(f"EyeLike of shape {list(shape)} (a 2-D input of known size is required)")
    dtype = dtypes.to_fluidgrad(ctx.attr("dtype"), ctx.where()) if ctx.attr("dtype") is not None else ctx.dtype(0)
    return np.eye(shape[0], shape[1], int(ctx.attr("k", 0)), dtype=dtype)


@converter("Compress")
def _compress(ctx):
    """The positions where the condition holds (known at run time), gathered along the axis."""
    x, condition = ctx.input(0), ctx.input(1)
    axis = ctx.attr("axis")
    if axis is None:
        x = ctx.op("reshape", {"X": x}, shape=[-1])
        axis = 0
    axis = normalize_axes([axis], len(x.shape))[0]
    condition = cast(ctx, ctx.op("reshape", {"X": condition}, shape=[-1]), "bool")
    positions = ctx.op("reshape", {"X": ctx.op("nonzero", {"X": condition})}, shape=[-1])
    return ctx.op("gather", {"X": x, "Index": positions}, axis=axis)


@converter("ReverseSequence")
def _reverse_sequence(ctx):
    """Out[t, b] = X[len[b] - 1 - t, b] for t < len[b], else X[t, b]: one take_along_axis."""
    x, lengths = ctx.input(0), cast(ctx, ctx.input(1), "int64")
    time_axis, batch_axis = int(ctx.attr("time_axis", 0)), int(ctx.attr("batch_axis", 1))
    steps = x.shape[time_axis]
    if steps < 0:
        raise ctx.unsupported(f"a time axis of unknown size in {list(x.shape)}")
    rank = len(x.shape)
    t_shape = [1] * rank
    t_shape[time_axis] = steps
    b_shape = [1] * rank
    b_shape[batch_axis] = -1
    t = ctx.constant(np.arange(steps, dtype="int64").reshape(t_shape))
    lengths = ctx.op("reshape", {"X": lengths}, shape=b_shape)
    reversed_t = binary(ctx, "elementwise_sub", binary(ctx, "elementwise_sub", lengths, ctx.scalar(1, "int64")), t)
    index = ctx.op("where", {"Condition": ctx.op("less_than", {"X": t, "Y": lengths}), "X": reversed_t, "Y": t})
    index = ctx.op("expand", {"X": index}, shape=list(x.shape))
    return ctx.op("take_along_axis", {"X": x, "Index": index}, axis=time_axis)


@converter("CenterCropPad", since=18)
def _center_crop_pad(ctx):
    """Crop (a centred slice) where the input is larger, pad (zeros, centred) where smaller."""
    x = ctx.input(0)
    rank = len(x.shape)
    target = [int(d) for d in ctx.const(1, "shape").reshape(-1)]
    axes = normalize_axes(ctx.attr("axes") or list(range(rank)), rank)
    crops, pads = [], [0] * (2 * rank)
    for axis, size in zip(axes, target):
        have = x.shape[axis]
        if have < 0:
            raise ctx.unsupported(f"centring on axis {axis} of unknown size in {list(x.shape)}")
        if have > size:
            start = (have - size) // 2
            crops.append((axis, start, start + size))
        elif have < size:
            pads[2 * axis], pads[2 * axis + 1] = (size - have) // 2, size - have - (size - have) // 2
    out = x
    if crops:
        out = ctx.op("slice", {"X": out}, axes=[a for a, _, _ in crops], starts=[s for _, s, _ in crops],
                     ends=[e for _, _, e in crops])
    if any(pads):
        out = ctx.op("pad", {"X": out}, paddings=pads, mode="constant", value=0.0)
    return out if out is not x else ctx.op("assign", {"X": x})


@converter("ImageDecoder", since=20)
def _image_decoder(ctx):
    return ctx.op("decode_image", {"X": ctx.input(0)}, pixel_format=ctx.attr("pixel_format", "RGB"))


# ---------------------------------------------------------------- random tensors
def _random(op_type: str, like: bool, params: tuple):
    """RandomUniform / RandomNormal (a shape attribute) and their *Like forms (the input's shape
    and, unless `dtype` is given, its dtype). Values come from fluidgrad's generator, so they are
    not ONNX Runtime's; `seed` makes them repeatable."""
    def convert(ctx):
        if like:
            shape = list(ctx.shape(0))
            dtype = dtypes.to_fluidgrad(ctx.attr("dtype"), ctx.where()) if ctx.attr("dtype") is not None \
                else ctx.dtype(0)
        else:
            shape = [int(d) for d in ctx.attr("shape")]
            dtype = dtypes.to_fluidgrad(ctx.attr("dtype", 1), ctx.where())
        if not _known(shape):
            raise ctx.unsupported(f"random values of a shape {shape} not known when the program is built")
        values = {ours: float(ctx.attr(theirs, default)) for ours, theirs, default in params}
        return ctx.op(op_type, {}, shape=shape, dtype=dtype, seed=int(ctx.attr("seed", 0.0)), **values)
    return convert


_UNIFORM = (("min", "low", 0.0), ("max", "high", 1.0))
_NORMAL = (("mean", "mean", 0.0), ("std", "scale", 1.0))
converter("RandomUniform")(_random("uniform_random", False, _UNIFORM))
converter("RandomUniformLike")(_random("uniform_random", True, _UNIFORM))
converter("RandomNormal")(_random("gaussian_random", False, _NORMAL))
converter("RandomNormalLike")(_random("gaussian_random", True, _NORMAL))
