"""Running a script through `fluidgrad launch` (or alone) from a test, shared by the distributed
API tests: the result carries its wall time and decoded output."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "dist_scripts"
BOUND_SECONDS = 45  # a failing job must end well within this


def run(*args, launched=True, timeout=240):
    """`python -m fluidgrad launch ARGS`, or the script alone (`launched=False`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, *(["-m", "fluidgrad", "launch"] if launched else []), *map(str, args)]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, timeout=timeout, cwd=ROOT, check=False)
    result.seconds = time.perf_counter() - start
    result.out, result.err = result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")
    return result


def need_mpi():
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
