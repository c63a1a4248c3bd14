"""Converters for bit-level ops: BitShift and BitCast (fluidgrad/ops/bitwise.py)."""
from __future__ import annotations

from . import dtypes
from .convert_table import converter


@converter("BitShift", since=11)
def _bit_shift(ctx):
    op_type = "bitwise_left_shift" if ctx.attr("direction") == "LEFT" else "bitwise_right_shift"
    return ctx.op(op_type, {"X": ctx.input(0), "Y": ctx.input(1)}, is_arithmetic=True)


@converter("BitCast", since=26)
def _bit_cast(ctx):
    return ctx.op("bitcast", {"X": ctx.input(0)}, dtype=dtypes.to_fluidgrad(ctx.attr("to"), f"{ctx.where()} to"))
