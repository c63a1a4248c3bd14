"""Autograd entry points, and PyLayer: custom eager ops with a user-written backward.

    class Cube(PyLayer):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, dy):
            (x,) = ctx.saved_tensor()
            return dy * 3 * x * x

    y = Cube.apply(x)

The PyLayer's node is an ordinary engine node whose grad maker calls `backward`; so it mixes
with registered ops, hooks, `grad()` and `create_graph` like any other op.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .eager.apply import record_custom
from .eager.engine import backward, grad
from .eager.mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .eager.node import CustomOp
from .eager.tensor import Tensor

__all__ = ["PyLayer", "PyLayerContext", "backward", "enable_grad", "grad", "is_grad_enabled", "no_grad",
           "set_grad_enabled"]


class PyLayerContext:
    """What `forward` leaves for `backward`: saved tensors and any attribute the user sets."""

    def __init__(self) -> None:
        self._saved: tuple = ()
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tensors

    def saved_tensor(self) -> tuple:
        return self._saved

    saved_tensors = property(saved_tensor)


def _broadcastable(returned: list, shape: list) -> bool:
    """The engine sums a broadcast gradient down to its input's shape (as PyTorch's sum_to)."""
    try:
        np.broadcast_shapes(tuple(returned), tuple(shape))
    except ValueError:
        return False
    return True


def _pylayer_grad(g: Any) -> None:
    """The grad maker of every PyLayer node: hand the output gradients to the user's backward."""
    cls, ctx, n_inputs = g.attr("cls"), g.attr("ctx"), g.attr("n_inputs")
    grads = [v if isinstance(v, Tensor) else Tensor(np.asarray(v)) for v in g.output_grad("Out")]
    mode = enable_grad() if g.create_graph else no_grad()
    with mode:
        result = cls.backward(ctx, *grads)
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(result) != n_inputs:
        raise ValueError(f"{cls.__name__}.backward returned {len(result)} gradients, but forward took "
                         f"{n_inputs} Tensor inputs")
    values = []
    for i, (r, shape) in enumerate(zip(result, g.attr("in_shapes"))):
        returned = None if r is None else list(np.shape(r.data if isinstance(r, Tensor) else r))
        if returned is not None and not _broadcastable(returned, shape):
            raise ValueError(f"{cls.__name__}.backward returned a gradient of shape {returned} for input {i}, "
                             f"which has shape {shape}")
        if r is None or g.create_graph:
            values.append(r)
        else:
            values.append(r.data if isinstance(r, Tensor) else np.asarray(r))
    g.set_input_grad("X", values)


_PYLAYER_OP = CustomOp("py_layer", _pylayer_grad)


class PyLayer:
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *output_grads)`; call
    `.apply(*args)`. backward returns one gradient (or None) per Tensor argument of forward."""

    @staticmethod
    def forward(ctx: PyLayerContext, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("a PyLayer subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: PyLayerContext, *grads: Any) -> Any:
        raise NotImplementedError("a PyLayer subclass must define backward(ctx, ...)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = PyLayerContext()
        inputs = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(not t.stop_gradient for t in inputs)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = isinstance(outputs, Tensor)
        items = [outputs] if single else list(outputs)
        for out in items:
            if not isinstance(out, Tensor):
                raise TypeError(f"{cls.__name__}.forward must return Tensors, got {type(out).__name__}")
        wrapped = record_custom(_PYLAYER_OP, inputs, [o.data for o in items],
                                {"cls": cls, "ctx": ctx, "n_inputs": len(inputs),
                                 "in_shapes": [list(t.data.shape) for t in inputs]})
        return wrapped[0] if single else tuple(wrapped)
