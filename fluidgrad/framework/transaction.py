"""Builds that fail leave the program as it was.

A builder that appends several ops and blocks (append_backward, while_loop, cond) can fail
half-way, e.g. on an op without a gradient or a loop body of the wrong shape. Programs only
grow while building (ops and variables are appended, blocks added at the end), so undoing a
failed build is truncation back to the lengths recorded before it: O(number of blocks) to
record, nothing to copy.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
from typing import Any, Callable, Iterator

from .program import Program, default_main_program


@contextlib.contextmanager
def rollback_on_error(program: Program) -> Iterator[None]:
    marks = [(len(block.ops), len(block.vars)) for block in program.blocks]
    current = program._current_block_idx
    try:
        yield
    except BaseException:
        del program.blocks[len(marks):]
        for block, (n_ops, n_vars) in zip(program.blocks, marks):
            del block.ops[n_ops:]
            if len(block.vars) > n_vars:
                block.vars = dict(itertools.islice(block.vars.items(), n_vars))
        program._current_block_idx = current
        program._bump()
        raise


def atomic_build(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a builder that writes into the default main program: on error, undo its writes."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with rollback_on_error(default_main_program()):
            return fn(*args, **kwargs)
    return wrapper
