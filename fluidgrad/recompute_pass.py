"""Recompute (activation checkpointing) as a rewrite of a block's backward part.

Given checkpoint variables, the forward ops are cut into segments at the ops that write them.
Just before the first grad op that reads a value computed inside a segment, copies of the
forward ops that compute the segment's values are inserted, writing `<name>@RECOMPUTE`
(`@RECOMPUTE@k` for a later copy), and the grad ops read those copies instead. The originals are
then read by forward ops only, so the executor frees them after their last forward use, and only
the checkpoints (and what cannot be recomputed) stay alive through the whole step (Chen et al.
2016, "Training deep nets with sublinear memory cost"; Paddle's RecomputeOptimizer).

The last segment (after the last checkpoint) is not recomputed: its grad ops run first, while
its values are still alive from the forward, so a copy would cost time and save no memory.

Kept as they are (read by the grad ops directly): checkpoints, parameters and other persistable
values, the data, values written more than once, and the outputs of ops that must not run twice:
ops that draw random numbers (a `seed` attribute: dropout's mask is reused, never redrawn), ops
holding a sub-block (`while`, `conditional_block`: their step scopes are already kept), and ops
reading a value that the forward overwrites later (batch_norm's running statistics). Values read
inside sub-blocks of the backward are kept too, since a sub-block reads by name.

Selective keeping (`RecomputePolicy(checkpoints, keep=0.05)`; "auto" uses it): within the budget
of `keep` times the bytes the backward would keep without checkpoints, some values inside the
segments are kept as well, chosen greedily by the estimated recompute time they save per byte
(a matmul or convolution's output is costly to recompute for its size, an elementwise op's
cheap), like Megatron-LM's selective activation recomputation, but by an estimate instead of a
fixed list of ops. Gradients are unchanged: a kept value is the forward's own.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

from .framework import BACKWARD, Block, Operator
from .framework.dtypes import is_float
from .framework.names import EMPTY_VAR_NAME, RECOMPUTE_SUFFIX
from .framework.op_def import SHAPE_ONLY_SLOTS


# the share of the no-checkpoint activation bytes that "auto" spends on selective keeping
AUTO_KEEP = 0.05


class RecomputeError(ValueError):
    """A checkpoint list that cannot be used (not a variable, not on the path to the loss)."""


@dataclass(frozen=True)
class RecomputePolicy:
    """Checkpoints (names, Variables or "auto") plus selective keeping: `keep` is the memory
    budget, as a share of the bytes the backward keeps without checkpoints, for values inside
    the segments that are kept instead of recomputed (those saving the most time per byte)."""
    checkpoints: Union[Sequence, str]
    keep: float = AUTO_KEEP

    def __post_init__(self) -> None:
        if not (isinstance(self.keep, (int, float)) and 0 <= self.keep <= 1):
            raise RecomputeError(f"RecomputePolicy: keep must be a share in [0, 1], got {self.keep!r}")


def apply_recompute(block: Block, path: Sequence[Operator], backward_start: int,
                    checkpoints: Iterable[str] | str | RecomputePolicy) -> list[str]:
    """Rewrite `block.ops[backward_start:]` (the grad ops of the forward ops `path`, which lead
    to the targets) to recompute segments between `checkpoints`, or ones chosen by "auto";
    return the checkpoints used. "auto" also keeps values selectively (`AUTO_KEEP`)."""
    keep = 0.0
    if isinstance(checkpoints, RecomputePolicy):
        checkpoints, keep = checkpoints.checkpoints, checkpoints.keep
    elif checkpoints == "auto":
        keep = AUTO_KEEP
    forward_ops = block.ops[:backward_start]
    if checkpoints == "auto":
        checkpoints = auto_checkpoints(block, path, backward_start)
    checkpoints = list(dict.fromkeys(checkpoints))
    _check_checkpoints(block, checkpoints, _producers(path))
    producers = _producers(forward_ops)
    segment_of_op = _segments(forward_ops, [producers[c] for c in checkpoints])
    kept = _kept_values(block, forward_ops, backward_start, set(checkpoints))
    last_segment = max(segment_of_op.values(), default=0)
    recomputable = {name: op for name, op in producers.items()
                    if name not in kept and segment_of_op[id(op)] < last_segment}
    grad_ops = block.ops[backward_start:]
    if keep > 0:
        budget = keep * sum(_nbytes(block, n) for n in _saved_values(grad_ops, producers))
        for name in _selective_keep(block, recomputable, segment_of_op, grad_ops, budget):
            del recomputable[name]
    block.ops[backward_start:] = _Rewriter(block, recomputable, segment_of_op).rewrite(grad_ops)
    block.program._bump()
    return checkpoints


def _saved_values(grad_ops: Sequence[Operator], producers: dict[str, Operator]) -> set[str]:
    """The forward values the grad ops read for their data (the executor keeps only a stand-in
    of a value read for its shape): what the backward keeps alive without checkpoints."""
    return {n for op in grad_ops for slot, names in op.inputs.items()
            if slot not in SHAPE_ONLY_SLOTS.get(op.type, ()) for n in names if n in producers}


def _data_reads(op: Operator, recomputable: dict[str, Operator]) -> list[str]:
    """The recomputable values `op` reads for their data, not only for their shape."""
    shape_only = SHAPE_ONLY_SLOTS.get(op.type, ())
    return list(dict.fromkeys(n for slot, names in op.inputs.items() if slot not in shape_only
                              for n in names if n in recomputable))


# estimated cost per output element (nanoseconds on one core with NumPy; only the ratios matter)
_GEMM_NS_PER_MAC = 0.04   # matmul / convolution: per multiply-add of the reduced dimension
_VIEW_NS = 0.05           # reshape, transpose, ...: a view or one copy
_TRANSCENDENTAL_NS = 3.0  # exp, tanh, normalisations: several passes over the data
_ELEMENTWISE_NS = 1.0
_VIEW_OPS = {"reshape", "reshape2", "transpose", "transpose2", "squeeze", "unsqueeze", "flatten",
             "slice", "assign", "cast", "expand", "split"}
_TRANSCENDENTAL_OPS = {"gelu", "softmax", "attention_softmax", "log_softmax", "layer_norm",
                       "batch_norm", "group_norm", "instance_norm", "exp", "log", "tanh", "sigmoid",
                       "silu", "swish", "erf", "pow", "sqrt", "rsqrt", "softplus", "mish", "elu",
                       "softmax_with_cross_entropy", "dropout"}


def _elements(block: Block, name: str) -> int:
    var = block._find_var_recursive(name)
    return 0 if var is None else math.prod(max(int(d), 1) for d in var.shape)


def _op_cost(block: Block, op: Operator) -> float:
    """Estimated time to run `op` once (arbitrary units): what recomputing it costs."""
    out = sum(_elements(block, n) for n in op.output_arg_names if n != EMPTY_VAR_NAME)
    if op.type == "matmul":
        x = block._find_var_recursive(op.input("X")[0])
        shape = list(x.shape) if x is not None else [1]
        reduced = shape[-2] if op.attrs.get("transpose_x") and len(shape) > 1 else shape[-1]
        return out * max(int(reduced), 1) * _GEMM_NS_PER_MAC
    if "Filter" in op.inputs and op.input("Filter"):
        weight = block._find_var_recursive(op.input("Filter")[0])
        per_output = math.prod(max(int(d), 1) for d in weight.shape[1:]) if weight is not None else 1
        return out * per_output * _GEMM_NS_PER_MAC
    if op.type in _VIEW_OPS:
        return out * _VIEW_NS
    return out * (_TRANSCENDENTAL_NS if op.type in _TRANSCENDENTAL_OPS else _ELEMENTWISE_NS)


def _selective_keep(block: Block, recomputable: dict[str, Operator], segment_of_op: dict[int, int],
                    grad_ops: Sequence[Operator], budget: float) -> set[str]:
    """Values to keep instead of recompute, within `budget` bytes: greedily the one whose
    keeping saves the most estimated recompute time per byte, until none fits."""
    wanted: dict[int, set[str]] = defaultdict(set)
    for op in grad_ops:
        for name in _data_reads(op, recomputable):
            wanted[segment_of_op[id(recomputable[name])]].add(name)
    cost = {id(op): _op_cost(block, op) for op in recomputable.values()}
    chosen: set[str] = set()

    def needed_ops(names: set[str]) -> dict[int, Operator]:
        ops: dict[int, Operator] = {}
        stack = [n for n in names if n not in chosen]
        while stack:
            op = recomputable.get(stack.pop())
            if op is not None and id(op) not in ops:
                ops[id(op)] = op
                stack += [n for n in op.input_arg_names if n in recomputable and n not in chosen]
        return ops

    spent = 0
    while True:
        best = None
        for names in wanted.values():
            ops = needed_ops(names)
            base = sum(cost[i] for i in ops)
            for op in ops.values():
                for name in op.output_arg_names:
                    size = _nbytes(block, name) if name in recomputable and name not in chosen else 0
                    if size == 0 or spent + size > budget:
                        continue
                    chosen.add(name)
                    saved = base - sum(cost[i] for i in needed_ops(names))
                    chosen.discard(name)
                    if saved > 0 and (best is None or saved / size > best[0]):
                        best = (saved / size, name, size)
        if best is None:
            return chosen
        chosen.add(best[1])
        spent += best[2]


def auto_checkpoints(block: Block, forward_ops: Sequence[Operator], backward_start: int) -> list[str]:
    """About sqrt(n) checkpoints along the chain: values that alone carry the forward from one
    part of the program to the next (cut points), spaced evenly by the bytes computed between."""
    kept = _kept_values(block, forward_ops, backward_start, set())
    producers = _producers(forward_ops)
    last_read = {}
    for index, op in enumerate(forward_ops):
        for name in op.input_arg_names:
            last_read[name] = index
    cuts, sizes, live = [], [], set()
    for index, op in enumerate(forward_ops):
        live = {n for n in live if last_read.get(n, -1) > index}
        outputs = [n for n in op.output_arg_names if n in producers and n not in kept and last_read.get(n, -1) > index]
        live.update(outputs)
        sizes.append(sum(_nbytes(block, n) for n in op.output_arg_names if n != EMPTY_VAR_NAME))
        if len(live) == 1 and outputs and is_float(block.var_recursive(outputs[0]).dtype):
            cuts.append((index, outputs[0]))
    if not cuts:
        return []
    # sqrt of the values the backward keeps: those its ops read for their data (the executor
    # keeps only a stand-in of a value read for its shape)
    saved = {n for op in block.ops[backward_start:] for slot, names in op.inputs.items()
             if slot not in SHAPE_ONLY_SLOTS.get(op.type, ()) for n in names if n in producers}
    count = max(1, round(math.sqrt(len(saved) or len(forward_ops))))
    total = sum(sizes) or 1
    cumulative, running = [], 0
    for size in sizes:
        running += size
        cumulative.append(running)
    chosen, next_mark = [], total / (count + 1)
    for index, name in cuts:
        if cumulative[index] >= next_mark and len(chosen) < count:
            chosen.append(name)
            next_mark += total / (count + 1)
    return chosen


def _nbytes(block: Block, name: str) -> int:
    """A size estimate from the declared shape (an unknown batch dimension counts as 1)."""
    var = block._find_var_recursive(name)
    if var is None:
        return 0
    elements = 1
    for dim in var.shape:
        elements *= max(int(dim), 1)
    itemsize = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bool": 1}.get(var.dtype, 4)
    return elements * itemsize


def _producers(forward_ops: Sequence[Operator]) -> dict[str, Operator]:
    """Each value written exactly once by the forward ops -> its writer."""
    writers: dict[str, list[Operator]] = defaultdict(list)
    for op in forward_ops:
        for name in op.output_arg_names:
            if name != EMPTY_VAR_NAME:
                writers[name].append(op)
    return {name: ops[0] for name, ops in writers.items() if len(ops) == 1}


def _check_checkpoints(block: Block, checkpoints: Sequence[str], producers: dict[str, Operator]) -> None:
    for name in checkpoints:
        if block._find_var_recursive(name) is None:
            raise RecomputeError(f"recompute: checkpoint {name!r} is not a variable of the program")
        if name not in producers:
            raise RecomputeError(f"recompute: checkpoint {name!r} is not computed by a forward op on the path "
                                 f"to the loss (checkpoints are intermediate values between the data and "
                                 f"the loss)")


def _segments(forward_ops: Sequence[Operator], checkpoint_writers: Sequence[Operator]) -> dict[int, int]:
    """id(op) -> segment: segment k holds the ops after the k-th checkpoint's writer, up to and
    including the next checkpoint's writer."""
    writers = {id(op) for op in checkpoint_writers}
    segment, result = 0, {}
    for op in forward_ops:
        result[id(op)] = segment
        if id(op) in writers:
            segment += 1
    return result


def _kept_values(block: Block, forward_ops: Sequence[Operator], backward_start: int,
                 checkpoints: set[str]) -> set[str]:
    """Values the grad ops read as they are: see the module docstring."""
    kept = set(checkpoints)
    written_at: dict[str, int] = {}
    for index, op in enumerate(forward_ops):
        for name in op.output_arg_names:
            written_at[name] = index
    for index, op in enumerate(forward_ops):
        overwritten_later = any(written_at.get(n, -1) >= index for n in op.input_arg_names)
        if "seed" in op.attrs or "sub_block" in op.attrs or overwritten_later:
            kept.update(op.output_arg_names)
    for name in {n for op in forward_ops for n in op.output_arg_names}:
        var = block._find_var_recursive(name)
        if var is None or var.persistable:
            kept.add(name)
    for op in block.ops[backward_start:]:
        if "sub_block" in op.attrs:
            kept.update(op.input_arg_names)
            kept.update(_names_read_in(op.attrs["sub_block"]))
    return kept


def _names_read_in(block: Block) -> set[str]:
    names = set()
    for op in block.ops:
        names.update(op.input_arg_names)
        sub = op.attrs.get("sub_block")
        if isinstance(sub, Block):
            names.update(_names_read_in(sub))
    return names


class _Rewriter:
    """Walks the grad ops in order, inserting each segment's recomputation before its first use."""

    def __init__(self, block: Block, recomputable: dict[str, Operator], segment_of_op: dict[int, int]) -> None:
        self.block = block
        self.recomputable = recomputable
        self.segment_of_op = segment_of_op
        self.order = {id(op): i for i, op in enumerate(block.ops)}
        self.current: dict[str, str] = {}    # forward value -> the name of its live recomputed copy
        self.done: set[int] = set()          # segments already recomputed
        self.copies: dict[str, int] = defaultdict(int)
        self.reads_by_segment: dict[int, set[str]] = defaultdict(set)

    def rewrite(self, grad_ops: list[Operator]) -> list[Operator]:
        # a read of the shape only (`reduce_as` Target, ...) keeps the original name: the
        # executor keeps a memory-free stand-in of it, so recomputing a value for its shape would
        # be waste (e.g. the last matmul of each fc segment, read in the backward by reduce_as)
        for op in grad_ops:
            for name in _data_reads(op, self.recomputable):
                self.reads_by_segment[self._segment(name)].add(name)
        result: list[Operator] = []
        for op in grad_ops:
            needed = _data_reads(op, self.recomputable)
            for segment in sorted({self._segment(n) for n in needed} - self.done, reverse=True):
                result += self._recompute(segment)
                self.done.add(segment)
            for name in needed:
                if name not in self.current:  # recomputed by no segment yet: a copy just for it
                    result += self._copies_for({name})
                op.rename_input(name, self.current[name])
            result.append(op)
        return result

    def _segment(self, name: str) -> int:
        return self.segment_of_op[id(self.recomputable[name])]

    def _recompute(self, segment: int) -> list[Operator]:
        return self._copies_for(self.reads_by_segment[segment])

    def _copies_for(self, wanted: set[str]) -> list[Operator]:
        """Copies of the forward ops computing `wanted` from kept values, in forward order."""
        ops: dict[int, Operator] = {}
        stack = list(wanted)
        while stack:
            name = stack.pop()
            op = self.recomputable.get(name)
            if op is None or id(op) in ops:
                continue
            ops[id(op)] = op
            stack += [n for n in op.input_arg_names if n in self.recomputable]
        renamed: dict[str, str] = {}
        copies = []
        for op in sorted(ops.values(), key=lambda o: self.order[id(o)]):
            inputs = {slot: [renamed.get(n, n) for n in names] for slot, names in op.inputs.items()}
            outputs = {slot: [self._fresh_name(n) if n != EMPTY_VAR_NAME else n for n in names]
                       for slot, names in op.outputs.items()}
            for old, new in zip(op.output_arg_names, [n for names in outputs.values() for n in names]):
                if old != EMPTY_VAR_NAME:
                    renamed[old] = new
            copies.append(Operator(self.block, op.type, inputs, outputs, {**op.attrs, "op_role": BACKWARD}))
        self.current.update(renamed)
        return copies

    def _fresh_name(self, name: str) -> str:
        k = self.copies[name]
        self.copies[name] += 1
        new = f"{name}{RECOMPUTE_SUFFIX}" if k == 0 else f"{name}{RECOMPUTE_SUFFIX}@{k}"
        original = self.block.var_recursive(name)
        self.block.create_var(new, original.shape, original.dtype)
        return new
