"""`fluidgrad.recompute(function, *args)`: eager activation checkpointing.

The function runs without recording, so none of its intermediates is kept; only its inputs are.
During backward it runs again, this time recording, from the same inputs and the same random
state (a dropout inside draws the same mask), and its gradients flow on: to the inputs through
this node, to the parameters it uses straight into their `.grad` (PyTorch's reentrant
`torch.utils.checkpoint`, Paddle's `recompute`). The values and gradients equal those of
calling `function` directly.
"""
from __future__ import annotations

from typing import Any, Callable

from .autograd import PyLayer, PyLayerContext
from .eager import Tensor
from .eager.engine import backward, enable_grad
from .ops.random import get_rng_state, set_rng_state

__all__ = ["recompute"]


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
            with enable_grad():
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
    return _Recompute.apply(function, *args, **kwargs)
