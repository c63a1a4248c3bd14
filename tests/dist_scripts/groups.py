"""Run by tests/test_distributed_groups.py on 3 ranks (and without a launcher): process groups of
some ranks (every collective with `group=`, a rank outside the group getting None, the rank
translations), non-blocking point-to-point (isend / irecv / batch_isend_irecv), all-to-all in
Paddle's and PyTorch's forms (eager and as op c_alltoall with its gradient) and gather, each
compared with NumPy over every rank's values. Rank 0 writes every rank's failures (an empty
list: all good)."""
from __future__ import annotations

import json
import sys
import warnings

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist


def value_of(rank):
    return np.array([rank + 1.0, -(rank + 2.0), 0.5 * (rank + 1)])


def check(failures, name, got, expected):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    if got.shape != np.shape(expected) or not np.allclose(got, expected, rtol=1e-12, atol=0):
        failures.append(f"rank {dist.get_rank()}: {name}: got {got.tolist()}, expected {np.asarray(expected).tolist()}")


def groups(failures, rank, world):
    members = [r for r in range(world) if r != 0] if world > 1 else [0]   # every rank but 0
    group = dist.new_group(members[::-1])  # any order: sorted, as PyTorch and Paddle do
    inside = rank in members
    expect_rank = members.index(rank) if inside else -1
    if (dist.get_rank(group), group.rank, group.rank(), group.ranks, dist.get_process_group_ranks(group)) != (
            expect_rank, expect_rank, expect_rank, members, members):
        failures.append(f"rank {rank}: group {group!r} says rank {group.rank}, ranks {group.ranks}")
    if dist.get_world_size(group) != (len(members) if inside else -1) or group.size() != len(members):
        failures.append(f"rank {rank}: get_world_size(group) {dist.get_world_size(group)}")
    if dist.get_group_rank(group, members[-1]) != len(members) - 1 or dist.get_global_rank(group, 0) != members[0]:
        failures.append(f"rank {rank}: get_group_rank / get_global_rank disagree with {members}")
    if dist.get_group(group.id) is not group or group.is_member() != inside:
        failures.append(f"rank {rank}: get_group({group.id}) / is_member disagree")
    try:  # DataParallel averages over every rank: a group of some ranks is refused, not ignored
        dist.DataParallel(fg.nn.Linear(2, 2), group=group)
        if world > 1:
            failures.append(f"rank {rank}: DataParallel(group=new_group({members})) was accepted")
    except ValueError as exc:
        if "DataParallel averages gradients over every rank" not in str(exc):
            failures.append(f"rank {rank}: DataParallel(group=...) raised {exc}")
    every = np.stack([value_of(r) for r in members])
    if not inside:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = value_of(rank)
            results = [dist.all_reduce(x, group=group), dist.broadcast(x, src=members[0], group=group),
                       dist.barrier(group=group), dist.all_gather([], x, group=group)]
        if results != [None] * 4 or len(caught) != 4 or "does not belong to the given group" not in str(caught[0].message):
            failures.append(f"rank {rank}: outside the group, collectives gave {results}, warnings {len(caught)}")
        check(failures, "a tensor outside the group is unchanged", x, value_of(rank))
        return
    check(failures, "all_reduce(group)", dist.all_reduce(fg.to_tensor(value_of(rank)), group=group), every.sum(0))
    check(failures, "all_reduce(AVG, group)", dist.all_reduce(value_of(rank), "avg", group=group), every.mean(0))
    src = members[-1]
    check(failures, f"broadcast(src={src}, group)", dist.broadcast(value_of(rank), src=src, group=group), value_of(src))
    check(failures, "broadcast(group_src=0, group)", dist.broadcast(value_of(rank), group=group, group_src=0),
          value_of(members[0]))
    x = value_of(rank)
    dist.reduce(x, dst=src, op="max", group=group)
    check(failures, "reduce(dst, MAX, group)", x, every.max(0) if rank == src else value_of(rank))
    gathered = []
    dist.all_gather(gathered, fg.to_tensor(value_of(rank)), group=group)
    check(failures, "all_gather(group)", np.stack([t.numpy() for t in gathered]), every)
    parts = np.stack([value_of(rank) * (k + 1) for k in range(len(members))])
    check(failures, "reduce_scatter(group)", dist.reduce_scatter(parts, group=group),
          (every.sum(0) * (members.index(rank) + 1))[None])
    y = np.zeros(3)
    dist.scatter(y, [value_of(r) * 7 for r in members] if rank == src else None, src=src, group=group)
    check(failures, "scatter(group)", y, value_of(rank) * 7)
    objects = []
    dist.all_gather_object(objects, rank, group=group)
    listed = [rank]
    dist.broadcast_object_list(listed, src=src, group=group)
    if objects != members or listed != [src]:
        failures.append(f"rank {rank}: object collectives on the group gave {objects}, {listed}")
    dist.barrier(group=group)
    gathered = dist.gather(value_of(rank), dst=src, group=group)
    if rank == src:
        check(failures, "gather(dst, group)", np.stack(gathered), every)
    elif gathered is not None:
        failures.append(f"rank {rank}: gather gave {gathered} off the destination")
    in_a_program(failures, rank, group, members)


def in_a_program(failures, rank, group, members):
    """c_allreduce_sum / c_allgather / c_alltoall on the group's ring, and their gradients."""
    main, startup = fg.Program(), fg.Program()
    n = len(members)
    with fg.program_guard(main, startup):
        v = fg.static.data("v", [n, 3], "float64")
        v.stop_gradient = False
        reduced = dist.all_reduce(v * 1.0, group=group)
        exchanged = dist.alltoall_single(v * 1.0, group=group)
        gathered = dist.all_gather(v * 1.0, group=group)
        loss = fg.sum(reduced * reduced) + fg.sum(exchanged * exchanged * exchanged) + fg.sum(gathered[0])
        grad, = fg.static.gradients([loss], [v])
    mine = np.stack([value_of(rank) + k for k in range(n)])
    every = {r: np.stack([value_of(r) + k for k in range(n)]) for r in members}
    out = fg.static.Executor().run(main, feed={"v": mine}, fetch_list=[reduced, exchanged, grad])
    total = sum(every.values())
    me = members.index(rank)
    check(failures, "static all_reduce(group)", out[0], total)
    check(failures, "static alltoall_single(group)", out[1], np.stack([every[r][me] for r in members]))
    # d/dv of sum_r sum(total^2) (each rank's loss) is 2 * total * n; the all-to-all's cube, 3 v^2,
    # comes back from the rank that held each row; the gather's first part is rank members[0]'s v
    expected = 2 * total * n + 3 * mine ** 2 + (n if me == 0 else 0)
    check(failures, "static gradient through the group's ops", out[2], expected)


def point_to_point(failures, rank, world):
    """Every rank isends to the next and irecvs from the previous, all at once (a ring that
    blocking sends could not close), then batch_isend_irecv the other way."""
    if world == 1:
        return
    nxt, prev = (rank + 1) % world, (rank - 1) % world
    got = fg.to_tensor(np.zeros(3))
    receive = dist.irecv(got, src=prev)
    sent = dist.isend(fg.to_tensor(value_of(rank)), dst=nxt)
    second = np.zeros(3)
    receive2 = dist.recv(second, src=prev, sync_op=False, tag=3)
    dist.send(value_of(rank) * 5, dst=nxt, sync_op=False, tag=3).wait()
    if not (sent.wait() and receive.wait() and receive.is_completed() and receive2.wait()):
        failures.append(f"rank {rank}: isend / irecv tasks did not complete")
    check(failures, f"irecv from rank {prev}", got, value_of(prev))
    check(failures, f"recv(sync_op=False, tag=3) from rank {prev}", second, value_of(prev) * 5)
    back = np.zeros(3)
    tasks = dist.batch_isend_irecv([dist.P2POp(dist.irecv, back, nxt), dist.P2POp(dist.isend, value_of(rank) * 2, prev)])
    for task in tasks:
        task.wait()
    check(failures, f"batch_isend_irecv from rank {nxt}", back, value_of(nxt) * 2)


def all_to_all(failures, rank, world):
    parts = [np.full(2, 10.0 * rank + j) for j in range(world)]
    out = []
    dist.alltoall([fg.to_tensor(p) for p in parts], out)
    check(failures, "alltoall(in_list, out_list)", np.stack([t.numpy() for t in out]),
          np.stack([np.full(2, 10.0 * r + rank) for r in range(world)]))
    outs = [np.zeros(j + 1) for j in range(world)]  # unequal: rank r sends r + 1 values to each rank
    dist.all_to_all(outs, [np.full(rank + 1, 10.0 * rank + j) for j in range(world)])
    for r in range(world):
        check(failures, f"all_to_all(out_list, in_list) part {r}", outs[r], np.full(r + 1, 10.0 * r + rank))
    single = np.zeros(world * 2)
    dist.all_to_all_single(single, np.repeat(np.arange(world) + 100.0 * rank, 2))
    check(failures, "all_to_all_single", single, np.repeat(100.0 * np.arange(world) + rank, 2))
    sizes_in = [j + 1 for j in range(world)]  # rank r sends j + 1 rows to rank j, receives rank + 1 from each
    got = dist.alltoall_single(np.concatenate([np.full(j + 1, 10.0 * rank + j) for j in range(world)]), None,
                               sizes_in, [rank + 1] * world)
    check(failures, "alltoall_single(split sizes)", got, np.concatenate([np.full(rank + 1, 10.0 * r + rank)
                                                                         for r in range(world)]))
    gathered = [np.zeros(3) for _ in range(world)] if rank == world - 1 else None
    dist.gather(value_of(rank), gathered, dst=world - 1)
    if rank == world - 1:
        check(failures, "gather(x, gather_list, dst)", np.stack(gathered), np.stack([value_of(r) for r in range(world)]))


def main(out_path):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    failures = []
    for part in (groups, point_to_point, all_to_all):
        part(failures, rank, world)
    every = []
    dist.all_gather_object(every, failures)
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump([failure for failures in every for failure in failures], f)


if __name__ == "__main__":
    main(sys.argv[1])
