"""Where op families register their ops: the registry itself is `framework/op_def.py`.

It lives in the IR layer so that `Block.append_op` can check an op without importing the
families; this module keeps the name every family imports from.
"""
from typing import Any, Callable

from ..framework.dtypes import REAL_OF, STORAGE
from ..framework.op_def import (NO_GRADIENT, ZERO_GRADIENT, InferContext, OpDef, Slot, _REGISTRY,  # noqa: F401
                                get_op_def, infer_op, prepare, registered_ops, require_gradient)
from ..framework.op_def import register_op as _register_op

# The ops that only move, select or convert values: the storage formats (float8, int4, ...;
# framework/dtypes.py) go through them. Every other op refuses them in its shape rule.
STORAGE_OPS = frozenset((
    "cast", "assign", "reshape", "reshape_as", "transpose", "squeeze", "unsqueeze", "flatten", "concat", "split",
    "split_as", "stack", "slice", "expand", "expand_as", "tile", "flip", "roll", "pad", "gather", "gather_nd",
    "take_along_axis", "where", "set_value", "select_input", "conditional_block", "while", "coalesce",
    "uncoalesce", "fill_zeros_like", "shape",
))

# The ops that take complex values (complex64, complex128): the complex ops (ops/complex.py), the
# transforms (ops/fft.py), and linear maps with real coefficients and the gradient bookkeeping, whose
# kernels and gradients (the adjoint: the transpose) are right for complex values as they are.
# Every other op refuses them in its shape rule: its gradient would lack the conjugates.
COMPLEX_OPS = frozenset((
    "real", "imag", "complex", "conj", "abs", "fft_c2c", "fft_c2r", "fft_resize", "fft_hermitian_weight",
    "assign", "sum", "fill_zeros_like", "scale", "elementwise_add", "elementwise_sub", "reduce_as", "expand_as",
    "roll", "slice", "slice_grad",
))


def register_op(type: str, *, infer: Callable[[InferContext], None], **fields: Any) -> OpDef:
    """framework's register_op; an op that computes refuses the storage formats by name first, and
    an op not in COMPLEX_OPS refuses complex values."""
    if type not in STORAGE_OPS or type not in COMPLEX_OPS:
        infer = _refusing(infer, type not in STORAGE_OPS, type not in COMPLEX_OPS)
    return _register_op(type, infer=infer, **fields)


def _refusing(infer: Callable[[InferContext], None], storage: bool, complex: bool) -> Callable[[InferContext], None]:
    def checked(ctx: InferContext) -> None:
        lookup = ctx._lookup  # (what ctx.dtype(slot, i) reads, without its call per input)
        for slot, names in ctx.inputs.items():
            for i, name in enumerate(names):
                try:
                    dtype = lookup(name)[1]
                except KeyError:  # a gradient not built yet (while_grad's carried values): the rule decides
                    continue
                if storage and dtype in STORAGE:
                    raise ctx.dtype_error(f"{ctx.describe(slot, i)} is a storage format (cast, reshape, "
                                          f"concatenate, ...): cast it to float32 first")
                if complex and dtype in REAL_OF:
                    raise ctx.dtype_error(f"complex values are not supported here, got {ctx.describe(slot, i)}; "
                                          f"compute on fluidgrad.real(x) and fluidgrad.imag(x)")
        infer(ctx)
    checked.__doc__ = infer.__doc__
    checked.numpy_broadcast = getattr(infer, "numpy_broadcast", False)  # type: ignore[attr-defined]
    return checked


__all__ = ["NO_GRADIENT", "ZERO_GRADIENT", "InferContext", "OpDef", "Slot", "get_op_def", "infer_op", "prepare",
           "register_op", "registered_ops", "COMPLEX_OPS", "require_gradient"]
