"""Paddle 2's Tensor methods for Tensors and Variables alike: `x.max()`, `x.unsqueeze(0)`,
`x.clip(0, 1)`, `abs(x)`, `~mask`, ... Each method is the public function of the same name with
the tensor as its first argument (as Paddle's `monkey_patch_tensor` does); no method has math
of its own.

`install()` puts them on the class Tensor and Variable share (`framework.math_mixin.MathMixin`),
without replacing anything a class already defines (`x.astype`, `x.sum`, `x.shape`, ...)."""
from __future__ import annotations

import inspect
from collections import namedtuple
from typing import Any, Callable

import numpy as np

from .. import functions
from ..framework.math_mixin import MathMixin
from . import creation, diagonals, inplace, linalg, logic, manipulation, math, search, stat, torch_methods

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
_SOURCES = (functions, creation, diagonals, linalg, logic, manipulation, math, search, stat)


def _function(name: str) -> Callable[..., Any]:
    for module in reversed(_SOURCES):
        if name in getattr(module, "__all__", ()) or (module is functions and hasattr(module, name)):
            return getattr(module, name)
    raise LookupError(f"Tensor method {name!r}: no public function of that name in fluidgrad")


# PyTorch's keyword names beside Paddle's, for the methods whose function takes Paddle's
_TORCH_KEYWORDS = {"dim": "axis", "start_dim": "start_axis", "end_dim": "stop_axis"}
# ... and those of single methods: x.flip(dims=[1]), x.roll(shifts=1, dims=1)
_TORCH_METHOD_KEYWORDS = {"flip": {"dims": "axis"}, "roll": {"dims": "axis"}}


def _with_torch_keywords(fn: Callable[..., Any], method_name: str = "") -> Callable[..., Any]:
    """fn, also taking x.sum(dim=1) / x.flatten(start_dim=1) (PyTorch) for axis= / start_axis=."""
    params = inspect.signature(fn).parameters
    keywords = {**_TORCH_KEYWORDS, **_TORCH_METHOD_KEYWORDS.get(method_name, {})}
    aliases = {torch: paddle for torch, paddle in keywords.items() if paddle in params and torch not in params}
    if not aliases:
        return fn

    def method(*args: Any, **kwargs: Any) -> Any:
        for torch_name, name in aliases.items():
            if torch_name in kwargs:
                if name in kwargs:
                    raise TypeError(f"{fn.__name__}: give {name}= or {torch_name}=, not both")
                kwargs[name] = kwargs.pop(torch_name)
        return fn(*args, **kwargs)
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn  # type: ignore[attr-defined]
    return method


# torch.return_types.max / min / sort: what torch's x.max(dim=1) returns
_VALUES_AND_INDICES = {name: namedtuple(name, ["values", "indices"]) for name in ("max", "min", "sort")}


def _torch_max_min(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """x.max(axis=1) is Paddle's: one Tensor of maxima. x.max(dim=1) is PyTorch's: the named
    tuple (values, indices), so `values, indices = x.max(dim=1)` unpacks as in torch; the values
    are gathered at the indices, so the gradient goes to the chosen entry (first on ties)."""
    arg = _function("argmax" if name == "max" else "argmin")
    take = _function("take_along_axis")
    squeeze = _function("squeeze")

    def method(x: Any, *args: Any, **kwargs: Any) -> Any:
        if "dim" not in kwargs:
            return fn(x, *args, **kwargs)
        if args or "axis" in kwargs:
            raise TypeError(f"{name}: give axis= (Paddle) or dim= (PyTorch), not both")
        dim, keepdim = int(kwargs.pop("dim")), bool(kwargs.pop("keepdim", False))
        if kwargs:
            raise TypeError(f"{name}(dim=...): unexpected keyword arguments {sorted(kwargs)}")
        indices = arg(x, axis=dim, keepdim=True)
        values = take(x, indices, dim)
        if not keepdim:
            values, indices = squeeze(values, axis=[dim]), squeeze(indices, axis=[dim])
        return _VALUES_AND_INDICES[name](values, indices)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = _torch_max_min.__doc__
    method.__wrapped__ = fn  # type: ignore[attr-defined]
    return method


def _torch_sort(fn: Callable[..., Any]) -> Callable[..., Any]:
    """x.sort(axis=1) is Paddle's: the sorted values. x.sort(dim=1) is PyTorch's: the named tuple
    (values, indices)."""
    argsort = _function("argsort")
    take = _function("take_along_axis")

    def method(x: Any, *args: Any, **kwargs: Any) -> Any:
        if "dim" not in kwargs:
            return fn(x, *args, **kwargs)
        if args or "axis" in kwargs:
            raise TypeError("sort: give axis= (Paddle) or dim= (PyTorch), not both")
        dim = int(kwargs.pop("dim"))
        descending, stable = bool(kwargs.pop("descending", False)), bool(kwargs.pop("stable", False))
        if kwargs:
            raise TypeError(f"sort(dim=...): unexpected keyword arguments {sorted(kwargs)}")
        indices = argsort(x, axis=dim, descending=descending, stable=stable)
        return _VALUES_AND_INDICES["sort"](take(x, indices, dim), indices)
    method.__name__ = method.__qualname__ = "sort"
    method.__doc__ = _torch_sort.__doc__
    method.__wrapped__ = getattr(fn, "__wrapped__", fn)  # type: ignore[attr-defined]
    return method


def _torch_split(fn: Callable[..., Any]) -> Callable[..., Any]:
    """x.split(2, axis=1) is Paddle's: 2 equal parts. x.split(2, dim=1) is PyTorch's: parts of 2
    (the last smaller), so torch code never gets other shapes than it wrote; a list of sizes
    means the same in both."""
    def method(x: Any, split_size_or_sections: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "dim" not in kwargs:
            return fn(x, split_size_or_sections, *args, **kwargs)
        if args or "axis" in kwargs:
            raise TypeError("split: give axis= (Paddle) or dim= (PyTorch), not both")
        dim = int(kwargs.pop("dim"))
        if isinstance(split_size_or_sections, (int, np.integer)):
            size, step = x.shape[dim], int(split_size_or_sections)
            if size < 0 or step <= 0:
                raise ValueError(f"split(dim={dim}): torch's split size {step} needs a positive size and a known "
                                 f"axis; x has shape {list(x.shape)}")
            split_size_or_sections = [step] * (size // step) + ([size % step] if size % step else [])
        return fn(x, split_size_or_sections, axis=dim, **kwargs)
    method.__name__ = method.__qualname__ = "split"
    method.__doc__ = _torch_split.__doc__
    method.__wrapped__ = fn  # type: ignore[attr-defined]
    return method


def _method(name: str) -> Callable[..., Any]:
    """The Tensor method `name`: the public function, taking PyTorch's keyword names too; max /
    min / sort with PyTorch's dim= return PyTorch's (values, indices); split with dim= takes
    torch's split size."""
    fn = _with_torch_keywords(_function(name), name)
    if name in ("max", "min"):
        return _torch_max_min(name, _function(name))
    if name == "sort":
        return _torch_sort(fn)
    if name == "split":
        return _torch_split(_function(name))
    return fn


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

