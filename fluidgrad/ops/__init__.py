"""The op registry and every op definition, grouped by family."""
from . import activation, control_flow, loss, math, nn, norm, optim, random, reduce, tensor  # noqa: F401  (registration side effects)
from .grad_builder import OpDesc, StaticGradBuilder, get_grad_op_desc
from .registry import NO_GRADIENT, InferContext, OpDef, get_op_def, register_op, registered_ops

__all__ = ["NO_GRADIENT", "InferContext", "OpDef", "OpDesc", "StaticGradBuilder", "get_grad_op_desc",
           "get_op_def", "register_op", "registered_ops"]
