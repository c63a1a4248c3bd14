"""Run by tests/test_distributed.py on N ranks: the public collectives and the collective ops
(forward in eager and static mode, gradients through append_backward) against NumPy answers
computed from every rank's known input. Rank 0 writes the failures found (an empty list: all good)."""
from __future__ import annotations

import itertools
import json
import sys
import time

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.ops import comm
from fluidgrad.ops.comm import get_world


def value(rank, shape=(4, 3)):
    return (np.arange(np.prod(shape)).reshape(shape) * (rank + 1) + rank).astype("float64")


def check(failures, name, got, expected):
    if np.shape(got) != np.shape(expected) or not np.allclose(got, expected, rtol=1e-12, atol=1e-12):
        failures.append(f"{name}: got {np.asarray(got).tolist()}, expected {np.asarray(expected).tolist()}")


def run_static(op, x_value, attrs, weight):
    """Out = op(x); loss = sum(Out * weight): returns Out and dloss/dx on this rank."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", list(x_value.shape), "float64")
        x.stop_gradient = False
        out = fg.dispatch.apply_op(op, {"X": x}, attrs)
        loss = fg.sum(fg.multiply(out, fg.static.data("w", list(weight.shape), "float64")))
        (dx,) = fg.gradients([loss], [x])
    return fg.Executor().run(main, feed={"x": x_value, "w": weight}, fetch_list=[out, dx], scope=fg.Scope())


class _TwoLayers(fg.nn.Layer):
    """tanh(x W1 + b1) W2 + b2, noting when the gradient of its hidden value is complete."""

    def __init__(self, events):
        super().__init__()
        self.first, self.last, self.events = fg.nn.Linear(6, 5), fg.nn.Linear(5, 1), events

    def forward(self, x):
        hidden = fg.tanh(self.first(x))
        hidden.register_hook(lambda g: self.events.append("hidden grad"))
        return self.last(hidden)


def check_overlap_order(failures, rank):
    """Through MPI (across nodes), DataParallel hands the last layer's weight gradient to its
    bucket during the backward pass, before the first layer's backward, not after the whole pass."""
    get_world().allreduce_path = "mpi"
    fg.seed(0)
    events = []
    model = _TwoLayers(events)
    dp = fg.DataParallel(model, comm_buffer_size=1e-9, last_comm_buffer_size=1e-9)  # a bucket per parameter
    out = dp(fg.to_tensor(value(rank, (3, 6)).astype("float32")))
    step = dp.last_step
    ready = step.ready
    last_weight = next(i for i, p in enumerate(step.params) if p is model.last.weight)

    def recording_ready(i, grad):
        events.append(i)
        ready(i, grad)
    step.ready = recording_ready
    out.sum().backward()
    if last_weight not in events or events.index(last_weight) > events.index("hidden grad"):
        failures.append(f"DataParallel over MPI: the last layer's weight was handed over only after the "
                        f"first layer's backward (no overlap): {events}")


def main(out_path):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    every = [value(r) for r in range(world)]
    total = sum(every)
    failures = []

    # public functions: eager Tensors in place, NumPy arrays in place
    t = fg.to_tensor(value(rank))
    check(failures, "all_reduce sum (Tensor, in place)", dist.all_reduce(t).numpy(), total)
    check(failures, "all_reduce result is the same Tensor", float(dist.all_reduce(t) is t), 1.0)
    for op, ref in (("max", np.max(every, 0)), ("min", np.min(every, 0)), ("avg", total / world)):
        a = value(rank)
        dist.all_reduce(a, op)
        check(failures, f"all_reduce {op} (ndarray, in place)", a, ref)
    b = fg.to_tensor(value(rank))
    check(failures, "broadcast src=1", dist.broadcast(b, src=world - 1).numpy(), every[-1])
    check(failures, "all_gather", np.stack([p.numpy() for p in dist.all_gather(fg.to_tensor(value(rank)))]),
          np.stack(every))
    out_list = []
    dist.all_gather(out_list, fg.to_tensor(value(rank)))
    check(failures, "all_gather(list, x)", np.stack([p.numpy() for p in out_list]), np.stack(every))
    big = np.concatenate(every)  # [4 * world, 3] on every rank, different per rank
    rows = big.shape[0] // world
    check(failures, "reduce_scatter", dist.reduce_scatter(big + rank),
          sum(big + r for r in range(world))[rank * rows:(rank + 1) * rows])
    dist.barrier()

    # the ops in a Program, with their gradients (loss = sum over ranks of sum(Out * w_rank))
    weights = [value(r) * 0.5 + 1 for r in range(world)]
    out, dx = run_static("c_allreduce_sum", value(rank), {}, weights[rank])
    check(failures, "c_allreduce_sum", out, total)
    check(failures, "c_allreduce_sum grad", dx, sum(weights))
    out, dx = run_static("c_allreduce_avg", value(rank), {}, weights[rank])
    check(failures, "c_allreduce_avg", out, total / world)
    check(failures, "c_allreduce_avg grad", dx, sum(weights) / world)
    root = world - 1
    out, dx = run_static("c_broadcast", value(rank), {"root": root}, weights[rank])
    check(failures, "c_broadcast", out, every[root])
    check(failures, "c_broadcast grad", dx, sum(weights) if rank == root else np.zeros_like(dx))
    out, dx = run_static("c_reduce_sum", value(rank), {"root": root}, weights[rank])
    check(failures, "c_reduce_sum", out, total if rank == root else np.zeros_like(total))
    check(failures, "c_reduce_sum grad", dx, weights[root])
    gathered_w = [np.concatenate([value(r) for r in range(world)]) * (r + 2) for r in range(world)]
    out, dx = run_static("c_allgather", value(rank), {"nranks": world}, gathered_w[rank])
    check(failures, "c_allgather", out, np.concatenate(every))
    check(failures, "c_allgather grad", dx, sum(gathered_w)[rank * 4:(rank + 1) * 4])
    out, dx = run_static("c_reducescatter", big, {"nranks": world}, weights[rank])
    check(failures, "c_reducescatter", out, (big * world)[rank * rows:(rank + 1) * rows])
    check(failures, "c_reducescatter grad", dx, np.concatenate(weights))
    # a bucket of two tensors, twice (the buffer is reused), through shared memory and through MPI
    for path, (reduce, divide) in itertools.product(("auto", "mpi"), (("avg", world), ("sum", 1))):
        get_world().allreduce_path = path
        for step in range(2):
            main, startup = fg.Program(), fg.Program()
            with fg.program_guard(main, startup):
                a, b = fg.static.data("a", [4, 3], "float64"), fg.static.data("b", [2], "float64")
                a.stop_gradient = b.stop_gradient = False
                outs = fg.dispatch.apply_op("c_bucket_allreduce", {"X": [a, b]}, {"reduce": reduce, "bucket": "t"},
                                            n_out=2)
                loss = fg.sum(fg.multiply(outs[0], fg.static.data("w", [4, 3], "float64"))) + fg.sum(outs[1])
                da, db = fg.gradients([loss], [a, b])
            got = fg.Executor().run(main, feed={"a": value(rank) + step, "b": np.full(2, rank + 1.0), "w": weights[rank]},
                                    fetch_list=[*outs, da, db], scope=fg.Scope())
            check(failures, f"c_bucket_allreduce {path} {reduce} [0]", got[0], (total + world * step) / divide)
            check(failures, f"c_bucket_allreduce {path} {reduce} [1]", got[1], np.full(2, sum(range(1, world + 1)) / divide))
            check(failures, f"c_bucket_allreduce {path} {reduce} grad [0]", got[2], sum(weights) / divide)
            check(failures, f"c_bucket_allreduce {path} {reduce} grad [1]", got[3], np.full(2, world / divide))
    check_overlap_order(failures, rank)
    get_world().allreduce_path = "auto"
    # an input read again after the op keeps its value (the sums go into new arrays)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        a = fg.static.data("a", [4, 3], "float64")
        doubled = fg.scale(a, scale=2.0)
        (total_out,) = fg.dispatch.apply_op("c_bucket_allreduce", {"X": [doubled]}, {"reduce": "sum", "bucket": "u"},
                                            n_out=1)
        after = fg.scale(doubled, scale=1.0)
    got = fg.Executor().run(main, feed={"a": value(rank)}, fetch_list=[total_out, after], scope=fg.Scope())
    check(failures, "c_bucket_allreduce of a value read later", got[0], 2 * total)
    check(failures, "a value read after its c_bucket_allreduce", got[1], 2 * value(rank))
    if not get_world().shares_memory():
        failures.append("the ranks of one machine did not reduce buckets through shared memory")
    # beyond the cap on shared buckets a bucket is private (MPI's Iallreduce), and still right
    saved, comm.SHARED_BUCKETS = comm.SHARED_BUCKETS, 0
    try:
        bucket = get_world().bucket("beyond the cap", 5, "float64")
        bucket.input[:] = rank + 1.0
        check(failures, f"a private bucket beyond the cap (shared: {bucket.shared})",
              np.append(bucket.start().wait(), bucket.shared), np.append(np.full(5, world * (world + 1) / 2), False))
    finally:
        comm.SHARED_BUCKETS = saved
    check_bucket_reused_out_of_step(failures, rank, world)
    for op in ("c_allreduce_max", "c_allreduce_min"):
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup):
            x = fg.static.data("x", [4, 3], "float64")
            out = fg.dispatch.apply_op(op, {"X": x}, {})
        (got,) = fg.Executor().run(main, feed={"x": value(rank)}, fetch_list=[out], scope=fg.Scope())
        check(failures, op, got, (np.max if op.endswith("max") else np.min)(every, 0))

    # ranks that disagree on a shape get a clear error, not a hang or a wrong answer
    try:
        dist.broadcast(np.zeros(3 + rank))
        failures.append("broadcast of different shapes did not raise")
    except dist.CollectiveMismatchError as exc:
        if "rank 1 passes shape [4]" not in str(exc):
            failures.append(f"unclear mismatch error: {exc}")
    for name, mine in (("shape", np.zeros(3 + rank)), ("dtype", np.zeros(3, ("float64", "float32")[rank % 2]))):
        try:
            dist.all_reduce(mine)
            failures.append(f"all_reduce of different {name}s did not raise")
        except dist.CollectiveMismatchError as exc:
            if "all_reduce: rank 1 passes shape" not in str(exc):
                failures.append(f"unclear all_reduce mismatch error: {exc}")
    check_0d_and_batch_axis(failures, rank, world)

    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(failures, f)


def check_0d_and_batch_axis(failures, rank, world):
    """0-D values stay 0-D through the collectives (eager and static), and a Program gathers a
    value whose batch axis is known only at run time."""
    t = dist.all_reduce(fg.to_tensor(np.float64(rank + 1)))
    check(failures, "all_reduce of a 0-D Tensor", t.numpy(), np.float64(world * (world + 1) / 2))
    b = dist.broadcast(fg.to_tensor(np.float64(rank + 5)), src=world - 1)
    check(failures, "broadcast of a 0-D Tensor", b.numpy(), np.float64(world + 4))
    parts = dist.all_gather(fg.to_tensor(np.float64(rank)))
    check(failures, "all_gather of a 0-D Tensor", np.array([p.numpy() for p in parts]), np.arange(world, dtype=float))
    if any(p.numpy().shape != () for p in parts):
        failures.append(f"all_gather of a 0-D Tensor gave shapes {[p.numpy().shape for p in parts]}")
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float64")
        s = fg.static.data("s", [], "float64")
        gathered = dist.all_gather(x * 1.0)
        total = dist.all_reduce(s * 1.0)
        scalars = dist.all_gather(s * 1.0)
    got = fg.Executor().run(main, feed={"x": value(rank), "s": np.float64(rank + 1)},
                            fetch_list=[*gathered, total, *scalars], scope=fg.Scope())
    for r in range(world):
        check(failures, f"static all_gather of [None, 3], part {r}", got[r], value(r))
    check(failures, "static all_reduce of a 0-D variable", got[world], np.float64(world * (world + 1) / 2))
    for r in range(world):
        check(failures, f"static all_gather of a 0-D variable, part {r}", got[world + 1 + r], np.float64(r + 1))


def check_bucket_reused_out_of_step(failures, rank, world):
    """A shared bucket reduced back to back while one rank reads late: every sum is of its own
    round's rows (two ranks alternate two sets of rows, with one barrier per sum, so a fast
    rank must not write the rows a slow one is still reading)."""
    bucket = get_world().bucket("reused out of step", 1200, "float64")
    late = np.random.default_rng(0).random(40) < 0.5  # the same draws on every rank
    wrong = []
    for i in range(40):
        bucket.input[:] = (rank + 1) * (i + 1)
        request = bucket.start()
        if late[i] == (rank % 2 == 0):
            time.sleep(0.002)  # the others may go on to the next rounds meanwhile
        (got,) = request.wait_arrays([(0, (12, 100))])
        if not np.array_equal(got, np.full((12, 100), world * (world + 1) / 2 * (i + 1))):
            wrong.append(i)
        if world == 2 and bucket.shared and (got.base is not None or not got.flags.writeable):
            failures.append("two ranks on one node: a bucket's sums should be new arrays of their own")
            break
    if wrong:
        failures.append(f"a shared bucket reused out of step gave wrong sums in rounds {wrong}")


if __name__ == "__main__":
    main(sys.argv[1])
