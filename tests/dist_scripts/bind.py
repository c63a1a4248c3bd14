"""Run by tests/test_distributed_bind.py through `fluidgrad launch -n N`: each rank reports the
core it was bound to (World.core) and the cores it may run on."""
from __future__ import annotations

import json
import os
import sys

import fluidgrad.distributed as dist
from fluidgrad.ops.comm import get_world

dist.init_parallel_env()
world = get_world()
report = {"rank": world.rank, "core": world.core, "cores": sorted(os.sched_getaffinity(0))}
every = world.all_gather_object(report, "bind.py")
if world.rank == 0:
    with open(sys.argv[1], "w") as f:
        json.dump(every, f)
