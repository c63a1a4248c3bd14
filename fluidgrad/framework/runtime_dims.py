"""Sizes known only at run time, as `x.shape` gives them while `jit.to_static` traces.

A Variable's unknown size is -1 (a dynamic batch, an InputSpec's None). Eager code read by the
tracer writes `h.reshape([x.shape[0], -1])` or `zeros([x.shape[0], 3])`; a plain -1 there would
lose which size it was. So while a trace is being built (`reading()`), `Variable.shape` gives
each unknown size as a `RuntimeDim`: an int equal to -1 (every shape rule, comparison and
`int()` sees the same -1 as before) that also remembers where it came from, `x.shape[0]`,
and the integer arithmetic done on it (`x.shape[0] * 2`, `n // 2`). The builders that take a
shape (reshape, zeros / ones / full, expand) turn it into ops computing that size when the
program runs (`functions.runtime_shape_tensor`), and so does a value computed from it (`x / n`).
Arithmetic it cannot carry (`/`, `%`, `**`) raises an error naming the expression rather than
computing with -1. (Python reads an int subclass as an index without asking it, so
`range(x.shape[0])` still sees -1.) Known sizes stay plain ints.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

depth = 0  # how many traces are being built (Variable.shape reads this)

_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//"}


class RuntimeDim(int):
    """An unknown size (-1) and how to compute it at run time: `expr` is ("dim", variable, axis)
    or (op, left, right) with op one of add, sub, mul, floordiv and each side a RuntimeDim or an int."""

    def __new__(cls, expr: tuple) -> "RuntimeDim":
        value = super().__new__(cls, -1)
        value.expr = expr
        return value

    def describe(self) -> str:
        """The expression as the user wrote it: `x.shape[0] * 2`."""
        kind = self.expr[0]
        if kind == "dim":
            return f"{self.expr[1].name}.shape[{self.expr[2]}]"
        left, right = (side.describe() if isinstance(side, RuntimeDim) else repr(side) for side in self.expr[1:])
        return f"({left} {_SYMBOLS[kind]} {right})"

    def _combine(self, op: str, other: Any, swapped: bool = False) -> Any:
        if isinstance(other, bool) or not (isinstance(other, int) or hasattr(type(other), "__index__")):
            if isinstance(other, float):
                raise self._refusal(f"{_SYMBOLS[op]} {other!r}", "a float")
            return NotImplemented
        other = other if isinstance(other, RuntimeDim) else int(other.__index__())
        return RuntimeDim((op, other, self) if swapped else (op, self, other))

    def __add__(self, other: Any) -> Any: return self._combine("add", other)
    def __radd__(self, other: Any) -> Any: return self._combine("add", other, True)
    def __sub__(self, other: Any) -> Any: return self._combine("sub", other)
    def __rsub__(self, other: Any) -> Any: return self._combine("sub", other, True)
    def __mul__(self, other: Any) -> Any: return self._combine("mul", other)
    def __rmul__(self, other: Any) -> Any: return self._combine("mul", other, True)
    def __floordiv__(self, other: Any) -> Any: return self._combine("floordiv", other)
    def __rfloordiv__(self, other: Any) -> Any: return self._combine("floordiv", other, True)
    def __neg__(self) -> Any: return self._combine("mul", -1)
    def __pos__(self) -> Any: return self

    def _refusal(self, what: str, why: str = "") -> TypeError:
        return TypeError(f"{self.describe()} {what}: {self.describe()} is a size known only when the program runs "
                         f"(-1 while jit.to_static / jit.save trace it){', and ' + why + ' is not an integer' if why else ''}; "
                         f"a traced program computes such sizes with +, -, * and // by integers, in the shapes of "
                         f"reshape, zeros / ones / full and expand, or as a value (x / x.shape[0]); compute other "
                         f"uses with tensor ops (fluidgrad.shape(x))")

    def _refuse(symbol: str) -> Any:  # type: ignore[misc]
        def refuse(self: "RuntimeDim", *other: Any) -> Any:
            raise self._refusal(f"{symbol} {other[0]!r}" if other else symbol)
        return refuse

    __truediv__ = __rtruediv__ = _refuse("/")
    __mod__ = __rmod__ = _refuse("%")
    __pow__ = __rpow__ = _refuse("**")
    __divmod__ = __rdivmod__ = _refuse("divmod")
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _refuse("<< / >>")
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _refuse("& | ^")
    __abs__ = _refuse("abs()")
    del _refuse

    def __reduce__(self) -> Any:
        return int, (-1,)   # copies and pickles as the plain -1 (never the variable it reads)

    def __repr__(self) -> str:
        return "-1"

    __str__ = __repr__


def dims_of(variable: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with each -1 replaced by the RuntimeDim reading that axis of `variable`."""
    return tuple(RuntimeDim(("dim", variable, axis)) if d == -1 else d for axis, d in enumerate(shape))


def has_runtime_dims(sizes: Any) -> bool:
    """A list or tuple of sizes holding at least one RuntimeDim."""
    return isinstance(sizes, (list, tuple)) and any(isinstance(d, RuntimeDim) for d in sizes)


def plain(shape: Any) -> tuple[int, ...]:
    """A shape with RuntimeDims as plain ints (what a Variable stores)."""
    return tuple(int(d) if isinstance(d, RuntimeDim) else d for d in shape)


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """While a trace is built: unknown sizes read from `Variable.shape` are RuntimeDims."""
    global depth
    depth += 1
    try:
        yield
    finally:
        depth -= 1
