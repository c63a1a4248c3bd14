"""Run by tests/test_distributed_launch_ux.py through `fluidgrad launch -n N`: one way for a
job to go wrong (argv[1]); the test reads what the launcher and the ranks say, and how long it took.

before_join    rank 1 raises before it imports fluidgrad (the others get stuck joining MPI)
exit3          rank 1 calls sys.exit(3) while rank 0 waits for it in an all-reduce
exit3_last     rank 1 calls sys.exit(3) after the last collective (rank 0 finishes)
exit_message   rank 1 calls sys.exit("bad config") after the last collective (status 1, message shown)
killed         rank 1 kills itself with SIGKILL after the last collective
exit_in_thread a thread of rank 1 calls sys.exit(5) (that ends the thread only: the job succeeds)
hang           rank 1 sleeps for ever while the others wait for it (run with --timeout)
mismatch       the ranks all-reduce arrays of different shapes (every rank finds out)
lines          every rank prints many long lines as fast as it can (no line may be mixed)
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

scenario = sys.argv[1]
if scenario == "before_join" and os.environ.get("PMI_RANK") == "1":
    raise RuntimeError("rank 1 fails before joining")

import numpy as np  # noqa: E402

import fluidgrad.distributed as dist  # noqa: E402

dist.init_parallel_env()
rank = dist.get_rank()
if scenario == "lines":
    for i in range(300):
        print(f"rank {rank} line {i} " + "x" * 200)
    sys.exit(0)
dist.barrier()
if rank == 1 and scenario == "exit3":
    time.sleep(0.3)
    sys.exit(3)
if rank == 1 and scenario == "hang":
    time.sleep(1000)
if scenario == "mismatch":
    dist.all_reduce(np.ones(3 + rank))
dist.all_reduce(np.ones(3))
if rank == 1 and scenario == "exit3_last":
    sys.exit(3)
if rank == 1 and scenario == "exit_message":
    sys.exit("bad config")
if rank == 1 and scenario == "exit_in_thread":
    worker = threading.Thread(target=sys.exit, args=(5,))
    worker.start()
    worker.join()
if rank == 1 and scenario == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
if rank == 0 and scenario in ("exit3_last", "exit_message", "killed"):
    time.sleep(0.5)  # (so that the launcher sees rank 1 end first)
print(f"rank {rank} finished", flush=True)
