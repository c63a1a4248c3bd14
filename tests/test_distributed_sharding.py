"""The sharded optimizer update (`DistributedOptimizer(..., sharding=True)`, ZeRO stage 1), through
the real launcher (`fluidgrad launch -n N`, oversubscribed) and, for the program transformation
and the ops' rules, in a world of one.

tests/dist_scripts/sharding.py trains every case on every rank next to a single-process copy
on the concatenated batch; rank 0 writes what it found to a JSON file read here. The ops
c_bucket_reducescatter, c_bucket_shard, c_bucket_allgather and c_bucket_broadcast are checked
on 2 and 4 ranks by those runs (and in a world of one by tests/op_cases/collective.py).
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.framework import unique_name_guard
from fluidgrad.ops import accel

from test_distributed import launch

TOLERANCE = 2e-5  # float32 rounding after 20 steps (observed below 1e-5)
CASES = ["sgd-noclip", "sgd-norm", "momentum-noclip", "momentum-norm", "adam-noclip", "adam-norm",
         "adam-norm-one-bucket", "momentum-l2-schedule", "adamw-value", "adam-norm-mpi", "sgd-resume", "sgd-l2-mpi",
         "momentum-noclip-unfused", "momentum-nesterov-l2", "momentum-nesterov-l2-numpy", "adam-noclip-unfused",
         "adamw-l2-noclip", "adam-l2-numpy"]
# SGD, Momentum and Adam without clipping: one fused op per bucket (reduce-scatter, update, all-gather)
FUSED = {"sgd-noclip": "c_bucket_sgd", "sgd-resume": "c_bucket_sgd", "sgd-l2-mpi": "c_bucket_sgd",
         "momentum-noclip": "c_bucket_momentum", "momentum-l2-schedule": "c_bucket_momentum",
         "momentum-nesterov-l2": "c_bucket_momentum", "momentum-nesterov-l2-numpy": "c_bucket_momentum",
         "adam-noclip": "c_bucket_adam", "adamw-l2-noclip": "c_bucket_adam", "adam-l2-numpy": "c_bucket_adam"}
STATE_ENTRIES = {"sgd": 0, "momentum": 6, "adam": 24, "adamw": 24}  # accumulators of 6 parameters


@pytest.mark.parametrize("nproc, stores", [(2, "0"), (4, "0"), (2, "1"), (2, "adaptive")],
                         ids=["2", "4", "2-streamed", "2-adaptive"])
def test_sharded_training_equals_single_process_on_the_whole_batch(tmp_path, monkeypatch, nproc, stores):
    """SGD, Momentum (and Nesterov), Adam, AdamW; global-norm and by-value clipping; L2 decay with a
    learning-rate schedule; several buckets and one; the shared-memory and the MPI paths; the fused
    updates (compiled and NumPy) and the unfused ops; a checkpoint saved and loaded back mid-run:
    the loss, every parameter and the whole optimizer state match after 20 steps, the ranks hold
    the same values (one node copy), and the Program shows the collectives. "2-streamed": the
    peer's part of each row and this rank's part of the parameters written with streaming stores
    (FLUIDGRAD_STREAM_SHARDED=1); "2-adaptive": streamed on the steps a probe finds the cores far."""
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
    monkeypatch.setenv("FLUIDGRAD_STREAM_SHARDED", stores)
    out = tmp_path / "result.json"
    result = launch(nproc, "sharding.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(out.read_text())
    assert found["world"] == nproc and found["shared"]
    cases = found["cases"]
    assert sorted(cases) == sorted(CASES)
    assert found["placed"] < 1e-6  # gradients placed in the row by their producers: the same sums and updates
    problems = []
    for name, case in cases.items():
        for what in ("loss", "params", "state"):
            if not case[what] < TOLERANCE:
                problems.append(f"{name}: {what} differs by {case[what]:.2e} (relative)")
        if case["n_params"] != 6 or case["spread"] != 0.0 or not case["views"]:
            problems.append(f"{name}: {case['n_params']} parameters, spread {case['spread']}, views {case['views']}")
        if case["n_state"] != STATE_ENTRIES[name.split("-")[0]]:
            problems.append(f"{name}: {case['n_state']} optimizer state entries")
        expected_copy = "private" if name.endswith("-mpi") else "shared"
        if case["copy"] != expected_copy:
            problems.append(f"{name}: the parameters live in a {case['copy']} copy, expected {expected_copy}")
        program = case["program"]
        sharded_op = FUSED.get(name, "c_bucket_reducescatter")
        if "c_bucket_allreduce(" in program or program.count(f"= {sharded_op}(") < 1:
            problems.append(f"{name}: the program does not reduce its buckets with {sharded_op}")
    assert not problems, "\n".join(problems)
    assert cases["momentum-l2-schedule"]["lr"] == pytest.approx(0.05 * 0.5 ** 4, rel=1e-6)  # StepDecay(5), stepped 20 times
    assert cases["momentum-nesterov-l2"]["program"].count("= c_bucket_momentum(") == 1  # one bucket
    # placement: the gradients' producers write into the sharded bucket's row (fused ops and reduce-scatter)
    assert all(cases[name]["placed_grads"] == 6 for name in ("sgd-noclip", "adam-noclip", "momentum-nesterov-l2",
                                                            "momentum-noclip-unfused")), {
        name: case["placed_grads"] for name, case in cases.items()}
    one = cases["adam-norm-one-bucket"]["program"]
    assert one.count("= c_bucket_reducescatter(") == 1 and cases["adam-norm"]["program"].count(
        "= c_bucket_reducescatter(") > 1
    # the global norm: parts' squared sums summed over ranks, after the reduce-scatter, before the update
    program = cases["adam-norm"]["program"]
    assert (program.rindex("= c_bucket_reducescatter(") < program.index("= c_allreduce_sum(")
            < program.index("@CLIP]} = elementwise_mul(") < program.index("= adam(")
            < program.index("= c_bucket_allgather("))


def test_rank_zero_checkpoint_of_sharded_training_loads_in_one_process(tmp_path):
    """The checkpoint rank 0 wrote after sharded training on 2 ranks is complete: a plain program
    of one process (built with the same names) loads it and holds the trained parameters."""
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
    out = tmp_path / "result.json"
    result = launch(2, "sharding.py", out, "sgd-resume")
    assert result.returncode == 0, result.stderr[-3000:]
    final = json.loads(out.read_text())["cases"]["sgd-resume"]["final"]
    main, startup = fg.Program(), fg.Program()
    with unique_name_guard(), fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 6], "float32")
        h = fg.static.nn.fc(fg.static.nn.fc(x, 16, activation="tanh"), 16, activation="tanh")
        loss = fg.mean(fg.static.nn.fc(h, 3))
        fg.optimizer.SGD(0.1).minimize(loss, startup)
    scope = fg.Scope()
    fg.io.load(main, tmp_path / "sgd-resume-final", scope=scope)
    assert sorted(final) == sorted(p.name for p in main.all_parameters())
    for name, value in final.items():
        np.testing.assert_array_equal(scope[name], np.array(value, "float32"))


@pytest.mark.parametrize("scenario, message", [
    ("die", "rank 1 of 2 failed: died without reporting an error"),
    ("raise", "rank 1 of 2 failed: raised ValueError: rank 1 fails on purpose"),
    ("mismatch", "rank 1 built a different program than rank 0: parameter 0 is fc_0.w_0 [4, 9]"),
])
def test_a_failing_rank_stops_sharded_training_on_every_rank(scenario, message):
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
    result = launch(2, "sharding_failures.py", scenario, timeout=60)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-3000:]
    assert "rank 0 finished" not in result.stdout
    assert result.seconds < 45


# ------------------------------------------------------------------ a world of one
def build(optimizer, sharding=True, bucket_mb=25.0):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        loss = fg.mean(fg.square(fg.static.nn.fc(fg.static.nn.fc(x, 4, activation="tanh"), 1)))
        dist.DistributedOptimizer(optimizer, bucket_size_mb=bucket_mb, sharding=sharding).minimize(loss, startup)
    return main, startup, loss


OPTIMIZERS = {
    "adam-clip": (lambda: fg.optimizer.Adam(0.05, grad_clip=fg.nn.ClipGradByGlobalNorm(0.1)), "adam"),
    "momentum-nesterov-l2": (lambda: fg.optimizer.Momentum(0.05, use_nesterov=True, weight_decay=0.01),
                             "c_bucket_momentum"),
    "sgd": (lambda: fg.optimizer.SGD(0.1), "c_bucket_sgd"),
    "adam-l2": (lambda: fg.optimizer.Adam(0.05, weight_decay=0.01), "c_bucket_adam"),
    "adamw": (lambda: fg.optimizer.AdamW(0.05, weight_decay=0.1), "c_bucket_adam"),
}


@pytest.mark.parametrize("numba", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def test_sharded_program_in_a_world_of_one_trains_as_its_optimizer(kind, numba):
    """One rank: the parts are whole buckets, and training equals the plain optimizer's."""
    make, update_op = OPTIMIZERS[kind]
    results = []
    for sharding in (False, True):
        with unique_name_guard():
            main, startup, loss = build(make(), sharding)
        scope, exe = fg.Scope(), fg.Executor()
        fg.seed(3)
        exe.run(startup, scope=scope)
        with accel.use_numba(numba):
            losses = [exe.run(main, feed={"x": np.full((2, 3), k / 10, "float32")}, fetch_list=[loss],
                              scope=scope)[0] for k in range(5)]
        results.append((losses, {p.name: np.array(scope[p.name]) for p in main.all_parameters()}))
    (plain_losses, plain), (sharded_losses, sharded) = results
    np.testing.assert_allclose(sharded_losses, plain_losses, rtol=1e-6)
    for name in plain:
        np.testing.assert_allclose(sharded[name], plain[name], rtol=1e-5, atol=1e-7)
    ops = [op.type for op in main.global_block().ops]
    assert ops.count(update_op) == 1 and "c_bucket_allreduce" not in ops  # one bucket, one update
    assert ops.count("c_bucket_reducescatter") == (update_op == "adam")
    startup_ops = [op.type for op in startup.global_block().ops]
    assert startup_ops.count("c_bucket_broadcast") == {"adam": 3, "c_bucket_momentum": 2, "c_bucket_sgd": 1,
                                                       "c_bucket_adam": 3}[update_op]


def test_sharding_falls_back_to_the_plain_all_reduce_where_parts_cannot_do():
    """Clipping by each parameter's own norm needs whole gradients: a warning, then the plain path."""
    with pytest.warns(UserWarning, match="ClipGradByNorm needs each parameter's whole gradient"):
        main, _, _ = build(fg.optimizer.SGD(0.1, grad_clip=fg.nn.ClipGradByNorm(1.0)))
    ops = [op.type for op in main.global_block().ops]
    assert "c_bucket_allreduce" in ops and "c_bucket_reducescatter" not in ops
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build(fg.optimizer.SGD(0.1, grad_clip=fg.nn.ClipGradByValue(1.0)))  # elementwise: no fallback


def test_sharded_ops_refuse_bad_buckets_by_name():
    with fg.program_guard(fg.Program()):
        block = fg.default_main_program().global_block()
        u, v = fg.static.data("u", [3], "float32"), fg.static.data("v", [2, 2], "float64")
        w = fg.static.data("w", [None, 2], "float32")
        out = block.create_var("out")
        with pytest.raises(ValueError, match="c_bucket_reducescatter: bucket must name"):
            block.append_op("c_bucket_reducescatter", {"X": [u]}, {"Out": out}, {"nranks": 2})
        with pytest.raises(TypeError, match="c_bucket_reducescatter: a bucket holds floating tensors of one dtype"):
            block.append_op("c_bucket_reducescatter", {"X": [u, v]}, {"Out": out}, {"bucket": "b"})
        with pytest.raises(ValueError, match="c_bucket_shard: a sharded bucket needs known shapes"):
            block.append_op("c_bucket_shard", {"X": [w]}, {"Out": out}, {"nranks": 2})
        with pytest.raises(ValueError, match="c_bucket_shard: nranks must be a positive number"):
            block.append_op("c_bucket_shard", {"X": [u]}, {"Out": out}, {"nranks": 0})
        part = fg.static.data("part", [3], "float32")
        with pytest.raises(ValueError, match=r"c_bucket_allgather: .*must be 1-D with 2 elements"):
            block.append_op("c_bucket_allgather", {"X": part}, {"Out": [u]},
                            {"bucket": "b", "shapes": [[3]], "nranks": 2})
        with pytest.raises(ValueError, match="c_bucket_allgather: 1 outputs for 2 shapes"):
            block.append_op("c_bucket_allgather", {"X": part}, {"Out": [u]},
                            {"bucket": "b", "shapes": [[1], [2]], "nranks": 1})
        with pytest.raises(ValueError, match="c_bucket_broadcast: bucket must name"):
            block.append_op("c_bucket_broadcast", {"X": [u]}, {"Out": [u]}, {})
        lr = fg.static.data("lr", [1], "float32")
        with pytest.raises(ValueError, match="c_bucket_sgd: copy must name the node copy"):
            block.append_op("c_bucket_sgd", {"X": [u], "Param": [u], "LearningRate": lr}, {"ParamOut": [u]},
                            {"bucket": "b"})
        with pytest.raises(ValueError, match=r"c_bucket_momentum: Velocity must match the gradients X one to one"):
            block.append_op("c_bucket_momentum", {"X": [u], "Param": [u], "Velocity": [v], "LearningRate": lr},
                            {"ParamOut": [u], "VelocityOut": [v]}, {"bucket": "b", "copy": "c"})
        # 3 elements on 2 ranks: parts of 2, the last one padded
        block.append_op("c_bucket_shard", {"X": [u]}, {"Out": out}, {"nranks": 2})
        assert out.shape == (2,)
    with pytest.raises(fg.framework.errors.FluidgradError, match="c_bucket_shard: built for nranks=2, but this job has 1 rank"):
        fg.dispatch.apply_op("c_bucket_shard", {"X": [fg.to_tensor(np.ones(3, "float32"))]}, {"nranks": 2})
