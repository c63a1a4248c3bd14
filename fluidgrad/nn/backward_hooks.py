"""Layer.register_full_backward_hook: torch's hook(layer, grad_input, grad_output) in eager mode.

One call of a hooked layer routes each input that wants a gradient through an `assign` (a copy
the gradient flows through) and hooks the copies and the outputs (Tensor.register_hook): the
outputs' gradients arrive first, then, once backward has gone through the layer, the inputs'.
When the last awaited input gradient arrives the layer's hooks run with every gradient seen
(None where an output took no part in the loss, or an input wants no gradient); a layer none of
whose inputs wants a gradient (the first layer on raw data) runs them when its outputs' gradients
are in. A hook may return a new grad_input, as torch's; replacing one of several inputs'
gradients is refused (each input's gradient has already gone on by the time the last arrives).
"""
from __future__ import annotations

from typing import Any, Callable

from ..dispatch import apply_op
from ..eager.mode import is_grad_enabled
from ..eager.tensor import Tensor


def _wants_grad(value: Any) -> bool:
    return isinstance(value, Tensor) and not value.stop_gradient


def _tensors(output: Any) -> list[Tensor]:
    if isinstance(output, Tensor):
        return [output]
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in _tensors(item)]
    return []


class _CallHooks:
    """The gradients of one forward call of a hooked layer, and the hooks to give them to."""

    def __init__(self, layer: Any, hooks: list[Callable[..., Any]], n_inputs: int, input_slots: list[int]) -> None:
        self.layer, self.hooks = layer, hooks
        self.input_slots, self.output_slots = set(input_slots), set()
        self.grad_input: list[Any] = [None] * n_inputs
        self.grad_output: list[Any] = []
        self.waiting_inputs, self.waiting_outputs = set(input_slots), set()

    def on_output(self, slot: int) -> Callable[[Tensor], None]:
        def hook(grad: Tensor) -> None:
            self.grad_output[slot] = grad
            self.waiting_outputs.discard(slot)
            if not self.waiting_inputs and not self.waiting_outputs:
                self._run()
        return hook

    def on_input(self, slot: int) -> Callable[[Tensor], Any]:
        def hook(grad: Tensor) -> Any:
            self.grad_input[slot] = grad
            self.waiting_inputs.discard(slot)
            if self.waiting_inputs:
                return None
            replaced = self._run()
            return None if replaced is None else replaced[slot]
        return hook

    def _run(self) -> tuple | None:
        """Call every hook; the last replacement of grad_input given, if any. Then wait afresh:
        a second backward through the same graph (retain_graph) runs the hooks again."""
        replaced = None
        for hook in self.hooks:
            result = hook(self.layer, tuple(self.grad_input), tuple(self.grad_output))
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(self.grad_input):
                    raise ValueError(f"{type(self.layer).__name__}: a full backward hook returned "
                                     f"{len(result)} gradients for {len(self.grad_input)} inputs")
                if sum(g is not None for g in self.grad_input) > 1:
                    raise RuntimeError(f"{type(self.layer).__name__}: a full backward hook may replace grad_input "
                                       f"only on a layer with one input that wants a gradient")
                self.grad_input, replaced = list(result), result
        self.grad_input, self.grad_output = [None] * len(self.grad_input), [None] * len(self.grad_output)
        self.waiting_inputs, self.waiting_outputs = set(self.input_slots), set(self.output_slots)
        return replaced


def call_with_backward_hooks(layer: Any, hooks: list[Callable[..., Any]], forward: Callable[..., Any],
                             inputs: tuple, kwargs: dict) -> Any:
    """`forward(*inputs, **kwargs)` with the gradient hooks of this call in place."""
    if not is_grad_enabled():
        return forward(*inputs, **kwargs)
    slots = [i for i, value in enumerate(inputs) if _wants_grad(value)]
    call = _CallHooks(layer, hooks, len(inputs), slots)
    routed = list(inputs)
    for i in slots:
        routed[i] = apply_op("assign", {"X": inputs[i]})
        routed[i].register_hook(call.on_input(i))
    output = forward(*routed, **kwargs)
    tensors = _tensors(output)
    call.grad_output = [None] * len(tensors)
    for j, tensor in enumerate(tensors):
        if _wants_grad(tensor):
            call.output_slots.add(j)
            call.waiting_outputs.add(j)
            tensor.register_hook(call.on_output(j))
    return output
