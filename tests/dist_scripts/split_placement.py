"""Run by tests/test_distributed_split_grads.py through `fluidgrad launch -n 2`: split weight
gradients with the layers' activations written by their producers straight into the shared
window (placement, `FLUIDGRAD_SPLIT_PLACE=1`) against the same training with them copied there by the op
(`comm_split.ACTIVATIONS_IN_PLACE = False`, the default): on two ranks (a power of two, so the
average's 1/2 is exact wherever it is applied) every loss and parameter must be the same bits.

Cases: the private-parameter split (X placed, Y copied and scaled) and the sharded SGD, Momentum
and Adam (X and Y placed, the 1/2 applied in the update), relu and tanh layers, a fixed batch and
one changing size (a batch of another size than the last is copied as before). Rank 0 writes per
case whether the bits match, which values the plan places and how many of the op's inputs were
found in place over the run; and how far the sharded SGD with its parameter rows written with
streaming stores (comm_split.STREAM_PARAMS) ends from the same training without.
"""
from __future__ import annotations

import json
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.executor import compile_block
from fluidgrad.framework import unique_name_guard
from fluidgrad.nn import functional as F
from fluidgrad.ops import comm_split
from fluidgrad.ops.comm import get_world

STEPS = 6
OPTIMIZERS = {"sgd": lambda: fg.optimizer.SGD(0.1), "momentum": lambda: fg.optimizer.Momentum(0.05),
              "adam": lambda: fg.optimizer.Adam(0.01)}
_found_in_place = [0]


def _counting(is_placed):
    def counted(destination, array, part):
        placed = is_placed(destination, array, part)
        _found_in_place[0] += placed
        return placed
    return counted


comm_split.is_placed = _counting(comm_split.is_placed)


def train(case, in_place):
    default, comm_split.ACTIVATIONS_IN_PLACE = comm_split.ACTIVATIONS_IN_PLACE, in_place
    main, startup = fg.Program(), fg.Program()
    with unique_name_guard(), fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 12], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = fg.static.nn.fc(x, 16, activation=case["act"])
        h = fg.static.nn.fc(h, 8, activation=case["act"])
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, 5), y))
        dist.DistributedOptimizer(OPTIMIZERS[case["opt"]](), sharding=case["sharding"], split_grads=True).minimize(
            loss, startup)
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    init = np.random.default_rng(7)
    for p in main.all_parameters():  # the same start for both ways, whatever the random state
        scope[p.name] = (init.standard_normal(p.shape) * 0.3).astype("float32")
    rng = np.random.default_rng(100 + get_world().rank)
    _found_in_place[0] = 0
    losses = []
    for step in range(STEPS):
        rows = 6 if not case["vary"] else (6, 6, 9, 9, 4, 6)[step]
        feed = {"x": rng.standard_normal((rows, 12)).astype("float32"), "y": rng.integers(0, 5, (rows, 1))}
        losses.append(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
    plan = compile_block(main.global_block(), ["x", "y"], [loss.name]) if in_place else None
    comm_split.ACTIVATIONS_IN_PLACE = default
    values = losses + [np.array(scope[p.name]) for p in main.all_parameters()]
    return values, (sorted(plan.placed) if plan else []), _found_in_place[0]


def main(out_path):
    dist.init_parallel_env()
    cases = {}
    for opt in OPTIMIZERS:
        for sharding in (False, True):
            for act in ("relu", "tanh"):
                for vary in (False, True):
                    if not sharding and opt != "sgd":
                        continue  # the private-parameter split is the same op for every optimizer
                    case = {"opt": opt, "sharding": sharding, "act": act, "vary": vary}
                    placed_values, placed, found = train(case, True)
                    copied_values, _, found_copied = train(case, False)
                    same = all(a.dtype == b.dtype and a.tobytes() == b.tobytes()
                               for a, b in zip(placed_values, copied_values))
                    name = f"{opt}-{'sharded' if sharding else 'default'}-{act}-{'vary' if vary else 'fixed'}"
                    cases[name] = {"same": same, "placed": placed, "found": found, "found_copied": found_copied}
    # the sharded SGD writing this rank's parameter rows with streaming stores: the same training
    # to rounding (its compiled loop may contract the update differently)
    case = {"opt": "sgd", "sharding": True, "act": "relu", "vary": False}
    comm_split.STREAM_PARAMS = True
    streamed_values, _, _ = train(case, True)
    comm_split.STREAM_PARAMS = False
    plain_values, _, _ = train(case, True)
    streamed_diff = max(float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-30))
                        for a, b in zip(streamed_values, plain_values))
    if get_world().rank == 0:
        with open(out_path, "w") as f:
            json.dump({"world": get_world().size, "shared": get_world().shares_memory(), "cases": cases,
                       "streamed_params_diff": streamed_diff}, f)


if __name__ == "__main__":
    main(sys.argv[1])
