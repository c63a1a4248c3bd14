"""Where op families register their ops: the registry itself is `framework/op_def.py`.

It lives in the IR layer so that `Block.append_op` can check an op without importing the
families; this module keeps the name every family imports from.
"""
from ..framework.op_def import (NO_GRADIENT, ZERO_GRADIENT, InferContext, OpDef, Slot, _REGISTRY,  # noqa: F401
                                get_op_def, infer_op, prepare, register_op, registered_ops,
                                require_gradient)

__all__ = ["NO_GRADIENT", "ZERO_GRADIENT", "InferContext", "OpDef", "Slot", "get_op_def", "infer_op", "prepare",
           "register_op", "registered_ops", "require_gradient"]
