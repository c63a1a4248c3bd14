"""`fluidgrad.recompute(function, *args)`: eager activation checkpointing.

The function runs without recording, so none of its intermediates is kept; only its inputs are.
During backward it runs again, this time recording, from the same inputs and the same random
state (a dropout inside draws the same mask), and its gradients flow on: to the inputs through
this node, to the parameters it uses straight into their `.grad` (PyTorch's reentrant
`torch.utils.checkpoint`, Paddle's `recompute`). The values and gradients equal those of
calling `function` directly, and so do the side effects: the second run is marked
(`eager.mode.recomputing`), so BatchNorm's running statistics move once per step, as without
recompute and as static checkpoints.

Called on static Variables (inside `jit.to_static` tracing, or while building a Program), it
calls `function` once and records the Variables at the call's boundary (its inputs and outputs)
as checkpoints of the program (`marked_checkpoints`): `jit.to_static` passes them to the
backward it builds, so `recompute` around each block means the same in both modes.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

from .autograd import PyLayer, PyLayerContext
from .eager import Tensor
from .eager.engine import backward, enable_grad
from .eager.mode import recomputing
from .framework import Program, Variable, default_main_program
from .ops.random import get_rng_state, set_rng_state

__all__ = ["recompute", "marked_checkpoints"]

_MARKS: "weakref.WeakKeyDictionary[Program, list[str]]" = weakref.WeakKeyDictionary()


class _Recompute(PyLayer):
    @staticmethod
    def forward(ctx: PyLayerContext, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        ctx.function, ctx.args, ctx.kwargs = function, args, kwargs
        ctx.rng_state = get_rng_state()
        outputs = function(*args, **kwargs)
        ctx.single = isinstance(outputs, Tensor)
        return outputs

    @staticmethod
    def backward(ctx: PyLayerContext, *grads: Any) -> Any:
        if getattr(ctx, "used", False):
            raise RuntimeError("recompute: backward ran twice through one recompute() call; "
                               "call recompute again for a second backward")
        ctx.used = True
        inputs = [a.detach() if isinstance(a, Tensor) else a for a in ctx.args]
        for fresh, original in zip(inputs, ctx.args):
            if isinstance(original, Tensor):
                fresh.stop_gradient = original.stop_gradient
        after_forward = get_rng_state()
        set_rng_state(ctx.rng_state)
        try:
            with enable_grad(), recomputing():
                outputs = ctx.function(*inputs, **ctx.kwargs)
        finally:
            set_rng_state(after_forward)
        outputs = [outputs] if ctx.single else list(outputs)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and not o.stop_gradient]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        return tuple(x.grad if isinstance(x, Tensor) and not x.stop_gradient else None
                     for x in inputs if isinstance(x, Tensor))


def recompute(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, keeping only the inputs for backward and recomputing the rest."""
    if not callable(function):
        raise TypeError(f"recompute: the first argument must be callable, got {type(function).__name__}")
    if any(isinstance(a, Variable) for a in args):
        return _mark_static(function, *args, **kwargs)
    return _Recompute.apply(function, *args, **kwargs)


def _mark_static(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Build `function` into the current program and mark the Variables at its boundary."""
    outputs = function(*args, **kwargs)
    flat = [outputs] if not isinstance(outputs, (tuple, list)) else list(outputs)
    marks = _MARKS.setdefault(default_main_program(), [])
    for value in list(args) + flat:
        if isinstance(value, Variable) and value.name not in marks:
            marks.append(value.name)
    return outputs


def marked_checkpoints(program: Program) -> list[str]:
    """The names `recompute` calls marked while `program` was being built, in order (each
    call's inputs, then its outputs); some may be data or parameters, which are no checkpoints
    (they stay alive anyway) and are for the caller to leave out."""
    return list(_MARKS.get(program, []))
