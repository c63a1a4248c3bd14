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
from . import creation, linalg, logic, manipulation, math, search, stat

# The functions Paddle 2 also offers as Tensor methods, among those fluidgrad has (Paddle's
# `tensor_method_func`, less the ones whose first argument is not the tensor: concat, stack,
# where, scatter_nd, ...)
METHOD_NAMES: tuple[str, ...] = (
    "abs", "acos", "acosh", "add", "all", "amax", "amin", "any", "argmax", "argmin", "argsort", "asin", "asinh",
    "atan", "atanh", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "bmm", "broadcast_to", "cast", "ceil", "chunk", "clip", "cos", "cosh", "cumprod", "cumsum",
    "divide", "equal", "erf", "exp", "expand", "expand_as", "expm1", "flatten", "flip", "floor", "floor_divide",
    "floor_mod", "gather", "gather_nd", "greater_equal", "greater_than", "index_put", "index_select", "inverse",
    "isfinite", "isinf", "isnan", "less_equal", "less_than", "log", "log10", "log1p", "log2", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logit", "logsumexp", "masked_fill", "matmul", "max", "maximum",
    "mean", "min", "minimum", "mod", "multiply", "nonzero", "norm", "not_equal", "outer", "pow", "prod",
    "put_along_axis", "reciprocal", "remainder", "repeat_interleave", "reshape", "roll", "round", "rsqrt", "scale",
    "scatter", "scatter_nd_add", "sign", "sin", "sinh", "slice", "sort", "split", "sqrt", "square", "squeeze", "std",
    "strided_slice", "subtract", "sum", "take_along_axis", "tan", "tanh", "tile", "topk", "transpose", "tril",
    "triu", "trunc", "unbind", "unique", "unsqueeze", "unstack", "var",
)

# later modules win, as in `import fluidgrad`: fluidgrad/__init__.py imports `functions` first,
# then `from .tensor import *`
_SOURCES = (functions, creation, linalg, logic, manipulation, math, search, stat)


def _function(name: str) -> Callable[..., Any]:
    for module in reversed(_SOURCES):
        if name in getattr(module, "__all__", ()) or (module is functions and hasattr(module, name)):
            return getattr(module, name)
    raise LookupError(f"Tensor method {name!r}: no public function of that name in fluidgrad")


def _positive(x: Any) -> Any:
    """`+x` is x itself (as PyTorch's)."""
    return x


def install(cls: type = MathMixin) -> None:
    """Add every method of METHOD_NAMES that `cls` lacks (a subclass's own, such as Tensor's
    fast `astype`, still wins), and abs(x), +x and ~x."""
    for name in METHOD_NAMES:
        if name not in vars(cls):
            setattr(cls, name, _function(name))
    cls.__abs__ = _function("abs")
    cls.__pos__ = _positive
    cls.__invert__ = _function("bitwise_not")     # a bool mask: logical not (as PyTorch's ~)

