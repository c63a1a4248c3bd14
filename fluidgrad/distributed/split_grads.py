"""Weight gradients split across ranks from shared activations, as a program transformation
(`DistributedOptimizer(..., split_grads=True)`; the ops and why: ops/comm_split.py).

After `append_backward`, a parameter's gradient made by one `matmul(X=act, Y=dY, transpose_x=True)`
(a Linear layer's weight) and a bias gradient made by one `reduce_as(dY, Target=b)` of such a dY
(or of the value a dY was assigned from) are taken out of the backward pass; one op at its end
computes them all, each rank its rows over the concatenated batch of every rank:

    {W@GRAD..., b@GRAD...} = c_split_matmul_grad(X=[acts], Y=[dYs])   # averaged, every rank
    ... clipping, decay and the optimizer's own update ops, as on one process ...

or, with `sharding=True` and SGD / Momentum / Adam without clipping, one op that also updates
each rank's rows of the node's one copy of the parameters and optimizer state:

    {W..., b...} = c_split_sgd(X=[acts], Y=[dYs], Param=[W..., b...], LearningRate=lr)

Nothing in the backward reads a weight gradient, so moving those products to its end changes no
value, and one barrier serves every layer. Gradients made otherwise (convolutions, embeddings, a
parameter used twice, ...) keep the bucketed all-reduce (or the sharded update) in the same
program. Only on one node (the activations go through shared memory) or in a world of one.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from ..framework import OPTIMIZE, Block, Operator, Program, Variable, unique_name
from ..optimizer import Optimizer
from .sharding import _append_startup_fill, fused_update

ParamsGrads = list[tuple[Variable, Variable]]
# FLUIDGRAD_SPLIT_GRADS=1 / 0: DistributedOptimizer's default for split_grads (unset: SPLIT_BY_DEFAULT)
SPLIT_BY_DEFAULT = False
_COPIES = itertools.count()  # node copies of this process, numbered in build order (the same on every rank)


def split_by_default() -> bool:
    value = os.environ.get("FLUIDGRAD_SPLIT_GRADS")
    if value is None:
        return SPLIT_BY_DEFAULT
    if value not in ("0", "1"):
        raise ValueError(f"FLUIDGRAD_SPLIT_GRADS must be 0 or 1, got {value!r}")
    return value == "1"


@dataclass
class SplitGrads:
    """The gradients found splittable: weights (param, grad, X name, Y name), then biases (param,
    grad, index of the weight whose Y it sums), and the backward ops that made them."""
    weights: list[tuple[Variable, Variable, str, str]] = field(default_factory=list)
    biases: list[tuple[Variable, Variable, int]] = field(default_factory=list)
    ops: list[Operator] = field(default_factory=list)

    @property
    def pairs(self) -> ParamsGrads:
        return [(p, g) for p, g, *_ in self.weights] + [(p, g) for p, g, _ in self.biases]


class _Uses:
    """Which ops of the block write and read each name; what other blocks touch."""

    def __init__(self, block: Block) -> None:
        self.writers: dict[str, list[int]] = {}
        self.readers: dict[str, list[int]] = {}
        for index, op in enumerate(block.ops):
            for name in op.output_arg_names:
                self.writers.setdefault(name, []).append(index)
            for name in op.input_arg_names:
                self.readers.setdefault(name, []).append(index)
        self.elsewhere = {n for other in block.program.blocks if other is not block for op in other.ops
                          for n in op.input_arg_names + op.output_arg_names}

    def stays(self, name: str, index: int) -> bool:
        """`name` keeps, to the end of the block, the value op `index` reads."""
        return name not in self.elsewhere and all(w < index for w in self.writers.get(name, []))

    def only_made_by(self, name: str, index: int) -> bool:
        """`name` is written by op `index` alone and read by no op (a finished gradient)."""
        return (self.writers.get(name) == [index] and not self.readers.get(name) and name not in self.elsewhere)


def find_split_grads(block: Block, pairs: ParamsGrads) -> SplitGrads | None:
    """The weight and bias gradients of `pairs` that c_split_matmul_grad can make, or None."""
    grads = {g.name: (p, g) for p, g in pairs}
    uses = _Uses(block)
    found = SplitGrads()
    bias_candidates = []
    for index, op in enumerate(block.ops):
        outputs = op.output_arg_names
        if len(outputs) != 1 or outputs[0] not in grads or not uses.only_made_by(outputs[0], index):
            continue
        param, grad = grads[outputs[0]]
        if op.type == "matmul" and op.attrs.get("transpose_x") and not op.attrs.get("transpose_y"):
            x, y = op.inputs["X"][0], op.inputs["Y"][0]
            if _is_weight_product(block, param, x, y) and uses.stays(x, index) and uses.stays(y, index):
                found.weights.append((param, grad, x, y))
                found.ops.append(op)
        elif op.type == "reduce_as" and op.inputs.get("Target") == [param.name] and len(param.shape) == 1:
            source = op.inputs["X"][0]
            var = block._find_var_recursive(source)
            if var is not None and len(var.shape) == 2 and uses.stays(source, index):
                bias_candidates.append((param, grad, source, op))
    if not found.weights:
        return None
    for param, grad, source, op in bias_candidates:
        for k, (_, _, _, y) in enumerate(found.weights):
            if source in _same_values(block, uses, y) and block.var_recursive(y).shape[1] == param.shape[0]:
                found.biases.append((param, grad, k))
                found.ops.append(op)
                break
    return found


def _is_weight_product(block: Block, param: Variable, x: str, y: str) -> bool:
    xv, yv = block._find_var_recursive(x), block._find_var_recursive(y)
    if xv is None or yv is None or len(xv.shape) != 2 or len(yv.shape) != 2:
        return False
    dtype = param.dtype
    return (xv.dtype == yv.dtype == dtype and dtype.startswith("float")
            and tuple(param.shape) == (xv.shape[1], yv.shape[1]) and min(param.shape) >= 0)


def _same_values(block: Block, uses: _Uses, name: str) -> set[str]:
    """`name` and the names it was assigned from (an assign is the same array), back to the first."""
    names = {name}
    while True:
        writers = uses.writers.get(name, [])
        if len(writers) != 1:
            return names
        op = block.ops[writers[0]]
        if op.type != "assign":
            return names
        name = op.inputs["X"][0]
        if len(uses.writers.get(name, [])) > 1:
            return names
        names.add(name)


def _take_out(block: Block, ops: list[Operator]) -> None:
    gone = {id(op) for op in ops}
    block.ops[:] = [op for op in block.ops if id(op) not in gone]
    block.program._bump()


def append_split_grads(block: Block, split: SplitGrads, nranks: int) -> Operator:
    """Replace the split gradients' backward ops by one c_split_matmul_grad at the block's end."""
    _take_out(block, split.ops)
    return block.append_op("c_split_matmul_grad", _operands(split),
                           {"Out": [g for _, g in split.pairs]},
                           {**_attrs(split, nranks), "op_role": OPTIMIZE})


def _operands(split: SplitGrads) -> dict[str, list[str]]:
    return {"X": [x for *_, x, _ in split.weights], "Y": [y for *_, y in split.weights]}


def _attrs(split: SplitGrads, nranks: int) -> dict:
    return {"biases": [k for *_, k in split.biases], "reduce": "avg", "key": unique_name("split_grads"),
            "nranks": nranks}


def split_update_op(optimizer: Optimizer) -> str | None:
    """The fused c_split_* op for `optimizer`'s sharded update (SGD, Momentum, Adam without clipping), or None."""
    fused = fused_update(optimizer)
    return None if fused is None else fused.replace("c_bucket_", "c_split_")


def append_split_update(op_type: str, optimizer: Optimizer, block: Block, startup: Program, split: SplitGrads,
                        nranks: int) -> Operator:
    """Replace the split gradients' backward ops by one fused sharded update at the block's end
    (each rank's rows of the node copies of the parameters and optimizer state); the startup
    fills the copies from rank 0."""
    _take_out(block, split.ops)
    params = [p for p, _ in split.pairs]
    attrs = _attrs(split, nranks)
    copy = f"{attrs['key']}.param#{next(_COPIES)}"
    decay = optimizer.regularization.coeff if optimizer.regularization is not None else 0.0
    attrs.update(copy=copy, decay=decay, op_role=OPTIMIZE)
    lr = optimizer._create_lr_var(block, startup, params[0].dtype)
    inputs = {**_operands(split), "Param": params, "LearningRate": lr}
    outputs = {"ParamOut": params}
    _append_startup_fill(startup, params, copy)
    if op_type == "c_split_momentum":
        velocities = [optimizer._accumulator(block, startup, p, "Velocity") for p in params]
        inputs["Velocity"], outputs["VelocityOut"] = velocities, velocities
        attrs.update(optimizer.update_attrs())
        _append_startup_fill(startup, velocities, copy + ".velocity")
    if op_type == "c_split_adam":
        attrs.update(optimizer.update_attrs())
        for slot in ("Moment1", "Moment2", "Beta1Pow", "Beta2Pow"):
            accs = [optimizer._accumulator(block, startup, p, slot) for p in params]
            inputs[slot], outputs[slot + "Out"] = accs, accs
            if slot.startswith("Moment"):
                _append_startup_fill(startup, accs, f"{copy}.{slot.lower()}")
    return block.append_op(op_type, inputs, outputs, attrs)
