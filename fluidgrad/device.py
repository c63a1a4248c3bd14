"""Paddle's device functions for a CPU-only framework: scripts that begin with
`paddle.set_device("cpu")` run unchanged, and asking for a GPU fails at once and says why,
instead of silently running on the CPU.

The module is also torch.device: `fluidgrad.device("cpu")` is the CPU (a CPUPlace, which prints
as "cpu" and is what `x.device` gives), and `isinstance(x.device, fluidgrad.device)` holds."""
from __future__ import annotations

import sys
import types
from typing import Any

from .framework.device import CPUPlace, as_device

_CPU = "cpu"


def set_device(device: Any) -> str:
    """Accept the CPU ("cpu", CPUPlace(), x.device: the only device fluidgrad has); refuse "gpu",
    "gpu:0", ... with a ValueError."""
    as_device(device, f"set_device({device!r})")
    return _CPU


def get_device() -> str:
    """The device ops run on: always "cpu"."""
    return _CPU


def is_compiled_with_cuda() -> bool:
    """False: there is no CUDA backend."""
    return False


class _CallableDeviceModule(types.ModuleType):
    """`fluidgrad.device` stays Paddle's module (`fg.device.set_device("cpu")`) and, called, is
    torch.device: `fg.device("cpu")`, `fg.device("cpu", 0)`, `fg.device(type="cpu")`. A module
    class rather than a function named `device`, which would hide the module (as fg.tensor)."""

    def __call__(self, type: Any, index: int | None = None) -> CPUPlace:
        """The CPU for "cpu" / "cpu:0" / a CPUPlace / torch.device("cpu"); any other device
        ("cuda", "cuda:0", 0) is a ValueError saying fluidgrad runs on the CPU."""
        name = type if index is None else f"{type}:{index}"
        return as_device(name, f"device({name!r})")

    def __instancecheck__(self, value: Any) -> bool:
        return isinstance(value, CPUPlace)


sys.modules[__name__].__class__ = _CallableDeviceModule
