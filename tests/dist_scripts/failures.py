"""Run by tests/test_distributed.py on N ranks: one way for rank 1 to fail (argv[1]).

raise     rank 1 raises while rank 0 waits in an all-reduce
die       rank 1 is killed by SIGKILL while rank 0 waits
exit      rank 1 leaves early (sys.exit(0)) while rank 0 waits for it
static    rank 1 builds a different model (static DistributedOptimizer)
eager     rank 1 builds a different model (eager DataParallel)
"""
from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist

scenario = sys.argv[1]
dist.init_parallel_env()
rank = dist.get_rank()
dist.barrier()
hidden = 8 if rank != 1 else 9
if scenario == "static":
    with fg.program_guard(fg.Program(), fg.Program()):
        x = fg.static.data("x", [None, 4], "float32")
        loss = fg.mean(fg.static.nn.fc(fg.static.nn.fc(x, hidden), 1))
        dist.DistributedOptimizer(fg.optimizer.SGD(0.1)).minimize(loss)
elif scenario == "eager":
    fg.DataParallel(fg.nn.Sequential(fg.nn.Linear(4, hidden), fg.nn.Linear(hidden, 1)))
elif rank == 1:
    time.sleep(0.3)
    if scenario == "raise":
        raise ValueError("rank 1 fails on purpose")
    if scenario == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario == "exit":
        sys.exit(0)
dist.all_reduce(np.ones(3))
print(f"rank {rank} finished", flush=True)
