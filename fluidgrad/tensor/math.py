"""Elementwise and reduction maths: floor, erf, sinh, prod, logsumexp, cumsum, ..."""
from __future__ import annotations

__all__: list[str] = []
