"""The Executor: run a Program's global block on NumPy, with feeds, fetches and a Scope."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..framework import Block, Program, Variable, default_main_program
from ..framework.device import CPUPlace, as_device  # noqa: F401  (CPUPlace: Paddle's name, exported here too)
from ..framework.errors import ExecutionError, FluidgradError, IndexRangeError, InvalidValueError
from ..ops import random as random_ops
from . import control_flow
from .memory import RunStats, live_bytes
from .plan import Plan, compile_block
from .scope import Scope, global_scope


def _plan_cache(program: Program) -> dict:
    """Plans cached on the program, dropped whenever the program changes."""
    cache = program.__dict__.get("_exec_cache")
    if cache is None or cache[0] != program._version:
        cache = (program._version, {})
        program.__dict__["_exec_cache"] = cache
    return cache[1]


_NO_FEED: dict[str, Any] = {}

# Called as hook(scope, before) just before and just after each run on the global scope:
# scope_binding.py keeps the Layer parameters a Program trains equal to their scope values.
run_hooks: list[Callable[[Scope, bool], None]] = []


class Runtime:
    """What control-flow kernels see: running a sub-block in a given scope, and the loops and
    branches built on that (executor/control_flow.py)."""

    run_while = control_flow.run_while
    run_while_grad = control_flow.run_while_grad
    run_conditional_block = control_flow.run_conditional_block
    run_conditional_block_grad = control_flow.run_conditional_block_grad

    def __init__(self, executor: "Executor") -> None:
        self.executor = executor

    def run_block(self, block: Block, scope: Scope, fetch: tuple[str, ...] = ()) -> tuple:
        """Run `block`'s plan in `scope`; the values of the locals named in `fetch` (a loop's scanned
        variables). A loop does this every step: the plan sits on the block (valid for the
        program's version), so a step costs one dictionary lookup before the body."""
        nan_check = self.executor.check_nan_inf
        cached = block.__dict__.get("_step_plan")
        if (cached is None or cached[0] != block.program._version or cached[1] != nan_check
                or cached[2] != fetch):
            plan = self.executor._plan(block, (), fetch, keep_all=True)
            cached = (block.program._version, nan_check, fetch, plan)
            block.__dict__["_step_plan"] = cached
        plan = cached[3]
        try:
            return plan.fn(scope, _NO_FEED, self)
        except FluidgradError:
            raise
        except Exception as exc:
            raise _locate(plan, exc) from exc


def _check_place(place: Any) -> None:
    """Accept only what fluidgrad can run on, so that `Executor("gpu")` is not silently the CPU."""
    try:
        as_device(place, "Executor")
    except ValueError as exc:
        raise ValueError(f'{exc}. Use Executor() or Executor("cpu").') from None


class Executor:
    """Runs programs. Each (program, feed names, fetch names) is compiled once into a Plan."""

    def __init__(self, place: Any = None, check_nan_inf: bool = False) -> None:
        if isinstance(place, bool):  # Executor(True) reads as check_nan_inf
            place, check_nan_inf = None, place
        _check_place(place)
        self.check_nan_inf = check_nan_inf
        self._runtime = Runtime(self)

    def _plan(self, block: Block, feed_names: Sequence[str], fetch_names: Sequence[str],
              keep_all: bool = False) -> Plan:
        cache = _plan_cache(block.program)
        key = (block.idx, frozenset(feed_names), tuple(fetch_names), keep_all, self.check_nan_inf)
        plan = cache.get(key)
        if plan is None:
            plan = compile_block(block, feed_names, fetch_names, keep_all, self.check_nan_inf)
            cache[key] = plan
        return plan

    def _call(self, plan: Plan, scope: Scope, feed: dict[str, Any]) -> tuple:
        try:
            return plan.fn(scope, feed, self._runtime)
        except FluidgradError:
            raise
        except Exception as exc:
            raise _locate(plan, exc) from exc

    def run(self, program: Program | None = None, feed: dict[str, Any] | None = None,
            fetch_list: Sequence[Variable | str] | None = None, scope: Scope | None = None,
            return_numpy: bool = True, use_program_cache: bool = True,
            return_stats: bool = False) -> list[np.ndarray] | tuple[list[np.ndarray], RunStats]:
        """Run `program`'s global block once; return one array per fetch (copies the caller owns).
        `return_stats=True` also returns a `RunStats` with the peak bytes of live intermediates."""
        program = program if program is not None else default_main_program()
        if not isinstance(program, Program) and isinstance(getattr(program, "_program", None), Program):
            program = program._program   # a static.CompiledProgram runs the program it wraps
        if not isinstance(program, Program):
            raise TypeError(f"Executor.run expects a Program, got {type(program).__name__}")
        scope = scope if scope is not None else global_scope()
        if isinstance(feed, (list, tuple)) and len(feed) == 1 and isinstance(feed[0], dict):
            feed = feed[0]      # one dict per device (Paddle's DataLoader(return_list=False)); one CPU here
        if feed is not None and not isinstance(feed, dict):
            raise TypeError(f"Executor.run: feed must be a dict of name -> array, got {type(feed).__name__}")
        if fetch_list is not None and not isinstance(fetch_list, (list, tuple)):
            raise TypeError(f"Executor.run: fetch_list must be a list of Variables or names, "
                            f"got {type(fetch_list).__name__}")
        block = program.global_block()
        feed_arrays = {_feed_name(key): value for key, value in (feed or {}).items()}
        feed_arrays = {name: _check_feed(block, name, value) for name, value in feed_arrays.items()}
        fetch_names = [_fetch_name(block, item) for item in (fetch_list or [])]
        hooks = run_hooks if run_hooks and scope is global_scope() else ()
        for hook in hooks:  # before the plan: it may write a startup op's initial value
            hook(scope, True)
        plan = self._plan(block, feed_arrays.keys(), fetch_names)
        if program.random_seed:  # its random ops draw the same numbers on every run (ops/random.py)
            with random_ops.program_seed(program.random_seed):
                results = self._call(plan, scope, feed_arrays)
        else:
            results = self._call(plan, scope, feed_arrays)
        for hook in hooks:
            hook(scope, False)
        # inside a run, arrays may be read-only broadcast views; the caller gets arrays it owns
        results = [r if isinstance(r, np.ndarray) and r.flags.writeable else np.array(r) for r in results]
        if not return_stats:
            return results
        return results, live_bytes(block, feed_arrays, fetch_names, plan.inplace, plan.freed_early,
                                   plan.never_computed, plan.order)


def _fetch_name(block: Block, item: Variable | str) -> str:
    name = item.name if isinstance(item, Variable) else item
    if not isinstance(name, str):
        raise TypeError(f"fetch_list items must be Variables or names, got {type(item).__name__}")
    if not block.has_var(name):
        raise ExecutionError(f"cannot fetch {name!r}: the program's global block has no such variable")
    return name


def _feed_name(key: Variable | str) -> str:
    """Feeds are keyed by variable names; a Variable key stands for its name (as in fetch_list)."""
    name = key.name if isinstance(key, Variable) else key
    if not isinstance(name, str):
        raise TypeError(f"feed keys must be variable names (or Variables), got {type(key).__name__} {key!r}")
    return name


def _check_feed(block: Block, name: str, value: Any) -> np.ndarray:
    if not block.has_var(name):
        raise ExecutionError(f"feed {name!r} is not a variable of the program's global block")
    var = block.var(name)
    array = value if isinstance(value, np.ndarray) else np.asarray(getattr(value, "numpy", lambda: value)())
    if not isinstance(value, np.ndarray) and array.dtype != np.dtype(var.dtype):
        if array.dtype.kind in "iufb" and np.can_cast(array.dtype, var.dtype, "same_kind") \
                or array.dtype.kind in "iub" and var.dtype.startswith("float"):
            array = array.astype(var.dtype)
    if array.dtype != np.dtype(var.dtype):
        raise ExecutionError(f"feed {name!r} has dtype {array.dtype}, but variable {name} is {var.dtype}")
    if len(array.shape) != len(var.shape) or any(d != -1 and d != a for d, a in zip(var.shape, array.shape)):
        raise ExecutionError(f"feed {name!r} has shape {list(array.shape)}, but variable {name} expects "
                             f"{list(var.shape)} (-1 means any size)")
    return array


def _locate(plan: Plan, exc: Exception) -> ExecutionError:
    """Turn a kernel's exception into one naming the op, found from the generated line."""
    tb = exc.__traceback__
    op_index, frame_locals = None, {}
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<fluidgrad plan"):
            op_index = plan.op_at_line(tb.tb_lineno)
            frame_locals = tb.tb_frame.f_locals
            break
        tb = tb.tb_next
    if op_index is None:
        return ExecutionError(f"running block {plan.block.idx} failed: {type(exc).__name__}: {exc}")
    op = plan.block.ops[op_index]

    def describe(name: str) -> str:
        value = frame_locals.get(plan.idents.get(name, ""))
        if isinstance(value, np.ndarray):
            return f"{name} (shape {list(value.shape)}, {value.dtype})"
        return name
    inputs = "; ".join(f"{slot}: {', '.join(describe(n) for n in names)}" for slot, names in op.inputs.items())
    kind = IndexRangeError if isinstance(exc, IndexError) else InvalidValueError if isinstance(exc, ValueError) \
        else ExecutionError
    return kind(f"op #{op_index} ({op.type}, {op.role} op, block {plan.block.idx}) failed: "
                          f"{type(exc).__name__}: {exc} [inputs {inputs}]")


