"""Logical, bitwise and float-test functions: logical_xor, bitwise_*, isnan / isinf / isfinite."""
from __future__ import annotations

from typing import Any

from ..dispatch import apply_op
from ..functions import _binary

__all__ = [
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "isfinite",
    "isinf",
    "isnan",
    "logical_xor",
]


def logical_xor(x: Any, y: Any, name: str | None = None) -> Any:
    """Elementwise `x xor y` of bool values (broadcasting)."""
    return apply_op("logical_xor", {"X": x, "Y": y})


def _bitwise(op_type: str):
    def fn(x: Any, y: Any, name: str | None = None) -> Any:
        return _binary(op_type, x, y)
    fn.__name__ = fn.__qualname__ = op_type
    fn.__doc__ = (f"Elementwise {op_type.replace('_', ' ')} of integer or bool tensors (`x {_SYMBOLS[op_type]} y`); "
                  f"a Python int or bool on either side is a weak scalar (`mask & True` stays bool).")
    return fn


_SYMBOLS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


bitwise_and, bitwise_or, bitwise_xor = (_bitwise(n) for n in ("bitwise_and", "bitwise_or", "bitwise_xor"))


def bitwise_left_shift(x: Any, y: Any, is_arithmetic: bool = True, name: str | None = None) -> Any:
    """`x << y` elementwise for integer tensors (paddle.bitwise_left_shift); wraps around the width."""
    return _binary("bitwise_left_shift", x, y, {"is_arithmetic": is_arithmetic})


def bitwise_right_shift(x: Any, y: Any, is_arithmetic: bool = True, name: str | None = None) -> Any:
    """`x >> y` elementwise (paddle.bitwise_right_shift): sign-filling for signed x when
    `is_arithmetic`, else logical (zero-filling)."""
    return _binary("bitwise_right_shift", x, y, {"is_arithmetic": is_arithmetic})


def bitwise_not(x: Any, name: str | None = None) -> Any:
    """Elementwise bitwise not of an integer or bool tensor."""
    return apply_op("bitwise_not", {"X": x})


def _float_test(op_type: str):
    def fn(x: Any, name: str | None = None) -> Any:
        return apply_op(op_type, {"X": x})
    fn.__name__ = fn.__qualname__ = op_type
    fn.__doc__ = f"A bool mask: {op_type} of each element."
    return fn


isnan, isinf, isfinite = (_float_test(n) for n in ("isnan", "isinf", "isfinite"))
