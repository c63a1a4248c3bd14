"""In-place updates as PyTorch and Paddle 2 write them: `p *= 0.5`, `mask &= other`, `w.zero_()`,
`w.uniform_(-0.1, 0.1)`, `x.add_(y)`, `x.copy_(src)`...

A Tensor takes the result in place (`x[...] = result`, fluidgrad/indexing.py): every handle of it
sees the new value, its graph link moves to the update, and a leaf that requires a gradient
refuses unless under `no_grad()` (as PyTorch). The result must keep x's shape and dtype (PyTorch
refuses `int_tensor += 0.5` and a broadcast that grows x). A Variable's in-place method moves
its handle to the new value (as `x[...] = v` does); `v += 1` on a Variable rebinds the name, as
it always did (ops appended before keep reading the old value either way), unless v is a view or
has views: then it writes in place, through to them (fluidgrad/static_views.py)."""
from __future__ import annotations

from typing import Any, Callable

from .. import functions, views
from ..dispatch import is_tensor
from ..eager import Tensor
from ..eager.mode import state
from ..framework import DTypeError, Variable, normalize_dtype
from ..indexing import create, setitem, take_value
from . import math, search


def write_in_place(x: Any, result: Any, what: str) -> Any:
    """x[...] = result, for a result of x's shape and dtype; returns x."""
    if tuple(result.shape) != tuple(x.shape) or result.dtype != x.dtype:
        name = getattr(x, "name", None) or type(x).__name__
        raise DTypeError(f"{what} writes into x in place, so the result must keep x's shape and dtype: x={name} "
                         f"(shape {list(x.shape)}, {x.dtype}) gives shape {list(result.shape)}, {result.dtype}")
    setitem(x, Ellipsis, result)
    return x


def _before(x: Any) -> Any:
    """x's value now, as a handle of its own: the op computing the update reads (and saves for its
    gradient) this one, which the write into x leaves alone (PyTorch saves the old value too)."""
    if not is_tensor(x) or state.tracer is not None:  # tracing: x's variable is the value before
        return x
    return Tensor(x._array, x.stop_gradient, x._node, x._idx, x.name)


# Python's augmented assignments on Tensors: (dunder name, symbol, function)
AUGMENTED: tuple[tuple[str, str, Callable[[Any, Any], Any]], ...] = (
    ("add", "+", functions.add), ("sub", "-", functions.subtract), ("mul", "*", functions.multiply),
    ("truediv", "/", functions.divide), ("floordiv", "//", functions.floor_divide),
    ("mod", "%", functions.remainder), ("pow", "**", functions.pow),
)


def augmented(fn: Callable[[Any, Any], Any], symbol: str) -> Callable[[Any, Any], Any]:
    """`x op= y` writing into x (a Tensor; a Variable's name is rebound to the new value)."""
    def operator(self: Any, other: Any) -> Any:
        if not is_tensor(self) and not _aliased(self):
            return fn(self, other)
        before = _before(self)
        result = fn(before, before if other is self else other)
        return write_in_place(self, result, f"x {symbol}= y")
    return operator


def _aliased(x: Any) -> bool:
    """A Variable that is a view or has views: `x += 1` writes into it (and so into its base and
    its other views, fluidgrad/static_views.py), as PyTorch's in-place `+=` does."""
    return isinstance(x, Variable) and (views.view_link(x) is not None or bool(views.variable_views(x)))


def _computed(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = _before(self)
        args = tuple(before if a is self else a for a in args)
        return write_in_place(self, fn(before, *args, **kwargs), f"{name}()")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: x = {fn.__name__}(x, ...), written into x; returns x."
    return method


def _reshaping(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """In-place methods that change x's shape (unsqueeze_, reshape_): x takes the new value whole."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return take_value(self, fn(_before(self), *args, **kwargs), f"{name}()")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: x = {fn.__name__}(x, ...), x's shape changing with it; returns x."
    return method


def masked_fill_(self: Any, mask: Any, value: Any) -> Any:
    """`value` where mask holds (mask broadcasts against x), in place; returns x."""
    before = _before(self)
    return write_in_place(self, search.masked_fill(before, before if mask is self else mask, value),
                          "masked_fill_()")


def zero_(self: Any) -> Any:
    """Every element 0, in place; returns x."""
    setitem(self, Ellipsis, 0)
    return self


def fill_(self: Any, value: Any) -> Any:
    """Every element `value` (cast to x's dtype), in place; returns x."""
    setitem(self, Ellipsis, value)
    return self


def copy_(self: Any, src: Any, blocking: bool = True) -> Any:
    """src's values (broadcast to x's shape, cast to its dtype) written into x, as PyTorch's
    copy_; the gradient flows to src."""
    setitem(self, Ellipsis, src)
    return self


def _random(self: Any, op_type: str, attrs: dict[str, Any]) -> Any:
    dtype = normalize_dtype(self.dtype)
    if dtype not in ("float16", "float32", "float64", "bfloat16"):
        raise DTypeError(f"{op_type}: fills float tensors, got {dtype}")
    values = create(op_type, {"shape": [int(d) for d in self.shape], "dtype": dtype, "seed": 0, **attrs}, like=self)
    setitem(self, Ellipsis, values)
    return self


def uniform_(self: Any, min: float = -1.0, max: float = 1.0, seed: int = 0) -> Any:
    """Values drawn uniformly from [min, max), in place (Paddle's Tensor.uniform_); returns x."""
    if not min < max:
        raise ValueError(f"uniform_: min ({min}) must be less than max ({max})")
    return _random(self, "uniform_random", {"min": float(min), "max": float(max)})


def normal_(self: Any, mean: float = 0.0, std: float = 1.0) -> Any:
    """Values drawn from N(mean, std^2), in place (PyTorch's Tensor.normal_); returns x."""
    if std < 0:
        raise ValueError(f"normal_: std must be >= 0, got {std}")
    return _random(self, "gaussian_random", {"mean": float(mean), "std": float(std)})


# in-place methods computed by a public function of the same name without the underscore
_COMPUTED = {"add_": functions.add, "subtract_": functions.subtract, "multiply_": functions.multiply,
             "divide_": functions.divide, "scale_": functions.scale, "clip_": math.clip, "exp_": functions.exp,
             "sqrt_": functions.sqrt, "tanh_": functions.tanh, "floor_": math.floor, "ceil_": math.ceil,
             "round_": math.round, "reciprocal_": math.reciprocal, "rsqrt_": math.rsqrt, "abs_": functions.abs,
             "sub_": functions.subtract, "mul_": functions.multiply, "div_": functions.divide,
             "clamp_": math.clip}

# in-place methods that change x's shape
_RESHAPING = {"reshape_": functions.reshape, "squeeze_": functions.squeeze, "unsqueeze_": functions.unsqueeze}

METHODS: dict[str, Callable[..., Any]] = {
    "zero_": zero_, "fill_": fill_, "copy_": copy_, "uniform_": uniform_, "normal_": normal_,
    "masked_fill_": masked_fill_,
    **{name: _computed(fn, name) for name, fn in _COMPUTED.items()},
    **{name: _reshaping(fn, name) for name, fn in _RESHAPING.items()},
}


def install(cls: type) -> None:
    """The in-place methods on `cls` (Tensor and Variable's shared class), where it has none of
    its own; augmented assignments."""
    for name, method in METHODS.items():
        if name not in vars(cls):
            setattr(cls, name, method)
    for dunder, symbol, fn in AUGMENTED:   # (on Variables they write in place only into views)
        setattr(cls, f"__i{dunder}__", augmented(fn, symbol))
        setattr(Tensor, f"__i{dunder}__", augmented(fn, symbol))
