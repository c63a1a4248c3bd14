"""The IR's two calls into the op registry (validation and shape inference), kept in one place."""
from __future__ import annotations

from typing import Any


def infer_op(op: Any) -> None:
    from ..ops.registry import infer_op as infer
    infer(op)
