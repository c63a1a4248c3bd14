"""Op-case tables, one module per op family: each module defines `CASES: list[OpCase]`.

tests/test_ops.py runs every case through the same checks as its own table (forward against
PyTorch or NumPy, gradient against central differences and PyTorch, float32 kept, declared
shapes, inputs never modified) and tests/test_eager.py checks eager against static on them.
"""
from __future__ import annotations

import importlib
import pkgutil

from fluidgrad.testing import OpCase


def collect_cases() -> list[OpCase]:
    cases: list[OpCase] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "common":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cases += list(getattr(module, "CASES", []))
    return cases
