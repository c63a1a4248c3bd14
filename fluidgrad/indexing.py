"""`x[...]` and `x[...] = v` for Tensors and Variables, and constants made in either mode.

Indexing becomes ordinary ops, so it is differentiable (twice) in both modes: integers and
slices (any step, negative too) one `slice` op plus `squeeze`; `None` an `unsqueeze`; one integer
array, list or tensor a `gather`; a boolean mask `gather_nd` of `nonzero`. An integer out of
range raises IndexError naming the index, the axis and the size (at build time when the size is
known, else when the op runs). Assignment is a `set_value` op: eager Tensors take the result in
place (as in PyTorch); a Variable handle moves to the new value (ops appended later read it).
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .dispatch import append_static_op, apply_op, is_tensor
from .eager import Tensor, eager_apply, is_grad_enabled, to_tensor
from .eager.node import Superseded
from .eager.tensor import _record_modification
from .framework import Parameter, Variable, in_dynamic_mode, normalize_dtype

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
    consumed = builtins.sum(0 if it is None or it is Ellipsis else 1 for it in items)
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


def _is_bool(item: Any) -> bool:
    if _is_value(item):
        return item.dtype == "bool"
    return isinstance(item, np.ndarray) and item.dtype == np.bool_


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
        self.array: tuple[int, Any] | None = None
        self.new_axes: list[int] = []        # output positions of None
        self.advanced_positions: list[int] = []  # item positions of integers and the array
        out_pos, axis = 0, 0
        for pos, it in enumerate(items):
            if it is None:
                self.new_axes.append(out_pos)
                out_pos += 1
                continue
            if isinstance(it, (bool, np.bool_)):
                raise TypeError("indexing with a Python bool is not supported; use a boolean tensor mask")
            if isinstance(it, (int, np.integer)) or (is_tensor(it) and it.dtype != "bool" and it.ndim == 0):
                index = int(it)
                self.advanced_positions.append(pos)
                if shape[axis] >= 0:
                    index = _check_int(index, axis, shape[axis])
                    self._add_slice(axis, index, index + 1, 1)
                    self.drop.append(axis)
                else:
                    self.runtime_ints.append((axis, index))
            elif isinstance(it, builtins.slice):
                start, stop, step = _slice_bounds(it)
                if step == 0:
                    raise ValueError("slice step cannot be zero")
                if (start, stop, step) != (0, _BIG, 1):
                    self._add_slice(axis, start, stop, step)
                out_pos += 1
            elif _is_array_index(it):
                if self.array is not None:
                    raise NotImplementedError("indexing with several integer arrays is not supported; "
                                              "use fluidgrad.gather_nd")
                self.array = (axis, it)
                self.advanced_positions.append(pos)
                out_pos += len(np.shape(it)) if not _is_value(it) else len(it.shape)
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
        """NumPy's rule: an integer array with integers not next to it puts the array's axes first."""
        p = self.advanced_positions
        return self.array is not None and len(p) > 1 and p[-1] - p[0] != len(p) - 1


def _array_index(value: Any, x: Any, axis: int) -> Any:
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
    return constant(array.astype(np.int64), x)


def _mask_select(x: Any, mask: Any) -> Any:
    mask = constant(np.asarray(mask), x) if not _is_value(mask) else mask
    shape, mshape = x.shape, mask.shape
    if len(mshape) > len(shape) or any(m != s and m >= 0 and s >= 0 for m, s in zip(mshape, shape)):
        raise IndexError(f"boolean mask of shape {list(mshape)} does not match the tensor of shape {list(shape)}")
    return apply_op("gather_nd", {"X": x, "Index": apply_op("nonzero", {"X": mask})})


def getitem(x: Any, item: Any) -> Any:
    """x[item]: integers, slices with any step, None, ..., one integer array, or a boolean mask."""
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
                       {"axis": kept.index(axis)})
        kept.remove(axis)
    if plan.array is not None:
        axis, value = plan.array
        index = _array_index(value, x, axis)
        position = kept.index(axis)
        out = apply_op("gather", {"X": out, "Index": index}, {"axis": position})
        if plan.advanced_first() and position:
            n, rank = len(index.shape), len(out.shape)
            perm = list(range(position, position + n)) + [i for i in range(rank) if not position <= i < position + n]
            out = apply_op("transpose", {"X": out}, {"perm": perm})
    if plan.new_axes:
        if plan.advanced_first():
            raise NotImplementedError("None together with integers apart from an index array is not supported")
        out = apply_op("unsqueeze", {"X": out}, {"axes": plan.new_axes})
    if out is x:  # x[:] or x[...]: a new value, as NumPy gives a new view
        out = apply_op("assign", {"X": x})
    return out


def _set_value(x: Any, item: Any, value: Any) -> Any:
    """The op computing x with x[item] = value (a new Tensor or Variable)."""
    if _is_bool(item):
        mask = constant(np.asarray(item), x) if not _is_value(item) else item
        return apply_op("where", {"Condition": mask, "X": _cast_to(constant(value, x), x.dtype), "Y": x})
    plan = _Plan(tuple(x.shape), item)
    if plan.array is not None:
        return _set_rows(x, plan, value)
    if plan.runtime_ints:
        raise NotImplementedError("assignment through an integer on an axis of unknown size (-1) is not "
                                  "supported; use fluidgrad.scatter / put_along_axis / scatter_nd_add")
    value = _cast_to(constant(value, x), x.dtype)
    return apply_op("set_value", {"X": x, "Value": value},
                    {"axes": plan.axes, "starts": plan.starts, "ends": plan.ends,
                     "strides": None if set(plan.strides) <= {1} else plan.strides, "decrease_axes": plan.drop})


def _set_rows(x: Any, plan: _Plan, value: Any) -> Any:
    """x[index] = value for a 1-D integer array `index` alone (rows of axis 0): the `scatter` op,
    PyTorch's index_put (value broadcast to the rows; with a repeated index the last write wins,
    and each copy of value gets the gradient of the row, as PyTorch's backward gives)."""
    axis, index = plan.array
    ndim = len(index.shape) if _is_value(index) else np.ndim(index)
    if axis != 0 or ndim != 1 or plan.axes or plan.drop or plan.runtime_ints or plan.new_axes:
        raise NotImplementedError("assignment through an integer array is supported for x[index] = v with "
                                  "one 1-D index array alone (rows of axis 0); for other patterns use "
                                  "fluidgrad.scatter / put_along_axis / scatter_nd_add")
    index = _array_index(index, x, 0)
    value = _cast_to(constant(value, x), x.dtype)
    rows = apply_op("gather", {"X": x, "Index": index}, {"axis": 0})   # read for its shape only
    updates = apply_op("expand_as", {"X": value, "Target": rows})
    return apply_op("scatter", {"X": x, "Ids": index, "Updates": updates}, {"overwrite": True})


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


def _setitem_tensor(x: Tensor, item: Any, value: Any) -> None:
    if x._node is None and not x.stop_gradient and is_grad_enabled():
        raise RuntimeError(f"x[...] = v on a leaf Tensor{' ' + x.name if x.name else ''} that requires a gradient: "
                           f"assign inside fluidgrad.no_grad(), or to a copy (x.clone())")
    old = Tensor(x.data, x.stop_gradient, x._node, x._idx, x.name)  # the value before, for the graph
    new = _set_value(old, item, value)
    x.data = new.data
    if not is_grad_enabled():  # as PyTorch under no_grad: the value changes, the graph link stays
        _record_modification(x)
        return
    moved = (new._node, new._idx, new.stop_gradient) != (x._node, x._idx, x.stop_gradient)
    before = Superseded(old) if moved else None  # what the nodes recorded so far read
    x._node, x._idx, x.stop_gradient = new._node, new._idx, new.stop_gradient
    _record_modification(x, before)


_VARIABLE_SLOTS = ("block", "name", "shape", "dtype", "_persistable", "stop_gradient", "type", "is_data")


def _setitem_variable(x: Variable, item: Any, value: Any) -> None:
    """The op computing the new value writes a new variable; then the two Python handles swap,
    so that `x` names the new value (as after `x = ...`) and ops appended before keep reading
    the old one. The program stays free of overwrites, and its gradient is the ordinary one."""
    if isinstance(x, Parameter) or x.persistable:
        raise TypeError(f"x[...] = v on the {'parameter' if isinstance(x, Parameter) else 'persistable variable'} "
                        f"{x.name} in static mode: it would not write back to the scope; compute the new value "
                        f"with fluidgrad.where / put_along_axis and assign it")
    new = _set_value(x, item, value)
    vars_ = x.block.vars
    for slot in _VARIABLE_SLOTS:
        a, b = getattr(x, slot), getattr(new, slot)
        setattr(x, slot, b)
        setattr(new, slot, a)
    x.__dict__, new.__dict__ = new.__dict__, x.__dict__
    vars_[x.name], vars_[new.name] = x, new
    x.block.program._bump()
