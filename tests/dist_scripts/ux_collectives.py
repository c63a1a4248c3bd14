"""Run by tests/test_distributed_launch_ux.py on N ranks: the public collectives on numbers,
and the refusals (booleans, averages of integers, a source rank outside the world) that must
read the same on every world size. Rank 0 writes the failures found (an empty list: all good)."""
from __future__ import annotations

import json
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist


def expect_error(failures, name, kind, text, call):
    try:
        call()
        failures.append(f"{name}: no error")
    except kind as exc:
        if text not in str(exc):
            failures.append(f"{name}: unclear error {exc}")


def main(out_path):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    failures = []
    total = world * (world + 1) / 2
    got = dist.all_reduce(float(rank + 1))
    if not (isinstance(got, float) and got == total):
        failures.append(f"all_reduce of a Python float: {got!r}, expected {total}")
    got = dist.all_reduce(np.float32(rank + 1), "max")
    if not (isinstance(got, np.float32) and got == world):
        failures.append(f"all_reduce max of a NumPy float32: {got!r}, expected {world}")
    got = dist.broadcast(rank + 10, src=world - 1)
    if not (isinstance(got, int) and got == world + 9):
        failures.append(f"broadcast of a Python int: {got!r}, expected {world + 9}")
    got = dist.all_reduce(np.arange(3) + rank)  # integers sum exactly
    if not np.array_equal(got, np.arange(3) * world + world * (world - 1) // 2):
        failures.append(f"all_reduce of integers: {got}")
    expect_error(failures, "all_reduce of booleans", TypeError, "all_reduce: collectives reduce numbers, got bool",
                 lambda: dist.all_reduce(np.array([True, False])))
    expect_error(failures, "average of integers", TypeError, "op='avg' needs floating-point values, got int64",
                 lambda: dist.all_reduce(fg.to_tensor(np.arange(3)), "avg"))
    expect_error(failures, "reduce_scatter average of integers", TypeError, "op='avg' needs floating-point",
                 lambda: dist.reduce_scatter(np.arange(2 * world), "avg"))
    expect_error(failures, "broadcast from a rank outside the world", ValueError,
                 f"broadcast: rank {world} is outside the world of {world} rank(s)",
                 lambda: dist.broadcast(np.ones(2), src=world))
    with fg.program_guard(fg.Program(), fg.Program()):
        v = fg.static.data("v", [4], "int64")
        expect_error(failures, "static average of integers", fg.framework.errors.DTypeError,
                     "op c_allreduce_avg: an average needs floating-point values, got X=v (shape [4], int64)",
                     lambda: dist.all_reduce(v, "avg"))
        expect_error(failures, "static broadcast from a rank outside the world", ValueError,
                     f"broadcast: rank {world} is outside the world", lambda: dist.broadcast(v, src=world))
    dist.barrier()
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(failures, f)


if __name__ == "__main__":
    main(sys.argv[1])
