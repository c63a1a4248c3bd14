"""PyTorch's everyday Tensor methods that Paddle 2 spells otherwise or lacks: `x.type(dtype)`,
`x.new_zeros(2, 3)`, `x.repeat(2, 1)` (torch's tile), `x.type_as(y)`, `x.view_as(y)`,
`x.softmax(dim=-1)`, `x.clamp(min=0)`, `x.eq(y)`, `x.mm(y)`, `x.relu()`, ...; and torch's argument
order of `index_select(dim, index)`, `scatter(dim, index, src)` and `gather(dim, index=...)`,
told from Paddle's by the types (Paddle's index is a tensor, never a Python int).

Each is a thin method over a public function or op (no math of its own); `methods.install` puts
them on the class Tensor and Variable share, so static code reads like eager code (a Variable's
own `type` slot, its kind of variable, stays what it was)."""
from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from .. import functions, views
from ..framework import normalize_dtype
from ..framework.device import as_device
from ..framework.axes import checked_axes
from ..framework.runtime_dims import has_runtime_dims
from ..framework.sizes import checked_sizes
from ..indexing import constant, create
from ..nn.functional import activation
from . import composed, everyday, inplace, manipulation, math, search, torch_arithmetic, torch_everyday, torch_statistics
from . import torch_scatter

# the legacy type names torch's x.type(...) takes and gives
_LEGACY_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                 "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16",
                 "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool"}


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _sizes(size: tuple, what: str) -> list[int]:
    """torch's `new_zeros(2, 3)` or `new_zeros((2, 3))`."""
    return checked_sizes(what, size[0] if len(size) == 1 and not _is_int(size[0]) else size)


def type_(x: Any, dtype: Any = None, non_blocking: bool = False) -> Any:
    """torch's x.type(dtype): x cast to dtype (x itself when it already has it); x.type() is x's
    dtype name. Takes dtypes as fluidgrad and NumPy spell them and torch's legacy names
    ('torch.FloatTensor')."""
    if dtype is None:
        return x.dtype
    if isinstance(dtype, str) and dtype.split(".")[-1] in _LEGACY_TYPES:
        dtype = _LEGACY_TYPES[dtype.split(".")[-1]]
    dtype = normalize_dtype(dtype)
    return x if dtype == x.dtype else functions.cast(x, dtype)


def type_as(x: Any, other: Any) -> Any:
    """x cast to other's dtype (x itself when the same)."""
    return type_(x, other.dtype)


def view_as(x: Any, other: Any) -> Any:
    """x viewed with other's shape (torch's x.view(other.size()))."""
    return view(x, list(other.shape))


def view(x: Any, *shape: Any) -> Any:
    """torch's x.view(3, 2) / x.view([3, 2]): x with another shape sharing its values (a view:
    writes into either reach the other); a view whose elements are out of order (a transpose)
    cannot be viewed so, and torch's RuntimeError says to reshape (a copy) instead."""
    sizes = shape[0] if len(shape) == 1 and not _is_int(shape[0]) else list(shape)
    out = functions.reshape(x, sizes)
    if views.is_eager(out) and views.view_link(x) is not None and views.view_link(out) is None:
        raise RuntimeError(f"view: the size {list(out.shape)} is not compatible with the input's size "
                           f"{list(x.shape)} and stride (x is a view whose elements are not in row-major order, "
                           f"such as a transpose: at least one dimension spans across two contiguous subspaces); "
                           f"use reshape(...), which copies, instead")
    return out


def reshape_as(x: Any, other: Any) -> Any:
    """x reshaped to other's shape (a view where torch's is one, else a copy)."""
    return functions.reshape(x, list(other.shape))


def _new_filled(x: Any, what: str, size: tuple, value: float, dtype: Any, requires_grad: bool,
                device: Any) -> Any:
    as_device(device, what)
    sizes = _sizes(size, what)
    if has_runtime_dims(sizes):   # x.new_zeros(x.shape[0], 3) while tracing: sized when the program runs
        return functions.full(sizes, float(value), normalize_dtype(dtype) if dtype is not None else x.dtype,
                              requires_grad=requires_grad)
    if any(d < 0 for d in sizes):
        raise ValueError(f"{what}: sizes must be >= 0, got {sizes}")
    out = create("fill_constant", {"shape": sizes, "value": float(value),
                                   "dtype": normalize_dtype(dtype) if dtype is not None else x.dtype}, like=x)
    if requires_grad:
        out.stop_gradient = False
    return out


def new_zeros(x: Any, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Zeros of `size` with x's dtype (unless dtype=), in x's mode (torch's Tensor.new_zeros)."""
    return _new_filled(x, "new_zeros", size, 0.0, dtype, requires_grad, device)


def new_ones(x: Any, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """Ones of `size` with x's dtype (unless dtype=), in x's mode."""
    return _new_filled(x, "new_ones", size, 1.0, dtype, requires_grad, device)


def new_empty(x: Any, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """A value of `size` with x's dtype (zeros: fluidgrad has no uninitialised memory)."""
    return _new_filled(x, "new_empty", size, 0.0, dtype, requires_grad, device)


def new_full(x: Any, size: Any, fill_value: float, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Any:
    """`fill_value` everywhere in a value of `size`, with x's dtype unless dtype= is given."""
    return _new_filled(x, "new_full", (size,), fill_value, dtype, requires_grad, device)


def new_tensor(x: Any, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """A copy of `data` with x's dtype unless dtype= is given (torch's Tensor.new_tensor)."""
    array = np.asarray(data, dtype=normalize_dtype(dtype or x.dtype))
    out = constant(array.copy(), x)
    if requires_grad:
        out.stop_gradient = False
    return out


def repeat(x: Any, *sizes: Any) -> Any:
    """torch's Tensor.repeat: x tiled sizes[i] times along axis i (new leading axes when sizes is
    longer); Paddle's tile. (Paddle's repeat_interleave repeats each element instead.)"""
    repeats = _sizes(sizes, "repeat")
    if len(repeats) < len(x.shape):
        raise ValueError(f"repeat: needs one count per axis of x (shape {list(x.shape)}), got {repeats}; "
                         f"repeat_interleave repeats each element instead")
    return manipulation.tile(x, repeats)


def clamp(x: Any, min: Any = None, max: Any = None) -> Any:
    """x clamped into [min, max] (either may be None): Paddle's clip."""
    if min is None and max is None:
        raise ValueError("clamp: give min, max or both")
    return math.clip(x, min, max)


def clamp_min(x: Any, min: Any) -> Any:
    """max(x, min) elementwise."""
    return math.clip(x, min, None)


def clamp_max(x: Any, max: Any) -> Any:
    """min(x, max) elementwise."""
    return math.clip(x, None, max)


def div(x: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    """x / other; rounding_mode 'trunc' or 'floor' rounds the quotient (torch's Tensor.div)."""
    if rounding_mode is None:
        return functions.divide(x, other)
    if rounding_mode == "floor":
        return functions.floor_divide(x, other)
    if rounding_mode == "trunc":
        if _integer(x) and (_is_int(other) or _integer(other)):
            return _integer_trunc_divide(x, other)
        return math.trunc(functions.divide(x, other))
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def _integer(value: Any) -> bool:
    return hasattr(value, "dtype") and normalize_dtype(value.dtype) in ("int8", "int16", "int32", "int64", "uint8")


def _integer_trunc_divide(x: Any, other: Any) -> Any:
    """Integers divided with the quotient rounded toward zero, staying integer (torch): the floor
    quotient, plus one where the division is inexact and the operands' signs differ."""
    quotient = functions.floor_divide(x, other)
    inexact = functions.not_equal(functions.remainder(x, other), 0)
    negative_x = functions.less_than(x, 0)
    signs_differ = (functions.logical_not(negative_x) if other < 0 else negative_x) if _is_int(other) \
        else functions.not_equal(negative_x, functions.less_than(other, 0))
    return functions.add(quotient, functions.cast(functions.logical_and(inexact, signs_differ), quotient.dtype))


def narrow(x: Any, dim: int, start: int, length: int) -> Any:
    """The `length` entries of x from `start` along `dim` (torch's Tensor.narrow)."""
    size = x.shape[dim]
    start = int(start) + (size if int(start) < 0 and size >= 0 else 0)
    if length < 0 or start < 0 or (size >= 0 and start + length > size):
        raise IndexError(f"narrow: start {start} and length {length} do not fit axis {dim} of size {size}")
    return functions.slice(x, [int(dim)], [start], [start + int(length)])


def swapaxes(x: Any, axis0: int, axis1: int) -> Any:
    """x with two axes swapped (torch's swapaxes / swapdims, Tensor.transpose(a, b))."""
    checked_axes("swapaxes", [axis0, axis1], x.shape)
    return x.transpose(int(axis0), int(axis1))


def where_(x: Any, condition: Any, y: Any) -> Any:
    """torch's x.where(condition, y): x where condition holds, else y."""
    return search.where(condition, x, y)


def contiguous(x: Any, memory_format: Any = None) -> Any:
    """x itself when its elements are in row-major order, else a copy that is (torch's: a
    transpose's contiguous() is a new tensor, no longer a view)."""
    return x if views.is_contiguous(x) else x.clone()


def is_contiguous(x: Any, memory_format: Any = None) -> bool:
    """False for views whose elements are out of row-major order (x.t(), x[:, ::2], x.expand(...))."""
    return views.is_contiguous(x)


def index_select(x: Any, *args: Any, **kwargs: Any) -> Any:
    """Paddle's x.index_select(index, axis=0), or torch's x.index_select(dim, index) (an int
    first is the dim; dim= also works)."""
    if args and _is_int(args[0]):
        return _torch_index_select(x, *args, **kwargs)
    if "dim" in kwargs:
        kwargs["axis"] = kwargs.pop("dim")
    return search.index_select(x, *args, **kwargs)


def _torch_index_select(x: Any, dim: int, index: Any = None) -> Any:
    if not hasattr(index, "shape"):
        raise TypeError(f"index_select: index must be a 1-D integer tensor, got {index!r}; PyTorch's order is "
                        f"index_select(dim, index), Paddle's index_select(index, axis=0)")
    return search.index_select(x, index, int(dim))


def scatter(x: Any, *args: Any, **kwargs: Any) -> Any:
    """Paddle's x.scatter(index, updates, overwrite=True) (rows of axis 0 replaced), or torch's
    x.scatter(dim, index, src) / scatter(dim, index, value=v) / reduce='add' | 'multiply' (an int
    first, or dim=, is the dim): out[i][index[i][j]] = src[i][j] for dim 1, Paddle's
    put_along_axis."""
    if "dim" in kwargs or (args and _is_int(args[0])):
        return _torch_scatter(x, *args, **kwargs)
    if any(k in kwargs for k in ("src", "value", "reduce")):
        raise TypeError("scatter: src= / value= / reduce= belong to PyTorch's order scatter(dim, index, src); "
                        "Paddle's is scatter(index, updates, overwrite=True) along axis 0")
    return search.scatter(x, *args, **kwargs)


_REDUCE = {None: "assign", "add": "add", "multiply": "mul"}


def _torch_scatter(x: Any, dim: int, index: Any, src: Any = None, value: Any = None, reduce: str | None = None) -> Any:
    if src is not None and not hasattr(src, "shape"):
        src, value = None, src               # scatter(dim, index, 2.0): the value
    if (src is None) == (value is None) or not hasattr(index, "shape"):
        raise TypeError("scatter: PyTorch's order is scatter(dim, index, src) with index an integer tensor and "
                        "either src (a tensor) or value (a number); Paddle's is scatter(index, updates) along axis 0")
    if reduce not in _REDUCE:
        raise ValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
    if src is not None and tuple(src.shape) != tuple(index.shape):
        src = src[tuple(builtins.slice(0, int(n)) for n in index.shape)]   # torch reads src where index is
    return search.put_along_axis(x, index, value if src is None else src, int(dim), reduce=_REDUCE[reduce])


def scatter_add(x: Any, dim: int, index: Any, src: Any) -> Any:
    """torch's x.scatter_add(dim, index, src): src's entries added into x at `index` along dim
    (repeated indices add up; src is read where index is); the gradient reaches x and src."""
    if not hasattr(src, "shape"):
        raise TypeError(f"scatter_add: src must be a tensor, got {type(src).__name__}; x.scatter(dim, index, value, "
                        f"reduce='add') adds a number")
    return _torch_scatter(x, dim, index, src, reduce="add")


def gather(x: Any, *args: Any, **kwargs: Any) -> Any:
    """Paddle's x.gather(index, axis=0), or torch's x.gather(dim, index) / x.gather(1, index=idx)
    (take_along_axis); see fluidgrad.gather."""
    if len(args) == 1 and _is_int(args[0]) and "index" in kwargs and "dim" not in kwargs:
        return functions.gather(x, dim=args[0], index=kwargs.pop("index"), **kwargs)
    return functions.gather(x, *args, **kwargs)


# method name -> function (the tensor first)
METHODS: dict[str, Callable[..., Any]] = {
    "type": type_, "type_as": type_as, "view_as": view_as, "reshape_as": reshape_as,
    "view": view,
    "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty, "new_full": new_full,
    "new_tensor": new_tensor, "repeat": repeat,
    "softmax": activation.softmax, "log_softmax": activation.log_softmax, "relu": functions.relu,
    "clamp": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "eq": functions.equal, "ne": functions.not_equal, "lt": functions.less_than, "le": functions.less_equal,
    "gt": functions.greater_than, "ge": functions.greater_equal, "greater": functions.greater_than,
    "less": functions.less_than,
    "mm": everyday.mm, "sub": functions.subtract, "mul": functions.multiply, "div": div,
    "true_divide": functions.divide, "neg": everyday.neg, "negative": everyday.neg, "fmod": math.fmod,
    "dot": composed.dot, "lerp": composed.lerp, "isclose": composed.isclose, "allclose": composed.allclose,
    "nan_to_num": composed.nan_to_num, "moveaxis": composed.moveaxis, "movedim": composed.moveaxis,
    "swapaxes": swapaxes, "swapdims": swapaxes, "narrow": narrow, "where": where_,
    "contiguous": contiguous, "is_contiguous": is_contiguous,
    "index_select": index_select, "scatter": scatter, "gather": gather, "scatter_add": scatter_add,
    **torch_arithmetic.METHODS, **torch_statistics.METHODS, **torch_everyday.METHODS, **torch_scatter.METHODS,
}

# torch's forms of methods Paddle has too (each still takes Paddle's call): they replace the
# plain function methods `methods.install` puts on first
REPLACING = frozenset({"index_select", "scatter", "gather", "view", *torch_arithmetic.METHODS, *torch_statistics.METHODS})

# torch's matrix transposes, read as attributes: x.mT, x.mH, x.H
PROPERTIES: dict[str, property] = {name: property(fn, doc=fn.__doc__)
                                   for name, fn in {**torch_arithmetic.PROPERTIES, **torch_everyday.PROPERTIES}.items()}

# in place (torch's trailing underscore), written into x as the other in-place methods are
IN_PLACE: dict[str, Callable[..., Any]] = {
    "scatter_": inplace._computed(scatter, "scatter_"), "clamp_min_": inplace._computed(clamp_min, "clamp_min_"),
    "clamp_max_": inplace._computed(clamp_max, "clamp_max_"), "relu_": inplace._computed(functions.relu, "relu_"),
    **{name: inplace._computed(fn, name) for name, fn in (
        ("add_", torch_arithmetic.add), ("sub_", torch_arithmetic.subtract), ("subtract_", torch_arithmetic.subtract),
        ("pow_", functions.pow), ("square_", functions.square), ("index_add_", torch_arithmetic.index_add),
        ("scatter_add_", scatter_add), ("sigmoid_", functions.sigmoid))},
    **torch_everyday.IN_PLACE, **torch_everyday.RESHAPING, **torch_scatter.IN_PLACE,
}

# the Paddle function each torch-order method falls back to
index_select.__wrapped__ = search.index_select  # type: ignore[attr-defined]
scatter.__wrapped__ = search.scatter  # type: ignore[attr-defined]
gather.__wrapped__ = functions.gather  # type: ignore[attr-defined]
