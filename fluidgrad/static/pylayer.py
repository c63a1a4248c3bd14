"""static_pylayer: a function with a hand-written backward, as ops of a Program.

Paddle's `paddle.static.nn.static_pylayer(forward_fn, inputs, backward_fn)`, and what
`autograd.PyLayer.apply` does when it meets Variables (inside `jit.to_static`, or while
building a Program): PyLayer's forward and backward become ordinary ops.

- `forward_fn(*inputs)` appends its ops where the call is, as any function does; its results
  pass through one `pylayer` op (ops/pylayer.py: it forwards them unchanged), whose outputs are
  what the caller gets.
- `backward_fn(*output_grads)` is called once, now, on stand-in Variables for the output
  gradients, inside a block of its own (the op's `backward_block`). When `append_backward`
  reaches the `pylayer` op, its grad maker copies that block's ops into the backward program,
  with the stand-ins renamed to the real output gradients.

So the forward ops' own gradients are never used (no gradient flows into the `pylayer` op's
second input), the backward is made of registered ops (a program with it saves, loads and
differentiates again like any other), and a None gradient is zero. backward_fn may read the
forward's Variables (what `ctx.save_for_backward` kept) and must build straight-line ops: a
loop or branch in it is refused.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np

from ..eager.mode import state
from ..eager.tensor import Tensor
from ..framework import Block, Program, Variable, default_main_program, unique_name

__all__ = ["static_pylayer", "apply_on_variables"]


def _variables(values: Any, what: str) -> tuple[list[Variable], bool]:
    single = isinstance(values, Variable)
    items = [values] if single else list(values) if isinstance(values, (list, tuple)) else None
    if items is None or not all(isinstance(v, Variable) for v in items):
        got = type(values).__name__ if items is None else \
            ", ".join(type(v).__name__ for v in items if not isinstance(v, Variable))
        raise TypeError(f"{what} must be Variables (or a list / tuple of them), got {got}")
    return items, single


def static_pylayer(forward_fn: Callable[..., Any], inputs: Sequence[Variable],
                   backward_fn: Callable[..., Any] | None = None, name: str | None = None) -> Any:
    """`forward_fn(*inputs)` whose gradient is `backward_fn(*output_grads)` (one gradient, or
    None, per input); without backward_fn no gradient flows back. Returns the outputs as
    forward_fn does (a Variable or a tuple of them)."""
    label = re.sub(r"[^0-9A-Za-z_.]", "_", name or getattr(forward_fn, "__qualname__", "static_pylayer"))
    inputs, _ = _variables(list(inputs), f"static_pylayer {label}: inputs")
    results, single = _variables(forward_fn(*inputs), f"static_pylayer {label}: forward's results")
    program = default_main_program()
    block = program.current_block()
    stand_ins, grads, sub = _record_backward(program, results, inputs, backward_fn, label)
    outs = [block.create_var(unique_name(f"{label}.out"), r.shape, r.dtype) for r in results]
    block.append_op("pylayer", {"X": inputs, "Y": results}, {"Out": outs},
                    {"backward_block": sub, "grad_inputs": [s.name for s in stand_ins],
                     "grad_outputs": [g.name if g is not None else "" for g in grads], "name": label})
    no_grad = backward_fn is None or all(v.stop_gradient for v in inputs) or \
        (state.tracer is not None and not state.grad_enabled)  # traced inside no_grad()
    for out in outs:
        out.stop_gradient = no_grad or not out.dtype.startswith(("float", "bfloat"))
    return outs[0] if single else tuple(outs)


def _record_backward(program: Program, results: list[Variable], inputs: list[Variable],
                     backward_fn: Callable[..., Any] | None, label: str
                     ) -> tuple[list[Variable], list[Variable | None], Block]:
    """Build backward_fn's ops into a block of their own; return the stand-ins for the output
    gradients, the input gradients (None: zero) and the block."""
    with program._sub_block_guard() as sub:
        stand_ins = [sub.create_var(unique_name(f"{r.name}@PYLAYER_GRAD"), r.shape, r.dtype) for r in results]
        if backward_fn is None:
            return stand_ins, [None] * len(inputs), sub
        returned = backward_fn(*stand_ins)
    grads = list(returned) if isinstance(returned, (list, tuple)) else [returned]
    if len(grads) != len(inputs):
        raise ValueError(f"static_pylayer {label}: backward returned {len(grads)} gradients, but forward took "
                         f"{len(inputs)} inputs")
    for i, (grad, var) in enumerate(zip(grads, inputs)):
        if grad is None:
            continue
        if not isinstance(grad, Variable):
            raise TypeError(f"static_pylayer {label}: backward's gradient {i} must be a Variable or None, got "
                            f"{type(grad).__name__}")
        try:
            np.broadcast_shapes(tuple(max(d, 1) for d in grad.shape), tuple(max(d, 1) for d in var.shape))
        except ValueError:
            raise ValueError(f"static_pylayer {label}: backward's gradient {i} {grad.name} has shape "
                             f"{list(grad.shape)}, which does not fit input {var.name} of shape "
                             f"{list(var.shape)}") from None
    nested = [op.type for op in sub.ops if any(isinstance(v, Block) for v in op.attrs.values())]
    if nested:
        raise NotImplementedError(f"static_pylayer {label}: backward builds control flow ({', '.join(nested)}); "
                                  f"only straight-line ops can be copied into the backward program")
    return stand_ins, grads, sub


def apply_on_variables(cls: type, ctx: Any, args: Sequence[Any], kwargs: dict) -> Any:
    """`cls.apply(*args, **kwargs)` of a PyLayer meeting Variables (autograd.PyLayer calls this):
    forward and backward through `static_pylayer`. While jit.to_static traces, Tensor arguments
    become the trace's variables (a weight gets its gradient); otherwise a Tensor argument is a
    constant, and backward's gradient for it is dropped."""
    tracer = state.tracer
    args = [tracer.variable(a) if tracer is not None and isinstance(a, Tensor) else a for a in args]
    slots = [i for i, a in enumerate(args) if isinstance(a, (Variable, Tensor))]
    variables = [i for i in slots if isinstance(args[i], Variable)]
    ctx.needs_input_grad = tuple(isinstance(args[i], Variable) and not args[i].stop_gradient for i in slots)

    results: list[Any] = []

    def forward(*values: Variable) -> Any:
        call = list(args)
        for i, value in zip(variables, values):
            call[i] = value
        returned = cls.forward(ctx, *call, **kwargs)
        results.extend([returned] if isinstance(returned, Variable) else returned)
        return returned

    def backward(*grads: Variable) -> list[Any]:
        if not ctx.materialize_grads:   # ctx.mark_non_differentiable's outputs: None, not zeros
            grads = tuple(None if ctx.is_non_differentiable(r) else g for r, g in zip(results, grads))
        returned = cls.backward(ctx, *grads)
        returned = list(returned) if isinstance(returned, (list, tuple)) else [returned]
        if len(returned) != len(slots):
            raise ValueError(f"{cls.__name__}.backward returned {len(returned)} gradients, but forward took "
                             f"{len(slots)} Tensor inputs")
        return [g for i, g in zip(slots, returned) if isinstance(args[i], Variable)]

    outs = static_pylayer(forward, [args[i] for i in variables], backward, name=cls.__name__)
    for result, out in zip(results, [outs] if isinstance(outs, Variable) else outs):
        out.stop_gradient = out.stop_gradient or ctx.is_non_differentiable(result)
    return outs
