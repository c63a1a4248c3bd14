"""Creating tensors: arange, linspace, meshgrid, ..."""
from __future__ import annotations

__all__: list[str] = []
