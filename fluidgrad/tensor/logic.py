"""Logical, bitwise and comparison functions, isnan / isinf / isfinite."""
from __future__ import annotations

__all__: list[str] = []
