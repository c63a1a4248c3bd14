"""auto_cast: run each op in float16 / bfloat16 or float32 by Paddle 2's O1 rule (lists.py).

Inside `with auto_cast():` every op a function appends or runs (both modes: `dispatch.apply_op`)
and every binary operator of Tensors (`a + b`) first casts its float inputs: to the low-precision
dtype for a white-list op, to float32 for a black-list op, and for any other op to the widest
float dtype among them (float32 when float16 meets float32, as Paddle's `use_promote`). The casts
are ordinary `cast` ops, so gradients flow back to float32 parameters in float32 (through float16
or bfloat16 tensors alike). float64 and integer inputs are never cast. The setting is per thread,
as grad mode is; nested blocks (an `enable=False` block inside) take the innermost setting.

Level O1 only: parameters stay float32 (O2 casts the model itself, see `decorate`).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from .. import dispatch
from ..eager import apply as eager_apply_module
from ..eager import tensor as eager_tensor
from ..eager.tensor import Tensor
from ..framework import Variable
from ..functions import cast
from ..framework.variable import normalize_dtype
from .lists import LOW_PRECISION, black_list, white_list


class _Setting:
    """One auto_cast block's choice: off, or the low-precision dtype and the two op lists."""

    def __init__(self, enable: bool, dtype: str, white: frozenset[str], black: frozenset[str]) -> None:
        self.enable, self.dtype, self.white, self.black = enable, dtype, white, black


class _Local(threading.local):
    stack: list[_Setting]

    def __init__(self) -> None:
        self.stack = []


_local = _Local()
_installed = 0           # auto_cast blocks open in any thread: the hooks are in place while > 0
_install_lock = threading.Lock()


def amp_state() -> _Setting | None:
    """The innermost auto_cast setting of this thread, or None outside any block."""
    return _local.stack[-1] if _local.stack else None


def _dtype_of(value: Any) -> str | None:
    if isinstance(value, Tensor):
        return value._array.dtype.name
    if isinstance(value, Variable):
        return value.dtype
    return None


def _target(setting: _Setting, op_type: str, dtypes: list[str]) -> str | None:
    """The float dtype the op runs in, or None to leave its inputs alone."""
    if op_type in setting.white:
        return setting.dtype
    if op_type in setting.black:
        return "float32"
    if "float32" in dtypes and any(d in LOW_PRECISION for d in dtypes):
        return "float32"
    if len({d for d in dtypes if d in LOW_PRECISION}) > 1:   # float16 meets bfloat16
        return "float32"
    return None


def _cast(value: Any, dtype: str) -> Any:
    return cast(value, dtype)      # an ordinary op: differentiable, recorded, appended in static mode


def cast_inputs(op_type: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The op's inputs with its float32 / float16 / bfloat16 ones cast by the rule (unchanged
    outside auto_cast, for `cast` itself and where nothing needs a cast)."""
    setting = amp_state()
    if setting is None or not setting.enable or op_type == "cast":
        return inputs
    values = [v for item in inputs.values() for v in (item if isinstance(item, (list, tuple)) else (item,))]
    dtypes = [d for d in map(_dtype_of, values) if d in LOW_PRECISION or d == "float32"]
    target = _target(setting, op_type, dtypes) if dtypes else None
    if target is None or all(d == target for d in dtypes):
        return inputs

    def converted(value: Any) -> Any:
        dtype = _dtype_of(value)
        if dtype == target or not (dtype in LOW_PRECISION or dtype == "float32"):
            return value
        return _cast(value, target)
    return {slot: [converted(v) for v in item] if isinstance(item, (list, tuple)) else converted(item)
            for slot, item in inputs.items()}


def _binary(op_type: str, x: Tensor, y: Tensor) -> Tensor:
    """Tensor's binary operators (`a * b`) under the same rule."""
    inputs = cast_inputs(op_type, {"X": x, "Y": y})
    return eager_apply_module.apply_binary(op_type, inputs["X"], inputs["Y"])


def _install(on: bool) -> None:
    """Put the hooks in place when the first block opens; take them away when the last closes
    (outside auto_cast, no op pays for the check)."""
    global _installed
    with _install_lock:
        _installed += 1 if on else -1
        if _installed == (1 if on else 0):
            dispatch.cast_inputs = cast_inputs if on else None
            eager_tensor.install_engine(_binary if on else eager_apply_module.apply_binary,
                                        eager_apply_module.apply_unary, eager_apply_module.eager_apply,
                                        eager_tensor._backward)


def _low_precision(dtype: Any) -> str:
    name = normalize_dtype(dtype) if not isinstance(dtype, str) else dtype.replace("paddle.", "").replace("torch.", "")
    if name not in LOW_PRECISION:
        raise ValueError(f"auto_cast: dtype must be 'float16' or 'bfloat16', got {dtype!r}")
    return name


@contextlib.contextmanager
def auto_cast(enable: bool = True, custom_white_list: Iterable[str] | None = None,
              custom_black_list: Iterable[str] | None = None, level: str = "O1", dtype: str = "float16",
              use_promote: bool = True) -> Iterator[None]:
    """Mixed precision for the ops inside the block (Paddle 2's signature; `enable=False` turns it
    off inside an outer block). `custom_white_list` / `custom_black_list` move ops between the lists."""
    if level not in ("O0", "O1", "O2"):
        raise ValueError(f"auto_cast: level must be 'O0', 'O1' or 'O2', got {level!r}")
    if level == "O2":
        raise NotImplementedError("auto_cast: level 'O2' (the whole model in low precision, float32 master "
                                  "weights in the optimizer) is not supported; use level 'O1'")
    if not use_promote:
        raise NotImplementedError("auto_cast: use_promote=False (Paddle's O2 option) is not supported")
    low = _low_precision(dtype)
    white, black = set(custom_white_list or ()), set(custom_black_list or ())
    both = sorted(white & black)
    if both:
        raise ValueError(f"auto_cast: ops {both} are in both custom_white_list and custom_black_list")
    setting = _Setting(bool(enable) and level != "O0", low, frozenset((white_list(low) - black) | white),
                       frozenset((black_list(low) - white) | black))
    _local.stack.append(setting)
    _install(True)
    try:
        yield
    finally:
        _install(False)
        _local.stack.pop()


def autocast(device_type: str = "cpu", dtype: Any = "float16", enabled: bool = True,
             cache_enabled: bool = True) -> contextlib.AbstractContextManager:
    """torch.autocast's spelling: `with autocast("cpu", dtype=torch.bfloat16): ...`."""
    return auto_cast(enable=enabled, dtype=str(dtype).replace("torch.", ""))


amp_guard = auto_cast
