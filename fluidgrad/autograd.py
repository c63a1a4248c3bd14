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
from .eager.mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled, state
from .eager.node import CustomOp
from .eager.tensor import Tensor
from .framework import Variable
from .functions import reshape, stack
from .static.pylayer import apply_on_variables

__all__ = ["PyLayer", "PyLayerContext", "backward", "enable_grad", "grad", "hessian", "is_grad_enabled", "jacobian",
           "no_grad", "set_grad_enabled"]


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
        if state.tracer is not None or any(isinstance(a, Variable) for a in args):  # jit.to_static, a Program
            return apply_on_variables(cls, ctx, args, kwargs)
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


def jacobian(ys: Any, xs: Any, batch_axis: int | None = None, create_graph: bool = False) -> Any:
    """d ys / d xs of eager Tensors, of shape ys.shape + xs.shape (torch.autograd.functional.jacobian;
    paddle.autograd.jacobian, here as a Tensor): one backward pass per element of ys, the graph
    kept between them. `create_graph` makes the result differentiable (hessian uses it). A ys
    that does not depend on xs gives zeros, as PyTorch. A list or tuple of xs gives a tuple of
    Jacobians, one per input; a list or tuple of ys a tuple over ys (of tuples, for several xs)."""
    if batch_axis is not None:
        raise NotImplementedError("jacobian: batch_axis is not supported; give one sample, or loop")
    many_xs, many_ys = isinstance(xs, (list, tuple)), isinstance(ys, (list, tuple))
    x_list, y_list = list(xs) if many_xs else [xs], list(ys) if many_ys else [ys]
    if not all(isinstance(t, Tensor) for t in x_list + y_list) or not x_list or not y_list:
        raise TypeError(f"jacobian: ys and xs must be eager Tensors (or lists of them), got "
                        f"{type(ys).__name__} and {type(xs).__name__}")
    for x in x_list:
        if x.stop_gradient:
            raise ValueError("jacobian: xs has stop_gradient=True, so nothing is differentiated with respect to it")
    per_y = [_jacobians(y, x_list, create_graph) for y in y_list]
    per_y = [tuple(row) if many_xs else row[0] for row in per_y]
    return tuple(per_y) if many_ys else per_y[0]


def _jacobians(ys: Tensor, xs: list[Tensor], create_graph: bool) -> list[Tensor]:
    """d ys / d x for each x of xs, one backward pass per element of ys."""
    size = max(int(np.prod(ys.shape, dtype=np.int64)), 0)
    rows: list[list[Tensor]] = [[] for _ in xs]
    for index in range(size if not ys.stop_gradient else 0):
        seed = np.zeros(ys.shape, ys.dtype)
        seed.flat[index] = 1
        found = grad([ys], xs, grad_outputs=[Tensor(seed)], retain_graph=True, create_graph=create_graph,
                     allow_unused=True)
        for x, row, kept in zip(xs, found, rows):
            kept.append(row if row is not None else Tensor(np.zeros(x.shape, x.dtype)))
    if ys.stop_gradient or not size:  # ys does not depend on anything that needs a gradient
        return [Tensor(np.zeros(tuple(ys.shape) + tuple(x.shape), x.dtype)) for x in xs]
    return [reshape(stack(kept), list(ys.shape) + list(x.shape)) for x, kept in zip(xs, rows)]


def hessian(ys: Tensor, xs: Tensor, batch_axis: int | None = None) -> Tensor:
    """The second derivatives of a one-element ys with respect to xs, of shape xs.shape * 2
    (torch.autograd.functional.hessian; paddle.autograd.hessian, here as a Tensor). A ys whose
    gradient is constant (or that ignores xs) gives zeros, as PyTorch."""
    if not isinstance(ys, Tensor) or int(np.prod(ys.shape, dtype=np.int64)) != 1:
        raise ValueError(f"hessian: ys must be a Tensor of one element, got shape {list(getattr(ys, 'shape', []))}")
    if not isinstance(xs, Tensor):
        raise TypeError(f"hessian: xs must be an eager Tensor, got {type(xs).__name__}")
    if ys.stop_gradient:
        first = None
    else:
        first, = grad([ys], [xs], create_graph=True, retain_graph=True, allow_unused=True)
    if first is None:
        return Tensor(np.zeros(tuple(xs.shape) * 2, xs.dtype))
    return jacobian(first, xs, batch_axis)
