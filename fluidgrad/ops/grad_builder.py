"""The builder grad makers are written against: `GradBuilder` (see framework/grad_builder.py).

Grad makers type their argument `g: GradBuilder`; the static builder (append op
descriptions) and the eager one (run kernels) both implement it.
"""
from ..framework.grad_builder import GradBuilder, OpDesc, StaticGradBuilder, get_grad_op_desc

__all__ = ["GradBuilder", "OpDesc", "StaticGradBuilder", "get_grad_op_desc"]
