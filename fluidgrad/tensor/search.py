"""Selection and indexing: where, argmax, topk, sort, take_along_axis, ..."""
from __future__ import annotations

__all__: list[str] = []
