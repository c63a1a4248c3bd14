"""Shape building and rearranging: tile, expand, stack, chunk, flip, roll, ..."""
from __future__ import annotations

__all__: list[str] = []
