"""Run by tests/test_distributed_api.py on N ranks (and without a launcher): the collective API as
Paddle 2 and PyTorch users write it (ReduceOp, reduce, scatter, the list forms, objects,
send / recv, the one group, ParallelEnv), each compared with NumPy over every rank's values
(each rank's input is a known function of its rank). Every rank's failures are gathered and
rank 0 writes them (an empty list: all good)."""
from __future__ import annotations

import json
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist


def value_of(rank):
    """Rank `rank`'s input: distinct, non-zero, signs mixed (so max, min and prod all differ)."""
    return np.array([rank + 1.0, -(rank + 2.0), 0.5 * (rank + 1)])


def check(failures, name, got, expected):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    if got.shape != np.shape(expected) or not np.allclose(got, expected, rtol=1e-12, atol=0):
        failures.append(f"rank {dist.get_rank()}: {name}: got {got.tolist()}, expected {np.asarray(expected).tolist()}")


def reductions(failures, rank, world):
    every = np.stack([value_of(r) for r in range(world)])
    expected = {dist.ReduceOp.SUM: every.sum(0), dist.ReduceOp.MAX: every.max(0), dist.ReduceOp.MIN: every.min(0),
                dist.ReduceOp.PROD: every.prod(0), dist.ReduceOp.AVG: every.mean(0)}
    for op, want in expected.items():
        check(failures, f"all_reduce({op.name}) of a Tensor", dist.all_reduce(fg.to_tensor(value_of(rank)), op=op), want)
    check(failures, "all_reduce(op=ReduceOp.PRODUCT) of an array", dist.all_reduce(value_of(rank), dist.ReduceOp.PRODUCT),
          every.prod(0))
    for dst in range(world):
        x = fg.to_tensor(value_of(rank))
        task = dist.reduce(x, dst=dst, op=dist.ReduceOp.MAX, sync_op=False)
        if not (task.wait() and task.is_completed()):
            failures.append("reduce(sync_op=False) gave no completed task")
        check(failures, f"reduce(dst={dst}, MAX)", x, every.max(0) if rank == dst else value_of(rank))
    out = fg.to_tensor(np.zeros(3))
    dist.reduce_scatter(out, [fg.to_tensor(value_of(rank) * (r + 1)) for r in range(world)], op=dist.ReduceOp.SUM)
    check(failures, "reduce_scatter(out, tensor_list)", out, every.sum(0) * (rank + 1))


def gathers(failures, rank, world):
    gathered = []
    dist.all_gather(gathered, fg.to_tensor(value_of(rank)), group=dist.new_group())
    check(failures, "all_gather(list, x, group=new_group())", np.stack([t.numpy() for t in gathered]),
          np.stack([value_of(r) for r in range(world)]))
    src = world - 1
    parts = [value_of(r) * 10 for r in range(world)] if rank == src else None
    x = np.zeros(3)
    dist.scatter(x, parts, src=src)
    check(failures, f"scatter(x, tensor_list, src={src})", x, value_of(rank) * 10)
    objects = []
    dist.all_gather_object(objects, {"rank": rank, "name": f"r{rank}"})
    if objects != [{"rank": r, "name": f"r{r}"} for r in range(world)]:
        failures.append(f"rank {rank}: all_gather_object gave {objects}")
    listed = [rank, "mine"] if rank == src else [None, None]
    dist.broadcast_object_list(listed, src=src)
    if listed != [src, "mine"]:
        failures.append(f"rank {rank}: broadcast_object_list gave {listed}")


def point_to_point(failures, rank, world):
    """Rank 0 sends to every other rank, each answers with its own value times two."""
    if world == 1:
        return
    if rank == 0:
        for peer in range(1, world):
            dist.send(fg.to_tensor(value_of(0) + peer), dst=peer)
            answer = np.zeros(3)
            dist.recv(answer, src=peer)
            check(failures, f"recv from rank {peer}", answer, value_of(peer) * 2)
    else:
        got = fg.to_tensor(np.zeros(3))
        dist.recv(got, src=0)
        check(failures, "recv from rank 0", got, value_of(0) + rank)
        dist.send(value_of(rank) * 2, dst=0)


def in_a_program(failures, rank, world):
    """ReduceOp in static mode: c_allreduce_prod, and reduce as c_reduce_sum (zeros off dst)."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        v = fg.static.data("v", [3], "float64")
        prod = dist.all_reduce(fg.assign(v), op=dist.ReduceOp.PROD)
        summed = dist.reduce(fg.assign(v), dst=0)
    if not any(op.type == "c_allreduce_prod" for op in main.global_block().ops):
        failures.append("all_reduce(Variable, ReduceOp.PROD) appended no c_allreduce_prod")
    got_prod, got_sum = fg.Executor().run(main, feed={"v": value_of(rank)}, fetch_list=[prod, summed])
    every = np.stack([value_of(r) for r in range(world)])
    check(failures, "static all_reduce PROD", got_prod, every.prod(0))
    check(failures, "static reduce(dst=0)", got_sum, every.sum(0) if rank == 0 else np.zeros(3))


def environment(failures, rank, world):
    env = dist.ParallelEnv()
    if (env.rank, env.world_size, env.nranks, env.local_rank) != (rank, world, world, rank):  # one machine
        failures.append(f"rank {rank}: ParallelEnv says rank {env.rank}, world_size {env.world_size}, "
                        f"nranks {env.nranks}, local_rank {env.local_rank}")
    group = dist.get_group()
    if (group.rank, group.nranks, group.ranks) != (rank, world, list(range(world))) or group is not dist.new_group():
        failures.append(f"rank {rank}: the group is {group!r} (rank {group.rank})")
    if dist.get_rank(group) != rank or dist.get_world_size(group) != world:
        failures.append(f"rank {rank}: get_rank / get_world_size with the group disagree")


def main(out_path):
    failures = [] if not dist.is_initialized() else ["is_initialized() before init_parallel_env()"]
    dist.init_parallel_env()
    if not dist.is_initialized():
        failures.append("is_initialized() is False after init_parallel_env()")
    rank, world = dist.get_rank(), dist.get_world_size()
    for part in (reductions, gathers, point_to_point, in_a_program, environment):
        part(failures, rank, world)
    every = []
    dist.all_gather_object(every, failures)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump([failure for failures in every for failure in failures], f)


if __name__ == "__main__":
    main(sys.argv[1])
