"""Shape arithmetic folded at import time.

fluidgrad fixes shapes, axes and pads when it builds a program, while ONNX graphs often
compute them (Shape -> Gather -> Concat -> Reshape, or a function body's Size -> Cast ->
Range). A node whose inputs are all known small tensors (at most FOLD_LIMIT elements:
shapes and scalars, not data) is evaluated here with NumPy, and its result becomes a
constant, unless it is larger than FOLD_LIMIT. The importer never folds a trainable
initializer (a float one of the main graph): computations on parameters stay ops of the
program, so `append_backward` sees them.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .load import tensor_to_array

FOLD_LIMIT = 64


class SymDim:
    """A dimension unknown when the program is built (a dynamic batch): dimension `axis` of
    fluidgrad variable `var`, or (var None) something computed from such dimensions. Shape
    arithmetic keeps these in object arrays; Reshape and Expand turn them into -1 / 0."""

    def __init__(self, var: str | None = None, axis: int = -1, expr: tuple | None = None) -> None:
        self.var, self.axis = var, axis
        self.expr = expr  # (op, left, right) of a size computed from others: a run-time shape computes it

    def __repr__(self) -> str:
        if self.var:
            return f"{self.var}.shape[{self.axis}]"
        if self.expr:
            return f"({self.expr[1]!r} {_SYMBOLS[self.expr[0]]} {self.expr[2]!r})"
        return "(unknown)"

    def _derived(op: str, swapped: bool = False) -> Any:  # type: ignore[misc]
        def derived(self: "SymDim", other: Any = -1) -> "SymDim":
            return SymDim(expr=(op, other, self) if swapped else (op, self, other))
        return derived

    __add__, __radd__ = _derived("add"), _derived("add", True)
    __sub__, __rsub__ = _derived("sub"), _derived("sub", True)
    __mul__, __rmul__ = _derived("mul"), _derived("mul", True)
    __neg__ = _derived("mul")
    # sizes are positive: floor and truncating division agree (Div of integers in ONNX truncates)
    __floordiv__, __rfloordiv__ = _derived("floordiv"), _derived("floordiv", True)
    __truediv__, __rtruediv__ = __floordiv__, __rfloordiv__
    __mod__ = _derived("mod")
    del _derived


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}


SYMBOLIC_FOLDERS = {"Gather", "Concat", "Unsqueeze", "Squeeze", "Slice", "Identity", "Cast", "Reshape",
                    "Add", "Sub", "Mul", "Div"}


def symbolic(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype == object


def _axes(attrs: dict, inputs: list, opset: int, since: int) -> Any:
    if opset < since:
        return attrs.get("axes")
    return [int(a) for a in inputs[1].reshape(-1)] if len(inputs) > 1 and inputs[1] is not None else None


def _slice(attrs, inputs, opset):
    x = inputs[0]
    if opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes") or list(range(len(starts))), [1] * len(starts)
    else:
        starts, ends = inputs[1].tolist(), inputs[2].tolist()
        axes = inputs[3].tolist() if len(inputs) > 3 and inputs[3] is not None else list(range(len(starts)))
        steps = inputs[4].tolist() if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        index[axis] = slice(start, end, step)
    return x[tuple(index)]


def _squeeze(attrs, inputs, opset):
    axes = _axes(attrs, inputs, opset, 13)
    return np.squeeze(inputs[0], axis=tuple(axes) if axes else None)


def _unsqueeze(attrs, inputs, opset):
    axes = _axes(attrs, inputs, opset, 13)
    out = inputs[0]
    rank = out.ndim + len(axes)
    for axis in sorted(a % rank for a in axes):
        out = np.expand_dims(out, axis)
    return out


def _reduce(fn: Callable, since: int):
    def fold(attrs, inputs, opset):
        axes = _axes(attrs, inputs, opset, since)
        keep = bool(attrs.get("keepdims", 1))
        return fn(inputs[0], axis=tuple(axes) if axes else None, keepdims=keep)
    return fold


def _reshape(attrs, inputs, opset):
    x, shape = inputs[0], [int(d) for d in inputs[1]]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


def _div(attrs, inputs, opset):
    x, y = inputs
    if symbolic(x) or symbolic(y):
        return np.asarray(x // y, dtype=object)  # dimensions are positive: floor = truncation
    return np.trunc(x / y).astype(x.dtype) if x.dtype.kind in "iu" else (x / y).astype(x.dtype)


def _constant_of_shape(attrs, inputs, opset):
    shape = [int(d) for d in inputs[0].reshape(-1)]
    if int(np.prod(shape)) > FOLD_LIMIT:
        raise ValueError("too large to fold")
    value = attrs.get("value")
    fill = np.zeros([1], "float32") if value is None else _tensor_value(value)
    return np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)


def _tensor_value(tensor):
    return tensor_to_array(tensor, "ConstantOfShape value")


def _range(attrs, inputs, opset):
    start, limit, delta = (v.reshape(-1)[0] for v in inputs)
    count = max(int(np.ceil((limit - start) / delta)), 0)
    if count > FOLD_LIMIT:
        raise ValueError("too large to fold")
    return (start + delta * np.arange(count)).astype(inputs[0].dtype)


def _expand(attrs, inputs, opset):
    x, shape = inputs[0], [int(d) for d in inputs[1]]
    out_shape = np.broadcast_shapes(x.shape, tuple(shape))
    if int(np.prod(out_shape)) > FOLD_LIMIT:
        raise ValueError("too large to fold")
    return np.broadcast_to(x, out_shape).copy()


def _tile(attrs, inputs, opset):
    if inputs[0].size * int(np.prod(inputs[1])) > FOLD_LIMIT:
        raise ValueError("too large to fold")
    return np.tile(inputs[0], [int(r) for r in inputs[1]])


def _pow(attrs, inputs, opset):
    return np.power(inputs[0], inputs[1]).astype(inputs[0].dtype)


FOLDERS: dict[str, Callable[[dict, list, int], Any]] = {
    "Add": lambda a, i, o: i[0] + i[1], "Sub": lambda a, i, o: i[0] - i[1], "Mul": lambda a, i, o: i[0] * i[1],
    "Div": _div, "Neg": lambda a, i, o: -i[0], "Abs": lambda a, i, o: np.abs(i[0]),
    "Max": lambda a, i, o: np.maximum.reduce(i), "Min": lambda a, i, o: np.minimum.reduce(i),
    "Equal": lambda a, i, o: np.equal(i[0], i[1]), "Less": lambda a, i, o: np.less(i[0], i[1]),
    "Greater": lambda a, i, o: np.greater(i[0], i[1]), "Not": lambda a, i, o: np.logical_not(i[0]),
    "Where": lambda a, i, o: np.where(i[0], i[1], i[2]),
    "Mod": lambda a, i, o: np.fmod(i[0], i[1]) if a.get("fmod", 0) else np.mod(i[0], i[1]),
    "Concat": lambda a, i, o: np.concatenate(i, axis=a["axis"]),
    "Gather": lambda a, i, o: np.take(i[0], i[1], axis=a.get("axis", 0)),
    "Cast": lambda a, i, o: i[0],  # the dtype is applied by the caller (see fold_node)
    "Identity": lambda a, i, o: i[0], "Slice": _slice, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze,
    "Reshape": _reshape, "Range": lambda a, i, o: np.arange(i[0], i[1], i[2], dtype=i[0].dtype),
    "ReduceProd": _reduce(np.prod, 18), "ReduceSum": _reduce(np.sum, 13), "ReduceMax": _reduce(np.max, 18),
    "ReduceMin": _reduce(np.min, 18),
    "And": lambda a, i, o: np.logical_and(i[0], i[1]), "Or": lambda a, i, o: np.logical_or(i[0], i[1]),
    "Xor": lambda a, i, o: np.logical_xor(i[0], i[1]),
    "LessOrEqual": lambda a, i, o: np.less_equal(i[0], i[1]),
    "GreaterOrEqual": lambda a, i, o: np.greater_equal(i[0], i[1]),
    "Sign": lambda a, i, o: np.sign(i[0]), "Floor": lambda a, i, o: np.floor(i[0]),
    "Ceil": lambda a, i, o: np.ceil(i[0]), "Pow": _pow,
    "ConstantOfShape": _constant_of_shape, "Expand": _expand, "Tile": _tile,
    "Size": lambda a, i, o: np.asarray(i[0].size, dtype="int64"),
    "Shape": lambda a, i, o: np.asarray(i[0].shape, dtype="int64")[a.get("start", 0):a.get("end")],
    "Transpose": lambda a, i, o: np.transpose(i[0], a.get("perm")),
}
FOLDERS["Range"] = _range


def foldable(op_type: str, values: list) -> bool:
    """All inputs known tensors (ints, bools or floats) of at most FOLD_LIMIT elements; shape
    tensors with unknown dimensions (SymDim) only through the ops that move or combine them."""
    kinds = "iubfO" if op_type in SYMBOLIC_FOLDERS else "iubf"
    return op_type in FOLDERS and bool(values) and all(
        v is not None and v.dtype.kind in kinds and v.size <= FOLD_LIMIT for v in values)


def fold_node(op_type: str, attrs: dict, values: list, opset: int, cast_to: str | None) -> np.ndarray:
    out = np.asarray(FOLDERS[op_type](attrs, values, opset))
    if out.size > FOLD_LIMIT:
        raise ValueError("too large to fold")
    if symbolic(out) or any(symbolic(v) for v in values):
        if not any(isinstance(d, SymDim) for d in np.asarray(out, dtype=object).reshape(-1)):
            # only known entries picked out of a shape with unknown ones (Gather(Shape(x), 2)): plain ints
            return np.asarray(np.asarray(out, dtype=object).tolist(), dtype="int64").astype(cast_to or "int64")
        if cast_to and not cast_to.startswith(("int", "uint")):
            raise ValueError("an unknown dimension cast to a non-integer type")
        return np.asarray(out, dtype=object)
    return out.astype(cast_to) if cast_to else out
