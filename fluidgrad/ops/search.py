"""Selection and indexing ops: where, argmax, topk, sort, scatter, ..."""
from __future__ import annotations
