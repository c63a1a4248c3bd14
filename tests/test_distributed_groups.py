"""Process groups of some ranks, non-blocking point-to-point, all-to-all and gather (issue 14,
session 14): through the real launcher on 3 ranks and without one
(tests/dist_scripts/groups.py compares each call with NumPy), the failure guarantees inside a
group (a failed member ends the job naming it; a rank outside the group leaving normally does
not), and the refusals."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.distributed as dist

from launch_support import BOUND_SECONDS, SCRIPTS, run
from launch_support import need_mpi as _mpi


def test_groups_p2p_and_all_to_all_in_a_world_of_one(tmp_path):
    out = tmp_path / "one.json"
    result = run(SCRIPTS / "groups.py", out, launched=False)
    assert result.returncode == 0, result.err[-3000:]
    assert json.loads(out.read_text()) == []


def test_groups_p2p_and_all_to_all_through_the_launcher(tmp_path):
    _mpi()
    out = tmp_path / "3.json"
    result = run("-n", 3, SCRIPTS / "groups.py", out)
    assert result.returncode == 0, result.err[-3000:]
    assert json.loads(out.read_text()) == []


_PRELUDE = ("import time, numpy as np, fluidgrad.distributed as dist\n"
            "dist.init_parallel_env()\n"
            "rank = dist.get_rank()\n"
            "group = dist.new_group([0, 1])\n")


def test_a_member_that_raises_ends_the_job_naming_it():
    """Rank 0 waits in the group's all-reduce; rank 1 raises instead; rank 2 is outside."""
    _mpi()
    code = _PRELUDE + ("if rank == 1: raise ValueError('no reduce from me')\n"
                       "if rank == 0: dist.all_reduce(np.ones(2), group=group)\n"
                       "if rank == 2: time.sleep(60)\n")
    result = run("-n", 3, "--", sys.executable, "-c", code, timeout=120)
    assert result.returncode != 0
    assert "rank 1 of 3 failed: raised ValueError: no reduce from me" in result.err, result.err[-3000:]
    assert result.seconds < BOUND_SECONDS


def test_a_rank_outside_the_group_may_leave_while_the_members_communicate():
    """Rank 2 ends at once; rank 1 waits several seconds in the group's collective and receive
    (for rank 0): not a failure, as it would be in a collective over every rank."""
    _mpi()
    code = _PRELUDE + ("if rank == 0: time.sleep(3.5); dist.isend(np.ones(2) * 7, dst=1).wait()\n"
                       "if rank == 1:\n"
                       "    y = np.zeros(2); task = dist.irecv(y, src=0); task.wait(); assert y.tolist() == [7, 7]\n"
                       "if rank == 0: time.sleep(2.5)\n"
                       "if rank < 2: x = dist.all_reduce(np.ones(2), group=group); assert x.tolist() == [2, 2], x\n")
    result = run("-n", 3, "--", sys.executable, "-c", code, timeout=120)
    assert result.returncode == 0, result.err[-3000:]


def test_ranks_making_different_groups_get_a_clear_error():
    _mpi()
    code = ("import fluidgrad.distributed as dist\n"
            "dist.init_parallel_env()\n"
            "dist.new_group([2, 1] if dist.get_rank() == 1 else [0, 1])\n")
    result = run("-n", 3, "--", sys.executable, "-c", code, timeout=120)
    assert result.returncode != 0
    assert ("CollectiveMismatchError: new_group: rank 1 makes group 1 of ranks [1, 2], rank 0 makes group 1 of "
            "ranks [0, 1]") in result.err, result.err[-3000:]
    assert result.seconds < BOUND_SECONDS


def test_group_refusals_in_a_world_of_one():
    with pytest.raises(ValueError, match=r"new_group: ranks must be distinct ranks of the job \(0 to 0\), at least "
                                         r"one, got \[0, 0\]"):
        dist.new_group([0, 0])
    with pytest.raises(ValueError, match=r"get_group_rank: global rank 3 is not part of group Group\(id=0"):
        dist.get_group_rank(None, 3)
    with pytest.raises(ValueError, match=r"get_global_rank: group rank 1 is not part of group"):
        dist.get_global_rank(dist.get_group(), 1)
    assert dist.get_group_rank(None, 0) == 0 and dist.get_global_rank(None, 0) == 0
    x = np.ones(4)
    with pytest.raises(ValueError, match="broadcast: give src= or group_src=, not both"):
        dist.broadcast(x, src=0, group_src=0)
    with pytest.raises(ValueError, match=r"reduce: group_dst=2 is outside the group of ranks \[0\]"):
        dist.reduce(x, group_dst=2)
    with pytest.raises(TypeError, match="isend: expects a Tensor or a NumPy array, got list"):
        dist.isend([1.0], dst=1)
    with pytest.raises(ValueError, match="P2POp: op must be dist.isend or dist.irecv"):
        dist.P2POp(dist.send, x, 0)


def test_all_to_all_refusals_and_the_op_in_a_world_of_one():
    with pytest.raises(ValueError, match=r"all_to_all_single: the output has shape \[2\] \(float64\); what this "
                                         r"rank receives has shape \[3\] \(float64\)"):
        dist.all_to_all_single(np.zeros(2), np.ones(3))
    with pytest.raises(ValueError, match=r"alltoall_single: the input's split sizes \[2\] must be 1 counts"):
        dist.alltoall_single(np.ones(3), None, [2])
    with pytest.raises(ValueError, match=r"alltoall: the input list must hold one tensor per rank of the group \(1\)"):
        dist.alltoall([np.ones(2), np.ones(2)], [])
    with pytest.raises(TypeError, match="gather works on Tensors and NumPy arrays"):
        with fg.program_guard(fg.Program(), fg.Program()):
            dist.gather(fg.static.data("v", [2], "float64"))
    with fg.program_guard(fg.Program(), fg.Program()):
        v = fg.static.data("v", [4, 2], "float64")
        out = dist.all_to_all_single(None, v)
        assert out.shape == (4, 2) and out.block.ops[-1].type == "c_alltoall"
        with pytest.raises(ValueError, match="alltoall_single in a Program splits into equal parts"):
            dist.alltoall_single(v, None, [4])


# ------------------------------------------------------------------ spawn
def spawned(out_dir):
    """Run by test_spawn_of_a_module_function: each rank writes its rank and the world size."""
    np.save(f"{out_dir}/r{dist.get_rank()}.npy", np.array([dist.get_rank(), dist.get_world_size()]))


def test_spawn_runs_a_function_of_the_calling_script_and_names_a_failed_rank(tmp_path):
    _mpi()
    result = run(SCRIPTS / "spawn_job.py", tmp_path, launched=False)
    assert result.returncode == 0, result.err[-3000:]
    assert [np.load(tmp_path / f"rank{r}.npy").tolist() for r in range(2)] == [[30.0], [30.0]]
    assert ("spawn raised: spawn(fails): rank 1 of 2 failed: raised ValueError: rank one fails"
            in result.out), result.out[-3000:]


def test_spawn_of_a_module_function(tmp_path):
    _mpi()
    dist.spawn(spawned, args=(str(tmp_path),), nprocs=2)
    assert [np.load(tmp_path / f"r{r}.npy").tolist() for r in range(2)] == [[0, 2], [1, 2]]


def test_spawn_refuses_what_the_ranks_cannot_import():
    def local():
        pass
    with pytest.raises(ValueError, match=r"spawn: func \S*<lambda> cannot be found by the new ranks"):
        dist.spawn(lambda: None, nprocs=2)
    with pytest.raises(ValueError, match=r"spawn: func test_spawn_refuses_what_the_ranks_cannot_import.<locals>.local "
                                         r"cannot be found"):
        dist.spawn(local, nprocs=2)
    with pytest.raises(ValueError, match=r"spawn: unknown options \['gpus'\]"):
        dist.spawn(spawned, nprocs=2, gpus="0,1")
    with pytest.raises(TypeError, match="spawn: args must be picklable"):
        dist.spawn(spawned, args=(lambda: None,), nprocs=2)
    with pytest.raises(ValueError, match="spawn: nprocs must be at least 1"):
        dist.spawn(spawned, nprocs=0)
