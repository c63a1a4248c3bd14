"""What the pictures share: which phase an op belongs to, and where a long program repeats itself.

A deep network is mostly one op sequence repeated (matmul, add, relu per layer; their grad ops
in the backward; one update op per parameter). `collapse_repeats` finds such runs so that a
picture can draw the first and last repeat and say how many it left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .framework import BACKWARD, FORWARD, LOSS, OPTIMIZE, Operator

PHASES = (FORWARD, BACKWARD, OPTIMIZE)
ROLE_COLORS = {FORWARD: "#cfe2ff", LOSS: "#e0c8ff", BACKWARD: "#ffd8a8", OPTIMIZE: "#c3f0ca"}
PARAMETER_COLOR = "#fff3a0"
PHASE_LABELS = {FORWARD: "forward", BACKWARD: "backward (append_backward)", OPTIMIZE: "optimizer (minimize)"}
MIN_HIDDEN = 4      # collapse only runs that hide at least this many repeats
MAX_PERIOD = 12     # the longest op sequence looked for (a transformer block is longer: drawn in full)


def phase_of(op: Operator) -> str:
    role = op.role
    return FORWARD if role in (FORWARD, LOSS) or role not in PHASES else role


@dataclass
class Run:
    """Repeats of `types` not drawn: `hidden_repeats` of them, starting at op `first_hidden`."""

    types: tuple[str, ...]
    hidden_repeats: int
    first_hidden: int


def collapse_repeats(ops: Sequence[Operator], indices: Sequence[int]) -> list[int | Run]:
    """The op indices to draw, in order, with a `Run` in place of each stretch of repeats
    (the first and last repeat of a run stay, so the picture shows how a repeat connects)."""
    types = [op.type for op in ops]
    items: list[int | Run] = []
    i = 0
    while i < len(types):
        period, count = _longest_run(types, i)
        if count - 2 >= MIN_HIDDEN:
            items += list(indices[i:i + period])
            items.append(Run(tuple(types[i:i + period]), count - 2, indices[i + period]))
            last = i + (count - 1) * period
            items += list(indices[last:last + period])
            i += count * period
        else:
            items.append(indices[i])
            i += 1
    return items


def _longest_run(types: Sequence[str], start: int) -> tuple[int, int]:
    """(period, repeats) of the op-type sequence repeated most (by ops covered) from `start`."""
    best = (1, 1)
    for period in range(1, MAX_PERIOD + 1):
        if start + 2 * period > len(types):
            break
        pattern = types[start:start + period]
        count = 1
        while types[start + count * period:start + (count + 1) * period] == pattern:
            count += 1
        if count > 1 and count * period > best[0] * best[1]:
            best = (period, count)
    return best
