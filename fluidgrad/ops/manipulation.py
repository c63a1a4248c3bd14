"""Shape-building ops: tile, expand, pad, flip, roll, ..."""
from __future__ import annotations
