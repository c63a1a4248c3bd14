"""Eager mode: Tensors computed at once, with define-by-run autograd on the op registry.

    mode.py         grad mode (per thread) and the tracer of jit.to_static
    node.py         what is recorded: OpCall (per op type) and Node (per op run), keeping
                    only what the backward reads
    saved.py        what a grad maker reads (g.input / g.output), from its source
    tensor.py       Tensor, to_tensor
    infer.py        the registry's shape rules, cached per input shapes and dtypes
    apply.py        running one op now (eager_apply and its two dict-free fast paths)
    grad_builder.py the grad-maker protocol, run on arrays
    engine.py       backward / grad: order, walk, accumulate
"""
from . import tensor as _tensor
from .apply import apply_binary, apply_unary, eager_apply
from .engine import backward, grad
from .grad_builder import EagerGradBuilder
from .mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .node import keep_only_what_is_read
from .tensor import Tensor, to_tensor

_tensor.install_engine(apply_binary, apply_unary, eager_apply, backward)

__all__ = ["EagerGradBuilder", "Tensor", "backward", "eager_apply", "enable_grad", "grad", "is_grad_enabled",
           "keep_only_what_is_read", "inference_mode", "no_grad", "set_grad_enabled", "to_tensor"]
