"""An eager SGD step written into the parameter's own array, when nothing else can see that array.

Why: the update kernels are pure (a new parameter array per step), which is what static mode
needs. In eager mode the new array costs an allocation as large as the parameter: for a
784x512 layer, 1.6 MB that glibc maps and the first write faults in page by page, each step.
PyTorch updates in place (`p.add_(g, alpha=-lr)`, one pass).

When is writing in place safe? fluidgrad hands out a parameter's array as is (`Tensor.numpy()`,
views made by ops, arrays given to `set_value`), and code holding one may expect it to keep its
value. So the step writes in place only when the array is referenced by its Tensor alone (its
reference count says so, as NumPy's own temporary elision decides), owns its memory (no view of
a buffer someone else has), is writeable and contiguous. A recorded graph holds the Tensor, not
the array: the write is recorded as `set_value` records it, so a retained graph that would read
the old value raises the same clear error. Otherwise the pure kernel runs, as before.
`FLUIDGRAD_INPLACE_STEP=0` (or `use_in_place(False)`) switches the in-place path off.
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from ..eager.tensor import Tensor, _record_modification
from ..ops import accel

IN_PLACE = accel.Switch("FLUIDGRAD_INPLACE_STEP")



def _references_seen_inside(param: object, value: np.ndarray) -> int:
    return sys.getrefcount(value)


def _sole_owner_references() -> int:
    """What `sys.getrefcount` reports inside `sgd_in_place` for an array only its Tensor holds
    (the Tensor's slot, the caller's local, the argument, getrefcount's own argument: 4 on
    CPython 3.10-3.13). Measured, not assumed: interpreters that skip some of these counts
    (3.14 borrows references on the stack) report fewer, and a fixed 4 would then take an
    array someone else holds for a sole-owned one."""
    param = Tensor(np.zeros(2))
    value = param._array
    return _references_seen_inside(param, value)


_SOLE_OWNER_REFS = _sole_owner_references()


def use_in_place(on: bool) -> contextlib.AbstractContextManager:
    """Switch the in-place step on or off for a block (tests compare both paths)."""
    return IN_PLACE.use(on)


@accel.jit
def _axpy(param, grad, alpha):  # param += alpha * grad, one pass (numba)
    p = param.reshape(-1)
    g = grad.reshape(-1)
    for i in range(p.size):
        p[i] += alpha * g[i]


def sgd_in_place(param: object, value: np.ndarray, grad: np.ndarray, lr: np.ndarray) -> bool:
    """`value -= lr * grad` into `value`, the array of the Tensor `param`, when that is safe (see
    the module's docstring); returns whether it was done."""
    if not IN_PLACE.on or not isinstance(param, Tensor) or param._array is not value:
        return False
    if sys.getrefcount(value) > _SOLE_OWNER_REFS or value.base is not None or not value.flags.writeable \
            or not value.flags.c_contiguous or grad.dtype != value.dtype or grad.shape != value.shape:
        return False
    alpha = value.dtype.type(-lr.reshape(-1)[0])
    if accel.enabled() and accel.takes(value, grad) and grad.flags.c_contiguous:
        _axpy(value, grad, alpha)
    else:
        value += grad * alpha
    _record_modification(param)
    return True
