"""Appending the optimizer's own ops (clipping, decay, updates) with op_role "optimize".

These ops are not built through `dispatch.apply_op` because they must land in a chosen
block (the global block of the loss's program) and carry a role, so that
`Program.clone(for_test=True)` drops them and pictures colour them.
"""
from __future__ import annotations

from typing import Any

from .names import unique_name
from .op_def import get_op_def
from .program import OPTIMIZE, Block
from .variable import Variable


def emit(block: Block, op_type: str, inputs: dict[str, Any], attrs: dict[str, Any] | None = None,
         out_name: str | None = None) -> Any:
    """Append `op_type` to `block` as an optimize op; return its output Variable(s)."""
    op_def = get_op_def(op_type)
    outputs: dict[str, list[Variable]] = {}
    for slot in op_def.outputs:
        name = out_name if out_name and len(op_def.outputs) == 1 else unique_name(f"{op_type}.opt")
        outputs[slot.name] = [block.create_var(name, stop_gradient=True)]
    block.append_op(op_type, inputs, outputs, {**(attrs or {}), "op_role": OPTIMIZE})
    values = [outputs[s.name][0] for s in op_def.outputs]
    return values[0] if len(values) == 1 else tuple(values)


def constant(block: Block, value: float, dtype: str) -> Variable:
    """A 0-D constant, broadcasting against any gradient."""
    return emit(block, "fill_constant", {}, {"shape": [], "value": float(value), "dtype": dtype})
