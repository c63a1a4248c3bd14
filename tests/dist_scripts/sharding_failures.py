"""Run by tests/test_distributed_sharding.py on 2 ranks: a sharded static program (argv[1]):

die       rank 1 is killed by SIGKILL in step 3, while rank 0 waits in the sharded update's barriers
raise     rank 1 raises in step 3
mismatch  rank 1 builds a different model: minimize() fails on every rank, naming rank 1
"""
from __future__ import annotations

import os
import signal
import sys

import numpy as np

import fluidgrad as fg
import fluidgrad.distributed as dist

scenario = sys.argv[1]
dist.init_parallel_env()
rank = dist.get_rank()
hidden = 9 if scenario == "mismatch" and rank == 1 else 8
main, startup = fg.Program(), fg.Program()
with fg.program_guard(main, startup):
    x = fg.static.data("x", [None, 4], "float32")
    loss = fg.mean(fg.static.nn.fc(fg.static.nn.fc(x, hidden), 1))
    dist.DistributedOptimizer(fg.optimizer.Momentum(0.1), sharding=True).minimize(loss)
exe = fg.Executor()
exe.run(startup)
for step in range(6):
    if rank == 1 and step == 3:
        if scenario == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        raise ValueError("rank 1 fails on purpose")
    exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
print(f"rank {rank} finished", flush=True)
