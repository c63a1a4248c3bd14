"""The device a value lives on. fluidgrad runs on the CPU only (NumPy kernels), so there is one:
`CPUPlace()` (Paddle's name), which is also what torch code reads as `x.device` and passes back
(`fg.zeros(n, device=x.device)`, `model.to(x.device)`).

`as_device` is the one place a device argument is read: None, a CPUPlace, the names "cpu" /
"cpu:0" (any case; Paddle's "Place(cpu)" too) and objects that print as one (torch.device("cpu"))
mean the CPU; anything else ("cuda", "gpu:0", 0) is a ValueError that says fluidgrad runs on the
CPU, never a silent fallback."""
from __future__ import annotations

import re
from typing import Any

_CPU_NAME = re.compile(r"(cpu(:\d+)?|place\(cpu\)|cpuplace(\(\))?)")
# devices other frameworks have (refused here, but recognised as devices in error messages)
_OTHER_DEVICE = re.compile(r"(cuda|gpu|xpu|mps|npu|ipu|hpu|xla|meta|hip|mtia|vulkan|privateuseone)(:\d+)?")


class CPUPlace:
    """The host CPU. Equal to every CPUPlace and to the names "cpu" / "cpu:0"; prints as torch's
    device does ("cpu"), with torch's `.type` / `.index` and Paddle's `is_cpu_place()`."""

    __slots__ = ()
    type = "cpu"
    index = None

    def __repr__(self) -> str:
        return "CPUPlace()"

    def __str__(self) -> str:
        return "cpu"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CPUPlace) or (isinstance(other, str) and _names_cpu(other))

    def __hash__(self) -> int:
        return hash("cpu")

    def is_cpu_place(self) -> bool:
        return True

    def is_gpu_place(self) -> bool:
        return False


CPU = CPUPlace()


def _names_cpu(name: str) -> bool:
    return _CPU_NAME.fullmatch(name.strip().lower()) is not None


def is_cpu(device: Any) -> bool:
    """Whether `device` names the CPU (None does not: see as_device)."""
    if isinstance(device, CPUPlace):
        return True
    if isinstance(device, (bool, int, float)) or device is None:   # torch's device=0 is cuda:0
        return False
    return _names_cpu(str(device))


def names_a_device(value: Any) -> bool:
    """Whether `value` is meant as a device (the CPU or another framework's: "cuda:0", a device
    object, torch's device index 0), as opposed to, say, a dtype."""
    if is_cpu(value) or isinstance(value, int) and not isinstance(value, bool):
        return True
    if isinstance(value, str):
        return _OTHER_DEVICE.fullmatch(value.strip().lower()) is not None
    return hasattr(value, "type") and hasattr(value, "index")   # torch.device


def as_device(device: Any, what: str) -> CPUPlace:
    """The device `device` names, None meaning the CPU; a device fluidgrad does not have is a
    ValueError naming `what` (the function or method that was given it)."""
    if device is None or is_cpu(device):
        return CPU
    raise ValueError(f"{what}: fluidgrad runs on the CPU only (NumPy kernels); got device {device!r}")
