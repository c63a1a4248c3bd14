"""Paddle 2's Tensor methods for Tensors and Variables alike: `x.max()`, `x.unsqueeze(0)`,
`x.clip(0, 1)`, `abs(x)`, `~mask`, ... Each method is the public function of the same name with
the tensor as its first argument (as Paddle's `monkey_patch_tensor` does); no method has math
of its own.

`install()` puts them on the class Tensor and Variable share (`framework.math_mixin.MathMixin`),
without replacing anything a class already defines (`x.astype`, `x.sum`, `x.shape`, ...)."""
from __future__ import annotations

from typing import Any, Callable

from .. import functions
from ..framework.math_mixin import MathMixin
from ..framework.torch_forms import torch_keywords
from . import creation, diagonals, inplace, linalg, logic, manipulation, math, search, stat, torch_methods, torch_returns

# The functions Paddle 2 also offers as Tensor methods, among those fluidgrad has (Paddle's
# `tensor_method_func`, less the ones whose first argument is not the tensor: concat, stack,
# where, scatter_nd, ...)
METHOD_NAMES: tuple[str, ...] = (
    "abs", "acos", "acosh", "add", "all", "amax", "amin", "any", "argmax", "argmin", "argsort", "asin", "asinh",
    "atan", "atan2", "atanh", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "bmm", "broadcast_to", "cast", "ceil", "chunk", "clip", "cos", "cosh", "cumprod", "cumsum", "diag", "diagonal",
    "divide", "equal", "erf", "erfinv", "exp", "expand", "expand_as", "expm1", "flatten", "flip", "floor", "floor_divide",
    "floor_mod", "gather", "gather_nd", "greater_equal", "greater_than", "index_put", "index_select", "inverse",
    "isfinite", "isin", "isinf", "isnan", "kthvalue", "less_equal", "less_than", "log", "log10", "log1p", "log2", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logit", "logsumexp", "masked_fill", "matmul", "max", "maximum",
    "mean", "min", "minimum", "mod", "multiply", "nonzero", "norm", "not_equal", "outer", "pow", "prod",
    "put_along_axis", "reciprocal", "remainder", "repeat_interleave", "reshape", "roll", "round", "rsqrt", "scale",
    "scatter", "scatter_nd_add", "sigmoid", "sign", "sin", "sinh", "slice", "sort", "split", "sqrt", "square", "squeeze", "std",
    "strided_slice", "subtract", "sum", "t", "take_along_axis", "tan", "tanh", "tensordot", "tile", "topk", "trace", "transpose", "tril",
    "triu", "trunc", "unbind", "unique", "unsqueeze", "unstack", "var",
)

# later modules win, as in `import fluidgrad`: fluidgrad/__init__.py imports `functions` first,
# then `from .tensor import *`
_SOURCES = (functions, creation, diagonals, linalg, logic, manipulation, math, search, stat, torch_returns)


def _function(name: str) -> Callable[..., Any]:
    for module in reversed(_SOURCES):
        if name in getattr(module, "__all__", ()) or (module is functions and hasattr(module, name)):
            return getattr(module, name)
    raise LookupError(f"Tensor method {name!r}: no public function of that name in fluidgrad")


def _method(name: str) -> Callable[..., Any]:
    """The Tensor method `name`: the public function itself, which takes PyTorch's keyword names
    (dim=, framework/torch_forms.py) and, for max / min / sort / split, PyTorch's forms
    (tensor/torch_returns.py); a function without them gets the keywords here."""
    return torch_keywords(_function(name))


def _numel(x: Any) -> int:
    """The number of elements, as a Python int (torch's Tensor.numel(); x.size)."""
    return int(x.size)


def _expand(x: Any, *shape: Any, name: str | None = None) -> Any:
    """x.expand([3, 4]) / x.expand(shape=[3, 4]) as Paddle's, or x.expand(3, -1) as PyTorch's
    (sizes as arguments; -1 keeps x's size on that axis)."""
    return manipulation.expand(x, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else list(shape))


def _expand_method(x: Any, *shape: Any, **kwargs: Any) -> Any:
    if "shape" in kwargs:
        if shape:
            raise TypeError("expand: give the sizes as arguments or as shape=, not both")
        shape = (kwargs.pop("shape"),)
    return _expand(x, *shape, **kwargs)


_expand_method.__doc__ = _expand.__doc__
_expand_method.__name__ = _expand_method.__qualname__ = "expand"
_expand_method.__wrapped__ = manipulation.expand  # type: ignore[attr-defined]
# methods whose PyTorch form does not fit the function's signature
_TORCH_FORMS: dict[str, Callable[..., Any]] = {"expand": _expand_method}


def _dim(x: Any) -> int:
    """The number of axes (torch's Tensor.dim(), Paddle's Tensor.dim())."""
    return len(x.shape)


def _positive(x: Any) -> Any:
    """`+x` is x itself (as PyTorch's)."""
    return x


# Python's bit operators: `(x > 0) & (x < 1)` combines masks, `n & 0xFF` masks integers
_BIT_OPERATORS = (("and", "&", "bitwise_and"), ("or", "|", "bitwise_or"), ("xor", "^", "bitwise_xor"),
                  ("lshift", "<<", "bitwise_left_shift"), ("rshift", ">>", "bitwise_right_shift"))


def _reflected(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def operator(self: Any, other: Any) -> Any:
        return fn(other, self)
    return operator


def _in_place(fn: Callable[[Any, Any], Any], symbol: str) -> Callable[[Any, Any], Any]:
    """`x &= y` as PyTorch's: the result is written into x (`x[...] = result`, so other handles
    of x see it), and it must keep x's shape and dtype."""
    def operator(self: Any, other: Any) -> Any:
        return inplace.write_in_place(self, fn(self, other), f"x {symbol}= y")
    return operator




def install(cls: type = MathMixin) -> None:
    """Add every method of METHOD_NAMES that `cls` lacks (a subclass's own, such as Tensor's
    fast `astype`, still wins), abs(x), +x, ~x and the bit operators & | ^ << >> (reflected and
    in place too), and PyTorch's everyday methods (torch_methods)."""
    for name in METHOD_NAMES:
        if name not in vars(cls):
            setattr(cls, name, _TORCH_FORMS.get(name) or _method(name))
    for name, method in (("numel", _numel), ("dim", _dim), ("ndimension", _dim)):
        if name not in vars(cls):
            setattr(cls, name, method)
    cls.__abs__ = _function("abs")
    cls.__pos__ = _positive
    cls.__invert__ = _function("bitwise_not")     # a bool mask: logical not (as PyTorch's ~)
    for operator, symbol, function_name in _BIT_OPERATORS:
        fn = _function(function_name)
        setattr(cls, f"__{operator}__", fn)
        setattr(cls, f"__r{operator}__", _reflected(fn))
        setattr(cls, f"__i{operator}__", _in_place(fn, symbol))
    inplace.install(cls)   # zero_(), fill_(), add_(), uniform_(), ...; `p *= 0.5` on Tensors in place
    for name, method in {**torch_methods.METHODS, **torch_methods.IN_PLACE, **torch_methods.PROPERTIES}.items():
        if name in torch_methods.REPLACING or name in torch_methods.IN_PLACE or name not in vars(cls):
            setattr(cls, name, method)   # torch's forms beside Paddle's (add_ with alpha=, ...)

