"""Elementwise ops beyond the basic arithmetic: rounding, erf, trigonometry, bitwise, ..."""
from __future__ import annotations
