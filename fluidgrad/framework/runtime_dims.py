"""Sizes known only at run time, as `x.shape` gives them while `jit.to_static` traces.

A Variable's unknown size is -1 (a dynamic batch, an InputSpec's None). Eager code read by the
tracer writes `h.reshape([x.shape[0], -1])`, `zeros([x.shape[0], 3])` or `loss / x.shape[0]`;
a plain -1 there would lose which size it was, and `1.0 / x.shape[0]` or `x.shape[0] > 1` would
silently compute with -1. So while a trace is being built (`reading()`), `Variable.shape` gives
each unknown size as an object remembering where it came from, `x.shape[0]`, and the arithmetic
done on it, in one of two forms by who reads it:

- the traced function (any code outside the fluidgrad package) gets a `TracedSize`, which is
  not an int: `+ - * //` with integers give another TracedSize, which reshape, zeros / ones /
  full, expand, view, new_zeros... take as a size computed when the program runs
  (`functions.runtime_shape_tensor`); `/` or a float gives a number computed when the program
  runs, which a tensor operand takes (`x * (1.0 / x.shape[0])`, as Paddle's
  `paddle.shape(x)[0]`) but a size refuses; and whatever needs the number now (comparisons,
  `int()`, `float()`, `bool()`, `range()`, indexing, NumPy, `%`, `**`) raises a TypeError naming
  the size rather than compute with -1.
- fluidgrad's own code gets a `RuntimeDim`, an int equal to -1, so that every shape rule,
  comparison and `int()` sees the same -1 as before (meaning "unknown"); its `+ - * //` keep the
  expression, and the builders above read it the same way.
Known sizes stay plain ints.
"""
from __future__ import annotations

import contextlib
from numbers import Integral, Real
from types import FrameType
from typing import Any, Iterator

depth = 0  # how many traces are being built (Variable.shape reads this)

_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "truediv": "/"}


def _describe(expr: tuple) -> str:
    """An expression as the user wrote it: `x.shape[0] * 2`."""
    if expr[0] == "dim":
        return f"{expr[1].name}.shape[{expr[2]}]"
    left, right = (side.describe() if hasattr(side, "describe") else repr(side) for side in expr[1:])
    return f"({left} {_SYMBOLS[expr[0]]} {right})"


def _refusal(what: str, expr: tuple, why: str = "") -> TypeError:
    name = _describe(expr)
    return TypeError(f"{name} {what}: {name} is a size known only when the program runs (-1 while jit.to_static / "
                     f"jit.save trace it){', and ' + why if why else ''}; a traced program computes such sizes with "
                     f"+, -, * and // by integers, in the shapes of reshape, zeros / ones / full and expand, or as a "
                     f"value (x / x.shape[0], 1.0 / x.shape[0]); compute other uses with tensor ops "
                     f"(fluidgrad.shape(x)), or give the size in the InputSpec")


class _SizeArithmetic:
    """`+ - * //` (and unary - / +) of a size, each a new expression made by the class's `_combine`."""

    __slots__ = ()

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


class RuntimeDim(_SizeArithmetic, int):
    """An unknown size (-1) and how to compute it at run time, as fluidgrad's own code reads it:
    `expr` is ("dim", variable, axis) or (op, left, right) with op one of add, sub, mul, floordiv
    and each side a RuntimeDim or an int."""

    def __new__(cls, expr: tuple) -> "RuntimeDim":
        value = super().__new__(cls, -1)
        value.expr = expr
        return value

    def describe(self) -> str:
        """The expression as the user wrote it: `x.shape[0] * 2`."""
        return _describe(self.expr)

    def _combine(self, op: str, other: Any, swapped: bool = False) -> Any:
        if isinstance(other, bool) or not (isinstance(other, int) or hasattr(type(other), "__index__")):
            if isinstance(other, float):
                raise self._refusal(f"{_SYMBOLS[op]} {other!r}", "a float is not an integer")
            return NotImplemented
        other = other if isinstance(other, RuntimeDim) else int(other.__index__())
        return RuntimeDim((op, other, self) if swapped else (op, self, other))


    def _refusal(self, what: str, why: str = "") -> TypeError:
        return _refusal(what, self.expr, why)

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


class RuntimeFloat(float):
    """A number computed from unknown sizes with `/` or floats (`1.0 / x.shape[0]`), as a tensor
    operand receives it (functions._constant computes it in the program, in the operand's
    dtype): NaN to anything else that reads it as a number."""

    def __new__(cls, expr: tuple) -> "RuntimeFloat":
        value = super().__new__(cls, float("nan"))
        value.expr = expr
        return value

    def describe(self) -> str:
        return _describe(self.expr)

    def __reduce__(self) -> Any:
        return float, (float("nan"),)


class TracedSize(_SizeArithmetic):
    """An unknown size as the traced function reads it (`x.shape[0]`), or a number computed from
    such sizes (see the module docstring): never a number itself, so it can't be silently read as -1."""

    __slots__ = ("expr", "floating")

    def __init__(self, expr: tuple, floating: bool = False) -> None:
        self.expr, self.floating = expr, floating

    def describe(self) -> str:
        return _describe(self.expr)

    def refusal(self, what: str, why: str = "its value is not known yet") -> TypeError:
        """The error for a use that needs the number now (`what`: "as an index")."""
        return _refusal(what, self.expr, why)

    def library_form(self) -> "RuntimeDim | RuntimeFloat":
        """What fluidgrad's builders take: an integer size's RuntimeDim, or a RuntimeFloat."""
        return RuntimeFloat(self.expr) if self.floating else RuntimeDim(self.expr)

    def _combine(self, op: str, other: Any, swapped: bool = False) -> Any:
        if isinstance(other, TracedSize):
            value, floating = other.library_form(), other.floating
        elif isinstance(other, RuntimeDim):
            value, floating = other, False
        elif isinstance(other, bool) or type(other).__name__ == "bool_":
            return NotImplemented
        elif isinstance(other, Integral):    # (NumPy's integers and floats too)
            value, floating = int(other), False
        elif isinstance(other, Real):
            value, floating = float(other), True
        else:
            return NotImplemented   # a tensor: its reflected operator takes this as a scalar
        mine = self.library_form()
        return TracedSize((op, value, mine) if swapped else (op, mine, value),
                          floating or self.floating or op == "truediv")

    def __truediv__(self, other: Any) -> Any: return self._combine("truediv", other)
    def __rtruediv__(self, other: Any) -> Any: return self._combine("truediv", other, True)

    def _refuse(symbol: str, why: str = "", binary: bool = True) -> Any:  # type: ignore[misc]
        def refuse(self: "TracedSize", *other: Any) -> Any:
            if binary and other and not isinstance(other[0], (TracedSize, Real)):
                return NotImplemented   # a tensor: its reflected operator computes it when the program runs
            raise _refusal(f"{symbol} {other[0]!r}" if binary and other else symbol, self.expr, why)
        return refuse

    __mod__ = __rmod__ = _refuse("%")
    __pow__ = __rpow__ = _refuse("**")
    __divmod__ = __rdivmod__ = _refuse("divmod")
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _refuse("<< / >>")
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _refuse("& | ^")
    __lt__ = _refuse("<", "the comparison has no answer while tracing")
    __le__ = _refuse("<=", "the comparison has no answer while tracing")
    __gt__ = _refuse(">", "the comparison has no answer while tracing")
    __ge__ = _refuse(">=", "the comparison has no answer while tracing")
    _unknown = "its value is not known yet"
    __abs__ = __round__ = __trunc__ = __floor__ = __ceil__ = _refuse("rounded", _unknown, binary=False)
    __int__ = __index__ = _refuse("as an int (int(), range(), an index)", _unknown, binary=False)
    __float__ = __complex__ = _refuse("as a float", _unknown, binary=False)
    __bool__ = _refuse("as a truth value", _unknown, binary=False)
    __hash__ = _refuse("as a key (hash())", _unknown, binary=False)   # type: ignore[assignment]
    __array__ = _refuse("as a NumPy value", _unknown, binary=False)
    __array_ufunc__ = None   # NumPy's scalars and arrays leave `np.float32(2) * size` to __rmul__
    del _refuse, _unknown

    def _same(self, other: Any) -> Any:
        """`==`: True for the same axis of the same variable; a number or another size has no
        answer while tracing; anything else is not equal."""
        if isinstance(other, TracedSize) and self.expr[0] == other.expr[0] == "dim" and \
                self.expr[1] is other.expr[1] and self.expr[2] == other.expr[2]:
            return True
        if isinstance(other, (TracedSize, Real)):
            raise _refusal(f"== {other!r}", self.expr, "the comparison has no answer while tracing")
        return NotImplemented

    def __eq__(self, other: Any) -> Any:
        return self._same(other)

    def __ne__(self, other: Any) -> Any:
        same = self._same(other)
        return same if same is NotImplemented else not same

    def __repr__(self) -> str:
        return self.describe()

    __str__ = __repr__


def _read_by_fluidgrad(frame: FrameType | None) -> bool:
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name == "fluidgrad" or name.startswith("fluidgrad.")


def dims_of(variable: Any, shape: tuple[int, ...], reader: FrameType | None = None) -> tuple[Any, ...]:
    """`shape` with each -1 replaced by the RuntimeDim (for fluidgrad's code) or TracedSize (for
    the traced function: `reader`, the frame reading the shape) of that axis of `variable`."""
    kind = RuntimeDim if reader is None or _read_by_fluidgrad(reader) else TracedSize
    return tuple(kind(("dim", variable, axis)) if d == -1 else d for axis, d in enumerate(shape))


def library_form(value: Any) -> Any:
    """A TracedSize as fluidgrad's builders take it (anything else as it is)."""
    return value.library_form() if isinstance(value, TracedSize) else value


def has_runtime_dims(sizes: Any) -> bool:
    """A list or tuple of sizes holding at least one RuntimeDim."""
    return isinstance(sizes, (list, tuple)) and any(isinstance(d, RuntimeDim) for d in sizes)


def plain(shape: Any) -> tuple[int, ...]:
    """A shape with unknown sizes as plain -1 (what a Variable stores)."""
    return tuple(-1 if isinstance(d, (RuntimeDim, TracedSize)) else d for d in shape)


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """While a trace is built: unknown sizes read from `Variable.shape` are RuntimeDims."""
    global depth
    depth += 1
    try:
        yield
    finally:
        depth -= 1
