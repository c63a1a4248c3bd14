"""Selection and indexing ops: where, arg_max, top_k, argsort, take/put_along_axis, gather_nd,
scatter_nd, scatter, nonzero, tril_triu.

Gradients are written as ordinary registered ops (a selection's gradient is a scatter-add of the
output gradient into zeros, a scatter's gradient is a gather), so grad of grad comes free.
Out-of-range integer indices raise IndexError naming the op, the index, the axis and the size.
"""
from __future__ import annotations

import numpy as np

from ..framework.errors import NoGradientError
from .grad_builder import GradBuilder
from .registry import NO_GRADIENT, register_op
from .shape_rules import broadcast_shapes, normalize_axis
from .tensor import check_index_range, check_integer
from .tensor import wrap_negative as _wrap

_REDUCE_UFUNCS = {"add": np.add, "mul": np.multiply, "multiply": np.multiply, "amax": np.maximum,
                  "max": np.maximum, "amin": np.minimum, "min": np.minimum}
_REDUCES = ("assign", "none", *_REDUCE_UFUNCS)


def _check_reduce(ctx) -> str:
    reduce = ctx.attr("reduce")
    if reduce not in _REDUCES:
        raise ctx.shape_error(f"reduce={reduce!r} is not one of {list(_REDUCES)}")
    return reduce


def _zeros_like(g: GradBuilder, value):
    return g.op("fill_zeros_like", {"X": value})


def _no_value_grad(g: GradBuilder, op: str, slot: str) -> None:
    raise NoGradientError(f"op {op} with reduce={g.attr('reduce')!r} has no gradient for {slot}; "
                          f"'assign' and 'add' have one (and 'mul' for the scattered-into input)")


# ---------------------------------------------------------------- where
def _where_infer(ctx):
    if ctx.dtype("Condition") != "bool":
        raise ctx.dtype_error(f"Condition must be bool, got {ctx.describe('Condition')}")
    if ctx.dtype("X") != ctx.dtype("Y"):
        raise ctx.dtype_error(f"X and Y must have one dtype, got {ctx.describe('X')} and {ctx.describe('Y')}")
    what = lambda: f"{ctx.describe('Condition')}, {ctx.describe('X')} and {ctx.describe('Y')}"  # noqa: E731
    shape = broadcast_shapes(ctx, ctx.shape("Condition"), ctx.shape("X"), what)
    ctx.set_output("Out", broadcast_shapes(ctx, shape, ctx.shape("Y"), what), ctx.dtype("X"))


def _where_grad(g: GradBuilder):
    cond, dout = g.input("Condition"), g.output_grad("Out")
    zeros = _zeros_like(g, dout)
    if g.needs_input_grad("X"):
        g.set_input_grad("X", g.op("where", {"Condition": cond, "X": dout, "Y": zeros}))
    if g.needs_input_grad("Y"):
        g.set_input_grad("Y", g.op("where", {"Condition": cond, "X": zeros, "Y": dout}))


register_op("where", inputs="Condition X Y", outputs="Out", kernel=lambda c, x, y: np.where(c, x, y),
            infer=_where_infer, grad=_where_grad, doc="X where Condition holds, else Y (all three broadcast).")


# ---------------------------------------------------------------- arg_max / arg_min
def _arg_kernel(pick):
    def kernel(x, axis, keepdim, select_last_index, dtype):
        if axis is None or x.ndim == 0:  # a 0-D value's one axis-like position, as PyTorch: index 0
            out = np.asarray(_arg(pick, x.reshape(-1), 0, select_last_index))
            return out.reshape((1,) * x.ndim if keepdim else ()).astype(dtype)
        out = _arg(pick, x, axis, select_last_index)
        return (np.expand_dims(out, axis) if keepdim else out).astype(dtype)
    return kernel


def _arg(pick, x, axis, select_last_index):
    if x.shape[axis] == 0:
        raise ValueError(f"arg_{pick.__name__[3:]}: axis {axis} of the input (shape {list(x.shape)}) is empty")
    if not select_last_index:
        return pick(x, axis=axis)
    return x.shape[axis] - 1 - pick(np.flip(x, axis), axis=axis)


def _no_bool(ctx):
    if ctx.dtype("X") == "bool":
        raise ctx.dtype_error(f"does not compare bool values (as in PyTorch), got {ctx.describe('X')}")


def _arg_infer(ctx):
    _no_bool(ctx)
    shape, axis = ctx.shape("X"), ctx.attr("axis")
    if ctx.attr("dtype") not in ("int32", "int64"):
        raise ctx.dtype_error(f"dtype must be int32 or int64, got {ctx.attr('dtype')}")
    if axis is None:
        out = [1] * len(shape) if ctx.attr("keepdim") else []
    elif not shape:  # 0-D: axis 0 or -1, as in PyTorch
        normalize_axis(ctx, axis, 1)
        out = []
    else:
        axis = normalize_axis(ctx, axis, len(shape))
        out = [1 if i == axis else d for i, d in enumerate(shape) if i != axis or ctx.attr("keepdim")]
    ctx.set_output("Out", out, ctx.attr("dtype"))


_ARG_ATTRS = {"axis": None, "keepdim": False, "select_last_index": False, "dtype": "int64"}
register_op("arg_max", inputs="X", outputs="Out", attrs=_ARG_ATTRS, kernel=_arg_kernel(np.argmax),
            infer=_arg_infer, grad=NO_GRADIENT, doc="Index of the largest value (integer output: no gradient).")
register_op("arg_min", inputs="X", outputs="Out", attrs=_ARG_ATTRS, kernel=_arg_kernel(np.argmin),
            infer=_arg_infer, grad=NO_GRADIENT, doc="Index of the smallest value (integer output: no gradient).")


# ---------------------------------------------------------------- sorting: argsort, top_k
def _sort_indices(x, axis, descending):
    if descending:
        if _has_nan(x):  # NaN first: the largest value, as in PyTorch (-x would sort it last)
            return np.lexsort((-x, ~np.isnan(x)), axis=axis)
        key = x.astype(np.int64) if x.dtype.kind in "bu" else x
        return np.argsort(-key, axis=axis, kind="stable")
    return np.argsort(x, axis=axis, kind="stable")


def _has_nan(x: np.ndarray) -> bool:
    return x.dtype.kind not in "biu" and bool(np.isnan(x).any())


def _argsort_kernel(x, axis, descending):
    if x.ndim == 0:  # one value, its own axis (as PyTorch's sort of a 0-D tensor)
        return x.copy(), np.zeros((), np.int64)
    index = _sort_indices(x, axis, descending)
    return np.take_along_axis(x, index, axis), index


def _argsort_infer(ctx):
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))
    ctx.set_output("Indices", ctx.shape("X"), "int64")


def _selection_grad(g: GradBuilder):
    """Out = take_along_axis(X, Indices): dX = put_along_axis(zeros, Indices, dOut, add)."""
    if g.needs_input_grad("X"):
        x = g.input_like("X")
        g.set_input_grad("X", g.op("put_along_axis", {"X": _zeros_like(g, x), "Index": g.output("Indices"),
                                                       "Value": g.output_grad("Out")},
                                   axis=g.attr("axis"), reduce="add"))


register_op("argsort", inputs="X", outputs="Out Indices", attrs={"axis": -1, "descending": False},
            kernel=_argsort_kernel, infer=_argsort_infer, grad=_selection_grad,
            doc="Sorted values and their indices (a stable sort: ties keep their order).")


def _top_k_kernel(x, k, axis, largest, sorted):
    if x.ndim == 0:  # the one value (the rule allows k <= 1; PyTorch returns it 0-D)
        return x.copy(), np.zeros((), np.int64)
    axis = axis % x.ndim
    n = x.shape[axis]
    if k > n:
        raise ValueError(f"top_k: k={k} is larger than axis {axis} of the input (shape {list(x.shape)})")
    if largest and _has_nan(x):  # NaN is the largest value (PyTorch): the descending sort's order
        index = np.take(_sort_indices(x, axis, True), np.arange(k), axis=axis)
        return np.take_along_axis(x, index, axis), index.astype(np.int64)
    key = -(x.astype(np.int64) if x.dtype.kind in "bu" else x) if largest else x
    if 4 * k < n:  # partial selection first, then sort the k
        part = np.argpartition(key, k - 1, axis=axis)
        part = np.take(part, np.arange(k), axis=axis)
        order = np.argsort(np.take_along_axis(key, part, axis), axis=axis, kind="stable")
        index = np.take_along_axis(part, order, axis)
    else:
        index = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return np.take_along_axis(x, index, axis), index.astype(np.int64)


def _top_k_infer(ctx):
    _no_bool(ctx)
    shape = list(ctx.shape("X"))
    axis = normalize_axis(ctx, ctx.attr("axis"), len(shape))
    k = ctx.attr("k")
    size = shape[axis] if shape else 1   # a 0-D X: one value, and a 0-D result
    if k < 0 or (size >= 0 and k > size):
        raise ctx.shape_error(f"k={k} is out of range for axis {axis} of {ctx.describe('X')}")
    if shape:
        shape[axis] = k
    ctx.set_output("Out", shape, ctx.dtype("X"))
    ctx.set_output("Indices", shape, "int64")


register_op("top_k", inputs="X", outputs="Out Indices",
            attrs={"k": 1, "axis": -1, "largest": True, "sorted": True}, kernel=_top_k_kernel,
            infer=_top_k_infer, grad=_selection_grad,
            doc="The k largest (or smallest) values along an axis, sorted, and their indices.")


# ---------------------------------------------------------------- take_along_axis / put_along_axis
def _along_index(x_shape, index, axis, op, wrap):
    """Open index arrays selecting, for each entry of `index`, its element of an array shaped
    `x_shape` (ONNX GatherElements / torch.gather: off `axis`, index may be shorter than x).
    A negative index counts from the end only when `wrap` (torch.take_along_dim's, put's)."""
    size = x_shape[axis]
    check_index_range(op, index, size, axis, wrap)
    if wrap:
        index = _wrap(index, size)
    parts = []
    for d in range(index.ndim):
        if d == axis:
            parts.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = index.shape[d]
            parts.append(np.arange(index.shape[d]).reshape(shape))
    return tuple(parts)


def _take_along_axis_kernel(x, index, axis, wrap_negative):
    if x.ndim == 0:  # as a vector of one value
        return _take_along_axis_kernel(x.reshape(1), index.reshape(1), 0, wrap_negative).reshape(())
    return x[_along_index(x.shape, index, axis % x.ndim, "take_along_axis", wrap_negative)]


def _check_along(ctx, index_slot="Index"):
    check_integer(ctx, index_slot)
    x, index = ctx.shape("X"), ctx.shape(index_slot)
    axis = normalize_axis(ctx, ctx.attr("axis"), len(x))
    if len(index) != len(x):
        raise ctx.shape_error(f"{ctx.describe(index_slot)} must have the rank of {ctx.describe('X')}")
    for d, (i, n) in enumerate(zip(index, x)):
        if d != axis and i >= 0 and n >= 0 and i > n:
            raise ctx.shape_error(f"{ctx.describe(index_slot)} is longer than {ctx.describe('X')} on axis {d}")
    return axis


def _take_along_axis_infer(ctx):
    _check_along(ctx)
    ctx.set_output("Out", ctx.shape("Index"), ctx.dtype("X"))


def _take_along_axis_grad(g: GradBuilder):
    x = g.input_like("X")
    g.set_input_grad("X", g.op("put_along_axis", {"X": _zeros_like(g, x), "Index": g.input("Index"),
                                                   "Value": g.output_grad("Out")}, axis=g.attr("axis"), reduce="add",
                               wrap_negative=True))


register_op("take_along_axis", inputs="X Index", outputs="Out", attrs={"axis": 0, "wrap_negative": False},
            kernel=_take_along_axis_kernel, infer=_take_along_axis_infer, grad=_take_along_axis_grad,
            doc="Out[i][j] = X[Index[i][j]][j] on axis 0 (ONNX GatherElements, torch.gather). A negative "
                "index is an error unless wrap_negative (torch.take_along_dim): then it counts from the end.")


def _put_along_axis_kernel(x, index, value, axis, reduce, wrap_negative):
    if x.ndim == 0:  # as a vector of one value
        return _put_along_axis_kernel(x.reshape(1), index.reshape(1), np.reshape(value, 1), 0, reduce,
                                      wrap_negative).reshape(())
    axis %= x.ndim
    out = x.copy()
    where = _along_index(x.shape, index, axis, "put_along_axis", wrap_negative)
    value = np.broadcast_to(np.asarray(value, dtype=x.dtype), index.shape)
    if reduce in ("assign", "none"):
        out[where] = value
    else:
        _REDUCE_UFUNCS[reduce].at(out, where, value)
    return out


def _put_along_axis_infer(ctx):
    _check_along(ctx)
    _check_reduce(ctx)
    if ctx.dtype("Value") != ctx.dtype("X"):
        raise ctx.dtype_error(f"Value must have the dtype of X: {ctx.describe('Value')} vs {ctx.describe('X')}")
    index, value = ctx.shape("Index"), ctx.shape("Value")
    if broadcast_shapes(ctx, index, value, lambda: f"{ctx.describe('Value')} to {ctx.describe('Index')}") \
            != tuple(index):
        raise ctx.shape_error(f"{ctx.describe('Value')} does not broadcast to {ctx.describe('Index')}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _put_along_axis_grad(g: GradBuilder):
    reduce, dout, index, value = g.attr("reduce"), g.output_grad("Out"), g.input("Index"), g.input("Value")
    axis = g.attr("axis")
    if g.needs_input_grad("X"):
        if reduce == "add":
            dx = g.op("assign", {"X": dout})
        elif reduce in ("assign", "none"):
            dx = g.op("put_along_axis", {"X": dout, "Index": index, "Value": _zeros_like(g, value)},
                      axis=axis, reduce="assign", wrap_negative=True)
        elif reduce in ("mul", "multiply"):
            dx = g.op("put_along_axis", {"X": dout, "Index": index, "Value": value}, axis=axis, reduce="mul",
                      wrap_negative=True)
        else:
            _no_value_grad(g, "put_along_axis", "X")
        g.set_input_grad("X", dx)
    if g.needs_input_grad("Value"):
        if reduce not in ("add", "assign", "none"):
            _no_value_grad(g, "put_along_axis", "Value")
        g.set_input_grad("Value", g.op("take_along_axis", {"X": dout, "Index": index}, axis=axis, wrap_negative=True))


register_op("put_along_axis", inputs="X Index Value", outputs="Out",
            attrs={"axis": 0, "reduce": "assign", "wrap_negative": False},
            kernel=_put_along_axis_kernel, infer=_put_along_axis_infer, grad=_put_along_axis_grad,
            doc="X with Value written (or reduced: add, mul, amax, amin) at Index along axis "
                "(ONNX ScatterElements). Value broadcasts to Index's shape. With repeated indices and "
                "reduce='assign' the last write wins and the gradient of Value assumes no repeats. A negative "
                "index is an error unless wrap_negative (torch.put_): then it counts from the end.")


# ---------------------------------------------------------------- gather_nd / scatter_nd
def _nd_where(x_shape, index, batch_dims, op):
    """Index arrays into X reshaped to [batch, *rest], and the shape [batch, m] they select."""
    k = index.shape[-1]
    batch = int(np.prod(x_shape[:batch_dims], dtype=np.int64))
    m = int(np.prod(index.shape[batch_dims:-1], dtype=np.int64))  # explicit: -1 is ambiguous when k is 0
    rows = index.reshape(batch, m, k)
    parts = [np.arange(batch).reshape(batch, 1)]
    for j in range(k):
        axis, size = batch_dims + j, x_shape[batch_dims + j]
        check_index_range(op, rows[..., j], size, axis)
        parts.append(_wrap(rows[..., j], size))
    return tuple(parts), batch, m


def _gather_nd_kernel(x, index, batch_dims):
    where, batch, m = _nd_where(x.shape, index, batch_dims, "gather_nd")
    flat = x.reshape((batch,) + x.shape[batch_dims:])
    k = index.shape[-1]
    picked = flat[where] if k else np.broadcast_to(flat[:, None], (batch, m) + flat.shape[1:])
    return np.array(picked).reshape(index.shape[:-1] + x.shape[batch_dims + k:])


def _check_nd(ctx):
    check_integer(ctx, "Index")
    x, index, b = ctx.shape("X"), ctx.shape("Index"), ctx.attr("batch_dims")
    if not index:
        raise ctx.shape_error(f"{ctx.describe('Index')} needs at least one axis")
    k = index[-1]
    if k < 0 or b + k > len(x) or b >= len(index):
        raise ctx.shape_error(f"the last axis of {ctx.describe('Index')} must be known and at most the rank "
                              f"of {ctx.describe('X')} minus batch_dims={b}")
    if any(i != n and i >= 0 and n >= 0 for i, n in zip(index[:b], x[:b])):
        raise ctx.shape_error(f"the first batch_dims={b} axes of {ctx.describe('Index')} and "
                              f"{ctx.describe('X')} differ")
    return list(index[:-1]) + list(x[b + k:])


def _gather_nd_infer(ctx):
    ctx.set_output("Out", _check_nd(ctx), ctx.dtype("X"))


def _gather_nd_grad(g: GradBuilder):
    x = g.input_like("X")
    g.set_input_grad("X", g.op("scatter_nd", {"X": _zeros_like(g, x), "Index": g.input("Index"),
                                               "Updates": g.output_grad("Out")},
                               batch_dims=g.attr("batch_dims"), reduce="add"))


register_op("gather_nd", inputs="X Index", outputs="Out", attrs={"batch_dims": 0},
            kernel=_gather_nd_kernel, infer=_gather_nd_infer, grad=_gather_nd_grad,
            doc="Out[i] = X[Index[i]] where each row of Index's last axis addresses X's leading axes "
                "(after batch_dims shared axes): ONNX GatherND, paddle.gather_nd.")


def _scatter_nd_kernel(x, index, updates, batch_dims, reduce):
    out = x.copy()
    where, batch, m = _nd_where(x.shape, index, batch_dims, "scatter_nd")
    k = index.shape[-1]
    flat = out.reshape((batch,) + x.shape[batch_dims:])
    values = updates.reshape((batch, m) + x.shape[batch_dims + k:])
    if k == 0:
        where = (np.broadcast_to(where[0], (batch, m)),)
    if reduce in ("assign", "none"):
        flat[where] = values
    else:
        _REDUCE_UFUNCS[reduce].at(flat, where, values)
    return out


def _scatter_nd_infer(ctx):
    expected = _check_nd(ctx)
    _check_reduce(ctx)
    if ctx.dtype("Updates") != ctx.dtype("X"):
        raise ctx.dtype_error(f"Updates must have the dtype of X: {ctx.describe('Updates')} vs {ctx.describe('X')}")
    got = ctx.shape("Updates")
    if len(got) != len(expected) or any(a != b and a >= 0 and b >= 0 for a, b in zip(got, expected)):
        raise ctx.shape_error(f"{ctx.describe('Updates')} must have shape {expected} for "
                              f"{ctx.describe('Index')} into {ctx.describe('X')}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _scatter_nd_grad(g: GradBuilder):
    reduce, dout, index, updates = g.attr("reduce"), g.output_grad("Out"), g.input("Index"), g.input("Updates")
    b = g.attr("batch_dims")
    if g.needs_input_grad("X"):
        if reduce == "add":
            dx = g.op("assign", {"X": dout})
        elif reduce in ("assign", "none"):
            dx = g.op("scatter_nd", {"X": dout, "Index": index, "Updates": _zeros_like(g, updates)},
                      batch_dims=b, reduce="assign")
        elif reduce in ("mul", "multiply"):
            dx = g.op("scatter_nd", {"X": dout, "Index": index, "Updates": updates}, batch_dims=b, reduce="mul")
        else:
            _no_value_grad(g, "scatter_nd", "X")
        g.set_input_grad("X", dx)
    if g.needs_input_grad("Updates"):
        if reduce not in ("add", "assign", "none"):
            _no_value_grad(g, "scatter_nd", "Updates")
        g.set_input_grad("Updates", g.op("gather_nd", {"X": dout, "Index": index}, batch_dims=b))


register_op("scatter_nd", inputs="X Index Updates", outputs="Out", attrs={"batch_dims": 0, "reduce": "add"},
            kernel=_scatter_nd_kernel, infer=_scatter_nd_infer, grad=_scatter_nd_grad,
            doc="X with Updates added (or assigned, multiplied, max-ed, min-ed) at the addresses in Index: "
                "the transpose of gather_nd (ONNX ScatterND, paddle.scatter_nd_add).")


# ---------------------------------------------------------------- scatter (rows of axis 0)
def _scatter_kernel(x, ids, updates, overwrite, wrap_negative):
    check_index_range("scatter", ids, x.shape[0], 0, wrap_negative, slot="Ids")
    if wrap_negative:
        ids = _wrap(ids, x.shape[0])
    out = x.copy()
    if overwrite:
        out[ids] = updates
    else:
        out[ids] = 0
        np.add.at(out, ids, updates)
    return out


def _scatter_infer(ctx):
    check_integer(ctx, "Ids")
    x, ids, updates = ctx.shape("X"), ctx.shape("Ids"), ctx.shape("Updates")
    if len(ids) != 1:
        raise ctx.shape_error(f"{ctx.describe('Ids')} must be 1-D")
    if ctx.dtype("Updates") != ctx.dtype("X"):
        raise ctx.dtype_error(f"Updates must have the dtype of X: {ctx.describe('Updates')} vs {ctx.describe('X')}")
    want = [ids[0]] + list(x[1:])
    if len(updates) != len(want) or any(a != b and a >= 0 and b >= 0 for a, b in zip(updates, want)):
        raise ctx.shape_error(f"{ctx.describe('Updates')} must have shape {want} for {ctx.describe('Ids')} "
                              f"into {ctx.describe('X')}")
    ctx.set_output("Out", x, ctx.dtype("X"))


def _scatter_grad(g: GradBuilder):
    dout, ids, updates = g.output_grad("Out"), g.input("Ids"), g.input("Updates")
    if g.needs_input_grad("X"):  # the rows written lose X's contribution, whether overwritten or summed
        g.set_input_grad("X", g.op("scatter", {"X": dout, "Ids": ids, "Updates": _zeros_like(g, updates)},
                                   overwrite=True, wrap_negative=True))
    if g.needs_input_grad("Updates"):
        g.set_input_grad("Updates", g.op("gather", {"X": dout, "Index": ids}, axis=0, wrap_negative=True))


register_op("scatter", inputs="X Ids Updates", outputs="Out", attrs={"overwrite": True, "wrap_negative": False},
            kernel=_scatter_kernel, infer=_scatter_infer, grad=_scatter_grad,
            doc="X with rows Ids replaced by Updates (overwrite) or by the sum of the Updates "
                "sent to them (paddle.scatter). With repeated Ids and overwrite, the last write wins. A negative "
                "id is an error (paddle.scatter's rule) unless wrap_negative (x[ids] = v): then it counts from the end.")


# ---------------------------------------------------------------- nonzero
def _nonzero_infer(ctx):
    ctx.set_output("Out", [-1, len(ctx.shape("X"))], "int64")


register_op("nonzero", inputs="X", outputs="Out",
            kernel=lambda x: np.argwhere(x).astype(np.int64), infer=_nonzero_infer, grad=NO_GRADIENT,
            doc="Indices of the nonzero entries, one row each ([count, rank]; count known at run time).")


# ---------------------------------------------------------------- tril / triu
def _tril_triu_kernel(x, diagonal, lower):
    return np.tril(x, diagonal) if lower else np.triu(x, diagonal)


def _tril_triu_infer(ctx):
    if len(ctx.shape("X")) < 2:
        raise ctx.shape_error(f"needs at least 2 axes, got {ctx.describe('X')}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _tril_triu_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("tril_triu", {"X": g.output_grad("Out")},
                               diagonal=g.attr("diagonal"), lower=g.attr("lower")))


register_op("tril_triu", inputs="X", outputs="Out", attrs={"diagonal": 0, "lower": True},
            kernel=_tril_triu_kernel, infer=_tril_triu_infer,
            grad=_tril_triu_grad,
            doc="The lower (or upper) triangle of the last two axes, from `diagonal` on (ONNX Trilu).")
