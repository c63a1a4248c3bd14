"""append_backward and gradients: build the backward pass into the same Program.

The steps follow the Fluid design (../shared/seeds/backward-building.md):
  1. prune to the ops on a path to the targets;
  2. seed each target's gradient (`fill_constant` 1 for a loss);
  3. walk the ops in reverse, asking the registry for grad ops; an op with a sub-block
     gets a grad block (parent: that sub-block) built by the same walk, recursively;
  4. a gradient written by several grad ops is renamed `@RENAME@k` per writer and summed;
  5. no-grad branches: unread grad ops go, and a gradient that a kept grad op reads but
     nobody writes gets `fill_zeros_like` (`remove_no_grad_branches`);
  6. gradient variables are created in the right block and shape-inferred.
A gradient flows only where some output's gradient flows (a symbolic zero elsewhere),
so ops off the path, and ops whose inputs all stop the gradient, get no grad op.
"""
from __future__ import annotations

import functools
import gc
from collections import defaultdict
from typing import Any, Callable, Iterable, Sequence

from .framework import BACKWARD, Block, Operator, Parameter, Program, Variable
from .framework.variable import names_of
from .framework.names import EMPTY_VAR_NAME, GRAD_SUFFIX, rename_var_name
from .framework.dtypes import has_gradients
from .framework.errors import NoGradientError
from .ops.registry import get_op_def, infer_op, require_gradient
from .framework.transaction import rollback_on_error
from .ops.grad_builder import OpDesc, get_grad_op_desc
from .recompute_pass import RecomputePolicy, apply_recompute


def _as_names(items: Any, what: str) -> list[str]:
    if items is None:
        return []
    if isinstance(items, (str, Variable)):
        raise TypeError(f"{what} must be a list, tuple or set of Variables or names, "
                        f"got a single {type(items).__name__}")
    if not isinstance(items, (list, tuple, set, frozenset)):
        raise TypeError(f"{what} must be a list, tuple or set, got {type(items).__name__}")
    return names_of(items, what)


def _check_variable(value: Any, what: str) -> Variable:
    if not isinstance(value, Variable):
        raise TypeError(f"{what} must be a Variable, got {type(value).__name__}"
                        + (" (a name; pass the Variable itself)" if isinstance(value, str) else ""))
    return value


def _sub_block(op: Operator) -> Block | None:
    sub = op.attrs.get("sub_block")
    return sub if isinstance(sub, Block) else None


def _scanned_vars(op: Operator) -> dict[str, str]:
    """A loop's scanned sub-block variables -> their scan outputs (`while`'s scan_vars / ScanOut)."""
    inner = op.attrs.get("scan_vars") or []
    return dict(zip(inner, op.outputs.get("ScanOut", [])))


# An op of the forward part with its input and output names, listed once per pass: the forward
# ops' names do not change while their backward is built, and each step below reads them.
_Step = tuple[Operator, list[str], list[str]]


def _steps(ops: Iterable[Operator]) -> list[_Step]:
    return [(op, op.input_arg_names, op.output_arg_names) for op in ops]


def _rename_first_output(op: Operator, old: str, new: str) -> None:
    """Rename one occurrence of `old` among the op's outputs: an op that writes the same
    gradient twice (the split in the gradient of `concat([x, x])`) counts as two writers."""
    for names in op.outputs.values():
        if old in names:
            names[names.index(old)] = new
            op.block.program._bump()
            return


def _replace_ops(block: Block, start: int, ops: list[Operator]) -> None:
    """Rewrite `block.ops[start:]` in one go: inserting or removing one op at a time would make
    long blocks quadratic."""
    block.ops[start:] = ops
    block.program._bump()


class _BackwardBuilder:
    """The state of one backward pass over one program."""

    def __init__(self, program: Program, no_grad_set: Iterable[str]) -> None:
        self.program = program
        self.no_grad = set(no_grad_set)
        existing = set()
        for block in program.blocks:
            for var in block.vars.values():
                existing.add(var.name)
                if var.stop_gradient:
                    self.no_grad.add(var.name)
        self.grad_to_var: dict[str, str] = {}
        self.var_info: dict[str, tuple[tuple[int, ...], str]] = {}  # grad var -> (shape, dtype)
        self.suffix = self._pass_suffix(existing)

    def _pass_suffix(self, existing: set[str]) -> str:
        """Grad-of-grad: a second pass over a program must not reuse the first pass's names
        (`existing`): the first suffix k such that no name plus it is also a name."""
        grads = [name for name in existing if GRAD_SUFFIX in name]  # every suffix contains it
        k = 0
        while any(name.endswith(suffix) and name[:-len(suffix)] in existing
                  for suffix in (self._suffix(k),) for name in grads):
            k += 1
        return self._suffix(k)

    @staticmethod
    def _suffix(k: int) -> str:
        return GRAD_SUFFIX if k == 0 else f"{GRAD_SUFFIX}@{k}"

    def grad_name(self, name: str) -> str:
        return name + self.suffix

    # ---- step 1
    @staticmethod
    def ops_on_path(block: Block, targets: set[str]) -> list[_Step]:
        """The ops of `block` whose outputs reach `targets` (a backward sweep), as steps."""
        needed, path = set(targets), []
        for op in reversed(block.ops):
            outputs = op.output_arg_names
            if not needed.isdisjoint(outputs):
                inputs = op.input_arg_names
                path.append((op, inputs, outputs))
                needed.update(inputs)
        path.reverse()
        return path

    def mark_constants(self, path: Sequence[_Step], wanted: Iterable[str] = ()) -> None:
        """Step 1's forward half: an op that no differentiable variable reaches computes a
        constant (e.g. a transform of the data), so its outputs join the no-grad set and no grad
        op differentiates it. `wanted` names variables whose gradient is asked for explicitly."""
        produced: set[str] = set()
        live = set(wanted)
        for op, inputs, outputs in path:
            # an input is live if a live op wrote it, or if it comes from outside (read before
            # any write) and is differentiable itself
            for n in inputs:
                if n in live or (n not in produced and self._differentiable(op.block, n)):
                    live.update(outputs)
                    break
            produced.update(outputs)
        # a variable written twice (a loop variable) is live if any of its writers is
        self.no_grad.update(produced - live)

    def check_gradients_exist(self, path: Sequence[_Step]) -> None:
        """An op on the path with a float output and a differentiable input must have a
        gradient: say so now, naming it, before any other check reads its (generated) variables.
        The common case is a second derivative through a loop: `while_grad` has none."""
        for op, inputs, outputs in path:
            op_def = get_op_def(op.type)
            if op_def.has_gradient or not self._inputs_need_grad(op, inputs):
                continue
            if not any(self._differentiable(op.block, n) for n in outputs if n != EMPTY_VAR_NAME):
                continue
            origin = op.type.removesuffix("_grad")
            hint = (f"; it is the gradient of op {origin}: a second derivative through {origin} is not "
                    f"available" if op.role == BACKWARD else "")
            try:
                require_gradient(op_def)
            except NoGradientError as err:
                raise NoGradientError(f"{err}{hint}") from None

    def check_no_overwrite(self, steps: Sequence[_Step], loop_body: Block | None = None) -> None:
        """Grad ops read forward values by name, so a value that a later op overwrites would be
        read back wrong. Refuse it rather than give a wrong gradient. A loop body may overwrite
        an outer variable it has read (each step's scope keeps the value it read), provided
        nothing in the body reads it again afterwards."""
        last_reader: dict[str, Operator] = {}
        overwritten: dict[str, Operator] = {}
        for op, inputs, outputs in steps:
            for name in inputs:
                if name in overwritten:
                    self._overwrite_error(name, last_reader[name], overwritten[name], also=op)
                last_reader[name] = op
            for name in outputs:
                reader = last_reader.get(name)
                if reader is None or reader is op or not self._differentiable(op.block, name):
                    continue
                if loop_body is None or loop_body.has_var(name):
                    self._overwrite_error(name, reader, op)
                overwritten[name] = op

    def _differentiable(self, block: Block, name: str) -> bool:
        if name in self.no_grad:
            return False
        var = block.vars.get(name)
        if var is None:
            var = block._find_var_recursive(name)
        return var is not None and has_gradients(var.dtype)

    @staticmethod
    def _overwrite_error(name: str, reader: Operator, writer: Operator, also: Operator | None = None) -> None:
        again = f", and op {also.type} reads the new value" if also is not None else ""
        raise ValueError(f"variable {name!r} is read by op {reader.type} and then overwritten by op "
                         f"{writer.type}{again}: its gradient would use the wrong value. Write the new value "
                         f"to a new variable (e.g. `{name} = ...` instead of assign(..., output={name}))")

    # ---- step 3
    def append_grad_ops(self, steps: Sequence[_Step], target_block: Block, flowing: set[str],
                        callbacks: Sequence[Callable] = ()) -> set[str]:
        """Append grad ops for the steps' ops (reverse order) to `target_block`; return vars given a gradient."""
        suffix, var_info, append = self.suffix, self.var_info, target_block._append_trusted
        for op, inputs, outputs in reversed(steps):
            if flowing.isdisjoint(outputs):
                continue
            if not self._inputs_need_grad(op, inputs):
                continue
            grad_sub_block = self._build_grad_sub_block(op, flowing, callbacks) if "sub_block" in op.attrs else None
            descs, grad_to_var = get_grad_op_desc(op, self.no_grad, grad_sub_block, self.grad_name, {
                n + suffix for n in outputs if n in flowing})
            self.grad_to_var.update(grad_to_var)
            for desc in descs:
                var_info.update(desc.out_vars)
                # descs come from the registry's own grad makers: no need to validate them again
                grad_op = append(desc.type, desc.inputs, desc.outputs, desc.attrs)
                for callback in callbacks:
                    callback(block=target_block, context={"op": grad_op, "forward_op": op})
                for names in desc.outputs.values():
                    for name in names:
                        forward = grad_to_var.get(name)
                        if forward is not None and forward in inputs:
                            flowing.add(forward)
        return flowing

    def _inputs_need_grad(self, op: Operator, inputs: Sequence[str]) -> bool:
        for name in inputs:
            if self._differentiable(op.block, name):
                return True
        return False

    def _build_grad_sub_block(self, op: Operator, flowing: set[str],
                              callbacks: Sequence[Callable] = ()) -> Block | None:
        sub = _sub_block(op)
        if sub is None:
            return None
        grad_block = self.program._create_block(parent_idx=sub.idx)
        grad_block.forward_block_idx = sub.idx
        try:
            # inside the sub-block, gradients flow from the outer variables it writes
            steps = _steps(sub.ops)
            self.check_no_overwrite(steps, loop_body=sub)
            outer_writes = {n for _, _, outputs in steps for n in outputs if not sub.has_var(n)}
            scanned = _scanned_vars(op)
            inner_flowing = self._flowing_outer_writes(sub, steps, outer_writes, flowing,
                                                       {inner for inner, outer in scanned.items() if outer in flowing})
            self.append_grad_ops(steps, grad_block, inner_flowing, callbacks)
            self.add_up_repeated_grads(grad_block)
            provided = {self.grad_name(n) for n in outer_writes} | self._declare_scan_grads(grad_block, sub, scanned)
            leaving = {self.grad_name(n) for n in op.attrs.get("scan_in_vars") or []}
            self.remove_no_grad_branches(grad_block, provided, sub=sub, leaving=leaving)
        finally:
            self.program._current_block_idx = op.block.idx
        return grad_block

    def _flowing_outer_writes(self, sub: Block, steps: Sequence[_Step], outer_writes: set[str],
                              flowing: set[str], scanned: set[str] = frozenset()) -> set[str]:
        """The outer variables written by `sub` whose gradient can be non-zero at some step,
        with the `scanned` locals (a loop's scan outputs whose gradient flows).

        Those flowing outside the op, and, to a fixed point, those whose value read at the
        start of a step gets a gradient from one that flows: in a loop, that read value is
        what the previous step wrote. Gradients of the others are zero; no grad op is built
        for them (a loop variable that never reaches the loss costs nothing per step)."""
        result = {n for n in outer_writes if n in flowing} | scanned
        while True:
            reached = set(result)
            for _, inputs, outputs in reversed(steps):
                if any(n in reached for n in outputs):
                    reached.update(n for n in inputs if self._differentiable(sub, n))
            grown = {n for n in outer_writes if n in reached} - result
            if not grown:
                return result
            result |= grown

    def _declare_scan_grads(self, grad_block: Block, sub: Block, scanned: dict[str, str]) -> set[str]:
        """The gradients of a loop's scanned locals: the grad op hands each step its row of the
        scan output's gradient, so they are declared in the grad block and written by no op."""
        names = set()
        for inner in scanned:
            name, var = self.grad_name(inner), sub.var(inner)
            if not grad_block.has_var(name):
                grad_block.create_var(name, var.shape, var.dtype)
            self.grad_to_var[name] = inner
            names.add(name)
        return names

    # ---- step 4
    def add_up_repeated_grads(self, block: Block, start: int = 0) -> None:
        """A gradient written by several ops since it was last read: rename each write, then sum
        (before the first op that reads it, or at the end)."""
        pending: dict[str, list[Operator]] = {}
        renames: dict[str, int] = defaultdict(int)
        ops: list[Operator] = []
        for op in block.ops[start:]:
            for names in op.inputs.values():
                for name in names:  # (a name read twice finds no writers the second time)
                    writers = pending.pop(name, ())
                    if len(writers) > 1:
                        ops.append(self._sum_writes(block, name, writers, renames))
            ops.append(op)
            for names in op.outputs.values():
                for name in names:
                    if GRAD_SUFFIX in name and name != EMPTY_VAR_NAME:
                        writers = pending.get(name)
                        if writers is None:
                            pending[name] = [op]
                        else:
                            writers.append(op)
        ops += [self._sum_writes(block, name, writers, renames) for name, writers in pending.items()
                if len(writers) > 1]
        _replace_ops(block, start, ops)

    def _sum_writes(self, block: Block, name: str, writers: list[Operator],
                    renames: dict[str, int]) -> Operator:
        parts = []
        for writer in writers:
            new = rename_var_name(name, renames[name])
            renames[name] += 1
            _rename_first_output(writer, name, new)
            if name in self.var_info:
                self.var_info[new] = self.var_info[name]
            parts.append(new)
        return Operator(block, "sum", {"X": parts}, {"Out": [name]}, {"op_role": BACKWARD})

    # ---- step 5
    def remove_no_grad_branches(self, block: Block, provided: set[str], start: int = 0,
                                sub: Block | None = None, leaving: set[str] = frozenset()) -> None:
        """Fluid's `_remove_no_grad_branch_`, in one place. Grad ops with no gradient flowing in
        were never built (step 3 skips them: a symbolic zero), nor those whose inputs all stop
        the gradient (step 1's constants); here, in a grad block, grad ops whose results nobody
        reads go, and a gradient that a kept grad op reads but nobody writes gets zeros."""
        if sub is not None:
            self.prune_unread_grads(block, sub, leaving)
        self.fill_missing_grads(block, provided, start)

    def prune_unread_grads(self, grad_block: Block, sub: Block, leaving: set[str] = frozenset()) -> None:
        """Drop grad ops of a grad block whose outputs nobody reads: only gradients of outer
        variables leave a grad block (the control-flow grad op reads them), so the gradient of
        a local such as `x_t = gather(x, i)` with `x` stop_gradient is dead work, every step.
        `leaving`: gradients of locals that leave too (a loop's scan-input rows)."""
        read: set[str] = set(leaving)
        kept = []
        for op in reversed(grad_block.ops):
            if any(n in read or self._leaves_block(n, sub) for n in op.output_arg_names if n != EMPTY_VAR_NAME):
                read.update(op.input_arg_names)
                kept.append(op)
        kept.reverse()
        _replace_ops(grad_block, 0, kept)

    def _leaves_block(self, grad_name: str, sub: Block) -> bool:
        forward_name = self.grad_to_var.get(grad_name)
        return forward_name is not None and not sub.has_var(forward_name)

    def fill_missing_grads(self, block: Block, provided: set[str], start: int = 0) -> None:
        """Zero-fill gradients that a grad op reads but no earlier op writes."""
        written = set(provided)
        grad_to_var = self.grad_to_var
        ops: list[Operator] = []
        for op in block.ops[start:]:
            for names in op.inputs.values():
                for name in names:
                    if name in written or name not in grad_to_var or name == EMPTY_VAR_NAME:
                        continue
                    ops.append(Operator(block, "fill_zeros_like", {"X": [grad_to_var[name]]}, {"Out": [name]},
                                        {"op_role": BACKWARD, "dtype": None}))
                    written.add(name)
            for names in op.outputs.values():
                written.update(names)
            ops.append(op)
        _replace_ops(block, start, ops)

    # ---- step 6
    def create_grad_vars(self, block: Block, start: int = 0) -> None:
        """Declare every new gradient variable in the block whose op writes it.

        Shapes were inferred when each grad op was described; ops the builder added later
        (sums, zero fills, seeds) are inferred here. A gradient gets its forward variable's shape.
        """
        declared, var_info, grad_to_var = block.vars, self.var_info, self.grad_to_var
        for op in block.ops[start:]:
            if "sub_block" in op.attrs:
                sub = _sub_block(op)
                if sub is not None and op.role == BACKWARD:
                    self.create_grad_vars(sub)
            names = [n for slot_names in op.outputs.values() for n in slot_names
                     if n not in declared and n != EMPTY_VAR_NAME]
            if not names:
                continue
            for name in names:
                if name not in grad_to_var and name not in var_info:
                    for unknown in names:  # declare locally first, so inference cannot pick an outer var
                        if unknown not in var_info and unknown not in grad_to_var:
                            block.create_var(unknown)
                    infer_op(op)
                    break
            for name in names:
                fwd = grad_to_var.get(name)
                if fwd is None:
                    fwd_var = None
                else:
                    fwd_var = declared.get(fwd)
                    if fwd_var is None:
                        fwd_var = block._find_var_recursive(fwd)
                if fwd_var is not None:
                    shape, dtype = fwd_var.shape, fwd_var.dtype
                elif name in var_info:
                    shape, dtype = var_info[name]
                else:
                    continue  # declared by infer_op above
                var = declared.get(name)
                if var is not None:
                    var.shape, var.dtype = shape, dtype
                else:
                    block.create_var(name, shape, dtype)


def _seed(block: Block, target: Variable, grad_name: str, target_gradient: Variable | None) -> None:
    if target_gradient is not None:
        if tuple(target_gradient.shape) != tuple(target.shape) and -1 not in target.shape:
            raise ValueError(f"target gradient {target_gradient.name} has shape {list(target_gradient.shape)}, "
                             f"but target {target.name} has shape {list(target.shape)}")
        block.append_op("assign", {"X": [target_gradient]}, {"Out": [grad_name]}, {"op_role": BACKWARD},
                        infer=False)
    elif -1 in target.shape:
        block.append_op("fill_any_like", {"X": [target]}, {"Out": [grad_name]},
                        {"value": 1.0, "op_role": BACKWARD}, infer=False)
    else:
        block.append_op("fill_constant", {}, {"Out": [grad_name]},
                        {"shape": list(target.shape), "value": 1.0, "dtype": target.dtype,
                         "op_role": BACKWARD}, infer=False)


def _without_gc(fn: Callable) -> Callable:
    """Building allocates many small objects and frees none: the cyclic collector would only
    rescan the growing program again and again, making long programs superlinear."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if collecting:
                gc.enable()
    return wrapper


def _build(targets: list[Variable], target_gradients: list[Variable | None], no_grad_set: Iterable[str],
           callbacks: Sequence[Callable] = (), wanted: Iterable[str] = (),
           checkpoints: Sequence[str] | str | None = None) -> _BackwardBuilder:
    with rollback_on_error(targets[0].block.program):  # a failed pass leaves no grad ops behind
        return _build_unguarded(targets, target_gradients, no_grad_set, callbacks, wanted, checkpoints)


def _build_unguarded(targets: list[Variable], target_gradients: list[Variable | None],
                     no_grad_set: Iterable[str], callbacks: Sequence[Callable],
                     wanted: Iterable[str], checkpoints: Sequence[str] | str | None = None) -> _BackwardBuilder:
    block = targets[0].block
    program = block.program
    for target in targets:
        if target.block is not block:
            raise ValueError(f"all targets must live in one block; {target.name} is in block "
                             f"{target.block.idx}, {targets[0].name} in block {block.idx}")
    builder = _BackwardBuilder(program, no_grad_set)
    # 1. prune: the ops on a path to the targets, minus those computing constants
    path = builder.ops_on_path(block, {t.name for t in targets})
    builder.mark_constants(path, wanted)
    builder.check_gradients_exist(path)
    builder.check_no_overwrite(path)
    # 2. seed the targets' gradients
    start = len(block.ops)
    for target, gradient in zip(targets, target_gradients):
        _seed(block, target, builder.grad_name(target.name), gradient)
        builder.grad_to_var[builder.grad_name(target.name)] = target.name
    # 3. grad ops in reverse (sub-blocks recursively: steps 3 to 5 again in each grad block)
    builder.append_grad_ops(path, block, {t.name for t in targets}, callbacks)
    # 4. sum gradients written by several ops
    builder.add_up_repeated_grads(block, start)
    # 5. no-grad branches: zero-fill what a kept grad op reads but nobody writes
    builder.remove_no_grad_branches(block, set(), start)
    # 6. declare and infer the gradient variables
    builder.create_grad_vars(block, start)
    if checkpoints is not None:
        program.recompute_checkpoints = apply_recompute(block, [op for op, _, _ in path], start, checkpoints)
    return builder


@_without_gc
def append_backward(loss: Variable, parameter_list: Sequence[Any] | None = None,
                    no_grad_set: Iterable[Any] | None = None,
                    callbacks: Sequence[Callable] | None = None,
                    checkpoints: Sequence[Any] | str | None = None) -> list[tuple[Parameter, Variable]]:
    """Append the backward pass of `loss`; return `(parameter, gradient)` for each trainable
    parameter the loss depends on (only those of `parameter_list`, when given).

    `checkpoints` (Variables or names, or "auto"): the forward ops between them are recomputed
    in the backward part, so only the checkpoints stay alive through the step; gradients are
    unchanged. `program.recompute_checkpoints` then names the checkpoints used."""
    _check_variable(loss, "append_backward: loss")
    if not has_gradients(loss.dtype) or loss.dtype.startswith("complex"):
        raise TypeError(f"append_backward: loss {loss.name} has dtype {loss.dtype}; "
                        "only a floating point loss has a gradient")
    if any(d != 1 for d in loss.shape):
        raise ValueError(f"append_backward: loss {loss.name} must hold one element, but its shape is "
                         f"{list(loss.shape)}; reduce it first, e.g. with fluidgrad.mean")
    wanted = _as_names(parameter_list, "parameter_list") if parameter_list is not None else None
    no_grad = _as_names(no_grad_set, "no_grad_set")
    if callbacks is not None and not isinstance(callbacks, (list, tuple)):
        raise TypeError("callbacks must be a list of callables")
    builder = _build([loss], [None], no_grad, callbacks or (), checkpoints=_checkpoint_names(checkpoints))
    program = loss.block.program
    params = program.all_parameters()
    if wanted is not None:
        by_name = {p.name: p for p in params}
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise ValueError(f"parameter_list names {missing}, which are not parameters of the program")
        params = [by_name[n] for n in wanted]
    block = loss.block
    result = []
    for param in params:
        grad_name = builder.grad_name(param.name)
        if param.trainable and block.has_var(grad_name):
            result.append((param, block.var(grad_name)))
    return result


@_without_gc
def gradients(targets: Variable | Sequence[Variable], inputs: Variable | Sequence[Variable],
              target_gradients: Variable | Sequence[Variable | None] | None = None,
              no_grad_set: Iterable[Any] | None = None,
              checkpoints: Sequence[Any] | str | None = None) -> list[Variable | None]:
    """The gradients of `targets` (summed) with respect to each of `inputs`; None if unreachable.
    `checkpoints`: as for `append_backward`."""
    targets_list = [targets] if isinstance(targets, Variable) else list(_check_list(targets, "targets"))
    inputs_list = [inputs] if isinstance(inputs, Variable) else list(_check_list(inputs, "inputs"))
    for t in targets_list:
        _check_variable(t, "gradients: each target")
    for x in inputs_list:
        _check_variable(x, "gradients: each input")
    if target_gradients is None:
        grads_in: list[Variable | None] = [None] * len(targets_list)
    else:
        grads_in = [target_gradients] if isinstance(target_gradients, Variable) else list(target_gradients)
        if len(grads_in) != len(targets_list):
            raise ValueError(f"gradients: {len(targets_list)} targets but {len(grads_in)} target_gradients")
    no_grad = set(_as_names(no_grad_set, "no_grad_set"))
    for x in inputs_list:
        if not has_gradients(x.dtype):
            raise TypeError(f"gradients: input {x.name} is {x.dtype}; only float variables have gradients (or complex ones) "
                            f"(cast it to a float dtype first if it should be differentiable)")
    # the inputs asked for get gradients even when they are marked stop_gradient (e.g. data)
    program = targets_list[0].block.program
    forced = {x.name for x in inputs_list}
    saved = {}
    for var in program.list_vars():
        if var.name in forced and var.stop_gradient:
            saved[var.name] = var
            var.stop_gradient = False
    try:
        builder = _build(targets_list, grads_in, no_grad - forced, wanted=forced,
                         checkpoints=_checkpoint_names(checkpoints))
    finally:
        for var in saved.values():
            var.stop_gradient = True
    block = targets_list[0].block
    return [block.var(builder.grad_name(x.name)) if block.has_var(builder.grad_name(x.name)) else None
            for x in inputs_list]


def _checkpoint_names(checkpoints: Any) -> list[str] | str | RecomputePolicy | None:
    if isinstance(checkpoints, RecomputePolicy):
        return RecomputePolicy(_checkpoint_names(checkpoints.checkpoints), checkpoints.keep)
    if checkpoints is None or isinstance(checkpoints, str) and checkpoints == "auto":
        return checkpoints
    return _as_names(checkpoints, "checkpoints")


def _check_list(items: Any, what: str) -> Sequence[Any]:
    if isinstance(items, str) or not isinstance(items, (list, tuple)):
        raise TypeError(f"gradients: {what} must be a Variable or a list of Variables, "
                        f"got {type(items).__name__}")
    return items


__all__ = ["append_backward", "gradients", "OpDesc"]
