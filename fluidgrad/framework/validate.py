"""Build-time misuse checks: reads that no earlier op, feed or parameter can provide.

    problems = validate_program(program, feed_names=["x"])   # [] when fine
    validate_program(program, raise_error=True)               # ValueError listing them

The Executor finds the same problems when it runs (before any op runs); this finds them
without a scope or feeds, from the program alone: a variable of the global block read before
any op writes it must be a data variable, a persistable (a parameter, whose value the
startup program puts in the scope), or one of `feed_names`. A read that comes before the op
writing it (a cycle, or ops appended out of order) names both ops. Sub-blocks are not
checked: their control-flow op provides values through the step or branch scope (a loop's
incoming gradients, a nested branch's output gradients declared in a sibling grad block),
which only the run can see; the Executor checks those reads when they happen.
"""
from __future__ import annotations

from typing import Iterable

from .names import EMPTY_VAR_NAME
from .program import Block, Program


def _block_problems(block: Block, provided: set[str]) -> list[str]:
    writers: dict[str, int] = {}
    for i, op in enumerate(block.ops):
        for name in op.output_arg_names:
            writers.setdefault(name, i)
    written: set[str] = set()
    problems = []
    for i, op in enumerate(block.ops):
        for name in op.input_arg_names:
            if name == EMPTY_VAR_NAME or name in written or name in provided:
                continue
            var = block._find_var_recursive(name)
            if var is not None and (var.persistable or var.is_data):
                continue
            where = f"op #{i} ({op.type}) in block {block.idx} reads {name!r}"
            later = writers.get(name)
            if later is not None and later > i:
                problems.append(f"{where} before op #{later} ({block.ops[later].type}) writes it")
            elif var is None:
                problems.append(f"{where}, which no block declares")
            else:
                problems.append(f"{where}, which no earlier op writes and which is neither a data variable, "
                                f"a persistable, nor fed")
        written.update(op.output_arg_names)
    return problems


def validate_program(program: Program, feed_names: Iterable[str] = (), raise_error: bool = False) -> list[str]:
    """Every read the program cannot satisfy by itself (see the module docstring)."""
    provided = set(feed_names)
    problems = _block_problems(program.global_block(), provided)
    if problems and raise_error:
        raise ValueError("the program reads variables nothing provides:\n  " + "\n  ".join(problems))
    return problems
