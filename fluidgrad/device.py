"""Paddle's device functions for a CPU-only framework: scripts that begin with
`paddle.set_device("cpu")` run unchanged, and asking for a GPU fails at once and says why,
instead of silently running on the CPU."""
from __future__ import annotations

_CPU = "cpu"


def set_device(device: str) -> str:
    """Accept "cpu" (the only device fluidgrad has); refuse "gpu", "gpu:0", ... with a ValueError."""
    name = str(device).strip().lower()
    if name != _CPU and not name.startswith(_CPU + ":"):
        raise ValueError(f"set_device({device!r}): fluidgrad runs on the CPU only (NumPy kernels, no gpu "
                         f"backend); use 'cpu'")
    return _CPU


def get_device() -> str:
    """The device ops run on: always "cpu"."""
    return _CPU


def is_compiled_with_cuda() -> bool:
    """False: there is no CUDA backend."""
    return False
