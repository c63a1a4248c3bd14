"""`fluidgrad launch` as a user meets it, through the real launcher (oversubscribed on loopback):
output passed through unchanged, every way a job can go wrong ending in bounded time with the
failed rank named, collectives on numbers and their refusals the same at every world size,
and checkpoints written by rank 0 only that load in a job of any size (static, sharded, eager).
The scripts are in tests/dist_scripts/ux_*.py. Skipped only when the `dist` extra is absent.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

import fluidgrad as fg
import fluidgrad.distributed as dist

pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "dist_scripts"
BOUND_SECONDS = 45  # every failing job must end well within this (observed 3 to 8 s)


LAUNCHERS = {"fluidgrad launch": ["-m", "fluidgrad", "launch"],
             "python -m fluidgrad.distributed.launch": ["-m", "fluidgrad.distributed.launch"]}


def run(*args, timeout=240, env=None, script=True, launcher="fluidgrad launch"):
    """`python -m fluidgrad launch ARGS` (or the other entry point), or a script without a
    launcher (`script=False`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    command = [sys.executable, *(LAUNCHERS[launcher] if script else []), *map(str, args)]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, timeout=timeout, cwd=ROOT, check=False)
    result.seconds = time.perf_counter() - start
    result.out, result.err = result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")
    return result


def launcher_line(result):
    lines = [line for line in result.err.splitlines() if line.startswith("fluidgrad launch:")]
    assert len(lines) == 1, result.err[-3000:]
    return lines[0]


# ------------------------------------------------------------------ failures end the job, naming the rank
@pytest.mark.parametrize("nproc, scenario, options, message", [
    (2, "before_join", [], "rank 1 of 2 failed: exited before joining the job"),
    (2, "exit3", [], "rank 1 of 2 failed: exited with status 3 (sys.exit(3)); every rank was stopped (exit status 3)"),
    # rank 0 or rank 2 times out first; it names the rank that never came and the one waiting too
    (3, "hang", ["--timeout", "3"], r"rank (0|2): all_reduce did not complete within 3 s "
                                    r"\(FLUIDGRAD_COLLECTIVE_TIMEOUT\): (rank 0 waits in all_reduce; )?rank 1 is in "
                                    r"no collective \(still computing, or stuck\)(; rank 2 waits in all_reduce)?;"),
    (2, "mismatch", [], "ranks 0, 1 of 2 failed: raised CollectiveMismatchError: all_reduce: rank 1 passes "
                        "shape [4] (float64), rank 0 passes shape [3] (float64)"),
])
def test_a_job_that_goes_wrong_ends_in_bounded_time_naming_the_rank(nproc, scenario, options, message):
    result = run("-n", nproc, *options, SCRIPTS / "ux_failures.py", scenario, timeout=120)
    assert result.returncode != 0
    line = launcher_line(result)
    assert message in line or (scenario == "hang" and re.search(message, line) and "waits in all_reduce" in line), line
    assert "finished" not in result.out
    assert result.seconds < BOUND_SECONDS


@pytest.mark.parametrize("scenario, message, status", [
    ("exit3_last", "rank 1 of 2 failed: exited with status 3 (sys.exit(3)); the other ranks finished "
                   "(exit status 3)", 3),
    ("exit_message", "rank 1 of 2 failed: exited with status 1 (sys.exit('bad config')); the other ranks "
                     "finished (exit status 1)", 1),
])
def test_a_rank_ending_with_sys_exit_is_named_with_its_status(scenario, message, status):
    """As torchrun's `exitcode: 3`: the status is said, and is the launcher's own."""
    result = run("-n", 2, SCRIPTS / "ux_failures.py", scenario, timeout=120)
    assert launcher_line(result) == f"fluidgrad launch: {message}"
    assert result.returncode == status
    assert "rank 0 finished" in result.out and "rank 1 finished" not in result.out
    assert result.seconds < BOUND_SECONDS


def test_sys_exit_in_another_thread_is_no_failure():
    result = run("-n", 2, SCRIPTS / "ux_failures.py", "exit_in_thread", timeout=120)
    assert result.returncode == 0, result.err[-2000:]
    assert "fluidgrad launch:" not in result.err
    assert "rank 0 finished" in result.out and "rank 1 finished" in result.out


def test_a_rank_killed_by_a_signal_is_named_with_the_signal():
    result = run("-n", 2, SCRIPTS / "ux_failures.py", "killed", timeout=120)
    assert "rank 1 of 2 failed: died without reporting an error: killed by signal 9 (SIGKILL)" in launcher_line(result), result.err[-2000:]
    assert result.returncode != 0
    assert result.seconds < BOUND_SECONDS


def test_a_rank_that_died_before_the_launcher_saw_it_is_found_when_the_search_ends(tmp_path):
    """On a loaded machine a rank failing at once can start and die between two of the
    launcher's looks: once the search for the ranks is over, a rank never seen counts as dead
    before joining (rank 0 here: a live process with MPI loaded, waiting for it)."""
    from fluidgrad.distributed import launch as launch_module
    waiting = subprocess.Popen([sys.executable, "-c", "from mpi4py import MPI; import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 30
        while not launch_module._uses_mpi(waiting.pid):
            assert time.monotonic() < deadline, "the stand-in rank never loaded MPI"
            time.sleep(0.05)
        watch = launch_module._Watch(tmp_path, 2, process=None)
        watch.pids[0] = waiting.pid
        watch.look_for_the_dead()
        assert watch.failure is None            # still searching: rank 1 may yet appear
        watch.started -= launch_module._FIND_FOR_SECONDS + 1
        watch.look_for_the_dead()
        assert watch.failure == (1, launch_module._DIED_EARLY) and watch.stop_at is not None
        assert (tmp_path / "failed").read_text().startswith("rank 1 of 2 exited before joining")
    finally:
        waiting.kill()
        waiting.wait()


def test_a_program_whose_ranks_finish_at_different_times_is_left_alone():
    """Not every rank's death is a failure: a program that never joins MPI is MPI's business."""
    code = "import os, time; time.sleep(1.5 * int(os.environ['PMI_RANK'])); print('done', os.environ['PMI_RANK'])"
    result = run("-n", 2, "--", sys.executable, "-c", code)
    assert result.returncode == 0, result.err
    assert sorted(result.out.split("\n")[:2]) == ["done 0", "done 1"]


# ------------------------------------------------------------------ output
def test_output_reaches_the_terminal_unchanged():
    """Progress bars redraw with carriage returns: the launcher must pass them through as they
    are (not as new lines), and a line still being written."""
    code = "import sys; sys.stderr.write('10%\\r50%\\r100%'); sys.stderr.flush(); sys.stderr.write('\\n')"
    result = run("-n", 1, "--", sys.executable, "-c", code)
    assert result.returncode == 0
    assert result.stderr == b"10%\r50%\r100%\n"


def test_lines_of_different_ranks_do_not_mix():
    """Ranks print whole lines (line-buffered once they join), even under PYTHONUNBUFFERED, where
    print() writes the text and its newline separately."""
    result = run("-n", 2, SCRIPTS / "ux_failures.py", "lines", env={"PYTHONUNBUFFERED": "1"})
    assert result.returncode == 0, result.err[-3000:]
    expected = {f"rank {r} line {i} " + "x" * 200 for r in range(2) for i in range(300)}
    lines = result.out.splitlines()
    assert sorted(lines) == sorted(expected)


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_a_missing_script_is_refused_before_starting(launcher):
    result = run("-n", 2, "no_such_script.py", launcher=launcher)
    assert result.returncode == 1
    assert "launch: no script 'no_such_script.py'" in result.err
    assert "can't open file" not in result.err


def test_launch_without_a_script_says_what_to_give():
    result = run("-n", 2)
    assert result.returncode == 2
    assert "give the script to run, e.g. fluidgrad launch -n 2 train.py ARGS" in result.err


# ------------------------------------------------------------------ collectives on numbers, refusals
def test_collectives_on_numbers_and_their_refusals_in_a_world_of_one(tmp_path):
    out = tmp_path / "one.json"
    result = run(SCRIPTS / "ux_collectives.py", out, script=False)
    assert result.returncode == 0, result.err[-3000:]
    assert json.loads(out.read_text()) == []


def test_collectives_on_numbers_and_their_refusals_on_two_ranks(tmp_path):
    out = tmp_path / "two.json"
    result = run("-n", 2, SCRIPTS / "ux_collectives.py", out, launcher="python -m fluidgrad.distributed.launch")
    assert result.returncode == 0, result.err[-3000:]
    assert json.loads(out.read_text()) == []


# ------------------------------------------------------------------ checkpoints at any world size
def test_checkpoints_are_written_by_rank_zero_and_load_at_any_world_size(tmp_path):
    """Saved by a 2-rank job (static with the sharded update, and eager with Adam's state); loaded
    by a single process without a launcher, by the same script, and by a 3-rank job: the values
    loaded are the file's, every rank holds the same, and one more step gives the same values
    at both world sizes (plain and sharded static update alike)."""
    result = run("-n", 2, SCRIPTS / "ux_checkpoint.py", "save", tmp_path)
    assert result.returncode == 0, result.err[-3000:]
    saved = json.loads((tmp_path / "save-2.json").read_text())
    assert saved["writes"] == [2, 0]  # rank 0 wrote both checkpoints, rank 1 nothing
    assert saved["files"] == ["eager.safetensors", "static.pdmodel.json", "static.pdparams.safetensors"]
    result = run(SCRIPTS / "ux_checkpoint.py", "load", tmp_path, script=False)
    assert result.returncode == 0, result.err[-3000:]
    result = run("-n", 3, SCRIPTS / "ux_checkpoint.py", "load", tmp_path)
    assert result.returncode == 0, result.err[-3000:]
    one, three = (json.loads((tmp_path / f"load-{n}.json").read_text()) for n in (1, 3))
    assert sorted(one) == sorted(three) == ["eager", "static-sharding=False", "static-sharding=True"]
    static_file = safetensors.numpy.load_file(str(tmp_path / "static.pdparams.safetensors"))
    eager_file = fg.load(tmp_path / "eager.safetensors")
    for case in one:
        assert one[case]["spread"] == three[case]["spread"] == 0.0, case
        assert one[case]["loaded"] == three[case]["loaded"], case
        for key, value in one[case]["after"].items():
            np.testing.assert_allclose(three[case]["after"][key], value, rtol=1e-5, atol=1e-6, err_msg=f"{case} {key}")
    for key, value in one["eager"]["loaded"].items():
        part, name = key.split("/", 1)
        index, _, slot = name.partition(".")   # the optimizer's state: {position: {slot: array}}
        stored = eager_file[part][name] if part == "model" else eager_file[part]["state"][int(index)][slot]
        np.testing.assert_array_equal(value, stored.numpy() if hasattr(stored, "numpy") else stored)
    assert one["static-sharding=True"]["loaded"] == one["static-sharding=False"]["loaded"]
    for name, value in one["static-sharding=True"]["loaded"].items():
        if name in static_file:  # parameters and optimizer state (not the learning-rate feed)
            np.testing.assert_array_equal(value, static_file[name], err_msg=name)
    assert {"fc_0.w_0", "fc_0.w_0_moment1_0", "fc_1.b_0_moment2_0"} <= set(static_file)


# ------------------------------------------------------------------ data
def test_shard_and_sampler_refuse_what_would_train_on_nothing_or_on_another_ranks_data():
    with pytest.raises(ValueError, match=r"shard: 3 row\(s\) cannot give each of 4 ranks a row"):
        dist.shard(np.arange(3), 0, 4)
    with pytest.raises(ValueError, match="DistributedBatchSampler: rank 0 is outside a world of 0 rank"):
        dist.DistributedBatchSampler(10, 2, num_replicas=0, rank=0)
    with pytest.raises(ValueError, match="DistributedBatchSampler: rank 2 is outside a world of 2 rank"):
        dist.DistributedBatchSampler(10, 2, num_replicas=2, rank=2)


# ------------------------------------------------------------------ the program shows the communication
@pytest.mark.parametrize("sharding, clip, ops, startup_ops", [
    (False, False, ["c_bucket_sgd"], ["c_broadcast"]),                 # sum and update fused, every rank
    (False, True, ["c_bucket_allreduce"], ["c_broadcast"]),            # clipping needs the sums first
    (True, False, ["c_bucket_sgd"], ["c_bucket_broadcast"]),           # this rank's part, fused
    (True, True, ["c_bucket_reducescatter", "c_bucket_allgather"], ["c_bucket_broadcast"]),
])
def test_the_program_and_its_picture_show_the_collectives(tmp_path, fresh_programs, sharding, clip, ops, startup_ops):
    main, startup = fresh_programs
    x = fg.static.data("x", [None, 3], "float32")
    loss = fg.mean(fg.square(fg.static.nn.fc(x, 2)))
    optimizer = fg.optimizer.SGD(0.1, grad_clip=fg.nn.ClipGradByGlobalNorm(1.0) if clip else None)
    dist.DistributedOptimizer(optimizer, sharding=sharding).minimize(loss)
    picture = fg.viz.draw(main, tmp_path / "main.html").read_text()
    for op in ops:
        assert f"= {op}(" in str(main)
        assert op in picture
    for op in startup_ops:
        assert f"= {op}(" in str(startup)


def test_a_timed_out_rank_is_named_as_the_cause_though_the_launcher_saw_a_killed_rank_first(tmp_path):
    """Under load the launcher may see a rank MPI killed (after another rank timed out and
    aborted the job) before it reads the timed-out rank's message: the message still wins."""
    from fluidgrad.distributed import launch as launch_module
    watch = launch_module._Watch(tmp_path, 3, process=None)
    message = "rank 0: all_reduce did not complete within 3 s (FLUIDGRAD_COLLECTIVE_TIMEOUT): rank 1 is in no collective"
    (tmp_path / "rank0.timedout").write_text(message)
    watch.pids = {0: 10, 1: 11, 2: 12}
    watch.failure, watch.bad_pid = (1, launch_module._DIED), 11
    assert watch.failed_rank() == ([], message)
    (tmp_path / "rank2.failed").write_text("ValueError: bad input")  # an error a rank raised comes first
    assert watch.failed_rank() == ([2], "raised ValueError: bad input")


MPICH_KILLED = (b"=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 4242 RUNNING AT vm\n"
                b"=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n"
                b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")


def test_a_killed_rank_is_named_though_the_watching_thread_never_read_its_pid(tmp_path):
    """Under load the launcher's watching thread may not have looked since the ranks joined when
    the job ends (a rank killed right after joining): the rank's pid file, read after the job,
    still names it with the signal MPI reported (the flaky failure of
    test_a_rank_killed_by_a_signal_is_named_with_the_signal)."""
    import io
    from fluidgrad.distributed import launch as launch_module
    watch = launch_module._Watch(tmp_path, 2, process=None)
    (tmp_path / "rank0.pid").write_text("4241")
    (tmp_path / "rank1.pid").write_text("4242")
    read, write = os.pipe()
    os.write(write, MPICH_KILLED)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        watch.forward(stream, io.BytesIO())
    assert watch.pids == {}   # nobody looked while the job ran
    assert watch.failed_rank() == ([1], "died without reporting an error: killed by signal 9 (SIGKILL)")


def test_mpi_report_cut_between_reads_is_understood_while_the_other_stream_speaks(tmp_path):
    """MPICH's report may reach the launcher in pieces; each stream keeps the end of its own last
    chunk (they were one, and the other stream's output in between lost the signal)."""
    import io
    import threading
    from fluidgrad.distributed import launch as launch_module
    watch = launch_module._Watch(tmp_path, 2, process=None)
    cut = MPICH_KILLED.index(b"(signal")
    out_read, out_write = os.pipe()
    sink = io.BytesIO()
    with os.fdopen(out_read, "rb") as stream:
        forwarding = threading.Thread(target=watch.forward, args=(stream, sink))
        forwarding.start()
        os.write(out_write, MPICH_KILLED[:cut])
        deadline = time.monotonic() + 30
        while sink.getvalue() != MPICH_KILLED[:cut]:  # the first piece read and passed on
            assert time.monotonic() < deadline
            time.sleep(0.01)
        err_read, err_write = os.pipe()
        os.write(err_write, b"[rank 0] a warning on stderr\n")
        os.close(err_write)
        with os.fdopen(err_read, "rb") as other:
            watch.forward(other, io.BytesIO())
        os.write(out_write, MPICH_KILLED[cut:])
        os.close(out_write)
        forwarding.join(timeout=30)
    assert sink.getvalue() == MPICH_KILLED
    assert (watch.bad_pid, watch.bad_signal) == (4242, 9)
