"""Start a script on N ranks: `fluidgrad launch -n 4 train.py ARGS` or
`python -m fluidgrad.distributed.launch -n 4 train.py ARGS`.

It runs MPI's own launcher (`mpiexec` from the mpich wheel of the `dist` extra, or the
system's) with one BLAS thread per rank (unless set), and watches the ranks through a
temporary directory (`$FLUIDGRAD_LAUNCH_DIR`): each rank writes its pid on start, a report
when it raises, and a mark when it exits. When a rank fails, MPI stops the job; the
launcher then names the failed rank and exits with a non-zero status. Without a launcher
the same script runs as a world of one.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_PID_LINE = re.compile(r"PID (\d+) RUNNING")


def find_mpiexec() -> str:
    """mpiexec next to this Python (the mpich wheel installs it there), else on PATH."""
    local = Path(sys.executable).parent / "mpiexec"
    found = str(local) if local.exists() else shutil.which("mpiexec")
    if not found:
        raise RuntimeError("fluidgrad launch needs MPI's launcher `mpiexec`: pip install 'fluidgrad[dist]' "
                           "(mpi4py and the mpich wheel)")
    return found


class _Watch:
    """What the launcher learns while the job runs: pids by rank, the first rank seen dead."""

    def __init__(self, launch_dir: Path, nproc: int) -> None:
        self.dir, self.nproc = launch_dir, nproc
        self.pids: dict[int, int] = {}
        self.first_dead: int | None = None
        self.bad_pid: int | None = None
        self.done = threading.Event()

    def poll(self) -> None:
        while not self.done.wait(0.02):
            for rank in range(self.nproc):
                if rank not in self.pids and (self.dir / f"rank{rank}.pid").exists():
                    text = (self.dir / f"rank{rank}.pid").read_text().strip()
                    if text:
                        self.pids[rank] = int(text)
            if self.first_dead is None:
                for rank, pid in self.pids.items():
                    if not _alive(pid) and not (self.dir / f"rank{rank}.exit").exists():
                        self.first_dead = rank
                        break

    def forward(self, stream: Any, sink: Any) -> None:
        for line in iter(stream.readline, ""):
            match = _PID_LINE.search(line)
            if match:
                self.bad_pid = int(match.group(1))
            sink.write(line)
            sink.flush()

    def failed_rank(self) -> tuple[int | None, str]:
        """The rank that failed first, and what it said (or how it died)."""
        reports = sorted(self.dir.glob("rank*.failed"), key=lambda p: p.stat().st_mtime)
        if reports:
            rank = int(reports[0].name[4:-len(".failed")])
            return rank, f"raised {reports[0].read_text().strip()}"
        stopped = sorted(self.dir.glob("rank*.stopped"))
        if stopped:  # a rank that saw another fail: its message names that rank
            return None, stopped[0].read_text().strip()
        by_pid = {pid: rank for rank, pid in self.pids.items()}
        if self.bad_pid in by_pid:
            return by_pid[self.bad_pid], "died without reporting an error (killed by a signal, or os._exit)"
        if self.first_dead is not None:
            return self.first_dead, "died without reporting an error (killed by a signal, or os._exit)"
        return None, "MPI stopped the job"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of mpiexec counts as dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


def launch(nproc: int, command: Sequence[str], threads: int | None = 1, mpiexec_args: Sequence[str] = ()) -> int:
    """Run `command` (a Python script and its arguments, or a full command after `--`) on
    `nproc` ranks; return the exit status (non-zero, with the failed rank named, on failure)."""
    if nproc < 1:
        raise ValueError(f"launch: -n must be at least 1, got {nproc}")
    if not command:
        raise ValueError("launch: give the script to run, e.g. fluidgrad launch -n 2 train.py")
    argv = list(command)
    if argv[0].endswith(".py"):
        argv = [sys.executable] + argv
    env = dict(os.environ)
    if threads is not None:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, str(threads))
    with tempfile.TemporaryDirectory(prefix="fluidgrad-launch-") as tmp:
        env["FLUIDGRAD_LAUNCH_DIR"] = tmp
        watch = _Watch(Path(tmp), nproc)
        process = subprocess.Popen([find_mpiexec(), *mpiexec_args, "-n", str(nproc), *argv], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        threads_ = [threading.Thread(target=watch.poll, daemon=True),
                    threading.Thread(target=watch.forward, args=(process.stdout, sys.stdout), daemon=True),
                    threading.Thread(target=watch.forward, args=(process.stderr, sys.stderr), daemon=True)]
        for t in threads_:
            t.start()
        try:
            status = process.wait()
        except KeyboardInterrupt:
            process.terminate()
            status = process.wait()
        watch.done.set()
        for t in threads_:
            t.join(timeout=2)
        if status != 0:
            rank, what = watch.failed_rank()
            what = f"rank {rank} of {nproc} failed: {what}" if rank is not None else what
            print(f"fluidgrad launch: {what}; every rank was stopped (exit status {status})", file=sys.stderr)
        return status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--nproc", type=int, required=True, help="number of ranks (processes)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads per rank, unless OPENBLAS_NUM_THREADS etc. are set (default 1)")
    parser.add_argument("script", help="the Python script to run (or a program)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the script")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fluidgrad.distributed.launch",
                                     description="Run a script on N ranks over MPI (data-parallel training).")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return launch(args.nproc, [args.script, *args.args], args.threads)


if __name__ == "__main__":
    sys.exit(main())
