"""Start a script on N ranks: `fluidgrad launch -n 4 train.py ARGS` or
`python -m fluidgrad.distributed.launch -n 4 train.py ARGS`.

It runs MPI's own launcher (`mpiexec` from the mpich wheel of the `dist` extra, or the
system's) with one BLAS thread per rank (unless set), passes the ranks' output through as it
comes (progress bars and partial lines included), and watches the ranks through a temporary
directory (`$FLUIDGRAD_LAUNCH_DIR`): each rank writes its pid when it joins, a report when it
raises, and a mark when it exits normally. The launcher also finds the ranks' processes itself
(children of MPI's process manager on this machine, by `PMI_RANK`), so it sees a rank die even
before that rank joined. When a rank fails, the others are told (each raises `RankFailedError`
naming it in its next wait for a collective, and MPI stops the job); the launcher names the failed rank and exits with a non-zero
status: the status of the rank that failed first (the one MPI reports may be another rank's,
killed because of it). A Python script runs through `run_script.py`, which sees how it really
ends (a caught `sys.exit`, `raise SystemExit`, `os._exit`). Without a launcher the same script
runs as a world of one.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

_PID_LINE = re.compile(rb"PID (\d+) RUNNING")
_SIGNAL_LINE = re.compile(rb"EXIT STRING: [^\n]*\(signal (\d+)\)")  # MPICH's report of a rank killed
_POLL_SECONDS = 0.02
_FIND_SECONDS, _FIND_FOR_SECONDS = 0.002, 10.0
# the ranks waiting in a collective stop by themselves when told a rank failed; ranks stuck in
# MPI_Init (waiting for a rank that died before joining) are stopped by the launcher after this
_STOP_GRACE_SECONDS = 2.0
_DRAIN_SECONDS = 30.0  # at most this long, after mpiexec exits, for its last output to be read
_DIED = "died without reporting an error (killed by a signal, os._exit, or a crash in native code)"
_DIED_EARLY = ("exited before joining the job (an error before fluidgrad.distributed started, "
               "see its output above)")


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

    def __init__(self, launch_dir: Path, nproc: int, process: subprocess.Popen) -> None:
        self.dir, self.nproc, self.process = launch_dir, nproc, process
        self.pids: dict[int, int] = {}
        self.failure: tuple[int, str] | None = None  # (rank, what) found by the launcher itself
        self.stop_at: float | None = None
        self.bad_pid: int | None = None
        self.bad_signal: int | None = None
        self.done = threading.Event()
        self.started = time.monotonic()

    def poll(self) -> None:
        started = self.started
        while not self.done.wait(_POLL_SECONDS if self.all_found(started) else _FIND_SECONDS):
            if len(self.pids) < self.nproc:
                self.find_ranks()
            if self.failure is None:
                self.look_for_the_dead()
            elif self.stop_at is not None and time.monotonic() > self.stop_at:
                self.stop_at = None
                self.process.terminate()

    def all_found(self, started: float) -> bool:
        """Look for the ranks' processes often at first: a rank failing at once lives ~20 ms."""
        return len(self.pids) == self.nproc or time.monotonic() - started > _FIND_FOR_SECONDS

    def find_ranks(self) -> None:
        """Pids by rank: from the ranks' own files, and from the processes MPI started here."""
        self.read_pid_files()
        for pid in _descendants(self.process.pid):
            if pid not in self.pids.values():
                rank = _rank_of(pid, str(self.dir))
                if rank is not None and rank not in self.pids:
                    self.pids[rank] = pid

    def read_pid_files(self) -> None:
        """The pids the ranks wrote when they joined."""
        for rank in range(self.nproc):
            path = self.dir / f"rank{rank}.pid"
            if rank not in self.pids and path.exists():
                text = path.read_text().strip()
                if text:
                    self.pids[rank] = int(text)

    def look_for_the_dead(self) -> None:
        """A rank gone without its exit mark or an error report failed: tell the others. A rank
        never seen once the search for the ranks is over died before the launcher could see it
        (on a loaded machine a rank failing at once can come and go between two looks)."""
        unseen = {rank: None for rank in range(self.nproc) if rank not in self.pids}
        if not unseen or time.monotonic() - self.started <= _FIND_FOR_SECONDS:
            unseen = {}
        for rank, pid in sorted({**self.pids, **unseen}.items()):
            status = self.exit_status(rank)
            if status is not None and status[0] != 0:
                self._fail(rank, _exited(status))  # sys.exit(3): the others stop at their next collective
                return
            if (pid is not None and _alive(pid)) or any((self.dir / f"rank{rank}.{kind}").exists()
                                                        for kind in ("exit", "failed", "stopped")):
                continue
            joined = (self.dir / f"rank{rank}.pid").exists()
            left = self.left_through_os_exit()
            if joined and left:  # MPI stops every rank when one leaves without finalising: that one failed
                self._fail(left[0], _left_mpi(self.exit_status(left[0])))
                return
            others = [pid for other, pid in self.pids.items() if other != rank and _alive(pid)]
            if not joined and not any(_uses_mpi(pid) for pid in others):
                continue  # a plain program's rank that finished: no rank waits for it
            if not joined:  # the others cannot leave MPI_Init without it: stop them if they do not
                self.stop_at = time.monotonic() + _STOP_GRACE_SECONDS
            self._fail(rank, _DIED if joined else _DIED_EARLY)
            return

    def _fail(self, rank: int, what: str) -> None:
        self.failure = (rank, what)
        # the ranks look for this file while they wait (ops/comm.py: check_peers)
        (self.dir / "failed.tmp").write_text(f"rank {rank} of {self.nproc} {what}")
        os.replace(self.dir / "failed.tmp", self.dir / "failed")

    def exit_status(self, rank: int) -> tuple[int, str] | None:
        """How `rank` left through Python's exit, from its exit mark (ops/comm.py: mark_exit): the
        process's status (sys.exit(256) is 0, as the system sees it) and the call that set it
        (`sys.exit(3)`, `sys.exit('bad config')`, `os._exit(3)`); None while it has not left so."""
        try:
            text = (self.dir / f"rank{rank}.exit").read_text().strip()
        except OSError:
            return None
        code, _, message = text.partition(" ")
        if not code.lstrip("-").isdigit():
            return (0, "")
        if (self.dir / f"rank{rank}.os_exit").exists():
            return (int(code) % 256, f"os._exit({code})")
        return (int(code) % 256, f"sys.exit({message!r})" if message else f"sys.exit({code})")

    def left_through_os_exit(self) -> list[int]:
        """The ranks that left through os._exit (skipping MPI's finalisation), first first."""
        marks = sorted(self.dir.glob("rank*.os_exit"), key=lambda p: p.stat().st_mtime)
        return [int(p.name[4:-len(".os_exit")]) for p in marks]

    def exit_statuses(self) -> dict[int, tuple[int, str]]:
        found = {rank: self.exit_status(rank) for rank in range(self.nproc)}
        return {rank: status for rank, status in found.items() if status is not None}

    def forward(self, stream: BinaryIO, sink: BinaryIO) -> None:
        """Pass the ranks' output through as it comes: bytes, not lines, so that a progress
        bar's carriage returns and a line still being written reach the terminal unchanged."""
        fd, tail = stream.fileno(), b""  # the end of this stream's last chunk (a line may be cut)
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            match = _PID_LINE.search(tail + chunk)
            if match:
                self.bad_pid = int(match.group(1))
            match = _SIGNAL_LINE.search(tail + chunk)
            if match:
                self.bad_signal = int(match.group(1))
            tail = chunk[-64:]
            sink.write(chunk)
            sink.flush()

    def failed_rank(self) -> tuple[list[int], str]:
        """The ranks that failed first, and what happened. Asked once the job has ended: the
        ranks' pid files are read again first, since under load the watching thread may not have
        looked since a rank joined (MPI names a killed rank by its pid)."""
        self.read_pid_files()
        reports = sorted(self.dir.glob("rank*.failed"), key=lambda p: p.stat().st_mtime)
        if reports:
            first = reports[0].read_text().strip()
            # a mismatch found by every rank at once is reported by each: name them together
            ranks = sorted(int(p.name[4:-len(".failed")]) for p in reports if p.read_text().strip() == first)
            return ranks, f"raised {first}"
        exits = self.exit_statuses()
        failing = sorted((rank for rank, status in exits.items() if status[0] != 0),
                         key=lambda rank: (self.dir / f"rank{rank}.exit").stat().st_mtime)
        if failing:  # sys.exit(3) on a rank
            first = exits[failing[0]]
            return [rank for rank in failing if exits[rank] == first], _exited(first)
        left = self.left_through_os_exit()
        if left and len(exits) < self.nproc:  # os._exit(0) while others ran: MPI stopped them
            return [left[0]], _left_mpi(exits[left[0]])
        timed_out = sorted(self.dir.glob("rank*.timedout"), key=lambda p: p.stat().st_mtime)
        if timed_out:  # a collective that never completed (ops/comm.py: World.wait): that rank's
            # message names who was missing; the ranks MPI killed after its abort did not fail
            # (on a loaded machine the launcher may see them gone before reading the message)
            return [], timed_out[0].read_text().strip()
        by_pid = {pid: rank for rank, pid in self.pids.items()}
        # MPI kills every rank at once when one is killed: it names the first (`PID n RUNNING`)
        if self.bad_pid in by_pid and (self.failure is None or self.failure[1] == _DIED):
            return [by_pid[self.bad_pid]], _killed(self.bad_signal) if self.bad_signal else _DIED
        if self.failure is not None:
            return [self.failure[0]], self.failure[1]
        stopped = sorted(self.dir.glob("rank*.stopped"))
        if stopped:  # a rank that saw another fail: its message names that rank
            return [], stopped[0].read_text().strip()
        return [], ""


def _exited(status: tuple[int, str]) -> str:
    code, how = status
    return f"exited with status {code}" + (f" ({how})" if how else "")


def _left_mpi(status: tuple[int, str] | None) -> str:
    return (f"{_exited(status or (0, 'os._exit'))} while the other ranks ran: it skipped MPI's finalisation, "
            f"so MPI stopped the job")


def _killed(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = "an unknown signal"
    return f"died without reporting an error: killed by signal {number} ({name})"


def _descendants(pid: int) -> list[int]:
    """Processes under `pid` (Linux /proc; nothing elsewhere), children first."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue
            found.extend(children)
            todo.extend(children)
    return found


def _rank_of(pid: int, launch_dir: str) -> int | None:
    """The MPI rank of process `pid` if it is one of this job's ranks (by its environment)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            variables = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    except OSError:
        return None
    if variables.get(b"FLUIDGRAD_LAUNCH_DIR") != launch_dir.encode():
        return None
    rank = variables.get(b"PMI_RANK") or variables.get(b"OMPI_COMM_WORLD_RANK") or variables.get(b"PMIX_RANK")
    return int(rank) if rank is not None and rank.isdigit() else None


def _uses_mpi(pid: int) -> bool:
    """Whether process `pid` has loaded an MPI library (so it needs every rank to get through)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            return b"libmpi" in f.read()
    except OSError:
        return False


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


def _command(command: Sequence[str]) -> list[str]:
    """The command each rank runs: a script (run by this Python) or a program."""
    argv = list(command)
    if not argv:
        raise ValueError("launch: give the script to run, e.g. fluidgrad launch -n 2 train.py")
    if argv[0].endswith(".py"):
        if not Path(argv[0]).is_file():
            raise FileNotFoundError(f"launch: no script {argv[0]!r} (from {os.getcwd()})")
        argv = [sys.executable, "-m", "fluidgrad.distributed.run_script"] + argv  # as `python script.py`
    elif argv[0] == "--":
        argv = argv[1:]
    return argv


def launch(nproc: int, command: Sequence[str], threads: int | None = 1, mpiexec_args: Sequence[str] = (),
           timeout: float | None = None) -> int:
    """Run `command` (a Python script and its arguments, or a full command after `--`) on
    `nproc` ranks; return the exit status (non-zero, with the failed rank named, on failure).
    `timeout` (seconds) bounds every wait in a collective (`FLUIDGRAD_COLLECTIVE_TIMEOUT`)."""
    status, failure = run_job(nproc, command, threads, mpiexec_args, timeout)
    if failure:
        print(f"fluidgrad launch: {failure}", file=sys.stderr)
    return status


def run_job(nproc: int, command: Sequence[str], threads: int | None = 1, mpiexec_args: Sequence[str] = (),
            timeout: float | None = None) -> tuple[int, str]:
    """`launch` without the last line: (exit status, what failed and on which rank, or "")."""
    if nproc < 1:
        raise ValueError(f"launch: -n must be at least 1, got {nproc}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"launch: --timeout must be positive, got {timeout}")
    argv = _command(command)
    env = dict(os.environ)
    if threads is not None:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, str(threads))
    if timeout is not None:
        env["FLUIDGRAD_COLLECTIVE_TIMEOUT"] = str(timeout)
    with tempfile.TemporaryDirectory(prefix="fluidgrad-launch-") as tmp:
        env["FLUIDGRAD_LAUNCH_DIR"] = tmp
        process = subprocess.Popen([find_mpiexec(), *mpiexec_args, "-n", str(nproc), *argv], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        watch = _Watch(Path(tmp), nproc, process)
        status = _run(process, watch)
        ranks, what = watch.failed_rank()
        if status != 0 or ranks:
            status = _job_status(watch, status)
            return status, _explain(watch, nproc, status, ranks, what)
        return status, ""


def _job_status(watch: _Watch, mpi_status: int) -> int:
    """The launcher's exit status: the status of the rank that exited first with one (sys.exit,
    os._exit; MPI may report another rank's, killed because of it), else MPI's; never 0 for a
    job with a failed rank."""
    exits = watch.exit_statuses()
    failing = sorted((rank for rank, (code, _) in exits.items() if code != 0),
                     key=lambda rank: (watch.dir / f"rank{rank}.exit").stat().st_mtime)
    if failing:  # the first (the order failed_rank names them in)
        return exits[failing[0]][0]
    return mpi_status or 1


def _run(process: subprocess.Popen, watch: _Watch) -> int:
    """Wait for the job, passing its output through; SIGTERM or Ctrl-C stop every rank."""
    workers = [threading.Thread(target=watch.poll, daemon=True),
               threading.Thread(target=watch.forward, args=(process.stdout, _binary(sys.stdout)), daemon=True),
               threading.Thread(target=watch.forward, args=(process.stderr, _binary(sys.stderr)), daemon=True)]
    for worker in workers:
        worker.start()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: process.terminate()) if in_main else None
    try:
        try:
            status = process.wait()
        except KeyboardInterrupt:
            process.terminate()
            status = process.wait()
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        watch.done.set()
        # the forwarders end at the end of MPI's output, which mpiexec wrote before it exited and
        # which names a killed rank: under load they may not have read it yet, so wait for them
        # (bounded: a process that escaped the job may hold the pipes open)
        deadline = time.monotonic() + _DRAIN_SECONDS
        for worker in workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
    return status


def _binary(stream: Any) -> BinaryIO:
    stream.flush()
    return getattr(stream, "buffer", stream)


def _explain(watch: _Watch, nproc: int, status: int, ranks: list[int], what: str) -> str:
    if len(ranks) == 1:
        what = f"rank {ranks[0]} of {nproc} failed: {what}"
    elif ranks:
        what = f"ranks {', '.join(map(str, ranks))} of {nproc} failed: {what}"
    elif not what:
        what = (f"a rank exited with status {status} (its own error, if any, is above)" if status > 0
                else f"MPI stopped the job (status {status})")
    finished = [rank for rank, (code, _) in watch.exit_statuses().items()
                if code == 0 and not any((watch.dir / f"rank{rank}.{kind}").exists() for kind in ("stopped", "failed"))]
    if ranks and len(ranks) == nproc:
        return f"{what} (exit status {status})"
    if ranks and sorted(set(finished) | set(ranks)) == list(range(nproc)):
        return f"{what}; the other ranks finished (exit status {status})"
    return f"{what}; every rank was stopped (exit status {status})"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--nproc", type=int, required=True, help="number of ranks (processes)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads per rank, unless OPENBLAS_NUM_THREADS etc. are set (default 1)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds a rank may wait in one collective before the job fails, naming the "
                             "ranks that did not take part (FLUIDGRAD_COLLECTIVE_TIMEOUT; default 600)")
    parser.add_argument("script", nargs="?", help="the Python script to run (or, after --, a program)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the script")


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.script is None:
        parser.error("give the script to run, e.g. fluidgrad launch -n 2 train.py ARGS")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fluidgrad.distributed.launch",
                                     description="Run a script on N ranks over MPI (data-parallel training).")
    add_arguments(parser)
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    try:
        return launch(args.nproc, [args.script, *args.args], args.threads, timeout=args.timeout)
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
