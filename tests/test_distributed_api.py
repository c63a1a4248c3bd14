"""The collective API as Paddle 2 and PyTorch users write it (`ReduceOp`, `reduce`, `scatter`, the
list forms, objects, `send` / `recv`, the one process group, `ParallelEnv`): through the real
launcher on 2 and 3 ranks and without one (tests/dist_scripts/api_collectives.py compares each
call with NumPy over every rank's values), and the refusals of what fluidgrad does not build.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.distributed as dist

from launch_support import BOUND_SECONDS, SCRIPTS, run
from launch_support import need_mpi as _mpi


# ------------------------------------------------------------------ the API on every world size
def test_the_collective_api_in_a_world_of_one(tmp_path):
    out = tmp_path / "one.json"
    result = run(SCRIPTS / "api_collectives.py", out, launched=False)
    assert result.returncode == 0, result.err[-3000:]
    assert json.loads(out.read_text()) == []


@pytest.mark.parametrize("nproc", [2, 3])
def test_the_collective_api_through_the_launcher(tmp_path, nproc):
    _mpi()
    out = tmp_path / f"{nproc}.json"
    result = run("-n", nproc, SCRIPTS / "api_collectives.py", out)
    assert result.returncode == 0, result.err[-3000:]
    assert json.loads(out.read_text()) == []


def test_recv_into_a_tensor_of_another_shape_names_both_layouts():
    """The receiver takes the bytes (the sender is not left waiting) and raises; the job ends."""
    _mpi()
    code = ("import numpy as np, fluidgrad.distributed as dist\n"
            "dist.init_parallel_env()\n"
            "if dist.get_rank() == 0: dist.send(np.ones((2, 3)), dst=1)\n"
            "else: dist.recv(np.zeros(4, np.float32), src=0)\n")
    result = run("-n", 2, "--", sys.executable, "-c", code, timeout=120)
    assert result.returncode != 0
    assert ("rank 1 of 2 failed: raised CollectiveMismatchError: recv: rank 0 sent shape [2, 3] (float64), rank 1 "
            "receives into shape [4] (float32)") in result.err, result.err[-3000:]
    assert result.seconds < BOUND_SECONDS


# ------------------------------------------------------------------ in this process (a world of one)
def test_reduce_op_names_are_paddles_and_pytorchs_and_equal_the_strings():
    assert [op.name for op in dist.ReduceOp] == ["SUM", "MAX", "MIN", "PROD", "AVG"]
    assert dist.ReduceOp.PRODUCT is dist.ReduceOp.PROD and dist.ReduceOp.SUM == "sum"
    x = np.array([2.0, -3.0])
    assert dist.all_reduce(x, op="PROD") is x
    with pytest.raises(ValueError, match=r"all_reduce: op must be one of \['sum', 'max', 'min', 'avg', 'prod'\] "
                                         r"\(or ReduceOp.SUM, ...\), got 'band'"):
        dist.all_reduce(x, op="band")


def test_what_fluidgrad_does_not_build_is_refused_clearly():
    x = fg.to_tensor(np.ones(3))
    with pytest.raises(ValueError, match=r"new_group: ranks must be distinct ranks of the job \(0 to 0\), at least "
                                         r"one, got \[0, 1\]"):
        dist.new_group([0, 1])
    with pytest.raises(ValueError, match="all_reduce: group must be None or a Group from new_group"):
        dist.all_reduce(x, group="ring")
    with pytest.raises(ValueError, match="get_group: no process group has id 3"):
        dist.get_group(3)
    with pytest.raises(ValueError, match="send: dst=0 is this rank"):
        dist.send(x, dst=0)
    with pytest.raises(ValueError, match="recv: rank 1 is outside the world of 1 rank"):
        dist.recv(x, src=1)
    with pytest.raises(ValueError, match=r"scatter: tensor_list \(on the source rank\) must hold one tensor per "
                                         r"rank \(1\), got 2"):
        dist.scatter(x, [x, x])
    with pytest.raises(ValueError, match=r"reduce_scatter: tensor_list\[0\] has shape \[2\] \(float64\); the output "
                                         r"has shape \[3\] \(float64\)"):
        dist.reduce_scatter(x, [np.ones(2)])
    with fg.program_guard(fg.Program(), fg.Program()):
        v = fg.static.data("v", [3], "float64")
        with pytest.raises(ValueError, match="reduce in a Program supports op='sum'"):
            dist.reduce(v, dst=0, op=dist.ReduceOp.MAX)
        with pytest.raises(TypeError, match="send works on Tensors and NumPy arrays"):
            dist.send(v, dst=0)


def test_async_forms_return_a_completed_task():
    x = np.array([1.0, 2.0])
    for task in (dist.all_reduce(x, sync_op=False), dist.broadcast(x, 0, async_op=True),
                 dist.all_gather([], x, sync_op=False)):
        assert task.wait() is True and task.is_completed()


# ------------------------------------------------------------------ DistributedOptimizer without DataParallel
def test_an_eager_distributed_optimizer_without_data_parallel_trains_as_one_process(tmp_path):
    """DistributedOptimizer(eager optimizer) on an unwrapped model averages the gradients at
    step() / minimize(loss) (Horovod's DistributedOptimizer) and starts every rank from rank 0's
    parameters: 2 ranks equal one process on the concatenated batch, with SGD, Momentum, Adam,
    and clipping by the global norm; a layer never called stays as it was."""
    _mpi()
    out = tmp_path / "eager_optimizer.json"
    result = run("-n", 2, SCRIPTS / "api_eager_optimizer.py", out)
    assert result.returncode == 0, result.err[-3000:]
    cases = json.loads(out.read_text())["cases"]
    assert sorted(cases) == sorted(f"{kind}-{clip}" for kind in ("sgd", "momentum", "adam") for clip in ("noclip", "clip"))
    problems = []
    for name, case in cases.items():
        if not (case["loss"] < 2e-5 and case["params"] < 2e-5):  # float32 rounding (observed ~1e-6)
            problems.append(f"{name}: loss differs by {case['loss']:.2e}, a parameter by {case['params']:.2e}")
        if case["n_params"] != 6 or case["spread"] != 0.0 or case["unused_moved"] != 0.0:
            problems.append(f"{name}: {case['n_params']} parameters, spread across ranks {case['spread']}, "
                            f"the unused layer moved by {case['unused_moved']}")
        if name.endswith("-clip") and not case["clipped"]:
            problems.append(f"{name}: the global norm never exceeded clip_norm: clipping was not exercised")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------ the launcher's exit status
def launcher_line(result):
    lines = [line for line in result.err.splitlines() if line.startswith("fluidgrad launch:")]
    assert len(lines) == 1, result.err[-3000:]
    return lines[0]


@pytest.mark.parametrize("scenario, message, status", [
    ("raise4", "rank 1 of 2 failed: exited with status 4 (sys.exit(4)); the other ranks finished (exit status 4)", 4),
    ("os_exit3", "rank 1 of 2 failed: exited with status 3 (os._exit(3)); every rank was stopped (exit status 3)", 3),
    ("os_exit0", "rank 1 of 2 failed: exited with status 0 (os._exit(0)) while the other ranks ran: it skipped "
                 "MPI's finalisation, so MPI stopped the job; every rank was stopped (exit status 1)", 1),
    ("error", "rank 1 of 2 failed: raised ValueError: rank 1 found a bad value; the other ranks finished "
              "(exit status 1)", 1),
])
def test_the_launcher_exits_with_the_real_status_of_the_failed_rank_and_names_it(scenario, message, status):
    """However the script ends (SystemExit raised without sys.exit, os._exit, which MPI reports
    as the status of a rank it killed), the status is the failed rank's own (torchrun's exitcode)."""
    _mpi()
    result = run("-n", 2, SCRIPTS / "api_exits.py", scenario, timeout=120)
    assert launcher_line(result) == f"fluidgrad launch: {message}"
    assert result.returncode == status
    assert "rank 1 finished" not in result.out
    assert result.seconds < BOUND_SECONDS
    if scenario == "error":  # the traceback starts in the script, as with `python script.py`
        traceback = [line for line in result.err.splitlines() if line.startswith("[rank 1]   File")]
        assert traceback and all("api_exits.py" in line for line in traceback), result.err[-2000:]


def test_a_sys_exit_the_script_catches_ends_nothing():
    _mpi()
    result = run("-n", 2, SCRIPTS / "api_exits.py", "caught", timeout=120)
    assert result.returncode == 0, result.err[-3000:]
    assert "fluidgrad launch:" not in result.err
    assert "rank 0 finished" in result.out and "rank 1 finished" in result.out


def test_a_launched_script_runs_as_python_runs_it():
    """argv, sys.path[0] (the script's folder), __name__, __file__, and classes of the script
    pickled between ranks."""
    _mpi()
    result = run("-n", 2, SCRIPTS / "api_exits.py", "as_a_script", "--flag", timeout=120)
    assert result.returncode == 0, result.err[-3000:]
    for rank in (0, 1):
        assert f"rank {rank} facts [True, True, True, True, True]" in result.out, result.out
