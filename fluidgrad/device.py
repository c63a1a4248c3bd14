"""Paddle's device functions for a CPU-only framework: scripts that begin with
`paddle.set_device("cpu")` run unchanged, and asking for a GPU fails at once and says why,
instead of silently running on the CPU."""
from __future__ import annotations

from typing import Any

from .framework.device import as_device

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
