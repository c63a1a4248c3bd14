"""The top-level functions (Paddle 2 names). Each serves both modes through `apply_op`.

A Python scalar meeting a Variable or Tensor follows the one promotion rule of
`framework.dtypes` (PyTorch's weak scalars, docs/dtypes.md): the value is cast to the result
dtype first, so the op itself always sees one dtype.
"""
from __future__ import annotations

from builtins import slice as builtins_slice
from typing import Any, Sequence

import numpy as np

from .dispatch import append_static_op, apply_op, is_tensor
from .eager import Tensor, to_tensor
from .framework import DTypeError, Variable, default_main_program, dtypes, in_dynamic_mode, normalize_dtype
from .indexing import Indexed, getitem, setitem  # noqa: F401  (x[...] and x[...] = v: fluidgrad/indexing.py)
from . import views
from .framework.runtime_dims import RuntimeDim, RuntimeFloat, has_runtime_dims, library_form
from .framework.axes import checked_axes
from .framework.sizes import checked_sizes
from .framework.torch_forms import created, sizes_and_dtype, torch_keywords


def _is_value(x: Any) -> bool:
    return isinstance(x, Variable) or is_tensor(x)


def _describe(value: Any) -> str:
    if _is_value(value):
        return f"{getattr(value, 'name', None) or type(value).__name__} (shape {list(value.shape)}, {value.dtype})"
    return repr(value)


def _exact(value: Any) -> int | float | bool:
    """A scalar as a plain Python number, without rounding a large integer through float."""
    kind = dtypes.scalar_kind(value)
    return bool(value) if kind == dtypes.BOOL else int(value) if kind == dtypes.INTEGER else float(value)


def _constant(value: Any, dtype: str, like: Any) -> Any:
    """A 0-D constant of `dtype` in `like`'s mode, so that it broadcasts against anything."""
    if isinstance(value, (RuntimeDim, RuntimeFloat)):  # x / x.shape[0] while tracing: the size at run time
        return _runtime_value(value, dtype)
    if is_tensor(like):  # an integer out of the dtype's range wraps, as in PyTorch and fill_constant
        return to_tensor(np.asarray(value).astype(dtype))
    return apply_op("fill_constant", {}, {"shape": [], "value": _exact(value), "dtype": dtype})


def _lift(x: Any, dtype: str) -> Any:
    return x if x.dtype == dtype else cast(x, dtype)


def _operand(value: Any, other: Any, op_type: str) -> Any:
    """A non-Variable operand of a binary op: NumPy arrays join eager Tensors as Tensors."""
    if isinstance(value, np.ndarray) and is_tensor(other):
        return to_tensor(value)
    raise TypeError(f"{op_type}: expected a number, Variable or Tensor, got {type(value).__name__}")


def _binary(op_type: str, x: Any, y: Any, attrs: dict[str, Any] | None = None) -> Any:
    """`op_type(x, y)`; a Python scalar on either side becomes a constant of the promoted
    dtype (`dtypes.result_type`), the other side cast to it."""
    x, y = library_form(x), library_form(y)   # x.shape[0] read while tracing: computed at run time
    if not _is_value(x):
        if not _is_value(y):
            raise TypeError(f"{op_type}: at least one operand must be a Variable or Tensor, "
                            f"got {type(x).__name__} and {type(y).__name__}")
        if not dtypes.is_scalar(x):
            return _binary(op_type, _operand(x, y, op_type), y, attrs)
        dtype = dtypes.result_type(y.dtype, x)
        y, x = _lift(y, dtype), _constant(x, dtype, y)
    elif not _is_value(y):
        if not dtypes.is_scalar(y):
            return _binary(op_type, x, _operand(y, x, op_type), attrs)
        dtype = dtypes.result_type(x.dtype, y)
        x, y = _lift(x, dtype), _constant(y, dtype, x)
    return apply_op(op_type, {"X": x, "Y": y}, attrs)


def _with_scalar(x: Any, y: Any) -> tuple[Any, Any] | None:
    """(value cast to the result dtype, scalar) when one operand is a value and the other a
    Python scalar, the result is not bool (bool arithmetic is logical: elementwise ops do it)."""
    if _is_value(x) and dtypes.is_scalar(y) and not isinstance(y, (RuntimeDim, RuntimeFloat)):
        value = _lift(x, dtypes.result_type(x.dtype, y))
        return None if value.dtype == "bool" else (value, _exact(y))
    return None


def add(x: Any, y: Any, name: str | None = None) -> Any:
    """x + y elementwise, broadcasting as NumPy; a Python scalar is a weak operand (docs/dtypes.md)."""
    pair = _with_scalar(x, y) or _with_scalar(y, x)
    if pair:
        return scale(pair[0], 1, pair[1])
    return _binary("elementwise_add", x, y)


def subtract(x: Any, y: Any, name: str | None = None) -> Any:
    """x - y elementwise, broadcasting as NumPy; a Python scalar is a weak operand."""
    for operand in (x, y):  # before promotion turns a bool into an integer: PyTorch refuses it
        if isinstance(operand, bool) or (_is_value(operand) and operand.dtype == "bool"):
            raise DTypeError(f"subtract: subtraction with a bool ({_describe(operand)}) is not supported, "
                             f"as in PyTorch; use logical_xor / logical_not, or cast to an integer dtype")
    pair = _with_scalar(x, y)
    if pair:
        return scale(pair[0], 1, -pair[1])
    pair = _with_scalar(y, x)
    if pair:
        return scale(pair[0], -1, pair[1])
    return _binary("elementwise_sub", x, y)


def multiply(x: Any, y: Any, name: str | None = None) -> Any:
    """x * y elementwise, broadcasting as NumPy; a Python scalar is a weak operand."""
    pair = _with_scalar(x, y) or _with_scalar(y, x)
    if pair:
        return scale(pair[0], pair[1])
    return _binary("elementwise_mul", x, y)


def divide(x: Any, y: Any, name: str | None = None) -> Any:
    """True division: bool and integer operands give the default float dtype (float32)."""
    if _is_value(x) and dtypes.is_scalar(y):  # as PyTorch: the scalar meets x in the float result
        x = _lift(x, dtypes.true_divide_dtype(dtypes.result_type(x.dtype, y)))
    elif _is_value(y) and dtypes.is_scalar(x):
        y = _lift(y, dtypes.true_divide_dtype(dtypes.result_type(y.dtype, x)))
    return _binary("elementwise_div", x, y)


def floor_divide(x: Any, y: Any, name: str | None = None) -> Any:
    """floor(x / y) (`x // y`); integer division by zero raises instead of returning garbage."""
    return _binary("elementwise_floordiv", x, y)


def remainder(x: Any, y: Any, name: str | None = None) -> Any:
    """Python's remainder (`x % y`): the result takes the sign of y (ONNX Mod with fmod=0)."""
    return _binary("elementwise_mod", x, y)


def pow(x: Any, y: Any) -> Any:
    """x ** y. A float exponent (or a float base) gives `pow` in floating point; an integer
    tensor to a non-negative integer power stays an integer tensor, as in PyTorch."""
    if _is_value(x) and dtypes.is_scalar(y):
        dtype = dtypes.result_type(x.dtype, y)
        if dtypes.dtype_kind(dtype) == dtypes.FLOAT:
            return apply_op("pow", {"X": _lift(x, dtype)}, {"factor": float(y)})
        if y < 0:
            raise ValueError(f"pow: integers to negative integer powers are not allowed "
                             f"({x.dtype} {getattr(x, 'name', None) or ''} ** {y}); cast to a float first")
    return _binary("elementwise_pow", x, y)


def maximum(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise max(x, y), broadcasting; a tie splits the gradient in half (as PyTorch)."""
    return _binary("elementwise_max", x, y)


def minimum(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise min(x, y), broadcasting; a tie splits the gradient in half (as PyTorch)."""
    return _binary("elementwise_min", x, y)


def scale(x: Any, scale: float = 1.0, bias: float = 0.0, bias_after_scale: bool = True) -> Any:
    """x * scale + bias (or (x + bias) * scale with bias_after_scale=False), one fused op."""
    return apply_op("scale", {"X": x}, {"scale": float(scale), "bias": float(bias),
                                        "bias_after_scale": bias_after_scale})


def matmul(x: Any, y: Any, transpose_x: bool = False, transpose_y: bool = False, name: str | None = None) -> Any:
    """Matrix product with NumPy's rules for 1-D and batched operands; `transpose_x/y` transpose the last two axes first."""
    return apply_op("matmul", {"X": x, "Y": y}, {"transpose_x": transpose_x, "transpose_y": transpose_y})


def _axis_attrs(axis: Any, keepdim: bool) -> dict[str, Any]:
    if axis is None:
        return {"axis": None, "keepdim": keepdim, "reduce_all": True}
    return {"axis": list(axis) if isinstance(axis, (list, tuple)) else [int(axis)], "keepdim": keepdim,
            "reduce_all": False}


@torch_keywords
def mean(x: Any, axis: Any = None, keepdim: bool = False, name: str | None = None) -> Any:
    """The mean over `axis` (all axes by default), keeping reduced axes as size 1 with `keepdim`."""
    if axis is None and not keepdim:
        return apply_op("mean", {"X": x})
    return apply_op("reduce_mean", {"X": x}, _axis_attrs(axis, keepdim))


@torch_keywords
def sum(x: Any, axis: Any = None, keepdim: bool = False, dtype: Any = None, name: str | None = None) -> Any:
    """The sum over `axis` (all axes by default); bool and integer inputs sum in int64 (as PyTorch).
    `dtype` casts x first, to sum in a wider type (Paddle's and torch's dtype=); Paddle's
    positional order sum(x, axis, dtype, keepdim) is taken too: a third argument that is not a
    bool is the dtype."""
    if keepdim is not None and not isinstance(keepdim, (bool, int, np.bool_)):   # Paddle's sum(x, axis, "float64", ...)
        if dtype is not None and not isinstance(dtype, (bool, int)):
            raise TypeError(f"sum: two dtypes given ({keepdim!r} and {dtype!r})")
        keepdim, dtype = bool(dtype or False), keepdim
    if isinstance(x, (list, tuple)):
        return apply_op("sum", {"X": list(x)})
    if dtype is not None:
        x = _lift(x, normalize_dtype(dtype))
    return apply_op("reduce_sum", {"X": x}, _axis_attrs(axis, keepdim))


def _is_array_like(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def max(x: Any, axis: Any = None, keepdim: bool = False) -> Any:
    """The largest value over `axis` (all axes by default); ties share the gradient equally.
    `max(x, y)` with a second tensor is torch's spelling of `maximum(x, y)`."""
    if _is_array_like(axis):
        return maximum(x, axis)
    return apply_op("reduce_max", {"X": x}, _axis_attrs(axis, keepdim))


def min(x: Any, axis: Any = None, keepdim: bool = False) -> Any:
    """The smallest value over `axis` (all axes by default); ties share the gradient equally.
    `min(x, y)` with a second tensor is torch's spelling of `minimum(x, y)`."""
    if _is_array_like(axis):
        return minimum(x, axis)
    return apply_op("reduce_min", {"X": x}, _axis_attrs(axis, keepdim))


def add_n(inputs: Sequence[Any]) -> Any:
    """The sum of a list of same-shaped Variables or Tensors (one `sum` op)."""
    return apply_op("sum", {"X": list(inputs)})


def _unary(op_type: str):
    def fn(x: Any, name: str | None = None) -> Any:
        return apply_op(op_type, {"X": x})
    fn.__name__ = op_type
    fn.__doc__ = f"Elementwise {op_type}."
    return fn


exp, log, tanh, sqrt, square, abs, sin, cos, sign = (
    _unary(n) for n in ("exp", "log", "tanh", "sqrt", "square", "abs", "sin", "cos", "sign"))
sigmoid, relu = _unary("sigmoid"), _unary("relu")


def reshape(x: Any, shape: Sequence[int], name: str | None = None) -> Any:
    """x with a new shape of the same size; 0 keeps that axis' size, one -1 is inferred. Sizes
    read while jit.to_static traces (`[x.shape[0], -1]` of an unknown batch) are computed when
    the program runs (`runtime_shape_tensor`)."""
    shape = checked_sizes("reshape", shape, negative="infer")
    if has_runtime_dims(shape):
        tensor, hint = runtime_shape_tensor(shape)
        return apply_op("reshape", {"X": x, "ShapeTensor": tensor}, {"shape": hint})
    return views.reshape_view(x, apply_op("reshape", {"X": x}, {"shape": shape}), "reshape")


@torch_keywords
def flatten(x: Any, start_axis: int = 0, stop_axis: int = -1, name: str | None = None) -> Any:
    """Axes start_axis..stop_axis merged into one (a 0-D x becomes [1])."""
    out = apply_op("flatten", {"X": x}, {"start_axis": int(start_axis), "stop_axis": int(stop_axis)})
    return views.reshape_view(x, out, "flatten")


def transpose(x: Any, perm: Sequence[int], name: Any = None) -> Any:
    """x with its axes permuted by `perm`. torch's `transpose(x, dim0, dim1)` (two ints) swaps
    those two axes."""
    if isinstance(perm, (int, np.integer)):
        if not isinstance(name, (int, np.integer)):
            raise TypeError(f"transpose: perm must be a list of axes (Paddle: transpose(x, perm=[1, 0])) or two "
                            f"axes to swap (torch: transpose(x, 0, 1)); got perm={perm!r}")
        first, second = checked_axes("transpose", [perm, name], x.shape)
        axes = list(range(len(x.shape)))
        if axes:
            axes[first], axes[second] = axes[second], axes[first]
        perm = axes
    checked_axes("transpose", perm, x.shape)
    perm = [int(p) for p in perm]
    out = apply_op("transpose", {"X": x}, {"perm": perm})
    return views.mark(out, x, lambda: views.Permuted(x, perm, "permute"))


@torch_keywords
def concat(xs: Sequence[Any], axis: int = 0, name: str | None = None) -> Any:
    """The inputs joined along `axis` (all other axes must match)."""
    return apply_op("concat", {"X": list(xs)}, {"axis": int(axis)})


@torch_keywords
def stack(xs: Sequence[Any], axis: int = 0, name: str | None = None) -> Any:
    """The same-shaped inputs stacked along a new axis `axis`."""
    return apply_op("stack", {"X": list(xs)}, {"axis": int(axis)})


def split(x: Any, num_or_sections: int | Sequence[int], axis: int = 0, name: str | None = None) -> list[Any]:
    """x cut along `axis` into `num_or_sections` equal parts, or parts of the given sizes."""
    count = num_or_sections if isinstance(num_or_sections, int) else len(num_or_sections)
    sections = num_or_sections if isinstance(num_or_sections, int) else [int(s) for s in num_or_sections]
    return pieces_of(x, apply_op("split", {"X": x}, {"num_or_sections": sections, "axis": int(axis)}, n_out=count),
                     int(axis))


def pieces_of(x: Any, parts: list[Any], axis: int) -> list[Any]:
    """The parts x was cut into along `axis`, in order, each a view of x (PyTorch's split,
    chunk, tensor_split give views): a write into a part reaches x."""
    if not isinstance(x, (Tensor, Variable)) or any(part.shape[axis] < 0 for part in parts):
        return parts   # (a part of a size known only at run time has no known place in x)
    axis, start = axis % len(x.shape), 0
    for part in parts:
        end = start + part.shape[axis]
        item = (builtins_slice(None),) * axis + (builtins_slice(start, end),)
        views.mark(part, x, lambda item=item: Indexed(x, item))
        start = end
    return parts


def slice(x: Any, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    """x[starts[i]:ends[i]:strides[i]] on each of axes (ends past the size are clamped); of an
    eager Tensor, a view (as x[...] is)."""
    axes, starts, ends = [int(a) for a in axes], [int(s) for s in starts], [int(e) for e in ends]
    steps = None if strides is None else [int(s) for s in strides]
    out = apply_op("slice", {"X": x}, {"axes": axes, "starts": starts, "ends": ends, "strides": steps})

    def how() -> Indexed:
        item = [builtins_slice(None)] * len(x.shape)
        for i, axis in enumerate(axes):
            item[axis] = builtins_slice(starts[i], ends[i], None if steps is None else steps[i])
        return Indexed(x, tuple(item))
    return views.mark(out, x, how)


@torch_keywords
def squeeze(x: Any, axis: int | Sequence[int] | None = None, name: str | None = None) -> Any:
    """Drops the given axes of size 1 (all axes of size 1 when axis is None). A named axis whose
    size is known and not 1 stays, as in Paddle 2 and PyTorch (so `logits.squeeze(-1)` serves
    [N] and [N, 1] alike); the `squeeze` op itself keeps ONNX's stricter rule."""
    axes = [] if axis is None else [int(axis)] if isinstance(axis, (int, np.integer)) else [int(a) for a in axis]
    shape, rank = list(x.shape), len(x.shape)
    axes = checked_axes("squeeze", axes, shape)
    repeated = [a for i, a in enumerate(axes) if a in axes[:i]]
    if repeated:
        raise ValueError(f"squeeze: dim {repeated[0]} appears more than once in the axes {axis} for a tensor of "
                         f"shape {shape} (torch refuses it too)")
    kept = [a for a in axes if rank and shape[a] in (1, -1)]
    if axes and not kept:
        out = assign(x)  # nothing to drop: an identity the gradient flows through
    else:
        out = apply_op("squeeze", {"X": x}, {"axes": kept})
    return views.reshape_view(x, out, "squeeze")


@torch_keywords
def unsqueeze(x: Any, axis: int | Sequence[int], name: str | None = None) -> Any:
    """New axes of size 1 at the given output positions (several at once allowed)."""
    axes = [int(axis)] if isinstance(axis, (int, np.integer)) else [int(a) for a in axis]
    return views.reshape_view(x, apply_op("unsqueeze", {"X": x}, {"axes": axes}), "unsqueeze")


def gather(x: Any, index: Any = None, axis: Any = 0, name: str | None = None, *, dim: int | None = None) -> Any:
    """Paddle's gather(x, index, axis=0): the slices of x at the integer positions `index` along
    `axis` (shape: x's with `axis` replaced by index's).

    PyTorch's gather(x, dim, index) (x.gather(1, idx), or dim=) is another function, Paddle's
    take_along_axis; it is told apart by the argument types: Paddle's index is never a Python
    integer, so an integer second argument followed by a tensor (or dim= given) means PyTorch's."""
    if dim is not None:
        if index is None or isinstance(index, (int, np.integer)):
            raise TypeError(f"gather(dim={dim}): PyTorch's form needs index=, a tensor of x's rank")
        return apply_op("take_along_axis", {"X": x, "Index": index}, {"axis": int(dim)})
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        if not _is_value(axis):
            raise TypeError(f"gather: index must be a tensor of integer positions, got the integer {index!r} "
                            f"(PyTorch's form is gather(x, dim, index) with index a tensor)")
        return apply_op("take_along_axis", {"X": x, "Index": axis}, {"axis": int(index)})
    if index is None:
        raise TypeError("gather: missing the index")
    return apply_op("gather", {"X": x, "Index": index}, {"axis": int(axis)})


def cast(x: Any, dtype: Any, name: str | None = None) -> Any:
    """x converted to `dtype` (float to int truncates toward zero); differentiable between float dtypes."""
    return apply_op("cast", {"X": x}, {"dtype": normalize_dtype(dtype)})


def assign(x: Any, output: Any = None) -> Any:
    """Paddle's `assign`: a copy of `x` the gradient flows through (an array or number: a Tensor,
    or in a program a constant); with `output`, `x`'s value is written into that existing Tensor
    (`output.set_value`: no gradient link) or Variable (an `assign` op writing it), and `output`
    is returned."""
    if not _is_value(x):  # an array or number: a Tensor in eager mode, a constant op in a program
        array = np.asarray(x)
        if is_tensor(output) or (output is None and in_dynamic_mode()):
            x = to_tensor(array)
        else:
            x = apply_op("assign_value", {}, {"shape": list(array.shape), "dtype": normalize_dtype(array.dtype),
                                              "values": array.reshape(-1).tolist()})
            if output is None:
                return x
    if output is None:
        return apply_op("assign", {"X": x})
    if not (is_tensor(output) and is_tensor(x)) and not (isinstance(output, Variable) and isinstance(x, Variable)):
        raise TypeError(f"assign: output must be a Tensor written from a Tensor or data, or a Variable written "
                        f"from a Variable; got x {_describe(x)} and output {_describe(output)}")
    if x.dtype != output.dtype or len(x.shape) != len(output.shape) or \
            any(a != b and -1 not in (a, b) for a, b in zip(x.shape, output.shape)):
        raise ValueError(f"assign: cannot write {_describe(x)} into {_describe(output)}")
    if is_tensor(output):
        output.set_value(x._array.copy())  # its own copy: x may change in place later
        return output
    default_main_program().current_block().append_op("assign", {"X": [x]}, {"Out": [output]}, infer=False)
    return output


@torch_keywords
def one_hot(x: Any, num_classes: int, axis: int = -1) -> Any:
    """float32 one-hot vectors on a new axis (default last); a negative label is an error (torch's
    and Paddle's rule: a -1 'unlabelled' mark must not become the last class)."""
    return apply_op("one_hot", {"X": x}, {"depth": int(num_classes), "dtype": "float32", "axis": int(axis)})


def full(shape: Sequence[int], fill_value: float, dtype: Any = None, name: str | None = None, *,
         device: Any = None, requires_grad: bool = False) -> Any:
    """A Tensor, or inside `program_guard` (or after `enable_static()`) a Variable; the default
    float dtype (`set_default_dtype`) unless `dtype` is given. `shape` may also be one int."""
    return created(_filled("full", shape, fill_value, dtype), "full", device, requires_grad)


def zeros(*size: Any, shape: Any = None, dtype: Any = None, name: str | None = None, device: Any = None,
          requires_grad: bool = False) -> Any:
    """A value filled with zeros (a Tensor, or a Variable in static mode): Paddle's
    zeros([2, 3], dtype) or PyTorch's zeros(2, 3, dtype=..., requires_grad=...)."""
    shape, dtype = sizes_and_dtype("zeros", size, dtype, shape)
    return created(_filled("zeros", shape, 0.0, dtype), "zeros", device, requires_grad)


def ones(*size: Any, shape: Any = None, dtype: Any = None, name: str | None = None, device: Any = None,
         requires_grad: bool = False) -> Any:
    """A value filled with ones: ones([2, 3], dtype) or ones(2, 3, dtype=...)."""
    shape, dtype = sizes_and_dtype("ones", size, dtype, shape)
    return created(_filled("ones", shape, 1.0, dtype), "ones", device, requires_grad)


def empty(*size: Any, shape: Any = None, dtype: Any = None, name: str | None = None, device: Any = None,
          requires_grad: bool = False) -> Any:
    """A value of the given size (Paddle's empty([2, 3], dtype), torch's empty(2, 3)); zeros,
    since fluidgrad has no uninitialised memory and a value read before written should not vary."""
    shape, dtype = sizes_and_dtype("empty", size, dtype, shape)
    return created(_filled("empty", shape, 0.0, dtype), "empty", device, requires_grad)


def _filled(caller: str, shape: Sequence[int], fill_value: float, dtype: Any) -> Any:
    """`full` and its named forms; a negative size is refused here, naming the caller, rather
    than by NumPy at run time."""
    shape = checked_sizes(caller, shape)
    if has_runtime_dims(shape):  # zeros([x.shape[0], 3]) while tracing: sized when the program runs
        tensor, hint = runtime_shape_tensor(shape)
        return append_static_op("fill_constant", {"ShapeTensor": tensor}, {
            "shape": hint, "value": float(fill_value), "dtype": normalize_dtype(dtype or dtypes.get_default_dtype())})
    sizes = [int(d) for d in shape]
    dtype = dtype or dtypes.get_default_dtype()
    if in_dynamic_mode():
        return to_tensor(np.full(sizes, fill_value, dtype=normalize_dtype(dtype)))
    return append_static_op("fill_constant", {}, {"shape": sizes, "value": float(fill_value),
                                                  "dtype": normalize_dtype(dtype)})


def full_like(x: Any, fill_value: float, dtype: Any = None, name: str | None = None, *, device: Any = None,
              requires_grad: bool = False) -> Any:
    """A value of x's shape filled with `fill_value` (x's dtype unless `dtype` is given); no gradient flows to x."""
    out = apply_op("fill_any_like", {"X": x}, {"value": float(fill_value),
                                               "dtype": normalize_dtype(dtype) if dtype else None})
    return created(out, "full_like", device, requires_grad)


def zeros_like(x: Any, dtype: Any = None, name: str | None = None, *, device: Any = None,
               requires_grad: bool = False) -> Any:
    """Zeros of x's shape (and dtype unless given)."""
    return full_like(x, 0.0, dtype, device=device, requires_grad=requires_grad)


def ones_like(x: Any, dtype: Any = None, name: str | None = None, *, device: Any = None,
              requires_grad: bool = False) -> Any:
    """Ones of x's shape (and dtype unless given)."""
    return full_like(x, 1.0, dtype, device=device, requires_grad=requires_grad)


_COMPARISONS = {"less_than": "<", "less_equal": "<=", "greater_than": ">", "greater_equal": ">=",
                "equal": "==", "not_equal": "!="}


def _compare(op_type: str):
    def fn(x: Any, y: Any) -> Any:
        return _binary(op_type, x, y)
    fn.__name__ = op_type
    fn.__doc__ = f"Elementwise x {_COMPARISONS[op_type]} y as bool values (broadcasting; no gradient)."
    return fn


less_than, less_equal, greater_than, greater_equal, equal, not_equal = (
    _compare(n) for n in ("less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal"))


def compare_operator(op_type: str, x: Any, y: Any) -> Any:
    """`x == y` / `x != y` for a Tensor or Variable x: elementwise against a value, a number or
    (eager) an array; NotImplemented for anything else, so that Python falls back to identity
    (`t == None` is False, `t in ["a", None]` looks for t itself)."""
    if _is_value(y) or dtypes.is_scalar(y) or (isinstance(y, np.ndarray) and is_tensor(x)):
        return _binary(op_type, x, y)
    return NotImplemented


def logical_and(x: Any, y: Any) -> Any:
    """Elementwise `x and y` of bool values (broadcasting)."""
    return apply_op("logical_and", {"X": x, "Y": y})


def logical_or(x: Any, y: Any) -> Any:
    """Elementwise `x or y` of bool values (broadcasting)."""
    return apply_op("logical_or", {"X": x, "Y": y})


def logical_not(x: Any) -> Any:
    """Elementwise `not x` of bool values."""
    return apply_op("logical_not", {"X": x})


# ---------------------------------------------------------------- sizes read while tracing
# `h.reshape([x.shape[0], -1])` traced with an unknown batch (framework/runtime_dims.py): `shape(x)`
# sliced to entry 0, joined with the known entries into a 1-D int64 ShapeTensor that reshape,
# fill_constant and expand read when the program runs; the `shape` attribute keeps the sizes
# known at build time (-1 for the others). These ops export to ONNX as Shape, Slice, Concat.


def shape(input: Any) -> Any:
    """The shape of `input` as a 1-D int64 tensor (paddle.shape): in a Program, the sizes when it
    runs, so a -1 (batch) axis gives the fed size. `x.shape` is the shape as a list."""
    if not _is_value(input):
        raise TypeError(f"shape: expected a Tensor or Variable, got {type(input).__name__}")
    out = apply_op("shape", {"X": input}, {})
    out.stop_gradient = True
    return out


def rank(input: Any) -> Any:
    """The number of axes of `input` as a 0-D int32 tensor (paddle.rank); known when a Program is
    built, so a constant there. `x.ndim` / `x.dim()` give it as a Python int."""
    if not _is_value(input):
        raise TypeError(f"rank: expected a Tensor or Variable, got {type(input).__name__}")
    if is_tensor(input):
        return to_tensor(np.asarray(len(input.shape), dtype="int32"))
    return apply_op("fill_constant", {}, {"shape": [], "value": len(input.shape), "dtype": "int32"})

_SIZE_OPS = {"add": "elementwise_add", "sub": "elementwise_sub", "mul": "elementwise_mul",
        "floordiv": "elementwise_floordiv"}


def runtime_size(dim: RuntimeDim | int) -> Any:
    """A [1] int64 Variable holding `dim` when the program runs."""
    if not isinstance(dim, RuntimeDim):
        return _int64_constant([int(dim)])
    kind = dim.expr[0]
    if kind == "dim":
        variable, axis = dim.expr[1], dim.expr[2]
        if variable.block.program is not default_main_program():
            raise ValueError(f"{dim.describe()}: {variable.name} belongs to another program than the one being "
                             f"built; its size cannot be read here")
        sizes = append_static_op("shape", {"X": variable}, {})
        sizes.stop_gradient = True
        return append_static_op("slice", {"X": sizes}, {"axes": [0], "starts": [axis], "ends": [axis + 1]})
    left, right = runtime_size(dim.expr[1]), runtime_size(dim.expr[2])
    return append_static_op(_SIZE_OPS[kind], {"X": left, "Y": right}, {})


def runtime_shape_tensor(sizes: Sequence[Any]) -> tuple[Any, list[int]]:
    """(a 1-D int64 Variable of the sizes at run time, the sizes known now with -1 for the others)."""
    pieces: list[Any] = []
    known: list[int] = []
    for d in sizes:
        if isinstance(d, RuntimeDim):
            if known:
                pieces.append(_int64_constant(known))
                known = []
            pieces.append(runtime_size(d))
        else:
            known.append(int(d))
    if known:
        pieces.append(_int64_constant(known))
    tensor = pieces[0] if len(pieces) == 1 else append_static_op("concat", {"X": pieces}, {"axis": 0})
    tensor.stop_gradient = True
    return tensor, [int(d) for d in sizes]


def _runtime_value(dim: RuntimeDim | RuntimeFloat, dtype: str) -> Any:
    """`dim` as a 0-D value of `dtype` (`x / x.shape[0]`, `x * (1.0 / x.shape[0])`)."""
    value = append_static_op("reshape", {"X": _runtime_number(dim)}, {"shape": []})
    if value.dtype != dtype:
        value = append_static_op("cast", {"X": value}, {"dtype": dtype})
    value.stop_gradient = True
    return value


def _runtime_number(value: Any) -> Any:
    """A [1] Variable computing `value` when the program runs: int64 for an integer size (a
    RuntimeDim, an int), float64 once `/` or a float enters (a RuntimeFloat), as Python computes."""
    if not isinstance(value, RuntimeFloat):
        if isinstance(value, (int, np.integer)):
            return runtime_size(value)
        return append_static_op("fill_constant", {}, {"shape": [1], "value": float(value), "dtype": "float64"})
    op, *sides = value.expr
    left, right = (_as_float64(_runtime_number(side)) for side in sides)
    return append_static_op({**_SIZE_OPS, "truediv": "elementwise_div"}[op], {"X": left, "Y": right}, {})


def _as_float64(value: Any) -> Any:
    return value if value.dtype == "float64" else append_static_op("cast", {"X": value}, {"dtype": "float64"})


def _int64_constant(values: list[int]) -> Any:
    array = np.asarray(values, dtype="int64")
    return append_static_op("assign_value", {}, {"shape": [len(values)], "dtype": "int64",
                                                 "values": array.tolist()})
