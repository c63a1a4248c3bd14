"""Run by tests/test_distributed_api.py through `fluidgrad launch -n 2`: how a rank's script ends
(argv[1]) and what the launcher must then say; and that the script runs as `python script.py`.

caught          rank 1 catches its own sys.exit(3) and finishes normally (the job succeeds)
raise4          rank 1 raises SystemExit(4) itself (no sys.exit) after the last collective
os_exit3        rank 1 calls os._exit(3) after the last collective
os_exit0        rank 1 calls os._exit(0) while rank 0 still works (MPI stops rank 0: rank 1 failed)
error           rank 1 raises ValueError (its traceback starts in this script)
as_a_script     every rank checks argv, sys.path[0], __name__, __file__ and pickles a class of
                this script to the other ranks (all_gather_object)
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import fluidgrad.distributed as dist


class Note:
    """Defined in the script (__main__): pickled between ranks by all_gather_object."""

    def __init__(self, rank):
        self.rank = rank


scenario = sys.argv[1]
dist.init_parallel_env()
rank = dist.get_rank()
dist.all_reduce(np.ones(3))
if scenario == "as_a_script":
    here = os.path.dirname(os.path.realpath(__file__))
    facts = [sys.argv[1:] == ["as_a_script", "--flag"], sys.path[0] == here, __name__ == "__main__",
             os.path.realpath(sys.argv[0]) == os.path.realpath(__file__)]
    notes = []
    dist.all_gather_object(notes, Note(rank))
    facts.append([type(n).__name__ for n in notes] == ["Note", "Note"] and [n.rank for n in notes] == [0, 1])
    print(f"rank {rank} facts {facts}", flush=True)
if rank == 1:
    if scenario == "caught":
        try:
            sys.exit(3)
        except SystemExit:
            pass
    elif scenario == "raise4":
        raise SystemExit(4)
    elif scenario == "os_exit3":
        os._exit(3)
    elif scenario == "os_exit0":
        os._exit(0)
    elif scenario == "error":
        raise ValueError("rank 1 found a bad value")
if rank == 0:
    time.sleep(2.0 if scenario == "os_exit0" else 0.5)  # (so that the launcher sees rank 1 end first)
print(f"rank {rank} finished", flush=True)
