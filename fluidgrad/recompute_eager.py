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
from .nn.layer import Layer
from .ops.random import get_rng_state, set_rng_state

__all__ = ["recompute", "marked_checkpoints"]

_MARKS: "weakref.WeakKeyDictionary[Program, list[str]]" = weakref.WeakKeyDictionary()


class _Recompute(PyLayer):
    @staticmethod
    def forward(ctx: PyLayerContext, function: Callable[..., Any], preserve_rng_state: bool, n_args: int,
                *args_and_params: Any, **kwargs: Any) -> Any:
        args, ctx.n_params = args_and_params[:n_args], len(args_and_params) - n_args
        ctx.function, ctx.args, ctx.kwargs = function, args, kwargs
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
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
        if ctx.rng_state is not None:
            set_rng_state(ctx.rng_state)
        try:
            with enable_grad(), recomputing():
                outputs = ctx.function(*inputs, **ctx.kwargs)
        finally:
            if ctx.rng_state is not None:
                set_rng_state(after_forward)
        outputs = [outputs] if ctx.single else list(outputs)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and not o.stop_gradient]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = [x.grad if not x.stop_gradient else None for x in inputs if isinstance(x, Tensor)]
        return tuple(input_grads + [None] * ctx.n_params)  # the parameters' went into their .grad


def recompute(function: Callable[..., Any], *args: Any, preserve_rng_state: bool = True,
              use_reentrant: bool = True, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, keeping only the inputs for backward and recomputing the rest.
    `preserve_rng_state` and `use_reentrant` are recompute's own (see the module docstring)."""
    if not callable(function):
        raise TypeError(f"recompute: the first argument must be callable, got {type(function).__name__}")
    if not isinstance(use_reentrant, bool) or not isinstance(preserve_rng_state, bool):
        raise TypeError(f"recompute: use_reentrant and preserve_rng_state must be True or False, got "
                        f"{use_reentrant!r} and {preserve_rng_state!r}")
    if any(isinstance(a, Variable) for a in args):
        return _mark_static(function, *args, **kwargs)
    params = [p for p in _parameters_of(function) if not p.stop_gradient]
    return _Recompute.apply(function, preserve_rng_state, len(args), *args, *params, **kwargs)


def _parameters_of(function: Callable[..., Any]) -> list[Tensor]:
    """The parameters of a Layer, or of the Layer whose bound method `function` is."""
    owner = function if isinstance(function, Layer) else getattr(function, "__self__", None)
    return owner.parameters() if isinstance(owner, Layer) else []


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
