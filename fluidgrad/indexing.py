"""`x[...]` and `x[...] = v` for Tensors and Variables, and constants made in either mode.

Indexing becomes ordinary ops, so it is differentiable (twice) in both modes: integers and
slices (any step, negative too) one `slice` op plus `squeeze`; `None` an `unsqueeze`; one
integer array, list or tensor a `gather`; a boolean mask `gather_nd` of `nonzero`; several index
arrays (or a mask on a later axis) NumPy's advanced indexing: the arrays broadcast together and
pair up, one `gather_nd`; their axes go where PyTorch puts them (integers are plain selects
applied first, so x[0, :, [1, 3]] of shape [2, 3, 4] is [3, 2]; arrays split by a slice or None
go first). An integer out of range raises IndexError naming the index, the axis and the size (at
build time when the size is known, else when the op runs). Assignment is a `set_value` op, or
for masks and index arrays PyTorch's index_put (`where` for one value, `scatter` for rows, else
`scatter_nd` into the region the slices and integers select, its indexed axes moved first): any
mix of arrays, masks, integers, slices, None and `...`, the value broadcast as PyTorch places
x[item]'s axes, cast to x's dtype (a float into an integer tensor truncates toward zero),
leading axes of size 1 dropped. With a repeated index the last write wins. Eager Tensors take
the result in place (as in PyTorch); a Variable handle moves to the new value (ops appended
later read it).
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .dispatch import append_static_op, apply_op, is_tensor
from .eager import Tensor, eager_apply, to_tensor
from . import static_views, views
from .eager.tensor import mark_view
from .framework import Variable, in_dynamic_mode, normalize_dtype
from .framework.runtime_dims import TracedSize

_BIG = 2**31 - 1


def create(op_type: str, attrs: dict[str, Any], like: Any = None) -> Any:
    """Run an op without inputs: in `like`'s mode when given, else in the current mode."""
    eager = is_tensor(like) if like is not None else in_dynamic_mode()
    return eager_apply(op_type, {}, attrs) if eager else append_static_op(op_type, {}, attrs)


def constant(value: Any, like: Any, dtype: Any = None) -> Any:
    """`value` (a number, list or array) as a Tensor or Variable in `like`'s mode; a Tensor or
    Variable passes through. A Python number takes like's dtype; arrays keep their own."""
    if isinstance(value, Variable) or is_tensor(value):
        return value
    if dtype is None and isinstance(value, (int, float, bool, np.number)) and like is not None:
        dtype = like.dtype
    array = np.asarray(value, dtype=normalize_dtype(dtype) if dtype is not None else None)
    if is_tensor(like) or (like is None and in_dynamic_mode()):
        return to_tensor(array)
    return append_static_op("assign_value", {}, {"shape": list(array.shape), "dtype": array.dtype.name,
                                                 "values": array.reshape(-1).tolist()})


def _is_value(x: Any) -> bool:
    return isinstance(x, Variable) or is_tensor(x)


def _is_array_index(item: Any) -> bool:
    return _is_value(item) or isinstance(item, (list, np.ndarray))


def _expand_ellipsis(items: tuple, ndim: int) -> list:
    """The items with `...` (or the missing trailing axes) replaced by full slices."""
    consumed = builtins.sum(0 if it is None or it is Ellipsis else _mask_rank(it) or 1 for it in items)
    ellipses = builtins.sum(it is Ellipsis for it in items)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices: {consumed} for a tensor of rank {ndim}")
    fill = [builtins.slice(None)] * (ndim - consumed)
    if not ellipses:
        return list(items) + fill
    out: list = []
    for it in items:
        out.extend(fill if it is Ellipsis else [it])
    return out


def _is_int_item(item: Any) -> bool:
    """A plain integer index: a Python or NumPy int or a 0-D integer tensor (a select)."""
    if isinstance(item, (bool, np.bool_)):
        return False
    return isinstance(item, (int, np.integer)) or (is_tensor(item) and item.dtype != "bool" and item.ndim == 0)


def _is_0d_index_value(item: Any) -> bool:
    """A 0-D integer Variable: an integer PyTorch would select with, whose value is not known yet."""
    return isinstance(item, Variable) and len(item.shape) == 0 and item.dtype != "bool"


def _is_bool(item: Any) -> bool:
    if _is_value(item):
        return item.dtype == "bool"
    return isinstance(item, np.ndarray) and item.dtype == np.bool_


def _is_mask(item: Any) -> bool:
    """A boolean mask: a bool tensor or array, or a list of bools (as NumPy reads one)."""
    return _is_bool(item) or (isinstance(item, list) and len(item) > 0 and np.asarray(item).dtype == np.bool_)


def _mask_rank(item: Any) -> int:
    """How many axes a mask item covers (0 for anything else)."""
    if not _is_mask(item):
        return 0
    return len(item.shape) if _is_value(item) else np.ndim(item)


def _as_int(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if is_tensor(value):
        return int(value.item())
    if isinstance(value, Variable):
        raise TypeError(f"{what}: slice bounds must be Python integers in static mode, got Variable {value.name}")
    return int(value)


def _slice_bounds(it: builtins.slice) -> tuple[int, int, int]:
    step = _as_int(it.step, "indexing") or 1
    start, stop = _as_int(it.start, "indexing"), _as_int(it.stop, "indexing")
    if start is None:
        start = 0 if step > 0 else _BIG
    if stop is None:
        stop = _BIG if step > 0 else -_BIG - 1
    return start, stop, step


def _check_int(index: int, axis: int, size: int) -> int:
    if size >= 0 and not -size <= index < size:
        raise IndexError(f"index {index} is out of range for axis {axis} of size {size}")
    return index % size if size > 0 else index


class _Plan:
    """What x[item] does, axis by axis: a strided slice, dropped axes, one gathered axis, new axes."""

    def __init__(self, shape: tuple[int, ...], item: Any) -> None:
        items = _expand_ellipsis(item if isinstance(item, tuple) else (item,), len(shape))
        self.axes: list[int] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.strides: list[int] = []
        self.drop: list[int] = []            # integer indices of known range
        self.runtime_ints: list[tuple[int, int]] = []  # (axis, index) on axes of unknown size
        self.arrays: list[tuple[int, Any]] = []  # (first axis, index array or mask), in axis order
        self.new_axes: list[int] = []        # output positions of None
        self.new_axes_first: list[int] = []  # the same when the index arrays' axes go first
        self.advanced_positions: list[int] = []  # positions of the arrays among the items other than integers
        self.scalar_axes: list[int] = []     # integers acting as 0-D index arrays (unknown size, 0-D Variable)
        array_rank = _broadcast_rank(items)  # the axes the arrays' paired-up result takes
        out_pos, axis, basic_out = 0, 0, 0  # basic_out: output axes of slices and None so far
        pos = -1   # the item's position, integers not counted (PyTorch selects them first)
        for it in items:
            scalar = _is_int_item(it) or _is_0d_index_value(it)
            pos += 0 if scalar else 1
            if it is None:
                self.new_axes.append(out_pos)
                self.new_axes_first.append(array_rank + basic_out)
                out_pos += 1
                basic_out += 1
                continue
            if isinstance(it, (bool, np.bool_)):
                raise TypeError("indexing with a Python bool is not supported; use a boolean tensor mask")
            if _is_int_item(it):
                index = int(it)
                if shape[axis] >= 0:
                    index = _check_int(index, axis, shape[axis])
                    self._add_slice(axis, index, index + 1, 1)
                    self.drop.append(axis)
                else:
                    self.runtime_ints.append((axis, index))
                    self.scalar_axes.append(axis)
            elif isinstance(it, builtins.slice):
                start, stop, step = _slice_bounds(it)
                if step == 0:
                    raise ValueError("slice step cannot be zero")
                if (start, stop, step) != (0, _BIG, 1):
                    self._add_slice(axis, start, stop, step)
                out_pos += 1
                basic_out += 1
            elif _is_array_index(it):
                rank = _mask_rank(it)
                if _is_mask(it):
                    _check_mask_shape(it, shape[axis:axis + rank])
                self.arrays.append((axis, it))
                if scalar:
                    self.scalar_axes.append(axis)
                else:
                    out_pos += 0 if self.advanced_positions else array_rank
                    self.advanced_positions.append(pos)
                axis += max(rank, 1) - 1
            elif isinstance(it, TracedSize):
                raise it.refusal("as an index (int)")
            else:
                raise TypeError(f"unsupported index {it!r}: use integers, slices, None, ..., an integer "
                                f"array or a boolean mask")
            axis += 1

    def _add_slice(self, axis: int, start: int, stop: int, step: int) -> None:
        self.axes.append(axis)
        self.starts.append(start)
        self.ends.append(stop)
        self.strides.append(step)

    def advanced_first(self) -> bool:
        """PyTorch's rule: index arrays (and masks) not next to each other put their axes first.
        Integers do not count, as PyTorch applies them first as plain selects: x[0, :, [1, 3]] of
        shape [2, 3, 4] is [3, 2] (NumPy, counting the 0 as an index array, gives [2, 3])."""
        p = self.advanced_positions
        return bool(self.arrays) and len(p) > 1 and p[-1] - p[0] != len(p) - 1

    def block_position(self, kept: list[int], axes: list[int]) -> int:
        """Where the paired-up index's axes go among the output axes left by the slices (`kept`:
        the input axes not dropped, `axes`: those the index addresses): first, or in place of the
        first index array, counting neither the integers nor the other indexed axes."""
        arrays = [a for a in axes if a not in self.scalar_axes]
        if self.advanced_first() or not arrays:
            return 0
        return len([a for a in kept if a not in axes and a < arrays[0]])

    def new_axis_positions(self) -> list[int]:
        """Where None's axes of size 1 go in the output."""
        return self.new_axes_first if self.advanced_first() else self.new_axes

    def single_array(self) -> bool:
        """One integer array or one 1-D mask: a plain `gather` along its axis."""
        return len(self.arrays) == 1 and _mask_rank(self.arrays[0][1]) <= 1


def _broadcast_rank(items: list) -> int:
    """The rank of the index arrays broadcast together (a mask counts as one 1-D array)."""
    ranks = [1 if _is_mask(it) else (len(it.shape) if _is_value(it) else np.ndim(it))
             for it in items if _is_array_index(it)]
    return builtins.max(ranks, default=0)


def _check_mask_shape(mask: Any, axes_shape: tuple[int, ...]) -> None:
    mshape = tuple(mask.shape) if _is_value(mask) else np.shape(mask)
    if not mshape:
        raise IndexError("a 0-D boolean index is not supported; use fluidgrad.where")
    if len(mshape) > len(axes_shape) or any(m != s and m >= 0 and s >= 0 for m, s in zip(mshape, axes_shape)):
        raise IndexError(f"boolean mask of shape {list(mshape)} does not match the indexed axes of shape "
                         f"{list(axes_shape)}")


def _checked_array(value: Any, x: Any, axis: int) -> Any:
    """An integer index array for `axis`: a Tensor/Variable as it is, else an int64 NumPy array
    whose range is checked now (when the axis size is known)."""
    if _is_value(value):
        if not value.dtype.startswith(("int", "uint")):
            raise IndexError(f"index arrays must be integers or booleans, got {value.dtype}")
        return value
    array = np.asarray(value)
    if array.size == 0:
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise IndexError(f"index arrays must be integers or booleans, got {array.dtype}")
    size = x.shape[axis]
    if size >= 0 and array.size:
        bad = (array >= size) | (array < -size)
        if bad.any():
            raise IndexError(f"index {int(array[bad].flat[0])} is out of range for axis {axis} of size {size}")
    return array.astype(np.int64)


def _array_index(value: Any, x: Any, axis: int) -> Any:
    """One index array along `axis` as a Tensor/Variable; a 1-D mask becomes its True positions."""
    if _is_mask(value):
        columns, _ = _mask_columns(value, x, axis)
        return constant(columns[0], x)
    return constant(_checked_array(value, x, axis), x)


def _mask_columns(mask: Any, x: Any, axis: int) -> tuple[list, list[int]]:
    """A k-D mask on axes axis..axis+k-1 as k index arrays (its True positions, NumPy's
    nonzero), and those axes."""
    if not _is_value(mask):
        columns = list(np.nonzero(np.asarray(mask)))
        return [c.astype(np.int64) for c in columns], list(range(axis, axis + len(columns)))
    rank = len(mask.shape)
    where = apply_op("nonzero", {"X": mask})
    if rank == 1:
        return [apply_op("reshape", {"X": where}, {"shape": [-1]})], [axis]
    columns = [apply_op("reshape", {"X": apply_op("slice", {"X": where}, {"axes": [1], "starts": [j], "ends": [j + 1]})},
                        {"shape": [-1]}) for j in range(rank)]
    return columns, list(range(axis, axis + rank))


def _paired_index(plan: _Plan, x: Any, with_runtime_ints: bool = False) -> tuple[Any, list[int]]:
    """NumPy's advanced indexing: every array (a mask gives one per axis it covers) broadcast
    together and stacked on a last axis, the `Index` of one gather_nd / scatter_nd; and the
    input axes its columns address. `with_runtime_ints`: integers on axes of unknown size join
    as 0-D arrays (the op checks their range when it runs)."""
    columns, axes = [], []
    items = list(plan.arrays) + ([(a, np.int64(i)) for a, i in plan.runtime_ints] if with_runtime_ints else [])
    for axis, item in sorted(items, key=lambda pair: pair[0]):
        if _is_mask(item):
            cols, cover = _mask_columns(item, x, axis)
        else:
            cols, cover = [_checked_array(item, x, axis)], [axis]
        columns += cols
        axes += cover
    if not builtins.any(_is_value(c) for c in columns):
        return constant(np.stack(np.broadcast_arrays(*columns), axis=-1), x), axes
    columns = [_cast_to(constant(c, x), "int64") for c in columns]
    shapes = {tuple(c.shape) for c in columns}
    if len(shapes) > 1 or -1 in next(iter(shapes)):  # broadcast (sizes may be known only at run time)
        zero = columns[0] * 0
        for c in columns[1:]:
            zero = zero + c * 0
        columns = [c + zero for c in columns]
    return apply_op("concat", {"X": [apply_op("unsqueeze", {"X": c}, {"axes": [-1]}) for c in columns]},
                    {"axis": -1}), axes


def _mask_select(x: Any, mask: Any) -> Any:
    mask = constant(np.asarray(mask), x) if not _is_value(mask) else mask
    shape, mshape = x.shape, mask.shape
    if len(mshape) > len(shape) or any(m != s and m >= 0 and s >= 0 for m, s in zip(mshape, shape)):
        raise IndexError(f"boolean mask of shape {list(mshape)} does not match the tensor of shape {list(shape)}")
    return apply_op("gather_nd", {"X": x, "Index": apply_op("nonzero", {"X": mask})})


def _lone_mask(item: Any) -> Any:
    """`(mask,)` read as `mask` (NumPy and PyTorch treat both alike); any other item as it is."""
    return item[0] if isinstance(item, tuple) and len(item) == 1 and _is_bool(item[0]) else item


def _is_0d_mask(item: Any) -> bool:
    return _is_bool(item) and not (tuple(item.shape) if _is_value(item) else np.shape(item))


def getitem(x: Any, item: Any) -> Any:
    """x[item]: integers, slices with any step, None, ..., one integer array, or a boolean mask
    (a 0-D mask gives x[None] when True and an empty copy when False, as in NumPy). Basic
    indexing (no arrays, no masks) of an eager Tensor gives a view of it (see `Indexed`)."""
    out = _basic_getitem(x, item)
    if isinstance(out, Tensor) and isinstance(x, Tensor) and out._view_of is None and _is_basic(item, x):
        mark_view(out, x, Indexed(x, item))
    elif isinstance(out, Variable) and out is not x and _is_basic(item, x):   # static / traced code
        views.mark_variable(out, x, Indexed(x, item))
    return out


def _is_basic(item: Any, x: Any) -> bool:
    """Integers, slices, None and `...` only: PyTorch's view indexing."""
    items = item if isinstance(item, tuple) else (item,)
    return not builtins.any(_is_array_index(it) or isinstance(it, (bool, np.bool_)) for it in items)


def _basic_getitem(x: Any, item: Any) -> Any:
    """x[item] computed (no view link made)."""
    item = _lone_mask(item)
    if _is_bool(item):
        return _mask_select(x, item)
    plan = _Plan(tuple(x.shape), item)
    out = x
    if plan.axes:
        out = apply_op("slice", {"X": out}, {"axes": plan.axes, "starts": plan.starts, "ends": plan.ends,
                                             "strides": None if set(plan.strides) == {1} else plan.strides})
    kept = [a for a in range(len(x.shape)) if a not in plan.drop]  # input axis -> position after squeeze
    if plan.drop:
        out = apply_op("squeeze", {"X": out}, {"axes": plan.drop})
    for axis, index in sorted(plan.runtime_ints, reverse=True):
        out = apply_op("gather", {"X": out, "Index": constant(np.int64(index), out, "int64")},
                       {"axis": kept.index(axis), "wrap_negative": True})
        kept.remove(axis)
    if plan.single_array():
        axis, value = plan.arrays[0]
        index = _array_index(value, x, axis)
        position = kept.index(axis)
        out = apply_op("gather", {"X": out, "Index": index}, {"axis": position, "wrap_negative": True})
        if plan.advanced_first() and position:
            n, rank = len(index.shape), len(out.shape)
            perm = list(range(position, position + n)) + [i for i in range(rank) if not position <= i < position + n]
            out = apply_op("transpose", {"X": out}, {"perm": perm})
    elif plan.arrays:
        out = _gather_paired(out, x, plan, kept)
    if plan.new_axes:
        out = apply_op("unsqueeze", {"X": out}, {"axes": plan.new_axis_positions()})
    if out is x:  # x[:] or x[...]: a new value, as NumPy gives a new view
        out = apply_op("assign", {"X": x})
    return out


def _gather_paired(out: Any, x: Any, plan: _Plan, kept: list[int]) -> Any:
    """out[arrays...] for several index arrays: the indexed axes moved first, one gather_nd, and
    the broadcast axes put where NumPy puts them (in place of the indexed axes when the advanced
    indices are adjacent, else first)."""
    index, axes = _paired_index(plan, x)
    positions = [kept.index(a) for a in axes]
    rest = [p for p in range(len(out.shape)) if p not in positions]
    if positions != list(range(len(positions))):
        out = apply_op("transpose", {"X": out}, {"perm": positions + rest})
    out = apply_op("gather_nd", {"X": out, "Index": index})
    n, first = len(index.shape) - 1, plan.block_position(kept, axes)
    if first:
        perm = list(range(n, n + first)) + list(range(n)) + list(range(n + first, len(out.shape)))
        out = apply_op("transpose", {"X": out}, {"perm": perm})
    return out


def _set_value(x: Any, item: Any, value: Any, accumulate: bool = False) -> Any:
    """The op computing x with x[item] = value (a new Tensor or Variable); with `accumulate`, the
    value is added instead (PyTorch's index_put(accumulate=True): a repeated index adds each time)."""
    item = _lone_mask(item)
    if _is_0d_mask(item):
        return _set_where_0d_mask(x, item, value, accumulate)
    if not accumulate and _is_bool(item) and _is_one_value(value):
        return _set_masked_to_one_value(x, item, value)
    plan = _Plan(tuple(x.shape), item)
    if plan.arrays or plan.runtime_ints:
        if not accumulate and _is_row_index(plan):
            return _set_rows(x, plan, value)
        return _scatter_into(x, plan, value, "add" if accumulate else "assign")
    if accumulate:
        value = apply_op("elementwise_add", {"X": getitem(x, item), "Y": _cast_to(constant(value, x), x.dtype)})
    value = _cast_to(constant(value, x), x.dtype)
    if plan.new_axes and len(value.shape):   # value broadcasts against x[item], None's axes included
        target = getitem(x, item)
        value = _strip_leading_ones(value, len(target.shape))
        _check_broadcast(value, target)
        value = apply_op("squeeze", {"X": apply_op("expand_as", {"X": value, "Target": target})},
                         {"axes": plan.new_axes})
    value = _strip_leading_ones(value, len(x.shape) - len(plan.drop))
    return apply_op("set_value", {"X": x, "Value": value},
                    {"axes": plan.axes, "starts": plan.starts, "ends": plan.ends,
                     "strides": None if set(plan.strides) <= {1} else plan.strides, "decrease_axes": plan.drop})


def _strip_leading_ones(value: Any, rank: int) -> Any:
    """PyTorch's and NumPy's leniency: a value with more axes than the places it fills may drop
    leading axes of size 1 (x[0] = ones(1, 4))."""
    extra = len(value.shape) - rank
    leading = list(value.shape[:builtins.max(extra, 0)])
    if extra <= 0 or any(d != 1 for d in leading):
        return value
    return apply_op("squeeze", {"X": value}, {"axes": list(range(extra))})


def _scatter_into(x: Any, plan: _Plan, value: Any, reduce: str) -> Any:
    """x[item] = value (or += with reduce="add") for any mix of index arrays, masks, integers,
    slices, None and `...`: the basic part (slices, integers) selects a region, whose indexed
    axes move first for one `scatter_nd` with the paired-up index; the region moves back and a
    `set_value` writes it into x. Every step is an ordinary differentiable op."""
    region = x
    if plan.axes:
        region = apply_op("slice", {"X": region}, {"axes": plan.axes, "starts": plan.starts, "ends": plan.ends,
                                                   "strides": None if set(plan.strides) == {1} else plan.strides})
    if plan.drop:
        region = apply_op("squeeze", {"X": region}, {"axes": plan.drop})
    kept = [a for a in range(len(x.shape)) if a not in plan.drop]
    index, axes = _paired_index(plan, x, with_runtime_ints=True)
    positions = [kept.index(a) for a in axes]
    perm = positions + [p for p in range(len(kept)) if p not in positions]
    moved = _transpose(region, perm)
    places = apply_op("gather_nd", {"X": moved, "Index": index})   # read for its shape only
    updates = _updates(value, x, places, plan, len(index.shape) - 1, plan.block_position(kept, axes))
    written = apply_op("scatter_nd", {"X": moved, "Index": index, "Updates": updates}, {"reduce": reduce})
    written = _transpose(written, list(np.argsort(perm)))
    if not plan.axes:
        return written
    return apply_op("set_value", {"X": x, "Value": written},
                    {"axes": plan.axes, "starts": plan.starts, "ends": plan.ends,
                     "strides": None if set(plan.strides) <= {1} else plan.strides, "decrease_axes": plan.drop})


def _transpose(x: Any, perm: list[int]) -> Any:
    return x if perm == list(range(len(perm))) else apply_op("transpose", {"X": x}, {"perm": [int(p) for p in perm]})


def _updates(value: Any, x: Any, places: Any, plan: _Plan, n: int, first: int) -> Any:
    """value broadcast to the places scatter_nd writes (the n paired-up index axes, then the
    other axes in order). Value broadcasts against x[item]'s shape, PyTorch's layout: the index
    axes go to `first` (in place of the index arrays when those are adjacent, integers not
    counted, else first), and None adds axes of size 1."""
    value = _cast_to(constant(value, x), x.dtype)
    to_layout = list(range(len(places.shape)))
    if first:
        to_layout = list(range(n, n + first)) + list(range(n)) + list(range(n + first, len(places.shape)))
    target = _transpose(places, to_layout)
    if plan.new_axes:
        target = apply_op("unsqueeze", {"X": target}, {"axes": plan.new_axis_positions()})
    value = _strip_leading_ones(value, len(target.shape))
    _check_broadcast(value, target)
    updates = apply_op("expand_as", {"X": value, "Target": target})
    if plan.new_axes:
        updates = apply_op("squeeze", {"X": updates}, {"axes": plan.new_axis_positions()})
    return _transpose(updates, list(np.argsort(to_layout)))


def _is_one_value(value: Any) -> bool:
    """A value that every masked element takes alike: a number, or a tensor of one element."""
    shape = tuple(value.shape) if _is_value(value) else np.shape(value)
    return shape in ((), (1,))


def _set_masked_to_one_value(x: Any, mask: Any, value: Any) -> Any:
    """x[mask] = v for one value: `where`, the mask's trailing axes added so that it covers the
    leading axes of x (a row mask writes rows)."""
    _check_mask_shape(mask, tuple(x.shape))
    rank, ndim = len(mask.shape) if _is_value(mask) else np.ndim(mask), len(x.shape)
    if _is_value(mask):
        if rank < ndim:
            mask = apply_op("unsqueeze", {"X": mask}, {"axes": list(range(rank, ndim))})
    else:
        mask = constant(np.asarray(mask).reshape(np.shape(mask) + (1,) * (ndim - rank)), x)
    return apply_op("where", {"Condition": mask, "X": _cast_to(constant(value, x), x.dtype), "Y": x})


def _set_where_0d_mask(x: Any, mask: Any, value: Any, accumulate: bool) -> Any:
    """x[mask] = v for a 0-D mask: all of x (x[mask] is x[None]) when it holds, nothing when not;
    value broadcasts against x[None]."""
    value = _strip_leading_ones(_cast_to(constant(value, x), x.dtype), len(x.shape))
    _check_broadcast(value, x)
    if accumulate:
        value = apply_op("elementwise_add", {"X": x, "Y": apply_op("expand_as", {"X": value, "Target": x})})
    return apply_op("where", {"Condition": constant(mask, x), "X": value, "Y": x})


def _is_row_index(plan: _Plan) -> bool:
    """x[index] = v with one 1-D integer array alone: rows of axis 0 (the `scatter` op)."""
    if len(plan.arrays) != 1 or plan.axes or plan.drop or plan.runtime_ints or plan.new_axes:
        return False
    axis, index = plan.arrays[0]
    if axis != 0 or _is_mask(index):
        return False
    return (len(index.shape) if _is_value(index) else np.ndim(index)) == 1


def _check_broadcast(value: Any, target: Any) -> None:
    """PyTorch's refusal, at build time when the sizes are known: value must broadcast to target."""
    vshape, tshape = tuple(value.shape), tuple(target.shape)
    if -1 in vshape or -1 in tshape:
        return
    try:
        fits = np.broadcast_shapes(vshape, tshape) == tshape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"shape mismatch: value of shape {list(vshape)} cannot be broadcast to the indexed "
                         f"places of shape {list(tshape)}")


def _set_rows(x: Any, plan: _Plan, value: Any) -> Any:
    """x[index] = value for a 1-D integer array `index` alone (rows of axis 0): the `scatter` op,
    PyTorch's index_put (value broadcast to the rows; with a repeated index the last write wins,
    and each copy of value gets the gradient of the row, as PyTorch's backward gives)."""
    index = _array_index(plan.arrays[0][1], x, 0)
    value = _cast_to(constant(value, x), x.dtype)
    rows = apply_op("gather", {"X": x, "Index": index}, {"axis": 0, "wrap_negative": True})   # for its shape
    updates = apply_op("expand_as", {"X": value, "Target": rows})
    return apply_op("scatter", {"X": x, "Ids": index, "Updates": updates},
                    {"overwrite": True, "wrap_negative": True})


def _cast_to(value: Any, dtype: str) -> Any:
    return value if value.dtype == dtype else apply_op("cast", {"X": value}, {"dtype": dtype})


def setitem(x: Any, item: Any, value: Any) -> None:
    """x[item] = value. A Tensor takes the new value in place: later uses see it, and its gradient
    flows to x's old value (outside the written region) and to value, as in PyTorch. A leaf Tensor
    that requires a gradient refuses in-place assignment (PyTorch does too). A Variable then
    names the new value for the ops appended after (see `_setitem_variable`)."""
    if is_tensor(x):
        _setitem_tensor(x, item, value)
    elif isinstance(x, Variable):
        _setitem_variable(x, item, value)
    else:
        raise TypeError(f"setitem: expected a Tensor or Variable, got {type(x).__name__}")


def index_put(x: Any, indices: Any, value: Any, accumulate: bool = False) -> Any:
    """A new value: x with x[indices] = value (PyTorch's and Paddle's index_put); with
    `accumulate` the value is added, a repeated index adding once per occurrence. `indices` is a
    tuple of integer or boolean index arrays (Tensors, Variables, lists or NumPy arrays)."""
    item = tuple(indices) if isinstance(indices, (tuple, list)) and not _is_index_list(indices) else (indices,)
    return _set_value(x, item, value, accumulate)


def _is_index_list(indices: Any) -> bool:
    """A list of numbers (one index array) rather than a list of index arrays."""
    return isinstance(indices, list) and builtins.all(isinstance(i, (int, bool, np.integer, np.bool_)) for i in indices)


def _setitem_tensor(x: Tensor, item: Any, value: Any) -> None:
    view = views.prepare_write(x, "x[...] = v")
    views.finish_write(x, _set_value(views.snapshot(x), item, value), view)


# ---- views: the result of basic indexing (integers, slices, None, ...) of an eager Tensor is a
# view (fluidgrad/views.py), as in PyTorch: `x[0][1] = 9`, `x[:, 0].zero_()` and `x[1].add_(y)`
# change x, and x's changes show in x[0]. Advanced indexing (arrays, masks) gives a copy.
class Indexed:
    """How x[item] (basic indexing) is a view of x: written back as x[item] = view."""

    tracks_grad = True

    def __init__(self, base: Tensor, item: Any) -> None:
        self.base_shape, self.item = tuple(base.shape), item

    def read(self, base: Any) -> Any:
        return _basic_getitem(base, self.item)

    def into_base(self, base: Any, value: Any) -> Any:
        return _set_value(base, self.item, value)

    def check_writable(self, what: str) -> None:
        pass

    def layout(self, base_layout: np.ndarray) -> np.ndarray:
        items = self.item if isinstance(self.item, tuple) else (self.item,)
        return base_layout[tuple(_plain_item(it) for it in items)]

    def describe(self) -> str:
        return f"x[{_describe(self.item)}]"


def _plain_item(item: Any) -> Any:
    """An index item with tensors as Python ints (for NumPy)."""
    if isinstance(item, builtins.slice):
        return builtins.slice(*(_as_int(v, "indexing") for v in (item.start, item.stop, item.step)))
    return int(item) if is_tensor(item) else item


def _describe(item: Any) -> str:
    items = item if isinstance(item, tuple) else (item,)

    def one(it: Any) -> str:
        if isinstance(it, builtins.slice):
            return ":".join("" if v is None else str(v) for v in (it.start, it.stop)) + \
                ("" if it.step is None else f":{it.step}")
        return "..." if it is Ellipsis else repr(it) if it is None else str(int(it)) if _is_value(it) else str(it)
    return ", ".join(one(it) for it in items)


def take_value(x: Any, new: Any, what: str) -> Any:
    """x becomes `new`, a value computed from x's old one (of any shape: `x.reshape_()`), in place:
    a Tensor's handles all see it and its graph link moves to it (as after `x[...] = v`); a
    Variable's handle names the new variable. Returns x."""
    if is_tensor(x):
        view = views.prepare_write(x, what)
        if view is not None and tuple(new.shape) != tuple(x.shape):
            raise RuntimeError(f"{what} on a view {view[1].describe()} (shape {list(x.shape)}) would change its "
                               f"shape to {list(new.shape)}; fluidgrad's views cannot change shape in place: use "
                               f"the out-of-place form (x.{what.rstrip('_()')}(...), a new tensor)")
        views.finish_write(x, new, view)
    else:
        static_views.check_write(x, what)
        if static_views.views.view_link(x) is not None and tuple(new.shape) != tuple(x.shape):
            raise RuntimeError(f"{what} on a view {x._view_of[1].describe()} (shape {list(x.shape)}) would change "
                               f"its shape to {list(new.shape)}; fluidgrad's views cannot change shape in place: "
                               f"use the out-of-place form (x.{what.rstrip('_()')}(...), a new tensor)")
        static_views.take(x, new)
    return x


def _setitem_variable(x: Variable, item: Any, value: Any) -> None:
    """The op computing the new value writes a new variable; then the two Python handles swap,
    so that `x` names the new value (as after `x = ...`) and ops appended before keep reading
    the old one. The program stays free of overwrites, and its gradient is the ordinary one.
    Through a view the write reaches its base (fluidgrad/static_views.py)."""
    static_views.check_write(x, "x[...] = v")
    static_views.take(x, _set_value(x, item, value))
