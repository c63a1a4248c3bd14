"""torch.cuda for a CPU-only framework: the questions torch scripts ask before choosing a device
get the CPU's answers, and the calls that are harmless without a GPU do nothing, so

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.cuda.manual_seed_all(0)

runs unchanged. Whatever would need a GPU (current_device(), get_device_name(), set_device(0),
torch.cuda.amp, ...) raises at once and says that fluidgrad runs on the CPU, never a silent
fallback."""
from __future__ import annotations

import numbers
from typing import Any, NoReturn

__all__ = ["current_device", "device_count", "empty_cache", "get_device_name", "get_device_properties",
           "is_available", "is_initialized", "manual_seed", "manual_seed_all", "set_device", "synchronize"]

_NO_GPU = ("fluidgrad runs on the CPU only (NumPy kernels): there is no CUDA device "
           "(fluidgrad.cuda.is_available() is False)")


def is_available() -> bool:
    """False: there is no CUDA backend."""
    return False


def device_count() -> int:
    """0 CUDA devices."""
    return 0


def is_initialized() -> bool:
    """False: CUDA is never initialised."""
    return False


def _seed(what: str, seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"fluidgrad.cuda.{what}: the seed must be an int, got {seed!r}")


def manual_seed(seed: int) -> None:
    """Nothing to seed (no GPU generator); `fluidgrad.manual_seed(seed)` seeds fluidgrad's."""
    _seed("manual_seed", seed)


def manual_seed_all(seed: int) -> None:
    """Nothing to seed (no GPU generators); `fluidgrad.manual_seed(seed)` seeds fluidgrad's."""
    _seed("manual_seed_all", seed)


def synchronize(device: Any = None) -> None:
    """Nothing to wait for: every op has finished when it returns."""


def empty_cache() -> None:
    """Nothing to free: there is no GPU memory cache."""


def _no_gpu(what: str) -> NoReturn:
    raise RuntimeError(f"fluidgrad.cuda.{what}: {_NO_GPU}")


def current_device() -> int:
    """Refused: there is no current CUDA device."""
    _no_gpu("current_device()")


def get_device_name(device: Any = None) -> str:
    """Refused: there is no CUDA device to name."""
    _no_gpu("get_device_name()")


def get_device_properties(device: Any = None) -> Any:
    """Refused: there is no CUDA device."""
    _no_gpu("get_device_properties()")


def set_device(device: Any) -> None:
    """Refused: there is no CUDA device to choose."""
    _no_gpu(f"set_device({device!r})")


def __getattr__(name: str) -> Any:
    """torch.cuda's other names (amp, Stream, Event, memory_allocated, ...) are refused with the reason."""
    if name.startswith("__"):
        raise AttributeError(name)
    hint = "; mixed precision is fluidgrad.amp (auto_cast, GradScaler)" if name == "amp" else ""
    raise AttributeError(f"fluidgrad.cuda.{name}: {_NO_GPU}{hint}")
