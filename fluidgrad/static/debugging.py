"""Seeing into a static program as Paddle 2 scripts do: `Print(x, message=...)` prints a value each
time the Executor computes it (and its gradient in the backward part), `name_scope("encoder")`
labels the ops built inside (their op_namescope attribute, listed by `str(program)`)."""
from __future__ import annotations

import itertools
from typing import Any

from ..dispatch import apply_op
from ..framework.name_scope import name_scope
from ..ops.printing import PHASES

__all__ = ["Print", "name_scope"]

_print_ids = itertools.count(1)


def Print(input: Any, first_n: int = -1, message: str | None = None, summarize: int = 20,
          print_tensor_name: bool = True, print_tensor_type: bool = True, print_tensor_shape: bool = True,
          print_tensor_layout: bool = True, print_tensor_lod: bool = True, print_phase: str = "both") -> Any:
    """input unchanged, printed (message, name, shape, dtype, the first `summarize` values; -1 all)
    each time it is computed, at most first_n times (-1: always); print_phase "backward" or "both"
    prints its gradient too, which passes through (paddle.static.Print). fluidgrad has no layouts
    or LoD, so print_tensor_layout and print_tensor_lod change nothing."""
    phase = str(print_phase).lower()
    if phase not in PHASES:
        raise ValueError(f"Print: print_phase must be one of {list(PHASES)}, got {print_phase!r}")
    attrs = {"first_n": int(first_n), "message": message or "", "summarize": int(summarize),
             "print_tensor_name": bool(print_tensor_name), "print_tensor_type": bool(print_tensor_type),
             "print_tensor_shape": bool(print_tensor_shape), "print_phase": phase,
             "var_name": str(getattr(input, "name", "") or ""), "print_id": next(_print_ids)}
    return apply_op("print", {"In": input}, attrs)
