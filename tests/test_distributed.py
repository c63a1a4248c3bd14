"""Data parallelism over MPI, through the real launcher (`fluidgrad launch -n N`), oversubscribed.

The scripts in tests/dist_scripts/ run on every rank; rank 0 writes what it found to a JSON
file that these tests read. Skipped only when the `dist` extra (mpi4py + mpich) is absent.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.distributed as dist

pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "dist_scripts"
TOLERANCE = 2e-5  # float32 rounding after 20 steps (observed ~1e-6)


def launch(nproc, script, *args, timeout=240):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, "-m", "fluidgrad", "launch", "-n", str(nproc), str(SCRIPTS / script), *map(str, args)]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                            check=False)
    result.seconds = time.perf_counter() - start
    return result


@pytest.mark.parametrize("nproc", [2, 4])
def test_data_parallel_equals_single_process_on_the_whole_batch(tmp_path, nproc):
    """Static and eager, SGD, Momentum and Adam, with and without global-norm clipping, and eager
    gradient accumulation under no_sync(): after 20 steps the loss and every parameter match
    training on the concatenated batch; buckets reduced through shared memory (the default on
    one machine) and, for Adam with clipping, through MPI's Iallreduce (one launch runs all
    fifteen cases: launching is the expensive part)."""
    out = tmp_path / "result.json"
    result = launch(nproc, "equivalence.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    cases = json.loads(out.read_text())["cases"]
    assert sorted(cases) == sorted([f"{m}-{o}-{c}" for m in ("static", "eager") for o in ("sgd", "momentum", "adam")
                                    for c in ("noclip", "clip")]
                                   + ["static-adam-clip-mpi", "eager-adam-clip-mpi", "eager-momentum-no_sync"])
    problems = []
    for name, case in cases.items():
        if not case["loss"] < TOLERANCE:
            problems.append(f"{name}: loss differs by {case['loss']:.2e} (relative)")
        if not case["params"] < TOLERANCE:
            problems.append(f"{name}: a parameter differs by {case['params']:.2e} after 20 steps")
        if case["n_params"] != 6 or case["spread"] != 0.0:
            problems.append(f"{name}: {case['n_params']} parameters compared, spread across ranks {case['spread']}")
        if name.endswith("-clip") and not case["clipped"]:
            problems.append(f"{name}: the global norm never exceeded clip_norm: clipping was not exercised")
    assert not problems, "\n".join(problems)
    # the Program shows the bucketed collectives, before clipping (so the global norm is global)
    program = cases["static-adam-clip"]["program"]
    buckets = [line for line in program.splitlines() if "= c_bucket_allreduce(" in line]
    assert 1 <= len(buckets) < 6 and any(line.count("@GRAD") >= 4 for line in buckets), buckets  # 6 gradients
    assert program.index("= c_bucket_allreduce(") < program.index("@CLIP]} = elementwise_mul(")


def test_default_update_gives_the_same_bits_whichever_stores_write_the_rows(tmp_path):
    """Static mode's fused default update on two ranks writes each step's shared rows with
    streaming stores or with ordinary ones (the weight gradients' GEMMs writing into the row),
    as a probe of the row finds the cores (comm_stream.StoreChooser): forced either way, chosen,
    or switching every step, the parameters are the same bits, and one process's on the
    concatenated batch to float32 rounding (dist_scripts/replicated_stores.py)."""
    out = tmp_path / "result.json"
    result = launch(2, "replicated_stores.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    for rank, found in enumerate(json.loads(out.read_text())["ranks"]):
        for kind, case in found.items():
            assert case["same_bits"] and case["n_params"] == 4, (rank, kind, case)
            assert case["vs_one_process"] < TOLERANCE, (rank, kind, case)
            packs = case["packs"]
            assert packs["stream"] == {"streamed": 8, "placed": 0, "steps": 8}, (rank, kind, packs)
            # the first step makes the bucket: nothing was offered before it existed
            assert packs["ordinary"] == {"streamed": 0, "placed": 7, "steps": 8}, (rank, kind, packs)
            assert packs["switching"] == {"streamed": 4, "placed": 3, "steps": 8}, (rank, kind, packs)
            adaptive = packs["adaptive"]
            assert adaptive["steps"] == 8 and adaptive["streamed"] + adaptive["placed"] >= 7, (rank, kind, packs)


@pytest.mark.parametrize("nproc", [2, 3])
def test_collectives_and_their_gradients(tmp_path, nproc):
    out = tmp_path / "failures.json"
    result = launch(nproc, "collectives.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(out.read_text()) == []


@pytest.mark.parametrize("scenario, message", [
    ("raise", "rank 1 of 2 failed: raised ValueError: rank 1 fails on purpose"),
    ("die", "rank 1 of 2 failed: died without reporting an error"),
    ("exit", "rank 1 exited while rank 0 waits for it in all_reduce"),
    ("static", "rank 1 built a different program than rank 0: parameter 0 is fc_0.w_0 [4, 9]"),
    ("eager", "rank 1 has parameter 0.weight [4, 9] (float32) where rank 0 has 0.weight [4, 8]"),
])
def test_a_failing_rank_stops_every_rank_with_its_name(scenario, message):
    result = launch(2, "failures.py", scenario, timeout=60)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-3000:]
    assert "rank 0 finished" not in result.stdout
    assert result.seconds < 45


def test_without_a_launcher_the_world_has_one_rank_and_collectives_are_identities():
    dist.init_parallel_env()
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    x = fg.to_tensor(np.arange(6.0).reshape(2, 3))
    assert dist.all_reduce(x, "avg") is x
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(dist.broadcast(np.ones(3), src=0), np.ones(3))
    np.testing.assert_array_equal(dist.all_gather(x)[0].numpy(), x.numpy())
    np.testing.assert_array_equal(dist.reduce_scatter(np.arange(4.0)), np.arange(4.0))
    dist.barrier()
    with pytest.raises(ValueError, match="op must be one of"):
        dist.all_reduce(x, "bxor")
    with pytest.raises(ValueError, match="rank 1 is outside the world of 1"):
        dist.broadcast(np.ones(2), src=1)


def test_a_bucket_allreduce_without_a_bucket_key_is_refused():
    """The key names the buffer kept between runs: two ops under one (empty) key would share it."""
    x = fg.to_tensor(np.ones(3))
    with pytest.raises(ValueError, match="c_bucket_allreduce: bucket must name"):
        fg.dispatch.apply_op("c_bucket_allreduce", {"X": [x]}, {"reduce": "avg"}, n_out=1)
    with fg.program_guard(fg.Program()):
        v = fg.static.data("v", [3], "float64")
        with pytest.raises(ValueError, match="c_bucket_allreduce: bucket must name"):
            fg.default_main_program().global_block().append_op(
                "c_bucket_allreduce", {"X": [v]}, {"Out": [v]}, {"reduce": "sum"})


def test_a_bucket_allreduce_that_overwrites_its_inputs_must_output_them():
    """overwrite=True lets the sums go into the inputs' arrays: only right when Out is X."""
    with fg.program_guard(fg.Program()):
        u, v = fg.static.data("u", [3], "float64"), fg.static.data("v", [3], "float64")
        with pytest.raises(ValueError, match="c_bucket_allreduce: overwrite=True .* the outputs must be the inputs"):
            fg.default_main_program().global_block().append_op(
                "c_bucket_allreduce", {"X": [v]}, {"Out": [u]}, {"bucket": "b", "overwrite": True})


def test_a_cached_shape_rule_still_refuses_an_overwrite_that_outputs_other_variables():
    """Build-time shape rules are cached on shapes, dtypes and attributes; this rule also reads
    the variables' names, so a right op built first must not let a wrong one of the same shapes
    and attributes through."""
    with fg.program_guard(fg.Program()):
        block = fg.default_main_program().global_block()
        u, v = fg.static.data("u", [3], "float64"), fg.static.data("v", [3], "float64")
        block.append_op("c_bucket_allreduce", {"X": [v]}, {"Out": [v]}, {"bucket": "b", "overwrite": True})
        with pytest.raises(ValueError, match="c_bucket_allreduce: overwrite=True .* the outputs must be the inputs"):
            block.append_op("c_bucket_allreduce", {"X": [u]}, {"Out": [v]}, {"bucket": "b", "overwrite": True})


def test_import_fluidgrad_does_not_import_mpi4py():
    code = "import sys, fluidgrad, fluidgrad.distributed as d; d.init_parallel_env(); print('mpi4py' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k not in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")}
    out = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_distributed_optimizer_in_a_world_of_one_trains_as_its_optimizer(fresh_programs):
    main, startup = fresh_programs
    x = fg.static.data("x", [None, 3], "float32")
    loss = fg.mean(fg.square(fg.static.nn.fc(x, 1)))
    dist.DistributedOptimizer(fg.optimizer.SGD(0.1)).minimize(loss)
    assert [op.type for op in startup.global_block().ops].count("c_broadcast") == 2
    exe = fg.Executor()
    exe.run(startup)
    before = np.array(fg.global_scope()[main.all_parameters()[0].name])
    (value,) = exe.run(main, feed={"x": np.ones((4, 3), "float32")}, fetch_list=[loss])
    assert np.isfinite(value) and not np.array_equal(before, fg.global_scope()[main.all_parameters()[0].name])


def test_shard_and_sampler_split_the_data_evenly():
    data = np.arange(10)
    parts = [dist.shard(data, r, 3) for r in range(3)]
    np.testing.assert_array_equal(np.concatenate(parts), np.arange(9))
    samplers = [dist.DistributedBatchSampler(10, 2, num_replicas=3, rank=r, shuffle=True) for r in range(3)]
    batches = [list(s) for s in samplers]
    assert {len(b) for b in batches} == {len(samplers[0])} == {2}
    seen = sorted(i for b in batches for batch in b for i in batch)
    assert set(seen) == set(range(10)) and len(seen) == 12  # padded by wrapping around
    with pytest.raises(ValueError, match="rank 3 is outside a world of 3"):
        dist.shard(data, 3, 3)


def test_checkpoint_written_by_rank_zero_loads_anywhere(tmp_path):
    model = fg.nn.Linear(3, 2)
    dist.save_state_dict(model.state_dict(), tmp_path / "ckpt.safetensors")
    other = fg.nn.Linear(3, 2)
    other.set_state_dict(dist.load_state_dict(tmp_path / "ckpt.safetensors"))
    np.testing.assert_array_equal(other.weight.numpy(), model.weight.numpy())


# the communicating ops, checked on 2 and 3 ranks (forward and gradient) by dist_scripts/collectives.py
COLLECTIVE_OPS = ["c_allreduce_sum", "c_allreduce_avg", "c_allreduce_max", "c_allreduce_min", "c_broadcast",
                  "c_reduce_sum", "c_allgather", "c_reducescatter", "c_bucket_allreduce"]


def test_every_collective_op_is_registered_and_checked_on_several_ranks():
    script = (SCRIPTS / "collectives.py").read_text()
    for op in COLLECTIVE_OPS:
        assert op in fg.ops.registered_ops() and f'"{op}"' in script, op


def test_demo_trains_data_parallel_on_two_ranks_and_draws_the_collectives(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "fluidgrad", "demo", "--nproc", "2", "--epochs", "2", "--model",
                             "mlp", "--no-progress", "--out", str(tmp_path)], env=env, capture_output=True, text=True,
                            timeout=240, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("test accuracy:") == 1  # rank 0 reports, once
    assert float(result.stdout.split("test accuracy:")[1].split()[0]) > 0.8
    picture = next(tmp_path.glob("train_program.*")).read_text()
    assert any(op in picture for op in ("c_bucket_allreduce", "c_bucket_sgd", "c_bucket_momentum", "c_bucket_adam"))
