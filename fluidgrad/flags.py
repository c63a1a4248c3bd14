"""Global debugging flags (Paddle's `set_flags` spelling): today only `check_nan_inf`.

    fluidgrad.set_flags({"check_nan_inf": True})   # or "FLAGS_check_nan_inf"

In eager mode, every op kernel then checks its outputs, forward and backward, and the first
NaN or Inf raises `NanInfError` naming the op, whether it ran forward or backward, and its
inputs' shapes and dtypes. Static programs use `Executor(check_nan_inf=True)` instead, whose
plans carry the check only when asked for.

How: the eager engine calls an output-check hook after every kernel (`eager.apply.
set_output_check`); with the flag off no hook is installed and eager mode pays one `is None`
test per op. The test itself is the executor's (`executor/nan_inf.py`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .eager.apply import set_output_check
from .eager.mode import state
from .eager.node import OpCall
from .executor.nan_inf import non_finite
from .framework.errors import NanInfError

_FLAGS: dict[str, Any] = {"check_nan_inf": False}
_counter = {"ops": 0}


def _key(name: str) -> str:
    key = name[len("FLAGS_"):] if name.startswith("FLAGS_") else name
    if key not in _FLAGS:
        raise ValueError(f"unknown flag {name!r}; known flags: {sorted(_FLAGS)}")
    return key


def get_flags(names: str | list[str] | None = None) -> dict[str, Any]:
    """The current values, e.g. get_flags("check_nan_inf") -> {"check_nan_inf": False}."""
    if names is None:
        return dict(_FLAGS)
    names = [names] if isinstance(names, str) else list(names)
    return {name: _FLAGS[_key(name)] for name in names}


def set_flags(flags: dict[str, Any]) -> None:
    """Set global flags, e.g. `set_flags({'check_nan_inf': True})`: eager ops then stop at the first NaN or Inf, naming the op."""
    if not isinstance(flags, dict):
        raise TypeError(f"set_flags expects a dict of flag names to values, got {type(flags).__name__}")
    for name, value in flags.items():
        key = _key(name)
        if key == "check_nan_inf":
            _set_check_nan_inf(bool(value))
        _FLAGS[key] = value


def _set_check_nan_inf(on: bool) -> None:
    _counter["ops"] = 0
    set_output_check(_check_outputs if on else None)


def _check_outputs(call: OpCall, args: Any, out: Any) -> None:
    """The eager hook: raise on the first NaN or Inf in a kernel's outputs, naming the op."""
    _counter["ops"] += 1
    for value in _flat(out):
        kind = non_finite(value)
        if kind is not None:
            phase = "backward" if state.in_backward else "forward"
            slots = [slot for slot, _ in call.in_slots]
            raise NanInfError(f"{kind} in the output of op {call.type} ({phase} op, eager mode, "
                              f"op #{_counter['ops'] - 1} since check_nan_inf was set); its inputs: "
                              f"{_describe(slots, args)}")


def _flat(out: Any) -> list[np.ndarray]:
    if isinstance(out, (tuple, list)):
        return [v for item in out for v in _flat(item)]
    return [out] if isinstance(out, (np.ndarray, np.generic)) else []


def _describe(slots: list[str], args: tuple) -> str:
    parts = []
    for slot, value in zip(slots, args):
        if isinstance(value, (np.ndarray, np.generic)):
            parts.append(f"{slot} (shape {list(np.shape(value))}, {value.dtype})")
        elif isinstance(value, list):
            parts.append(f"{slot} [{', '.join(f'shape {list(np.shape(v))}' for v in value)}]")
    return ", ".join(parts) or "none"
