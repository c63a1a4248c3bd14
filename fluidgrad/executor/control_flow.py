"""The control-flow runtime: how `while` and `conditional_block` run their sub-blocks.

The ops (ops/control_flow.py) declare slots, shape rules and grad makers; their kernels call
the functions here through the runtime the plan passes them (`rt`). This module knows how a
sub-block plan stores its values (executor/plan.py, `keep_all`): every local and a snapshot
of every outer value it read stay in the scope it ran in, and outer variables are written
with `scope.parent.assign`. So:

* `while` runs each iteration in a fresh step scope whose parent is a loop scope holding
  the op's inputs; outer writes land in the loop scope, and the list of step scopes is the
  op's `StepScopes` output: exactly what the gradient needs, step by step (kept only when a
  `while_grad` of the program reads it: an inference run drops each step as the next starts).
  Scan outputs collect one row per step (the value a step left in a scanned variable) and are
  stacked once at the end, so a loop's outputs cost O(steps), not a copy per step.
* `while_grad` runs the grad block once per step in reverse, in a scope whose parent is
  that step's scope. A loop-carried variable's gradient passes from step to step; the
  gradient of a variable only read in the loop is summed over the steps; a scanned variable's
  gradient at step i is row i of its scan output's gradient (a view, no copy).
* `conditional_block` runs its sub-block when `Cond` holds and keeps the scope it ran in;
  `conditional_block_grad` runs the grad block there, or gives zeros if the branch did not run.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..framework.names import EMPTY_VAR_NAME
from .scope import Scope


def _truth(value: Any, op_type: str, name: str) -> bool:
    if getattr(value, "size", None) == 1:
        return bool(value)
    array = np.asarray(value)
    if array.size != 1:
        raise ValueError(f"{op_type}: condition {name} must hold one element, got shape {list(array.shape)}")
    return bool(array.reshape(-1)[0])


def _is_float_array(value: Any) -> bool:
    """A float array, or a NumPy float scalar (what a ufunc returns for 0-d inputs)."""
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dtype.kind == "f"


def _block_writes(block: Any) -> frozenset[str]:
    """Every name an op of `block` writes, cached per program version (blocks change rarely)."""
    cache = block.__dict__.get("_writes_cache")
    version = block.program._version
    if cache is None or cache[0] != version:
        names = frozenset(n for op in block.ops for n in op.output_arg_names if n != EMPTY_VAR_NAME)
        cache = (version, names)
        block.__dict__["_writes_cache"] = cache
    return cache[1]


def _written_value(block: Any, scope: Scope, name: str) -> Any:
    """Where the plan of `block`, run in `scope`, left the value it wrote to `name`."""
    return _value_left(scope, name, _is_local(block, name))


def _value_left(scope: Scope, name: str, local: bool) -> Any:
    """A variable declared in the block is stored in `scope.vars`; one declared in an ancestor
    block went through `scope.parent.assign` (while `scope.vars` keeps the value read)."""
    if local:
        return scope.vars[name]
    owner = scope.parent.find_owner(name)
    if owner is None:
        raise KeyError(f"a grad block wrote {name!r}, but its value is nowhere in the scope chain")
    return owner.vars[name]


def _is_local(block: Any, name: str) -> bool:
    return block.has_var(name) or block._find_var_recursive(name) is None



class _Zeros:
    """One zero array per variable, shared: kernels never write their inputs in place."""

    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray] = {}

    def like(self, name: str, value: np.ndarray) -> np.ndarray:
        zeros = self._cache.get(name)
        if zeros is None or zeros.shape != value.shape or zeros.dtype != value.dtype:
            zeros = np.zeros_like(value)
            self._cache[name] = zeros
        return zeros



def run_while(rt: Any, xs: Sequence[Any], condition: Any, scan_inits: Sequence[Any], scan_ins: Sequence[Any],
              op: Any, sub_block: Any, scan_vars: Sequence[str] = (), scan_in_vars: Sequence[str] = ()) -> tuple:
    cond_name = op.input("Condition")[0]
    loop_scope = Scope()
    loop_scope.vars.update(zip(op.input("X"), xs))
    loop_scope.vars[cond_name] = condition
    step_scopes: list[Scope] = []
    rows: list[tuple] = []
    scan_vars = tuple(scan_vars)
    keep = _step_scopes_are_read(op)  # else each step's values go when the next step starts
    steps = 0
    while _truth(loop_scope.vars[cond_name], "while", cond_name):
        step = Scope(loop_scope)
        _give_rows(step, steps, scan_ins, scan_in_vars)
        scanned = rt.run_block(sub_block, step, scan_vars)
        if scan_vars:
            rows.append(scanned)
        if keep:
            step_scopes.append(step)
        steps += 1
    return [loop_scope.vars[n] for n in op.output("Out")], step_scopes, _stacked(scan_inits, rows, scan_vars)


def _give_rows(step: Scope, i: int, scan_ins: Sequence[Any], scan_in_vars: Sequence[str]) -> None:
    """Step i reads row i of each scan input (a view)."""
    for x, name in zip(scan_ins, scan_in_vars):
        if i >= len(x):
            raise ValueError(f"while: step {i} reads row {i} of the scan input of {name}, which has {len(x)} rows")
        step.vars[name] = x[i]


def _stacked(scan_inits: Sequence[Any], rows: list[tuple], scan_vars: Sequence[str]) -> list:
    """Each scan output in one copy: its initial rows, then one row per step (ONNX Loop's scan
    outputs). Growing it step by step instead would copy it every step (time^2)."""
    result = []
    for k, (init, name) in enumerate(zip(scan_inits, scan_vars)):
        init = np.asarray(init)
        out = np.empty((len(init) + len(rows),) + init.shape[1:], init.dtype)
        out[:len(init)] = init
        for i, row in enumerate(rows):
            value = np.asarray(row[k])
            if value.shape != init.shape[1:] or value.dtype != init.dtype:
                raise ValueError(f"while: step {i} gave the scanned {name} shape {list(value.shape)} {value.dtype}, "
                                 f"but its ScanInit rows are {list(init.shape[1:])} {init.dtype}")
            out[len(init) + i] = value
        result.append(out)
    return result


def _step_scopes_are_read(op: Any) -> bool:
    """Whether a `while_grad` of the program reads this loop's step scopes: a loop run for
    inference (jit.load, a for_test clone) keeps none, so memory does not grow with the steps."""
    program = op.block.program
    cache = program.__dict__.get("_step_scope_reads")
    if cache is None or cache[0] != program._version:
        names = frozenset(name for block in program.blocks for op_ in block.ops if op_.type == "while_grad"
                          for name in op_.input("StepScopes"))
        cache = (program._version, names)
        program.__dict__["_step_scope_reads"] = cache
    return any(name in cache[1] for name in op.output("StepScopes"))



def run_while_grad(rt: Any, xs: Sequence[Any], out_grads: Sequence[Any], step_scopes: list,
                   scan_inits: Sequence[Any], scan_out_grads: Sequence[Any], scan_ins: Sequence[Any], op: Any,
                   sub_block: Any, carried: Sequence[str], x_grad_names: Sequence[str],
                   scan_grad_names: Sequence[str] = (), scan_in_grad_names: Sequence[str] = ()) -> list:
    scan_rows = _scan_grad_rows(scan_inits, scan_out_grads, len(step_scopes), scan_grad_names)
    scan_in_grads = [(name, np.zeros_like(x)) for name, x in zip(scan_in_grad_names, scan_ins)]
    x_grads = _run_while_grad_steps(rt, xs, out_grads, step_scopes, scan_rows, scan_in_grads, op, sub_block,
                                    carried, x_grad_names)
    init_grads = [np.asarray(g)[:len(init)] if g is not None else np.zeros_like(init)
                  for init, g in zip(scan_inits, scan_out_grads)]
    return x_grads + init_grads + [grad for _, grad in scan_in_grads]


def _scan_grad_rows(scan_inits: Sequence[Any], scan_out_grads: Sequence[Any], steps: int,
                    scan_grad_names: Sequence[str]) -> list[tuple[str, Any, int]]:
    """(grad name in the grad block, ScanOut@GRAD, row of step 0) per scanned variable whose
    gradient flows: step i's grad block reads row first + i as the scanned variable's gradient."""
    rows = []
    for init, grad, name in zip(scan_inits, scan_out_grads, scan_grad_names):
        if grad is None:
            continue
        first = len(init)
        if len(grad) != first + steps:
            raise ValueError(f"while_grad: the gradient of a scan output has {len(grad)} rows, but the loop gave "
                             f"{first} initial rows and ran {steps} steps")
        rows.append((name, grad, first))
    return rows


def _run_while_grad_steps(rt: Any, xs: Sequence[Any], out_grads: Sequence[Any], step_scopes: list,
                          scan_rows: list[tuple[str, Any, int]], scan_in_grads: list[tuple[str, np.ndarray]],
                          op: Any, sub_block: Any, carried: Sequence[str], x_grad_names: Sequence[str]) -> list:
    grad_block = sub_block
    written = _block_writes(grad_block)
    x_names = op.input("X")
    values = dict(zip(x_names, xs))
    grad_of = dict(zip(x_names, x_grad_names))
    zeros = _Zeros()
    incoming = {grad_of[n]: (g if g is not None else zeros.like(n, values[n])) for n, g in zip(carried, out_grads)}
    carried_set = set(carried)
    read_only = [grad_of[n] for n, x in zip(x_names, xs)
                 if n not in carried_set and _is_float_array(x) and grad_of[n] in written]
    summed: dict[str, np.ndarray] = {}
    owned: set[str] = set()
    local = {g: _is_local(grad_block, g) for g in incoming.keys() | set(read_only) | {n for n, _ in scan_in_grads}}
    for i in range(len(step_scopes) - 1, -1, -1):
        grad_scope = Scope(step_scopes[i])
        grad_scope.vars.update(incoming)
        for name, grad, first in scan_rows:
            grad_scope.vars[name] = grad[first + i]
        rt.run_block(grad_block, grad_scope)
        for name in carried:
            grad_name = grad_of[name]
            incoming[grad_name] = (_value_left(grad_scope, grad_name, local[grad_name]) if grad_name in written
                                   else zeros.like(name, values[name]))
        for grad_name in read_only:
            _accumulate(summed, owned, grad_name, _value_left(grad_scope, grad_name, local[grad_name]))
        for grad_name, rows in scan_in_grads:  # row i of a scan input's gradient: step i's alone
            if grad_name in written:
                rows[i] = _value_left(grad_scope, grad_name, local[grad_name])
    if _last_reader_of_step_scopes(op):
        step_scopes.clear()  # the forward values of every step go now, not with the program
    result = []
    for name, x in zip(x_names, xs):
        if not _is_float_array(x):
            result.append(None)
        elif name in carried_set:
            result.append(incoming[grad_of[name]])
        else:
            result.append(summed.get(grad_of[name], zeros.like(name, x)))
    return result


def _accumulate(summed: dict[str, np.ndarray], owned: set[str], name: str, value: np.ndarray) -> None:
    """Sum over steps; the sum is copied once, then added to in place (it is ours alone)."""
    if name not in summed:
        summed[name] = value
    elif name in owned:
        np.add(summed[name], value, out=summed[name])
    else:
        summed[name] = np.asarray(summed[name] + value)  # 0-d arrays add to a scalar, not an array
        owned.add(name)



def run_conditional_block(rt: Any, cond: Any, inputs: Sequence[Any], op: Any, sub_block: Any) -> tuple:
    in_names, out_names = op.input("Input"), op.output("Out")
    if not _truth(cond, "conditional_block", op.input("Cond")[0]):
        # an output that is also an input keeps its value; a fresh one stays unset (None)
        values = dict(zip(in_names, inputs))
        return [values.get(n) for n in out_names], None
    io_scope = Scope()
    io_scope.vars.update(zip(in_names, inputs))
    branch = Scope(io_scope)
    rt.run_block(sub_block, branch)
    return [io_scope.vars.get(n) for n in out_names], branch



def run_conditional_block_grad(rt: Any, inputs: Sequence[Any], out_grads: Sequence[Any], branch: Any,
                                   op: Any, sub_block: Any, out_names: Sequence[str],
                                   out_grad_names: Sequence[str], input_grad_names: Sequence[str]) -> list:
    in_names = op.input("Input")
    passed = dict(zip(out_names, out_grads))
    if branch is None:
        # not run: an output that is an input passed through unchanged, so does its gradient
        return [None if not _is_float_array(x) else
                passed[n] if passed.get(n) is not None else np.zeros_like(x)
                for n, x in zip(in_names, inputs)]
    grad_block = sub_block
    written = _block_writes(grad_block)
    grad_scope = Scope(branch)
    grad_scope.vars.update({n: g for n, g in zip(out_grad_names, out_grads) if g is not None})
    rt.run_block(grad_block, grad_scope)
    result = []
    for x, grad_name in zip(inputs, input_grad_names):
        if not _is_float_array(x):
            result.append(None)
        elif grad_name in written:
            result.append(_written_value(grad_block, grad_scope, grad_name))
        else:
            result.append(np.zeros_like(x))
    return result


def _last_reader_of_step_scopes(op: Any) -> bool:
    """Whether no later op of the block reads this op's StepScopes: a second backward pass over
    the same loop (two `gradients` calls) adds a second `while_grad` that needs the steps too."""
    block = op.block
    cache = block.__dict__.get("_step_scope_readers")
    if cache is None or cache[0] != block.program._version:
        last: dict[str, int] = {}
        for op_ in block.ops:
            for name in op_.input("StepScopes") if op_.type == "while_grad" else ():
                last[name] = id(op_)
        cache = (block.program._version, last)
        block.__dict__["_step_scope_readers"] = cache
    return all(cache[1].get(name) == id(op) for name in op.input("StepScopes"))

