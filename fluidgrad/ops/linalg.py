"""Linear-algebra ops: einsum, bmm, ..."""
from __future__ import annotations
