"""The time loop of a recurrent layer as a program loop, for a static sequence length of -1.

With a known length the layers unroll their steps into ordinary ops (rnn.py, rnn_wrappers.py).
An InputSpec([None, None, 4]) or `static.data("x", [-1, -1, 4])` leaves the length to the run,
so the steps become one `while` loop, differentiable (`while_grad`) and exported to
ONNX as a Loop:

- the first step runs before the loop (peeled): it gives the states their shapes and dtypes
  (a None initial state stays the cell's own zero state, as in the unrolled path) and the
  first row of each output;
- the later steps are a `while_loop_scan`: the rest of the time-major input (flipped when
  the steps run in reverse) is its scan input, each step reading its row; the output rows are
  its scan outputs (collected per step and stacked once, after the peeled row), flipped back
  when the steps ran in reverse, so the outputs end [time, batch, ...] in input order;
- `step(x_t, states, t)` is the caller's: the cell, and a padded batch's masks built from the
  step's time index `t` ([1] int64), as `time_step_mask` does.

Training costs O(time): each step keeps its own values for `while_grad`, the gradient of an
output row is a view of the outputs' gradient, and each step writes its own row of the input's
gradient. (This loop used to append each output row to a loop-carried buffer with `concat`,
copying the buffer every step and keeping every copy for the gradient, O(time^2) memory, and
to `gather` each input row, whose gradient is a zero-filled full-size copy per step, O(time^2)
time; benchmarks/bench_rnn_loop.py measures the difference.) A known length
stays unrolled into ordinary ops, which is faster still.
"""
from __future__ import annotations

from typing import Any, Callable

from ... import functions as F
from ...dispatch import apply_op
from ...static.control_flow import while_loop_scan

__all__ = ['is_dynamic_length', 'run_over_time', 'time_step_mask']


def is_dynamic_length(length: Any) -> bool:
    """A static time length of -1 (an InputSpec's None, `static.data`'s -1): unknown until the run."""
    return int(length) < 0


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, (tuple, list)):
        return [leaf for part in tree for leaf in _leaves(part)]
    return [tree]


def _rebuild(tree: Any, leaves: Any) -> Any:
    """`tree`'s nesting (tuples and lists) with the values of the iterator `leaves`."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_rebuild(part, leaves) for part in tree)
    return next(leaves)


_TO_THE_END = 2**62  # a slice end past any length


def _row(x: Any, t: Any) -> Any:
    """Row t ([1] int64) of axis 0 of x, that axis dropped."""
    return F.squeeze(F.gather(x, t, axis=0), [0])


def run_over_time(step: Callable[[Any, Any, Any], tuple[Any, Any]], x: Any, states: Any,
                  reverse: bool = False) -> tuple[Any, Any]:
    """`step` over every row of the time-major Variable x, whose length is known only when the
    program runs: (the outputs stacked on axis 0, nested as step returns them; final states)."""
    one = F.full([1], 1, "int64")
    length = F.slice(apply_op("shape", {"X": x}), [0], [0], [1])           # [1] int64
    last = F.subtract(length, one)

    def time_of(k: Any) -> Any:
        return F.subtract(last, k) if reverse else k

    first = time_of(F.full([1], 0, "int64"))
    output, states = step(_row(x, first), states, first)
    out_tree, state_tree = output, states
    out_leaves, state_leaves = _leaves(output), _leaves(states)

    def more(k: Any, *carried: Any) -> Any:
        return F.less_than(k, length)

    def body(k: Any, *carried_and_row: Any) -> tuple[list[Any], list[Any]]:
        *carried, x_t = carried_and_row
        t = time_of(k)
        new_output, new_states = step(x_t, _rebuild(state_tree, iter(carried)), t)
        return [F.add(k, one)] + _leaves(new_states), _leaves(new_output)

    # loop step i (counter k = i + 1: time k, or T - 1 - k in reverse) reads row i of the rows after the first
    rest = F.slice(apply_op("flip", {"X": x}, {"axis": [0]}) if reverse else x, [0], [1], [_TO_THE_END])
    finals, stacked = while_loop_scan(more, body, [one] + state_leaves, [F.unsqueeze(o, [0]) for o in out_leaves],
                                      [rest])
    if reverse:  # the rows come in the order the steps ran: last time first
        stacked = [apply_op("flip", {"X": s}, {"axis": [0]}) for s in stacked]
    return _rebuild(out_tree, iter(stacked)), _rebuild(state_tree, iter(finals[1:]))


def time_step_mask(lengths: Any, t: Any, dtype: str) -> tuple[Any, Any]:
    """(m, 1 - m), each [batch, 1] of `dtype`: m 1 for the sequences whose length exceeds t."""
    lengths = lengths if lengths.dtype == "int64" else F.cast(lengths, "int64")
    mask = F.unsqueeze(F.cast(F.less_than(t, lengths), dtype), [1])
    return mask, F.scale(mask, -1.0, 1.0)
