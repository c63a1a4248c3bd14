"""Values the importer needs now, computed by running the ops that make them.

fold.py evaluates the common shape arithmetic node by node with NumPy. Anything else that
a shape slot needs (a Split of a constant, a function body's float arithmetic, ...) already
became ops of the program; when those ops read only constants (no graph input, no
trainable parameter), they are copied into a scratch program and run once, so the value is
known when the program is built. The ops stay in the imported program (unused there).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..executor import Executor, Scope
from ..framework import Block, Program, Variable

MAX_OPS = 200  # a shape computation is short; a longer chain is data, not a shape


def evaluate_constant(var: Variable, values: Mapping[str, np.ndarray], trainable: set[str]) -> np.ndarray | None:
    """The value of `var` (a variable of the global block) if the ops writing it read only
    constants from `values` (and no trainable parameter, no fed input); else None."""
    block = var.block
    if block.idx != 0:
        return None
    ops = _producing_ops(block, var.name, values, trainable)
    if ops is None:
        return None
    if not ops:
        return np.array(values[var.name])  # the constant itself (a cast to its own dtype, ...)
    scratch = Program()
    target = scratch.global_block()
    scope = Scope()
    for op in ops:
        for name in op.input_arg_names + op.output_arg_names:
            if name and not target.has_var(name):
                source = block.var(name)
                target.create_var(name, source.shape, source.dtype, persistable=name in values)
                if name in values:
                    scope[name] = values[name]
        target.append_op(op.type, {s: op.input(s) for s in op.input_names},
                         {s: op.output(s) for s in op.output_names}, dict(op.attrs))
    try:
        value, = Executor().run(scratch, fetch_list=[var.name], scope=scope)
    except Exception:  # noqa: BLE001  (not computable now: the caller reports what it needed)
        return None
    return np.asarray(value)


def _producing_ops(block: Block, name: str, values: Mapping[str, np.ndarray], trainable: set[str]) -> list | None:
    writer = {}
    for index, op in enumerate(block.ops):
        for out in op.output_arg_names:
            writer[out] = index
    needed: set[int] = set()
    todo = [name]
    seen: set[str] = set()
    while todo:
        current = todo.pop()
        if current in seen or not current:
            continue
        seen.add(current)
        if current in trainable:
            return None
        if current in values and current not in writer:
            continue
        if current not in writer or block.ops[writer[current]].has_attr("sub_block"):
            return None  # a fed input, or control flow
        index = writer[current]
        if index not in needed:
            needed.add(index)
            if len(needed) > MAX_OPS:
                return None
            todo.extend(block.ops[index].input_arg_names)
    return [block.ops[i] for i in sorted(needed)]
