"""Autograd entry points, and PyLayer: custom eager ops with a user-written backward
(`functional.py`: torch.autograd.functional's jacobian / hessian / vjp / jvp / hvp / vhp of a function).

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

from ..eager.apply import record_custom
from ..eager.engine import backward, grad
from ..eager.mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled, state
from ..eager.node import CustomOp
from ..eager.tensor import Tensor
from ..framework import Variable
from ..functions import reshape, stack
from ..static.pylayer import apply_on_variables

__all__ = ["Function", "FunctionCtx", "PyLayer", "PyLayerContext", "backward", "enable_grad", "grad", "hessian", "is_grad_enabled", "jacobian",
           "no_grad", "set_grad_enabled"]


class PyLayerContext:
    """What `forward` leaves for `backward`: saved tensors, which outputs are not differentiable,
    whether missing output gradients come as zeros, and any attribute the user sets (Paddle 2's
    PyLayerContext, torch.autograd.Function's ctx)."""

    def __init__(self) -> None:
        self._saved: tuple = ()
        self._non_differentiable: list = []
        self.materialize_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tensors

    def saved_tensor(self) -> tuple:
        return self._saved

    saved_tensors = property(saved_tensor)

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """These outputs of forward (an argmax, a mask) get stop_gradient=True and take no part
        in the backward: backward is handed zeros for them (None after set_materialize_grads(False))."""
        self._non_differentiable.extend(tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """True (the default): an output without a gradient hands backward zeros of its shape;
        False: None, so backward can skip work (it must then accept None)."""
        self.materialize_grads = bool(value)

    def is_non_differentiable(self, output: Any) -> bool:
        return any(output is marked for marked in self._non_differentiable)


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
    given = g.output_grad("Out") if ctx.materialize_grads else g.output_grads_or_none("Out")
    grads = [v if isinstance(v, Tensor) or v is None else Tensor(np.asarray(v)) for v in given]
    mode = enable_grad() if g.create_graph else no_grad()
    with mode:
        result = cls.backward(ctx, *grads)
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(result) != n_inputs:
        raise ValueError(f"{cls.__name__}.backward returned {len(result)} gradients, but forward took "
                         f"{n_inputs} Tensor inputs")
    values = []
    for i, (r, shape) in enumerate(zip(result, g.attr("in_shapes"))):
        returned = None if r is None else list(np.shape(r._array if isinstance(r, Tensor) else r))
        if returned is not None and not _broadcastable(returned, shape):
            raise ValueError(f"{cls.__name__}.backward returned a gradient of shape {returned} for input {i}, "
                             f"which has shape {shape}")
        if r is None or g.create_graph:
            values.append(r)
        else:
            values.append(r._array if isinstance(r, Tensor) else np.asarray(r))
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
        wrapped = record_custom(_PYLAYER_OP, inputs, [o._array for o in items],
                                {"cls": cls, "ctx": ctx, "n_inputs": len(inputs),
                                 "in_shapes": [list(t._array.shape) for t in inputs]})
        # a non-differentiable output is cut from the node: no gradient can reach it
        wrapped = [Tensor(w._array) if ctx.is_non_differentiable(o) else w for o, w in zip(items, wrapped)]
        return wrapped[0] if single else tuple(wrapped)


Function = PyLayer              # torch.autograd.Function: the same protocol (forward / backward / apply)
FunctionCtx = PyLayerContext


def _batch_size(function: str, batch_axis: int | None, *tensors: Tensor) -> int | None:
    """The batch size shared by the tensors' axis 0 when batch_axis is 0; None without a batch axis."""
    if batch_axis is None:
        return None
    if batch_axis != 0:
        raise ValueError(f"{function}: batch_axis must be None or 0 (Paddle's), got {batch_axis!r}")
    sizes = [t.shape[0] if len(t.shape) else None for t in tensors]
    if None in sizes or len(set(sizes)) != 1:
        raise ValueError(f"{function}: with batch_axis=0, ys and xs need one size on axis 0, got shapes "
                         f"{[list(t.shape) for t in tensors]}")
    return sizes[0]


def _jacobian_rows(ys: Tensor, xs: list[Tensor], batch: int | None, create_graph: bool) -> list[list[Tensor]]:
    """For each element of ys (of each sample's ys when batched), its gradient with respect to every x:
    one backward pass each, the graph kept between them; a batched pass seeds that element in
    every sample at once (the samples are independent, as Paddle assumes)."""
    per_sample = tuple(ys.shape[1:]) if batch is not None else tuple(ys.shape)
    count = int(np.prod(per_sample, dtype=np.int64))
    if ys.stop_gradient:   # ys does not depend on anything that needs a gradient: all zeros
        return [[Tensor(np.zeros(x.shape, x.dtype)) for x in xs] for _ in range(count)]
    rows = []
    for index in range(count):
        seed = np.zeros((batch if batch is not None else 1, count), ys.dtype)
        seed[:, index] = 1
        found = grad([ys], xs, grad_outputs=[Tensor(seed.reshape(ys.shape))], retain_graph=True,
                     create_graph=create_graph, allow_unused=True)
        rows.append([g if g is not None else Tensor(np.zeros(x.shape, x.dtype)) for g, x in zip(found, xs)])
    return rows


def jacobian(ys: Tensor, xs: Tensor | list[Tensor], batch_axis: int | None = None,
             create_graph: bool = False) -> Tensor | tuple[Tensor, ...]:
    """d ys / d xs of eager Tensors already computed, of shape ys.shape + xs.shape
    (paddle.autograd.jacobian, here as a Tensor; torch's jacobian of a function is
    `autograd.functional.jacobian`); a list of xs gives a tuple, one per x, and a list
    of ys a tuple over ys. A ys that does not depend on xs gives zeros, as PyTorch. With
    batch_axis=0, axis 0 of ys and xs is a batch of independent samples and the result is each
    sample's Jacobian, [B] + ys.shape[1:] + xs.shape[1:]. One backward pass per element of ys (of
    one sample), the graph kept between them. `create_graph` makes the result differentiable."""
    if isinstance(ys, (list, tuple)):   # several ys: a tuple over ys (of tuples, for several xs)
        if not ys:
            raise TypeError("jacobian: ys is an empty list")
        return tuple(jacobian(y, xs, batch_axis, create_graph) for y in ys)
    several = isinstance(xs, (list, tuple))
    xs_list = list(xs) if several else [xs]
    if not isinstance(ys, Tensor) or not all(isinstance(x, Tensor) for x in xs_list):
        raise TypeError(f"jacobian: ys and xs must be eager Tensors, got {type(ys).__name__} and "
                        f"{', '.join(type(x).__name__ for x in xs_list)}")
    if any(x.stop_gradient for x in xs_list):
        raise ValueError("jacobian: xs has stop_gradient=True, so nothing is differentiated with respect to it")
    batch = _batch_size("jacobian", batch_axis, ys, *xs_list)
    rows = _jacobian_rows(ys, xs_list, batch, create_graph)
    lead = [batch] if batch is not None else []
    ys_rest = list(ys.shape[1:] if batch is not None else ys.shape)
    results = []
    for position, x in enumerate(xs_list):
        x_rest = list(x.shape[1:] if batch is not None else x.shape)
        if not rows:
            results.append(Tensor(np.zeros(lead + ys_rest + x_rest, x.dtype)))
            continue
        stacked = stack([row[position] for row in rows], axis=1 if batch is not None else 0)
        results.append(reshape(stacked, lead + ys_rest + x_rest))
    return tuple(results) if several else results[0]


def hessian(ys: Tensor, xs: Tensor, batch_axis: int | None = None) -> Tensor:
    """The second derivatives of a one-element ys with respect to xs, of shape xs.shape * 2
    (paddle.autograd.hessian, here as a Tensor; torch's hessian of a function is
    `autograd.functional.hessian`). With
    batch_axis=0, ys holds one value per sample ([B] or [B, 1]) and the result is each sample's
    Hessian, [B] + xs.shape[1:] * 2. A ys linear in xs (or not depending on them) gives zeros."""
    if not isinstance(ys, Tensor) or not isinstance(xs, Tensor):
        raise TypeError(f"hessian: ys and xs must be eager Tensors, got {type(ys).__name__} and {type(xs).__name__}")
    batch = _batch_size("hessian", batch_axis, ys, xs)
    per_sample = list(ys.shape[1:]) if batch is not None else list(ys.shape)
    if int(np.prod(per_sample, dtype=np.int64)) != 1:
        raise ValueError(f"hessian: ys must be a Tensor of one element{' per sample' if batch is not None else ''}, "
                         f"got shape {list(ys.shape)}")
    first = None
    if not ys.stop_gradient:
        first, = grad([ys], [xs], grad_outputs=[Tensor(np.ones(ys.shape, ys.dtype))], create_graph=True,
                      retain_graph=True, allow_unused=True)
    if first is None:   # ys does not depend on xs
        first = Tensor(np.zeros(xs.shape, xs.dtype))
    return jacobian(first, xs, batch_axis)


from . import functional  # noqa: E402  (torch.autograd.functional: derivatives of a function at inputs)
