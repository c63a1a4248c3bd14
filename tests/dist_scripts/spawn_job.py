"""Run by tests/test_distributed_groups.py as a plain script (no launcher): `dist.spawn` of
functions of this script (found by the ranks as `__mp_main__`), with a picklable argument of a
class defined here, the rank passed first (PyTorch's form), and a rank that raises."""
from __future__ import annotations

import sys

import numpy as np

import fluidgrad.distributed as dist


class Scale:
    def __init__(self, k):
        self.k = k


def work(rank, out_dir, scale):
    x = np.array([rank + 1.0]) * scale.k
    dist.all_reduce(x)
    np.save(f"{out_dir}/rank{rank}.npy", x)


def fails():
    if dist.get_rank() == 1:
        raise ValueError("rank one fails")
    dist.barrier()


if __name__ == "__main__":
    dist.spawn(work, args=(sys.argv[1], Scale(10.0)), nprocs=2, pass_rank=True)
    try:
        dist.spawn(fails, nprocs=2)
    except dist.RankFailedError as exc:
        print(f"spawn raised: {exc}")
