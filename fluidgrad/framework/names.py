"""Variable naming conventions shared by the IR, the backward builder and the executor."""
from __future__ import annotations

import contextlib
import itertools
from collections import defaultdict
from typing import Iterator

GRAD_SUFFIX = "@GRAD"
RENAME_SUFFIX = "@RENAME@"
RECOMPUTE_SUFFIX = "@RECOMPUTE"  # a forward value recomputed in the backward part (recompute_pass.py)
EMPTY_VAR_NAME = "@EMPTY@"
TEMP_SUFFIX = "@TMP@"


def grad_var_name(name: str) -> str:
    """`w` -> `w@GRAD`: the one place that spells the gradient suffix."""
    return name + GRAD_SUFFIX


def strip_grad_suffix(name: str) -> str:
    """`w@GRAD@RENAME@0` -> `w`; names without the suffix come back unchanged."""
    pos = name.find(GRAD_SUFFIX)
    return name[:pos] if pos != -1 else name


def rename_var_name(name: str, index: int) -> str:
    return f"{name}{RENAME_SUFFIX}{index}"


class UniqueNameGenerator:
    """Hands out `prefix_0`, `prefix_1`, ... so that builders never collide."""

    def __init__(self) -> None:
        self._counters: defaultdict[str, itertools.count] = defaultdict(itertools.count)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}_{next(self._counters[prefix])}"


_generator = UniqueNameGenerator()


def unique_name(prefix: str) -> str:
    """A fresh name `<prefix>_<k>` (counters per prefix; reset by `unique_name_guard`)."""
    return f"{prefix}_{next(_generator._counters[prefix])}"  # (_generator(prefix), one call less per op)


@contextlib.contextmanager
def unique_name_guard() -> Iterator[None]:
    """Restart numbering inside the block, as Paddle's `unique_name.guard` does."""
    global _generator
    saved, _generator = _generator, UniqueNameGenerator()
    try:
        yield
    finally:
        _generator = saved
