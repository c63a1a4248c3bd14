"""Builders for differentiable control flow: `while_loop`, `cond`, and Fluid's `While`.

Each builder opens a sub-block, lets the user's function append ops into it, then finds
what the sub-block reads and writes of the enclosing blocks (its free variables) and
appends one `while` / `conditional_block` op listing them. Nested builders need no special
case: a nested control-flow op already lists its own free variables as inputs and outputs.

    i = fluidgrad.full([], 0, "int64")
    i, h = static.nn.while_loop(lambda i, h: i < 10, lambda i, h: (i + 1, h * 2.0), [i, h])

`while_loop` never writes the variables it is given: the loop runs on copies, and the
returned variables hold the final values.
"""
from __future__ import annotations

import contextlib
import numbers
from typing import Any, Callable, Iterator, Sequence

from .. import functions as F
from ..dispatch import apply_op, is_tensor
from ..framework import Block, Variable, default_main_program, unique_name
from ..framework.names import EMPTY_VAR_NAME
from ..framework.transaction import atomic_build
from ..ops.control_flow import SCOPE_VAR_DTYPE

__all__ = ["While", "assign", "case", "cond", "increment", "switch_case", "while_loop", "while_loop_scan"]


# ---------------------------------------------------------------- free variables
def _free_variables(block: Block) -> tuple[list[str], list[str]]:
    """(read, written): outer variables the ops of `block` read / write, in first-use order."""
    read: dict[str, None] = {}
    written: dict[str, None] = {}

    def outer(name: str) -> bool:
        return name != EMPTY_VAR_NAME and not block.has_var(name) and block.has_var_recursive(name)

    for op in block.ops:
        for name in op.input_arg_names:
            if outer(name):
                read.setdefault(name)
        for name in op.output_arg_names:
            if outer(name):
                written.setdefault(name)
    return list(read), list(written)


def _scope_var(block: Block, prefix: str) -> Variable:
    return block.create_var(unique_name(prefix), [], SCOPE_VAR_DTYPE, stop_gradient=True,
                            type=Variable.STEP_SCOPES)


def _write(block: Block, value: Variable, target: Variable) -> None:
    """Append `target = assign(value)` to `block` without re-inferring `target`'s declared shape."""
    block.append_op("assign", {"X": [value]}, {"Out": [target]}, infer=False)


def _describe(var: Variable) -> str:
    return f"{var.name} (shape {list(var.shape)}, {var.dtype})"


def _shapes_agree(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(x == y or -1 in (x, y) for x, y in zip(a, b))


def _check_condition(value: Any, what: str) -> Variable:
    if not isinstance(value, Variable):
        raise TypeError(f"{what} must return a bool Variable, got {type(value).__name__}")
    if value.dtype != "bool" or any(d != 1 for d in value.shape):
        raise TypeError(f"{what} must return a one-element bool Variable, got {_describe(value)}")
    return value


# ---------------------------------------------------------------- while_loop
def _as_list(values: Any, what: str) -> list[Variable]:
    items = list(values) if isinstance(values, (list, tuple)) else [values]
    for i, item in enumerate(items):
        if not isinstance(item, Variable):
            raise TypeError(f"{what}: item {i} must be a Variable, got {type(item).__name__}")
    return items


def _check_body_result(new: list[Variable], loop_vars: list[Variable]) -> None:
    if len(new) != len(loop_vars):
        raise ValueError(f"while_loop: body returned {len(new)} values for {len(loop_vars)} loop vars "
                         f"({', '.join(v.name for v in loop_vars)})")
    for k, (value, var) in enumerate(zip(new, loop_vars)):
        if value.dtype != var.dtype:
            raise TypeError(f"while_loop: body returned {_describe(value)} for loop var {k} {_describe(var)}: "
                            f"the dtype must stay {var.dtype}")
        if not _shapes_agree(value.shape, var.shape):
            raise ValueError(f"while_loop: body returned {_describe(value)} for loop var {k} {_describe(var)}: "
                             f"the shape must stay {list(var.shape)}")


@atomic_build
def while_loop(cond: Callable[..., Variable], body: Callable[..., Any], loop_vars: Sequence[Variable],
               is_test: bool = False, name: str | None = None) -> list[Variable]:
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` holds; differentiable.

    `cond` returns a one-element bool Variable; `body` returns as many Variables as there are
    loop vars, with the same shapes and dtypes. Returns the loop vars' final values (new
    Variables; the ones passed in are not changed).
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    if isinstance(loop_vars, Variable) or not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise TypeError("while_loop: loop_vars must be a non-empty list or tuple of Variables")
    if any(is_tensor(v) for v in loop_vars):
        return _eager_while_loop(cond, body, list(loop_vars))
    return _static_while_loop(cond, lambda *values: (body(*values), []), loop_vars, [], [])[0]


@atomic_build
def while_loop_scan(cond: Callable[..., Variable], body: Callable[..., Any], loop_vars: Sequence[Variable],
                    scan_inits: Sequence[Variable], scan_inputs: Sequence[Variable] = ()
                    ) -> tuple[list[Variable], list[Variable]]:
    """`while_loop` with scan inputs and outputs (ONNX Scan's and Loop's): step i reads row i of
    each scan input, and gives one row per scan output. `body(*loop_vars, *input_rows)` returns
    (new loop vars, [one row per scan output]); `cond(*loop_vars)` as in `while_loop`. Returns
    (the loop vars' final values, the scan outputs): scan output k is `scan_inits[k]`'s rows
    followed by one row per step, built in one copy at the end. Differentiable, at O(steps)
    cost: each step's gradient is a view of the scan output's, and writes its own row of the
    scan input's. (Appending to a loop var with `concat`, or `gather`ing rows of an outer
    variable, costs a full-size copy per step instead, forward or backward: time^2.)"""
    if any(is_tensor(v) for v in [*loop_vars, *scan_inits, *scan_inputs]):
        return _eager_while_loop_scan(cond, body, list(loop_vars), list(scan_inits), list(scan_inputs))
    inits = _as_list(scan_inits, "while_loop_scan: scan_inits")
    return _static_while_loop(cond, body, loop_vars, inits, _as_list(scan_inputs, "while_loop_scan: scan_inputs"))


def _static_while_loop(cond: Callable[..., Variable], body: Callable[..., Any], loop_vars: Sequence[Variable],
                       scan_inits: list[Variable], scan_inputs: list[Variable]) -> tuple[list[Variable], list[Variable]]:
    """The `while` op: `body(*loop_vars, *input_rows)` returns (new loop vars, rows of the scan outputs)."""
    originals = _as_list(loop_vars, "while_loop: loop_vars")
    program = default_main_program()
    parent = program.current_block()
    carried = [apply_op("assign", {"X": v}) for v in originals]
    condition = apply_op("assign", {"X": _check_condition(cond(*carried), "while_loop: cond")})
    with program._sub_block_guard() as sub:
        input_rows = [_scan_row(sub, x) for x in scan_inputs]
        result, rows = body(*carried, *input_rows)
        new = _as_list(result, "while_loop: body result")
        _check_body_result(new, carried)
        rows = _as_list(rows, "while_loop_scan: the rows the body gives")
        if len(rows) != len(scan_inits):
            raise ValueError(f"while_loop_scan: body gave {len(rows)} rows for {len(scan_inits)} scan outputs")
        # a scanned value is a copy that nothing else in the body reads: the gradient the loop
        # hands a step for it is then the only one
        scanned = [apply_op("assign", {"X": row}) for row in rows]
        # outer values are copied first, so that `return b, a` swaps instead of reading a new a
        new = [v if v is var or sub.has_var(v.name) else apply_op("assign", {"X": v})
               for v, var in zip(new, carried)]
        next_condition = _check_condition(cond(*new), "while_loop: cond")
        for value, var in zip(new, carried):
            if value is not var:
                _write(sub, value, var)
        _write(sub, next_condition, condition)
    scan_outs = _append_while(parent, sub, condition, scan_inits, scanned, scan_inputs, input_rows)
    return carried, scan_outs


def _scan_row(sub: Block, x: Variable) -> Variable:
    """The sub-block variable holding a step's row of the scan input x (the loop sets it)."""
    if not x.shape:
        raise ValueError(f"while_loop_scan: a scan input needs an axis to scan, got {_describe(x)}")
    return sub.create_var(unique_name("while.scan_row"), list(x.shape[1:]), x.dtype, stop_gradient=x.stop_gradient)


def _eager_while_loop(cond: Callable[..., Any], body: Callable[..., Any], values: list[Any]) -> list[Any]:
    """Tensors: the loop is Python's, and eager autograd records each step as it runs."""
    while bool(cond(*values)):
        new = body(*values)
        new = list(new) if isinstance(new, (list, tuple)) else [new]
        if len(new) != len(values):
            raise ValueError(f"while_loop: body returned {len(new)} values for {len(values)} loop vars")
        values = new
    return values


def _eager_while_loop_scan(cond: Callable[..., Any], body: Callable[..., Any], values: list[Any],
                           scan_inits: list[Any], scan_inputs: list[Any]) -> tuple[list[Any], list[Any]]:
    rows: list[list[Any]] = [[init] for init in scan_inits]
    step = 0
    while bool(cond(*values)):
        new, step_rows = body(*values, *(x[step] for x in scan_inputs))
        step += 1
        new, step_rows = (list(new) if isinstance(new, (list, tuple)) else [new]), list(step_rows)
        if len(new) != len(values) or len(step_rows) != len(rows):
            raise ValueError(f"while_loop_scan: body returned {len(new)} values and {len(step_rows)} rows for "
                             f"{len(values)} loop vars and {len(rows)} scan outputs")
        for parts, row in zip(rows, step_rows):
            parts.append(F.unsqueeze(row, [0]))
        values = new
    return values, [F.concat(parts, axis=0) for parts in rows]


def _append_while(parent: Block, sub: Block, condition: Variable, scan_inits: Sequence[Variable] = (),
                  scanned: Sequence[Variable] = (), scan_inputs: Sequence[Variable] = (),
                  input_rows: Sequence[Variable] = ()) -> list[Variable]:
    read, written = _free_variables(sub)
    inputs = [n for n in dict.fromkeys(read + written) if n != condition.name]
    step_scopes = _scope_var(parent, "while.step_scopes")
    scan_outs = [parent.create_var(unique_name("while.scan_out"), [-1] + list(v.shape), v.dtype) for v in scanned]
    parent.append_op("while", {"X": inputs, "Condition": [condition], "ScanInit": list(scan_inits),
                               "ScanIn": list(scan_inputs)},
                     {"Out": written, "StepScopes": [step_scopes], "ScanOut": scan_outs},
                     {"sub_block": sub, "scan_vars": [v.name for v in scanned],
                      "scan_in_vars": [v.name for v in input_rows]})
    return scan_outs


class While:
    """Fluid's loop: `with loop.block():` appends the body; it must update `cond_var`.

        i = fluidgrad.full([], 0, "int64")
        cond_var = i < 10
        loop = While(cond_var)
        with loop.block():
            assign(x * 2.0, output=x)
            increment(i, in_place=True)
            assign(i < 10, output=cond_var)

    Outer variables are written in place (with `assign(..., output=)` / `increment`), as in
    Fluid; write them with `assign` from a value computed in the body, so that the gradient
    sees the value each step read.
    """

    def __init__(self, cond: Variable, is_test: bool = False, name: str | None = None) -> None:
        self.cond_var = _check_condition(cond, "While")

    @contextlib.contextmanager
    def block(self) -> Iterator[Block]:
        program = default_main_program()
        parent = program.current_block()
        if not parent.has_var_recursive(self.cond_var.name):
            raise ValueError(f"While: condition {self.cond_var.name} is not visible from block {parent.idx}")
        with program._sub_block_guard() as sub:
            yield sub
        if self.cond_var.name not in _free_variables(sub)[1]:
            raise ValueError(f"While: the body never writes the condition {self.cond_var.name}, so the loop "
                             f"would never end; update it, e.g. assign(i < n, output=cond_var)")
        _append_while(parent, sub, self.cond_var)


# ---------------------------------------------------------------- cond
def _branch(program: Any, parent: Block, fn: Callable[[], Any], which: str
            ) -> tuple[Block, list[Variable] | None, Any]:
    """Run one branch function into a sub-block; copy its results into fresh outer variables."""
    with program._sub_block_guard() as sub:
        result = fn()
        if result is None:
            return sub, None, None
        flat = _as_list(result, f"cond: {which}")
        outs = []
        for value in flat:
            out = parent.create_var(unique_name(f"cond.{which}"), value.shape, value.dtype)
            _write(sub, value, out)
            outs.append(out)
    return sub, outs, result


def _append_conditional_block(parent: Block, sub: Block, pred: Variable, fresh: list[Variable]) -> None:
    read, written = _free_variables(sub)
    fresh_names = {v.name for v in fresh}
    inputs = list(dict.fromkeys(read + [n for n in written if n not in fresh_names]))
    scope = _scope_var(parent, "conditional_block.scope")
    parent.append_op("conditional_block", {"Cond": [pred], "Input": inputs},
                     {"Out": written, "Scope": [scope]}, {"sub_block": sub})


def _check_branches(true_outs: list[Variable] | None, false_outs: list[Variable] | None) -> None:
    if (true_outs is None) != (false_outs is None):
        ran = "true_fn" if true_outs is None else "false_fn"
        raise ValueError(f"cond: {ran} returned None but the other branch returned values; "
                         f"both must return the same structure")
    if true_outs is None:
        return
    if len(true_outs) != len(false_outs):
        raise ValueError(f"cond: true_fn returned {len(true_outs)} values, false_fn {len(false_outs)}")
    for k, (a, b) in enumerate(zip(true_outs, false_outs)):
        if a.dtype != b.dtype or not _shapes_agree(a.shape, b.shape):
            raise ValueError(f"cond: output {k} differs between branches: true_fn gives shape "
                             f"{list(a.shape)} {a.dtype}, false_fn gives shape {list(b.shape)} {b.dtype}")


@atomic_build
def cond(pred: Variable, true_fn: Callable[[], Any] | None = None, false_fn: Callable[[], Any] | None = None,
         name: str | None = None) -> Any:
    """`true_fn()` if `pred` holds, else `false_fn()`; only the branch taken runs, and the
    gradient flows through it alone. Both branches return the same structure of Variables
    (same count, shapes and dtypes), or both None."""
    if is_tensor(pred):
        chosen = true_fn if bool(pred) else false_fn
        return chosen() if chosen is not None else None
    pred = _check_condition(pred, "cond: pred")
    program = default_main_program()
    parent = program.current_block()
    true_fn = true_fn or (lambda: None)
    false_fn = false_fn or (lambda: None)
    true_block, true_outs, true_result = _branch(program, parent, true_fn, "true")
    false_block, false_outs, _ = _branch(program, parent, false_fn, "false")
    _check_branches(true_outs, false_outs)
    _append_conditional_block(parent, true_block, pred, true_outs or [])
    _append_conditional_block(parent, false_block, F.logical_not(pred), false_outs or [])
    if true_outs is None:
        return None
    merged = [apply_op("select_input", {"X": [f, t], "Mask": pred}) for t, f in zip(true_outs, false_outs)]
    if isinstance(true_result, Variable):
        return merged[0]
    return tuple(merged) if isinstance(true_result, tuple) else merged


# ---------------------------------------------------------------- case, switch_case
def case(pred_fn_pairs: Sequence[tuple[Any, Callable[[], Any]]], default: Callable[[], Any] | None = None,
         name: str | None = None) -> Any:
    """The result of the function of the first pair whose predicate holds (Paddle's
    static.nn.case); without `default`, the last pair's function runs when none holds. Nested
    `cond`s: only the branch taken runs, and the gradient flows through it alone."""
    pairs = list(pred_fn_pairs)
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and callable(pair[1])):
            raise TypeError(f"case: pred_fn_pairs[{k}] must be a (predicate, function) pair, got {pair!r}")
    if default is None:
        if not pairs:
            raise ValueError("case: give at least one (predicate, function) pair or a default")
        *pairs, (_, default) = pairs
    if not callable(default):
        raise TypeError(f"case: default must be a function, got {default!r}")

    def chain(rest: list) -> Any:
        if not rest:
            return default()
        (pred, fn), *more = rest
        return cond(pred, fn, lambda: chain(more))
    return chain(pairs)


def switch_case(branch_index: Any, branch_fns: Any, default: Callable[[], Any] | None = None,
                name: str | None = None) -> Any:
    """The result of the function keyed by `branch_index` (an int Variable or Tensor; Paddle's
    static.nn.switch_case): `branch_fns` is a dict {index: function}, a list of (index,
    function) pairs, or a list of functions (indexed by position); without `default`, the
    function of the largest index runs for an index not listed."""
    if isinstance(branch_fns, dict):
        items = list(branch_fns.items())
    else:
        fns = list(branch_fns)
        items = fns if all(isinstance(f, (tuple, list)) for f in fns) else list(enumerate(fns))
    if not items:
        raise ValueError("switch_case: branch_fns is empty")
    for key, fn in items:
        if isinstance(key, bool) or not isinstance(key, numbers.Integral) or not callable(fn):
            raise TypeError(f"switch_case: each branch must be an int index and a function, got {key!r}: {fn!r}")
    items = sorted(items, key=lambda item: int(item[0]))
    if len({int(k) for k, _ in items}) != len(items):
        raise ValueError(f"switch_case: repeated branch indices {[int(k) for k, _ in items]}")
    if is_tensor(branch_index):
        chosen = {int(k): fn for k, fn in items}.get(int(branch_index), default or items[-1][1])
        return chosen()
    def is_index(k: int) -> Variable:
        return apply_op("equal", {"X": branch_index, "Y": F.full([], k, branch_index.dtype)})
    return case([(is_index(int(k)), fn) for k, fn in items], default or items[-1][1])


# ---------------------------------------------------------------- writing outer variables
def assign(x: Variable, output: Variable | None = None) -> Variable:
    """A copy of `x`; with `output`, write `x` into that existing variable (Fluid's in-place style)."""
    if output is None:
        return apply_op("assign", {"X": x})
    if not isinstance(output, Variable) or not isinstance(x, Variable):
        raise TypeError("assign: x and output must be Variables")
    if x.dtype != output.dtype or not _shapes_agree(x.shape, output.shape):
        raise ValueError(f"assign: cannot write {_describe(x)} into {_describe(output)}")
    _write(default_main_program().current_block(), x, output)
    return output


def increment(x: Variable, value: float = 1.0, in_place: bool = True) -> Variable:
    """x + value in x's dtype (a loop counter); `in_place` writes the result back into x."""
    if not in_place:
        return apply_op("increment", {"X": x}, {"step": float(value)})
    default_main_program().current_block().append_op("increment", {"X": [x]}, {"Out": [x]},
                                                     {"step": float(value)}, infer=False)
    return x
