"""PyTorch's in-place activations: `F.relu(x, inplace=True)` and `F.relu_(x)` write the result into x
and return x, as torch does (torchvision's models write them). Without inplace= the functions are
those of activation.py / common.py, unchanged.

The write goes through the Tensor in-place machinery (fluidgrad/tensor/inplace.py): x keeps its
shape and dtype, every handle of x sees the new value, its gradient flows through the update, and a
leaf that requires a gradient refuses, as in torch. These wrappers are the names
`fluidgrad.nn.functional` exports for these functions."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ... import functions
from ...dispatch import is_tensor
from ...eager import is_grad_enabled
from ...tensor.inplace import _before, write_in_place   # x's value before the write: saved for the gradient
from . import activation, common

__all__ = ['relu', 'relu6', 'elu', 'celu', 'selu', 'leaky_relu', 'hardtanh', 'hardsigmoid', 'hardswish', 'silu',
           'mish', 'threshold', 'rrelu', 'dropout', 'dropout1d', 'dropout2d', 'dropout3d', 'alpha_dropout',
           'relu_', 'elu_', 'celu_', 'selu_', 'leaky_relu_', 'hardtanh_', 'threshold_', 'rrelu_']


def _written(fn: Callable[..., Any], name: str, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    what = name if name.endswith("_") else f"{name}(inplace=True)"
    if is_tensor(x) and x.is_leaf and not x.stop_gradient and is_grad_enabled():
        raise RuntimeError(f"{what}: x{' ' + x.name if x.name else ''} is a leaf Tensor that requires a gradient, "
                           f"which an in-place update cannot change (torch refuses too); use {fn.__name__}(x) or "
                           f"update a copy (x.clone())")
    before = _before(x)
    return write_in_place(x, fn(before, *args, **kwargs), what)


def _with_inplace(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn taking torch's keyword inplace= as well: True writes the result into its first argument."""
    signature = inspect.signature(fn)
    first = next(iter(signature.parameters))

    @functools.wraps(fn)
    def function(*args: Any, inplace: bool = False, **kwargs: Any) -> Any:
        if not inplace:
            return fn(*args, **kwargs)
        x, rest = (args[0], args[1:]) if args else (kwargs.pop(first), ())
        return _written(fn, fn.__name__, x, rest, kwargs)

    params = list(signature.parameters.values())
    plain = [p for p in params if p.kind != inspect.Parameter.VAR_KEYWORD]
    rest = [p for p in params if p.kind == inspect.Parameter.VAR_KEYWORD]
    added = inspect.Parameter("inplace", inspect.Parameter.KEYWORD_ONLY, default=False)
    function.__signature__ = signature.replace(parameters=plain + [added] + rest)  # type: ignore[attr-defined]
    return function


def _in_place(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """torch's `F.<name>(x, ...)`: fn's result written into x; returns x."""
    def function(x: Any, *args: Any, **kwargs: Any) -> Any:
        return _written(fn, name, x, args, kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"In place: x = {fn.__name__}(x, ...), written into x; returns x (PyTorch's F.{name})."
    return function


relu, relu6, elu, celu, selu, leaky_relu, hardtanh, hardsigmoid, hardswish, silu, mish, threshold, rrelu = (
    _with_inplace(f) for f in (functions.relu, activation.relu6, activation.elu, activation.celu, activation.selu,
                               activation.leaky_relu, activation.hardtanh, activation.hardsigmoid,
                               activation.hardswish, activation.silu, activation.mish, activation.threshold,
                               activation.rrelu))
dropout, dropout1d, dropout2d, dropout3d, alpha_dropout = (
    _with_inplace(f) for f in (common.dropout, common.dropout1d, common.dropout2d, common.dropout3d, common.alpha_dropout))
relu_, elu_, celu_, selu_, leaky_relu_, hardtanh_, threshold_, rrelu_ = (
    _in_place(f, f"{f.__name__}_") for f in (functions.relu, activation.elu, activation.celu, activation.selu,
                                             activation.leaky_relu, activation.hardtanh, activation.threshold,
                                             activation.rrelu))
