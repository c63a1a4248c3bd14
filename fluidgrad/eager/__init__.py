"""Eager mode: Tensors computed at once, with define-by-run autograd on the op registry."""
from .tensor import Tensor, to_tensor  # first: the engine imports Tensor
from .engine import (backward, enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled)
from .engine import eager_apply
from .grad_builder import EagerGradBuilder

__all__ = ["EagerGradBuilder", "Tensor", "backward", "eager_apply", "enable_grad", "grad", "is_grad_enabled",
           "no_grad", "set_grad_enabled", "to_tensor"]
