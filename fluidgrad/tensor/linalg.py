"""Linear algebra: einsum, bmm, outer, norm, ..."""
from __future__ import annotations

__all__: list[str] = []
