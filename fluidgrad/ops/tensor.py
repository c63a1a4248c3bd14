"""Ops that move data: reshape, transpose, concat, split, slice, gather, one_hot."""
from __future__ import annotations

import numpy as np

from ..framework.names import EMPTY_VAR_NAME
from . import fused_scatter
from .grad_builder import GradBuilder
from .registry import NO_GRADIENT, register_op
from .shape_rules import axis_of, normalize_axis, static_numel


# ---------------------------------------------------------------- integer indices
def check_integer(ctx, slot):
    if not ctx.dtype(slot).startswith(("int", "uint")):
        raise ctx.dtype_error(f"{slot} must be an integer tensor, got {ctx.describe(slot)}")


# where a refused negative index comes from: the public calls built on each op
_CALLERS = {"gather": "index_select / gather(x, index)", "take_along_axis": "x.gather(dim, index) / take_along_axis",
            "put_along_axis": "scatter / scatter_add / scatter_reduce / index_add / index_copy / put_along_axis",
            "scatter": "scatter(x, index, updates)", "one_hot": "one_hot"}


def check_index_range(op, index, size, axis, wrap=True, slot="Index"):
    """IndexError naming the first index outside the valid range: [-size, size) where negative
    indices count from the end (`wrap`: x[-1], torch.take, ONNX), else [0, size) as torch's
    index_select / gather / scatter / one_hot refuse a negative index. One min and one max pass:
    cheap next to the gather itself."""
    index = np.asarray(index)
    if not index.size:
        return
    low, high, lowest = index.min(), index.max(), -size if wrap else 0
    if low >= lowest and high < size:
        return
    bad = int(low if low < lowest else high)
    if bad < 0 and not wrap and bad >= -size:
        raise IndexError(f"{op}: index {bad} is out of range for axis {axis} of size {size}: {slot} must lie in "
                         f"[0, {size}); a negative index does not count from the end in "
                         f"{_CALLERS.get(op, op)} (as in torch), only in x[index]")
    raise IndexError(f"{op}: index {bad} is out of range for axis {axis} of size {size} ({slot} must lie in "
                     f"[{lowest}, {size}))")


def wrap_negative(index, size):
    index = np.asarray(index)
    return np.where(index < 0, index + size, index) if index.size and index.min() < 0 else index


# ---------------------------------------------------------------- reshape
def _resolve_shape(in_shape, shape):
    """Paddle's rules: 0 copies the input's size, one -1 is inferred. Where copying cannot give
    the zero elements of an empty x (a [0, 3] x to [3, 0] would copy 3: [3, 3]), a 0 is a size of
    0, as torch reads it; a copy that holds zero elements stays Paddle's ([0, -1] of [0, 3] is [0, 3])."""
    copied = [in_shape[i] if d == 0 and i < len(in_shape) else d for i, d in enumerate(shape)]
    if 0 in shape and 0 in in_shape and (len(shape) > len(in_shape) and 0 in shape[len(in_shape):]
                                         or all(d > 0 for d in copied)):
        return list(shape)
    return copied


def _reshape_kernel(x, shape_tensor, shape):
    if shape_tensor is not None:  # sizes computed at run time (x.shape[0] read while tracing)
        shape = [int(d) for d in np.asarray(shape_tensor).reshape(-1)]
        try:
            return x.reshape(_resolve_shape(x.shape, shape))
        except ValueError:
            raise ValueError(f"reshape: cannot reshape X of shape {list(x.shape)} to {shape} "
                             f"(the ShapeTensor's value at run time)") from None
    return x.reshape(_resolve_shape(x.shape, shape))


def _reshape_infer(ctx):
    in_shape, shape = ctx.shape("X"), list(ctx.attr("shape"))
    if ctx.has_input("ShapeTensor"):
        _check_shape_tensor(ctx, len(shape))
        if shape.count(-1) > 1:  # several sizes known only at run time
            ctx.set_output("Out", _resolve_shape(in_shape, shape), ctx.dtype("X"))
            return
    if shape.count(-1) > 1:
        raise ctx.shape_error(f"shape {shape} has more than one -1 for {ctx.describe('X')}")
    out = _resolve_shape(in_shape, shape)
    if 0 not in in_shape and any(d == 0 and i >= len(in_shape) for i, d in enumerate(shape)):
        raise ctx.shape_error(f"shape {shape} copies (0) a dimension that {ctx.describe('X')} lacks")
    n_in, known = static_numel(in_shape), static_numel([d for d in out if d != -1])
    if -1 in out and known == 0:
        raise ctx.shape_error(f"cannot reshape {ctx.describe('X')} to {shape}: with another size 0 "
                              f"(here {out}) the -1 could be any size (torch refuses it too); give that size")
    if -1 in shape and n_in < 0:
        # dims copied by 0 cancel out: [-1, 5, 1] -> [0, -1] gives [-1, 5] (the batch dim stays unknown)
        copied = {i for i, d in enumerate(shape) if d == 0}
        rest_in = static_numel([d for i, d in enumerate(in_shape) if i not in copied])
        rest_out = static_numel([d for i, d in enumerate(shape) if i not in copied and d != -1])
        if rest_in >= 0 and rest_out > 0:
            if rest_in % rest_out:
                raise ctx.shape_error(f"cannot reshape {ctx.describe('X')} to {shape}")
            out[shape.index(-1)] = rest_in // rest_out
    elif -1 in out and n_in >= 0 and known > 0:
        if n_in % known:
            raise ctx.shape_error(f"cannot reshape {ctx.describe('X')} to {shape}")
        out[out.index(-1)] = n_in // known
    elif n_in >= 0 and static_numel(out) >= 0 and n_in != static_numel(out):
        raise ctx.shape_error(f"cannot reshape {ctx.describe('X')} ({n_in} elements) to {shape}")
    ctx.set_output("Out", out, ctx.dtype("X"))


def _check_shape_tensor(ctx, rank):
    """A run-time shape (the optional ShapeTensor of reshape, fill_constant, expand): a 1-D
    integer tensor with one entry per entry of the `shape` attribute, which gives the sizes
    known when the program is built (-1 for the others)."""
    check_integer(ctx, "ShapeTensor")
    sizes = ctx.shape("ShapeTensor")
    if len(sizes) != 1 or sizes[0] not in (-1, rank):
        raise ctx.shape_error(f"ShapeTensor must be 1-D with {rank} entries (one per entry of the shape "
                              f"attribute), got {ctx.describe('ShapeTensor')}")


def _reshape_grad(g: GradBuilder):
    g.set_input_grad("X", g.op("reshape_as", {"X": g.output_grad("Out"), "Target": g.input_like("X")}))


register_op("reshape", inputs="X ShapeTensor?", outputs="Out", attrs={"shape": [-1]}, kernel=_reshape_kernel,
            infer=_reshape_infer, grad=_reshape_grad)
register_op("reshape_as", inputs="X Target", outputs="Out",
            kernel=lambda x, target: x.reshape(target.shape),
            infer=lambda ctx: ctx.set_output("Out", ctx.shape("Target"), ctx.dtype("X")),
            grad=_reshape_grad, doc="Reshapes X to the shape of Target (the gradient of reshape).")


register_op("shape", inputs="X", outputs="Out", kernel=lambda x: np.asarray(np.shape(x), dtype="int64"),
            infer=lambda ctx: ctx.set_output("Out", [len(ctx.shape("X"))], "int64"), grad=NO_GRADIENT,
            doc="X's shape as a 1-D int64 tensor (paddle.shape): the sizes a traced program reads at run time.")


# ---------------------------------------------------------------- transpose
def _transpose_infer(ctx):
    shape, perm = ctx.shape("X"), list(ctx.attr("perm"))
    if any(not -len(shape) <= p < len(shape) for p in perm) or \
            sorted(p % len(shape) for p in perm) != list(range(len(shape))):
        raise ctx.shape_error(f"perm {perm} is not a permutation of the axes of {ctx.describe('X')}")
    ctx.set_output("Out", [shape[p] for p in perm], ctx.dtype("X"))


def _transpose_grad(g: GradBuilder):
    perm = [p % len(g.attr("perm")) for p in g.attr("perm")]
    inverse = [perm.index(i) for i in range(len(perm))]
    g.set_input_grad("X", g.op("transpose", {"X": g.output_grad("Out")}, perm=inverse))


register_op("transpose", inputs="X", outputs="Out", attrs={"perm": [1, 0]},
            kernel=lambda x, perm: np.transpose(x, perm), infer=_transpose_infer, grad=_transpose_grad)


# ---------------------------------------------------------------- concat / split
def _concat_infer(ctx):
    shapes, dtypes = ctx.shapes("X"), ctx.dtypes("X")
    axis = axis_of(ctx, ctx.attr("axis"), len(shapes[0]))
    size = 0
    for i, shape in enumerate(shapes):
        if dtypes[i] != dtypes[0]:
            raise ctx.dtype_error(f"inputs must share one dtype: {ctx.describe('X', 0)} vs {ctx.describe('X', i)}")
        if len(shape) != len(shapes[0]) or any(
                a != b and a != -1 and b != -1 for j, (a, b) in enumerate(zip(shape, shapes[0])) if j != axis):
            raise ctx.shape_error(f"inputs differ off axis {axis}: {ctx.describe('X', 0)} vs {ctx.describe('X', i)}")
        size = -1 if size == -1 or shape[axis] == -1 else size + shape[axis]
    out = list(shapes[0])
    out[axis] = size
    ctx.set_output("Out", out, dtypes[0])


def _concat_grad(g: GradBuilder):
    xs = g.input_like("X")
    axis = g.attr("axis")
    sections = [g.shape(x)[axis] for x in xs]
    if sections.count(-1) > 1:  # sizes known only at run time: split like the inputs then
        parts = g.op("split_as", {"X": g.output_grad("Out"), "Like": xs}, n_out=len(xs), axis=axis)
    else:
        parts = g.op("split", {"X": g.output_grad("Out")}, n_out=len(xs), num_or_sections=sections, axis=axis)
    g.set_input_grad("X", parts)


register_op("concat", inputs="X*", outputs="Out", attrs={"axis": 0},
            kernel=lambda xs, axis: np.concatenate(xs, axis=axis), infer=_concat_infer, grad=_concat_grad)


def _split_points(size, num_or_sections, chunked=False, axis=0):
    if isinstance(num_or_sections, int):
        if size % num_or_sections and chunked:
            sections = _chunk_sections(size, num_or_sections, axis)
        elif size % num_or_sections:
            raise ValueError(f"split: size {size} is not divisible by {num_or_sections}")
        else:
            sections = [size // num_or_sections] * num_or_sections
    else:
        sections = list(num_or_sections)
        if -1 in sections:
            sections[sections.index(-1)] = size - (sum(sections) + 1)
    return np.cumsum(sections)[:-1]


def _chunk_sections(size, chunks, axis):
    """torch.chunk's (and ONNX Split num_outputs') cut of an axis whose size was unknown when the
    Program was built: pieces of ceil(size / chunks), the last smaller; an error when that makes
    fewer pieces than the Program has outputs (torch.chunk then returns fewer)."""
    step = -(-size // chunks)
    count = -(-size // step)
    if count != chunks:
        raise ValueError(f"chunk: axis {axis} has {size} entries at run time, which torch.chunk's rule (pieces "
                         f"of ceil({size} / {chunks}) = {step}) cuts into {count} pieces, but the Program was built "
                         f"for {chunks} (the axis's size was unknown then); feed a size that makes {chunks} pieces, "
                         f"or split with explicit sections")
    return [step] * (chunks - 1) + [size - step * (chunks - 1)]


def _split_kernel(x, num_or_sections, axis, chunked=False):
    return np.split(x, _split_points(x.shape[axis], num_or_sections, chunked, axis % x.ndim), axis=axis)


def _split_infer(ctx):
    shape, sections = list(ctx.shape("X")), ctx.attr("num_or_sections")
    axis = axis_of(ctx, ctx.attr("axis"), len(shape))
    count = sections if isinstance(sections, int) else len(sections)
    if ctx.num_outputs("Out") != count:
        raise ctx.shape_error(f"{count} sections but {ctx.num_outputs('Out')} outputs for {ctx.describe('X')}")
    if isinstance(sections, int):
        if shape[axis] != -1 and shape[axis] % sections:
            raise ctx.shape_error(f"cannot split {ctx.describe('X')} into {sections} equal parts on axis {axis}")
        sizes = [shape[axis] // sections if shape[axis] != -1 else -1] * sections
    else:
        sizes = list(sections)
        if shape[axis] != -1 and -1 not in sizes and sum(sizes) != shape[axis]:
            raise ctx.shape_error(f"sections {sizes} do not add up to axis {axis} of {ctx.describe('X')}")
        if shape[axis] != -1 and sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    for i, size in enumerate(sizes):
        shape[axis] = size
        ctx.set_output("Out", shape, ctx.dtype("X"), index=i)


def _split_grad(g: GradBuilder, resplit=None):
    """concat of the output gradients. An output dropped as @EMPTY@ (a grad op's unused piece,
    met again when differentiating twice) has no variable to zero-fill like: `resplit(g)`
    splits X again to get pieces of the right shapes."""
    grads = g.output_grad("Out")
    empty = [i for i, name in enumerate(g.output("Out")) if isinstance(name, str) and name == EMPTY_VAR_NAME]
    if empty:
        pieces = resplit(g)
        grads = [g.op("fill_zeros_like", {"X": pieces[i]}) if i in empty else d for i, d in enumerate(grads)]
    g.set_input_grad("X", g.op("concat", {"X": grads}, axis=g.attr("axis")))


def _resplit(g: GradBuilder):
    return g.op("split", {"X": g.input_like("X")}, n_out=len(g.output("Out")),
                num_or_sections=g.attr("num_or_sections"), axis=g.attr("axis"), chunked=g.attr("chunked"))


def _split_grad_maker(g: GradBuilder) -> None:
    _split_grad(g, _resplit)


register_op("split", inputs="X", outputs="Out*", attrs={"num_or_sections": 2, "axis": 0, "chunked": False},
            kernel=_split_kernel, infer=_split_infer, grad=_split_grad_maker,
            doc="X cut along axis into num_or_sections equal parts (or parts of the given sizes); chunked: an "
                "axis of unknown size that does not divide is cut as torch.chunk does (fg.chunk's).")


def _split_as_kernel(x, likes, axis):
    return np.split(x, np.cumsum([like.shape[axis] for like in likes])[:-1], axis=axis)


def _split_as_infer(ctx):
    shape = ctx.shape("X")
    axis = axis_of(ctx, ctx.attr("axis"), len(shape))
    if ctx.num_outputs("Out") != len(ctx.shapes("Like")):
        raise ctx.shape_error(f"{len(ctx.input_names('Like'))} Like inputs but {ctx.num_outputs('Out')} outputs")
    for i, like in enumerate(ctx.shapes("Like")):
        if len(like) != len(shape):
            raise ctx.shape_error(f"{ctx.describe('Like', i)} does not have the rank of {ctx.describe('X')}")
        out = list(shape)
        out[axis] = like[axis]
        ctx.set_output("Out", out, ctx.dtype("X"), index=i)


def _split_as_grad(g: GradBuilder) -> None:
    _split_grad(g, lambda g: g.op("split_as", {"X": g.input_like("X"), "Like": g.input_like("Like")},
                                  n_out=len(g.output("Out")), axis=g.attr("axis")))


register_op("split_as", inputs="X Like*", outputs="Out*", attrs={"axis": 0}, kernel=_split_as_kernel,
            infer=_split_as_infer,
            grad=_split_as_grad,
            doc="Splits X along `axis` into pieces as long as each Like input there (concat's gradient "
                "when those lengths are known only at run time).")


# ---------------------------------------------------------------- slice
def _slices(ndim, axes, starts, ends, strides=None):
    index = [slice(None)] * ndim
    for i, axis in enumerate(axes):
        index[axis] = slice(starts[i], ends[i], strides[i] if strides else None)
    return tuple(index)


def _slice_kernel(x, axes, starts, ends, strides):
    return x[_slices(x.ndim, axes, starts, ends, strides)]


def _slice_infer(ctx):
    shape = list(ctx.shape("X"))
    axes, starts, ends = ctx.attr("axes"), ctx.attr("starts"), ctx.attr("ends")
    strides = ctx.attr("strides") or [1] * len(axes)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ctx.shape_error(f"axes {axes}, starts {starts}, ends {ends} and strides {strides} must have "
                              f"one length")
    for axis, start, end, step in zip(axes, starts, ends, strides):
        axis = axis_of(ctx, axis, len(shape))
        if step == 0:
            raise ctx.shape_error(f"stride 0 on axis {axis} of {ctx.describe('X')}")
        if shape[axis] != -1:   # an unknown axis stays unknown: x[:4] of a batch of 2 holds 2 rows
            shape[axis] = len(range(*slice(start, end, step).indices(shape[axis])))
    ctx.set_output("Out", shape, ctx.dtype("X"))


def _slice_grad(g: GradBuilder):
    g.set_input_grad("X", g.op("slice_grad", {"X": g.output_grad("Out"), "Target": g.input_like("X")},
                               axes=g.attr("axes"), starts=g.attr("starts"), ends=g.attr("ends"),
                               strides=g.attr("strides")))


def _slice_grad_kernel(dout, target, axes, starts, ends, strides):
    out = np.zeros(target.shape, dtype=dout.dtype)
    out[_slices(target.ndim, axes, starts, ends, strides)] = dout
    return out


def _slice_grad_grad(g: GradBuilder):
    g.set_input_grad("X", g.op("slice", {"X": g.output_grad("Out")}, axes=g.attr("axes"),
                               starts=g.attr("starts"), ends=g.attr("ends"), strides=g.attr("strides")))


# strides None means 1 on every axis; a negative stride walks backwards (ends of -2**31 reach index 0)
_SLICE_ATTRS = {"axes": [0], "starts": [0], "ends": [1], "strides": None}
register_op("slice", inputs="X", outputs="Out", attrs=_SLICE_ATTRS, kernel=_slice_kernel,
            infer=_slice_infer, grad=_slice_grad)
register_op("slice_grad", inputs="X Target", outputs="Out", attrs=_SLICE_ATTRS, kernel=_slice_grad_kernel,
            infer=lambda ctx: ctx.set_output("Out", ctx.shape("Target"), ctx.dtype("X")),
            grad=_slice_grad_grad, doc="Places X into zeros shaped like Target (the transpose of slice).")


# ---------------------------------------------------------------- gather
def _check_index(ctx):
    if not ctx.dtype("Index").startswith(("int", "uint")):
        raise ctx.dtype_error(f"Index must be an integer tensor, got {ctx.describe('Index')}")


def _gather_infer(ctx):
    _check_index(ctx)
    shape = list(ctx.shape("X"))
    axis = axis_of(ctx, ctx.attr("axis"), len(shape))   # a 0-D X has no axis to gather along
    out = shape[:axis] + list(ctx.shape("Index")) + shape[axis + 1:]
    ctx.set_output("Out", out, ctx.dtype("X"))


def _gather_kernel(x, index, axis, wrap_negative):
    check_index_range("gather", index, x.shape[axis], axis % max(x.ndim, 1), wrap_negative)
    return np.take(x, index, axis=axis)


def _gather_grad(g: GradBuilder):
    g.set_input_grad("X", g.op("gather_grad", {"X": g.output_grad("Out"), "Index": g.input("Index"),
                                               "Target": g.input_like("X")}, axis=g.attr("axis")))


_FEW_REPEATS = 8   # up to this many gathers of one row: one plain scatter per repeat beats np.add.at


def _occurrences(index: np.ndarray) -> np.ndarray:
    """For each entry, how many equal entries come before it (0 for a first occurrence)."""
    order = np.argsort(index, kind="stable")
    ordered = index[order]
    positions = np.arange(index.size)
    starts = np.maximum.accumulate(np.where(np.r_[True, ordered[1:] != ordered[:-1]], positions, 0))
    rank = np.empty(index.size, dtype=np.int64)
    rank[order] = positions - starts
    return rank


def _gather_grad_kernel(dout, index, target, axis):
    """Scatter-add: rows gathered twice receive both gradients. When no row is gathered more than
    a few times (repeat_interleave, permutations), the k-th gathers of every row are distinct:
    one plain scatter-add each, instead of np.add.at's slow element-wise loop."""
    axis = axis % max(target.ndim, 1)
    out = np.zeros(target.shape, dtype=dout.dtype)
    flat = index.reshape(-1)
    if flat.size and target.ndim:
        flat = np.where(flat < 0, flat + target.shape[axis], flat)
        compiled = fused_scatter.gather_grad(dout, flat, target.shape, axis)
        if compiled is not None:
            return compiled
        rank = _occurrences(flat)
        if rank.max() < _FEW_REPEATS:
            d = dout.reshape(dout.shape[:axis] + (flat.size,) + dout.shape[axis + index.ndim:])
            lead = (slice(None),) * axis
            for k in range(int(rank.max()) + 1):
                picked = np.flatnonzero(rank == k)
                out[lead + (flat[picked],)] += np.take(d, picked, axis=axis)
            return out
    moved = np.moveaxis(out, axis, 0)
    d = np.moveaxis(dout.reshape(dout.shape[:axis] + (index.size,) + dout.shape[axis + index.ndim:]), axis, 0)
    np.add.at(moved, index.reshape(-1), d)
    return out


def _gather_grad_grad(g: GradBuilder):
    g.set_input_grad("X", g.op("gather", {"X": g.output_grad("Out"), "Index": g.input("Index")},
                               axis=g.attr("axis"), wrap_negative=True))


def _gather_grad_infer(ctx):
    _check_index(ctx)
    ctx.set_output("Out", ctx.shape("Target"), ctx.dtype("X"))


register_op("gather", inputs="X Index", outputs="Out", attrs={"axis": 0, "wrap_negative": False},
            kernel=_gather_kernel, infer=_gather_infer, grad=_gather_grad,
            doc="The slices of X at Index along axis (index_select). A negative index is an error unless "
                "wrap_negative (x[index], ONNX Gather, torch.take): then it counts from the end.")
register_op("gather_grad", inputs="X Index Target", outputs="Out", attrs={"axis": 0},
            kernel=_gather_grad_kernel, infer=_gather_grad_infer, grad=_gather_grad_grad,
            doc="Scatter-adds X into zeros shaped like Target at Index (the transpose of gather).")


# ---------------------------------------------------------------- one_hot
def _one_hot_infer(ctx):
    _check_index_slot(ctx)
    shape = list(ctx.shape("X"))
    axis = ctx.attr("axis")
    if not -len(shape) - 1 <= axis <= len(shape):
        raise ctx.shape_error(f"axis {axis} is out of range for a one-hot of {ctx.describe('X')}")
    if ctx.attr("depth") < 1:
        raise ctx.shape_error(f"depth (the number of classes) must be at least 1, got {ctx.attr('depth')}")
    shape.insert(axis % (len(shape) + 1), ctx.attr("depth"))
    ctx.set_output("Out", shape, ctx.attr("dtype"))


def _check_index_slot(ctx):
    if not ctx.dtype("X").startswith(("int", "uint")):
        raise ctx.dtype_error(f"expects integer labels, got {ctx.describe('X')}")


def _one_hot_kernel(x, depth, dtype, axis):
    """A negative label is an error, as in torch's F.one_hot and paddle.nn.functional.one_hot (a -1
    'unlabelled' mark must not train as the last class); the ONNX importer wraps OneHot's itself."""
    check_index_range("one_hot", x, depth, axis % (x.ndim + 1), wrap=False, slot="X (the labels)")
    out = (x[..., None] == np.arange(depth)).astype(dtype)
    return np.moveaxis(out, -1, axis) if axis % (x.ndim + 1) != x.ndim else out


register_op("one_hot", inputs="X", outputs="Out", attrs={"depth": 2, "dtype": "float32", "axis": -1},
            kernel=_one_hot_kernel, infer=_one_hot_infer, grad=NO_GRADIENT)


# ---------------------------------------------------------------- squeeze / unsqueeze
def _squeeze_kernel(x, axes):
    if np.ndim(x) == 0:   # axis 0 / -1 of a 0-D x: nothing to drop (the shape rule checked them)
        return np.asarray(x).copy()
    return np.squeeze(x, axis=tuple(axes) if axes else None)


def _squeeze_infer(ctx):
    """Empty axes squeeze every axis of size 1 (ONNX Squeeze without axes; unknown sizes stay).
    A 0-D X is returned as it is, its axes 0 and -1 accepted (PyTorch's squeeze of a 0-D
    tensor; once each, as there)."""
    shape = list(ctx.shape("X"))
    if not shape:
        axes = list(ctx.attr("axes"))
        bad = [a for a in axes if a not in (0, -1)]
        if bad or len(axes) > 1:
            why = f"axis {bad[0]} is out of range (expected to be in range of [-1, 0])" if bad \
                else f"axes {axes} name axis 0 more than once"
            raise ctx.shape_error(f"cannot squeeze {ctx.describe('X')}, a 0-D tensor: {why}")
        ctx.set_output("Out", [], ctx.dtype("X"))
        return
    axes = {normalize_axis(ctx, a, len(shape)) for a in ctx.attr("axes")} or \
        {i for i, d in enumerate(shape) if d == 1}
    for a in axes:
        if shape[a] not in (1, -1):
            raise ctx.shape_error(f"cannot squeeze axis {a} of size {shape[a]} in {ctx.describe('X')}")
    ctx.set_output("Out", [d for i, d in enumerate(shape) if i not in axes], ctx.dtype("X"))


def _unsqueeze_infer(ctx):
    """NumPy's expand_dims: each axis names a position in the output, negative ones from its end."""
    shape, axes = list(ctx.shape("X")), list(ctx.attr("axes"))
    out_ndim = len(shape) + len(axes)
    if any(not -out_ndim <= a < out_ndim for a in axes) or len({a % out_ndim for a in axes}) != len(axes):
        raise ctx.shape_error(f"axes {axes} are out of range or repeated for an output of rank {out_ndim} "
                              f"from {ctx.describe('X')}")
    for a in sorted(a % out_ndim for a in axes):
        shape.insert(a, 1)
    ctx.set_output("Out", shape, ctx.dtype("X"))


register_op("squeeze", inputs="X", outputs="Out", attrs={"axes": [0]},
            kernel=_squeeze_kernel, infer=_squeeze_infer, grad=_reshape_grad)
register_op("unsqueeze", inputs="X", outputs="Out", attrs={"axes": [0]},
            kernel=lambda x, axes: np.expand_dims(x, tuple(axes)), infer=_unsqueeze_infer, grad=_reshape_grad)


def _stack_infer(ctx):
    shapes, dtypes = ctx.shapes("X"), ctx.dtypes("X")
    for i, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise ctx.shape_error(f"inputs must share one shape: {ctx.describe('X', 0)} vs {ctx.describe('X', i)}")
        if dtypes[i] != dtypes[0]:
            raise ctx.dtype_error(f"inputs must share one dtype: {ctx.describe('X', 0)} vs {ctx.describe('X', i)}")
    out = list(shapes[0])
    axis = ctx.attr("axis")
    out.insert(axis if axis >= 0 else len(out) + axis + 1, len(shapes))
    ctx.set_output("Out", out, ctx.dtype("X"))


def _stack_grad(g: GradBuilder):
    xs = g.input_like("X")
    axis = g.attr("axis")
    axis = axis if axis >= 0 else len(g.shape(xs[0])) + axis + 1
    parts = g.op("split", {"X": g.output_grad("Out")}, n_out=len(xs), num_or_sections=len(xs), axis=axis)
    g.set_input_grad("X", [g.op("squeeze", {"X": p}, axes=[axis]) for p in parts])


register_op("stack", inputs="X*", outputs="Out", attrs={"axis": 0},
            kernel=lambda xs, axis: np.stack(xs, axis=axis), infer=_stack_infer, grad=_stack_grad)


# ---------------------------------------------------------------- flatten
def _flatten_shape(shape, start, stop):
    if not shape:
        return [1]
    start, stop = start % len(shape), stop % len(shape)
    middle = static_numel(shape[start:stop + 1])
    return list(shape[:start]) + [middle] + list(shape[stop + 1:])


def _flatten_infer(ctx):
    shape, start, stop = ctx.shape("X"), ctx.attr("start_axis"), ctx.attr("stop_axis")
    if shape:
        start, stop = normalize_axis(ctx, start, len(shape)), normalize_axis(ctx, stop, len(shape))
        if start > stop:
            raise ctx.shape_error(f"start_axis {start} is after stop_axis {stop} for {ctx.describe('X')}")
    ctx.set_output("Out", _flatten_shape(shape, start, stop), ctx.dtype("X"))


register_op("flatten", inputs="X", outputs="Out", attrs={"start_axis": 0, "stop_axis": -1},
            kernel=lambda x, start_axis, stop_axis: x.reshape(
                [d if d >= 0 else -1 for d in _flatten_shape(x.shape, start_axis, stop_axis)]),
            infer=_flatten_infer, grad=_reshape_grad,
            doc="Merges axes start_axis..stop_axis into one (sizes unknown at build time allowed).")


# ---------------------------------------------------------------- assign_value
def _assign_value_infer(ctx):
    shape, values = ctx.attr("shape"), ctx.attr("values")
    if static_numel(shape) != len(values):
        raise ctx.shape_error(f"{len(values)} values do not fill shape {shape}")
    ctx.set_output("Out", shape, ctx.attr("dtype"))


register_op("assign_value", inputs=(), outputs="Out", attrs={"shape": [0], "dtype": "float32", "values": []},
            kernel=lambda shape, dtype, values: np.array(values, dtype=dtype).reshape(shape),
            infer=_assign_value_infer, grad=NO_GRADIENT,
            doc="A constant array held in the program (e.g. an index list written in Python).")


# ---------------------------------------------------------------- set_value (x[...] = v)
def _region(x_shape, axes, starts, ends, strides, decrease_axes):
    index = _slices(len(x_shape), axes, starts, ends, strides)
    region = [len(range(*s.indices(n))) for s, n in zip(index, x_shape)]
    return index, region, [d for i, d in enumerate(region) if i not in set(decrease_axes)]


def _set_value_kernel(x, value, axes, starts, ends, strides, decrease_axes):
    index, region, kept = _region(x.shape, axes, starts, ends, strides, decrease_axes)
    out = x.copy()
    out[index] = np.broadcast_to(value, kept).reshape(region)
    return out


def _set_value_infer(ctx):
    x = ctx.shape("X")
    if ctx.dtype("Value") != ctx.dtype("X"):
        raise ctx.dtype_error(f"Value must have the dtype of X: {ctx.describe('Value')} vs {ctx.describe('X')}")
    if -1 not in x:
        _, _, kept = _region(x, *(ctx.attr(a) for a in ("axes", "starts", "ends", "strides", "decrease_axes")))
        value = ctx.shape("Value")
        if len(value) > len(kept) or any(v not in (1, k, -1) for v, k in zip(value[::-1], kept[::-1])):
            raise ctx.shape_error(f"{ctx.describe('Value')} does not broadcast to the assigned region of shape "
                                  f"{kept} of {ctx.describe('X')}")
    ctx.set_output("Out", x, ctx.dtype("X"))


def _set_value_grad(g: GradBuilder):
    dout, value = g.output_grad("Out"), g.input("Value")
    where = {a: g.attr(a) for a in ("axes", "starts", "ends", "strides", "decrease_axes")}
    # Value's gradient first: after `x[...] = v` in a program, X and Out share one name, and so
    # do their gradients; X's gradient overwrites the region Value's gradient reads
    if g.needs_input_grad("Value"):
        region = g.op("slice", {"X": dout}, axes=where["axes"], starts=where["starts"], ends=where["ends"],
                      strides=where["strides"])
        if where["decrease_axes"]:
            region = g.op("squeeze", {"X": region}, axes=where["decrease_axes"])
        g.set_input_grad("Value", region)
    if g.needs_input_grad("X"):
        g.set_input_grad("X", g.op("set_value", {"X": dout, "Value": g.op("fill_zeros_like", {"X": value})},
                                   **where))


register_op("set_value", inputs="X Value", outputs="Out",
            attrs={"axes": [], "starts": [], "ends": [], "strides": None, "decrease_axes": []},
            kernel=_set_value_kernel, infer=_set_value_infer, grad=_set_value_grad,
            doc="X with the strided region (as `slice` selects it) replaced by Value, broadcast to the "
                "region without its decrease_axes (integer indices): `x[...] = v`.")
