"""Global debugging flags (Paddle's `set_flags` spelling): today only `check_nan_inf`.

    fluidgrad.set_flags({"check_nan_inf": True})   # or "FLAGS_check_nan_inf"

In eager mode, every op kernel then checks its outputs, forward and backward, and the first
NaN or Inf raises `NanInfError` naming the op, whether it ran forward or backward, and its
inputs' shapes and dtypes. Static programs use `Executor(check_nan_inf=True)` instead, whose
plans carry the check only when asked for.

Why kernel wrapping: the eager hot path calls `OpCall.kernel` directly, so the check is
installed by swapping those kernels for checking wrappers and removed by swapping them back;
with the flag off, eager mode runs exactly the code it runs without this module.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .framework.errors import NanInfError

_FLAGS: dict[str, Any] = {"check_nan_inf": False}
_saved_kernels: dict[str, Callable[..., Any]] = {}
_state = {"phase": "forward", "count": 0, "run_backward": None}


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
    if not isinstance(flags, dict):
        raise TypeError(f"set_flags expects a dict of flag names to values, got {type(flags).__name__}")
    for name, value in flags.items():
        key = _key(name)
        if key == "check_nan_inf":
            _set_check_nan_inf(bool(value))
        _FLAGS[key] = value


def _set_check_nan_inf(on: bool) -> None:
    from .eager import engine
    from .ops.registry import registered_ops
    if on and not _saved_kernels:
        for op_type in registered_ops():
            call = engine.op_call(op_type)
            _saved_kernels[op_type] = call.kernel
            call.kernel = _checked(op_type, call.kernel)
        _state["run_backward"] = engine.run_backward
        engine.run_backward = _backward_phase(engine.run_backward)
        _state["count"] = 0
    elif not on and _saved_kernels:
        for op_type, kernel in _saved_kernels.items():
            engine.op_call(op_type).kernel = kernel
        _saved_kernels.clear()
        engine.run_backward = _state["run_backward"]


def _backward_phase(run_backward: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(run_backward)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        saved, _state["phase"] = _state["phase"], "backward"
        try:
            return run_backward(*args, **kwargs)
        finally:
            _state["phase"] = saved
    return wrapper


def _checked(op_type: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
    from .ops.registry import get_op_def
    slots = [slot.name for slot in get_op_def(op_type).inputs]

    def run(*args: Any, **kwargs: Any) -> Any:
        out = kernel(*args, **kwargs)
        _state["count"] += 1
        for value in _flat(out):
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                kind = "NaN" if np.isnan(value).any() else "Inf"
                raise NanInfError(f"{kind} in the output of op {op_type} ({_state['phase']} op, eager mode, "
                                  f"op #{_state['count'] - 1} since check_nan_inf was set); its inputs: "
                                  f"{_describe(slots, args)}")
        return out
    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run


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
