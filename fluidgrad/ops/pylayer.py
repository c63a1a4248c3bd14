"""pylayer: the op `static.nn.static_pylayer` (and PyLayer under jit.to_static) appends.

Inputs X (the forward's inputs) and Y (its results, computed by ordinary ops before this one);
outputs Out = Y, unchanged. Its gradient is the hand-written backward recorded in the block
attribute `backward_block`: the grad maker copies that block's ops, renaming the stand-ins
`grad_inputs` to the gradients of Out; `grad_outputs` names X's gradients among them ("" for
none). Y gets no gradient, so the forward ops' own gradients never run.
"""
from __future__ import annotations

from typing import Any

from .grad_builder import GradBuilder
from .registry import get_op_def, register_op


def _pylayer_kernel(xs: list, ys: list, **_: Any) -> list:
    return list(ys)


def _pylayer_infer(ctx: Any) -> None:
    if ctx.num_outputs("Out") != len(ctx.shapes("Y")):
        raise ctx.shape_error(f"needs one output per result Y, got {ctx.num_outputs('Out')} for "
                              f"{len(ctx.shapes('Y'))}")
    for i, (shape, dtype) in enumerate(zip(ctx.shapes("Y"), ctx.dtypes("Y"))):
        ctx.set_output("Out", shape, dtype, index=i)


def _pylayer_grad(g: GradBuilder) -> None:
    """Copy the recorded backward ops, stand-ins renamed to Out's gradients."""
    renamed = dict(zip(g.attr("grad_inputs"), g.output_grad("Out")))
    for op in g.attr("backward_block").ops:
        op_def = get_op_def(op.type)
        inputs = {slot: [renamed.get(n, n) for n in names] for slot, names in op.inputs.items()}
        counts = [len(op.outputs.get(s.name, [])) for s in op_def.outputs if s.duplicable]
        attrs = {k: v for k, v in op.attrs.items() if k != "op_role"}
        values = g.op(op.type, inputs, n_out=counts[0] if counts else None, **attrs)
        values = values if len(op_def.outputs) > 1 else (values,)
        for slot, value in zip(op_def.outputs, values):
            for old, new in zip(op.outputs.get(slot.name, []), value if slot.duplicable else [value]):
                renamed[old] = new
    g.set_input_grad("X", [renamed.get(n, n) if n else None for n in g.attr("grad_outputs")])


register_op("pylayer", inputs="X* Y*", outputs="Out*",
            attrs={"backward_block": None, "grad_inputs": [], "grad_outputs": [], "name": ""},
            kernel=_pylayer_kernel, infer=_pylayer_infer, grad=_pylayer_grad,
            doc="Out = Y; the gradient of X is the recorded backward_block (static_pylayer, PyLayer traced).")
