"""Tensors made from data as PyTorch makes them: `fg.tensor(data)` (the package `fluidgrad.tensor`
is callable, see `__init__.py`), `fg.as_tensor(data)` and `fg.from_numpy(array)`.

`tensor` always copies (Paddle's `to_tensor`: Python floats take the default dtype, integers
int64, bools bool, arrays keep theirs); `from_numpy` and `as_tensor` share the NumPy array when
they can, so a write into the array shows in the tensor, as in torch."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..eager import Tensor, to_tensor
from ..framework import normalize_dtype
from ..framework.torch_forms import check_device

__all__ = ["as_tensor", "from_numpy"]


def _stop_gradient(caller: str, requires_grad: bool, stop_gradient: bool | None) -> bool:
    """Paddle's stop_gradient= or PyTorch's requires_grad= (the opposite flag), consistent if both."""
    if stop_gradient is None:
        return not requires_grad
    if requires_grad and stop_gradient:
        raise TypeError(f"{caller}: requires_grad=True and stop_gradient=True contradict each other")
    return bool(stop_gradient)


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False, *, place: Any = None, stop_gradient: bool | None = None) -> Tensor:
    """A new leaf Tensor holding a copy of `data` (torch.tensor; Paddle's to_tensor): float data
    float32 (the default dtype), integers int64, bools bool, arrays and Tensors their own dtype.
    requires_grad=True (or stop_gradient=False) makes it collect a gradient; pin_memory is
    accepted and means nothing on the CPU."""
    check_device("tensor", device)
    return to_tensor(data, dtype, place, stop_gradient=_stop_gradient("tensor", requires_grad, stop_gradient))


def from_numpy(array: np.ndarray) -> Tensor:
    """A Tensor on the same memory as the NumPy `array` (torch.from_numpy): its dtype and values,
    no copy, so writing into the array changes the tensor."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}; use fg.tensor(data) "
                        f"to copy other data")
    normalize_dtype(array.dtype)   # refuse object / string arrays with a clear error
    return Tensor(array, True)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """data as a Tensor, without a copy where possible (torch.as_tensor): a Tensor of that dtype
    is returned itself, a NumPy array of that dtype shares its memory; anything else is copied
    (and converted to dtype when given)."""
    check_device("as_tensor", device)
    wanted = None if dtype is None else normalize_dtype(dtype)
    if isinstance(data, Tensor) and wanted in (None, data.dtype):
        return data
    if isinstance(data, np.ndarray) and wanted in (None, normalize_dtype(data.dtype)):
        return from_numpy(data)
    if isinstance(data, Tensor):
        return data.astype(wanted)
    return to_tensor(data, wanted)
