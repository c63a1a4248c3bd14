"""In-place forms of elementwise kernels: an op writes its result into an input that dies there.

The plan (plan.py) picks the candidates at compile time: the input is read for the last time
by this op, is neither fed, loaded from the scope, fetched nor stored, its declared shape and
dtype are the output's, and the op is a float elementwise op listed here (any NumPy ufunc
kernel, and a few fused ones). At run time each form checks that the array is really the
plan's alone before writing into it: a plain `ndarray` owning its memory (`base is None`),
writeable, and referenced by nothing but the plan's local variable (`sys.getrefcount`). A
view of it, a scope, a step scope, a cache or another local holding it all add a reference,
so an array anything else can see is never written; then the ordinary kernel runs.

Results are bit for bit the kernel's: the same NumPy operations in the same order and dtype,
only with `out=`. Arrays smaller than `MIN_ELEMENTS` are not worth the check.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

MIN_ELEMENTS = 512

_ndarray = np.ndarray
_refs = sys.getrefcount
# a value held by one local of the plan, passed as an argument, then to getrefcount
_PLAN_ONLY = 3


def ufunc_form(ufunc: np.ufunc, nin: int, into: int) -> Callable[..., Any] | None:
    """`ufunc(*args)` written into argument `into` when it is the plan's alone."""
    if nin == 1:
        def unary(x: Any) -> Any:
            if (type(x) is _ndarray and x.size >= MIN_ELEMENTS and _refs(x) <= _PLAN_ONLY and x.base is None
                    and x.flags.writeable):
                try:
                    return ufunc(x, out=x, casting="no")
                except TypeError:  # the loop's result dtype differs from x's
                    pass
            return ufunc(x)
        return unary
    if nin == 2 and into == 0:
        def into_x(x: Any, y: Any) -> Any:
            if (type(x) is _ndarray and x.size >= MIN_ELEMENTS and _refs(x) <= _PLAN_ONLY and x.base is None
                    and x.flags.writeable):
                try:
                    return ufunc(x, y, out=x, casting="no")
                except (TypeError, ValueError):  # another result dtype, or broadcasting grows x
                    pass
            return ufunc(x, y)
        return into_x
    if nin == 2 and into == 1:
        def into_y(x: Any, y: Any) -> Any:
            if (type(y) is _ndarray and y.size >= MIN_ELEMENTS and _refs(y) <= _PLAN_ONLY and y.base is None
                    and y.flags.writeable):
                try:
                    return ufunc(x, y, out=y, casting="no")
                except (TypeError, ValueError):
                    pass
            return ufunc(x, y)
        return into_y
    return None


def _relu(kernel: Callable[..., Any]) -> Callable[..., Any]:
    def relu(x: Any) -> Any:
        if (type(x) is _ndarray and x.size >= MIN_ELEMENTS and _refs(x) <= _PLAN_ONLY and x.base is None
                and x.flags.writeable):
            return np.maximum(x, 0, out=x, dtype=x.dtype)
        return kernel(x)
    return relu


def _relu_grad(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """DOut where out > 0, else 0, into DOut (its second input): a select like the kernel's (an inf or a
    negative DOut times 0 would give nan or -0.0)."""
    def relu_grad(out: Any, dout: Any) -> Any:
        if (type(dout) is _ndarray and dout.size >= MIN_ELEMENTS and _refs(dout) <= _PLAN_ONLY
                and dout.base is None and dout.flags.writeable and dout.dtype.kind == "f"
                and getattr(out, "shape", None) == dout.shape):
            np.copyto(dout, 0, where=~(out > 0))
            return dout
        return kernel(out, dout)
    return relu_grad


def _sgd(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`param - lr * grad` into Grad: the new parameter takes the gradient's buffer."""
    def sgd(param: Any, grad: Any, learning_rate: Any) -> Any:
        if (type(grad) is _ndarray and grad.size >= MIN_ELEMENTS and _refs(grad) <= _PLAN_ONLY
                and grad.base is None and grad.flags.writeable and type(param) is _ndarray
                and param.dtype == grad.dtype and param.shape == grad.shape):
            lr = param.dtype.type(np.asarray(learning_rate).reshape(-1)[0])
            np.multiply(lr, grad, out=grad)
            return np.subtract(param, grad, out=grad)
        return kernel(param, grad, learning_rate)
    return sgd


# op type -> (input slot written into, factory of the in-place form from the op's kernel)
_FUSED: dict[str, tuple[str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = {
    "relu": ("X", _relu),
    "relu_grad": ("DOut", _relu_grad),
    "sgd": ("Grad", _sgd),
}


def inplace_slots(op_type: str, kernel: Any, input_slots: list[str], has_attrs: bool) -> list[str]:
    """The input slots an op may write its result into, best first ([] when it has no in-place form)."""
    if op_type in _FUSED:
        return [_FUSED[op_type][0]]
    if isinstance(kernel, np.ufunc) and kernel.nout == 1 and not has_attrs and kernel.nin == len(input_slots) <= 2:
        return list(input_slots)
    return []


def inplace_form(op_type: str, kernel: Any, input_slots: list[str], slot: str) -> Callable[..., Any] | None:
    if op_type in _FUSED:
        return _FUSED[op_type][1](kernel)
    return ufunc_form(kernel, kernel.nin, input_slots.index(slot))
