"""Weight gradients split across ranks from shared activations (`DistributedOptimizer(...,
split_grads=True)`): through the real launcher (`fluidgrad launch -n N`, oversubscribed) and, for
the program transformation and the ops' rules, in a world of one.

tests/dist_scripts/split_grads.py trains every case on every rank next to a single-process copy
on the concatenated batch; rank 0 writes what it found to a JSON file read here. The ops
c_split_matmul_grad, c_split_sgd, c_split_momentum and c_split_adam are checked on 2, 3 (rows
that do not divide evenly) and 4 ranks by those runs, and in a world of one by
tests/op_cases/collective.py.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.distributed as dist
from fluidgrad.distributed import split_grads
from fluidgrad.framework import unique_name_guard
from fluidgrad.nn import functional as F

from test_distributed import launch

TOLERANCE = 2e-5  # float32 rounding after 20 steps (observed below 4e-6)
STATE_TOLERANCE = 1e-4  # Adam's second moments of small gradients (observed 2.5e-5 on 3 ranks)
SPLIT_OPS = {"default": "c_split_matmul_grad", "sgd": "c_split_sgd", "momentum": "c_split_momentum",
             "adam": "c_split_adam", "adamw": "c_split_adam"}


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_split_training_equals_single_process_on_the_whole_batch(tmp_path, nproc):
    """SGD, Momentum (and Nesterov), Adam, AdamW, with private parameters and sharded; global-norm
    and by-value clipping; L2 decay with a learning-rate schedule; batches changing size; shards of
    different sizes; a parameter whose gradient is no product (bucketed in the same program); the
    program run with MPI's all-reduce: loss, every parameter and the optimizer state match after 20
    steps, and every rank holds the same values."""
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
    out = tmp_path / "result.json"
    result = launch(nproc, "split_grads.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(out.read_text())
    assert found["world"] == nproc and found["shared"]
    cases = found["cases"]
    assert len(cases) == 19
    problems = []
    for name, case in cases.items():
        for what, bound in (("loss", TOLERANCE), ("params", TOLERANCE), ("state", STATE_TOLERANCE)):
            if not case[what] < bound:
                problems.append(f"{name}: {what} differs by {case[what]:.2e} (relative)")
        sharded = "-sharded" in name
        if case["n_params"] != 6 + ("-mixed-" in name) or case["spread"] != 0.0 or case["views"] != sharded:
            problems.append(f"{name}: {case['n_params']} parameters, spread {case['spread']}, views {case['views']}")
        program = case["program"]
        op = SPLIT_OPS[name.split("-")[0] if sharded else "default"]
        if program.count(f"= {op}(") != 1 or "transpose_x=True" in program:
            problems.append(f"{name}: the weight gradients are not made by one {op}")
        others = program.count("= c_bucket_")
        if others != ("-mixed-" in name):  # only the parameter that is no product goes through a bucket
            problems.append(f"{name}: {others} bucket ops")
    assert not problems, "\n".join(problems)
    # clipping and the updates follow the split gradients, as on one process
    program = cases["adam-norm-default"]["program"]
    assert program.index("= c_split_matmul_grad(") < program.index("@CLIP]} = elementwise_mul(") < program.index(
        "= adam(")


def test_activations_written_in_place_train_to_the_same_bits_as_copied(tmp_path):
    """The layers' activations (and, sharded, their output gradients) written by their producers
    straight into the shared window give the same bits as copying them there (two ranks: the
    average's 1/2 is exact wherever it is applied), for relu and tanh layers, SGD, Momentum and
    Adam, a fixed batch and one changing size (then the steps after a change copy, as before)."""
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
    out = tmp_path / "result.json"
    result = launch(2, "split_placement.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(out.read_text())
    assert found["world"] == 2 and found["shared"]
    cases = found["cases"]
    assert len(cases) == 16
    for name, case in cases.items():
        assert case["same"], name
        sharded = "-sharded-" in name
        act = "relu" if "-relu-" in name else "tanh"
        assert sum(n.startswith(f"{act}.tmp_") for n in case["placed"]) == 2, (name, case["placed"])
        assert sum(n.endswith("@GRAD") for n in case["placed"]) == (3 if sharded else 0), (name, case["placed"])
        per_step = len(case["placed"])
        steps_in_place = case["found"] / per_step
        assert steps_in_place >= (5 if "-fixed" in name else 2), (name, case["found"])
        assert case["found_copied"] == 0, name
    assert found["streamed_params_diff"] < 1e-5  # parameter rows streamed (STREAM_PARAMS): the same to rounding


# ------------------------------------------------------------------ a world of one
def build(optimizer, hidden=4, shared_weight=False, **options):
    main, startup = fg.Program(), fg.Program()
    with unique_name_guard(), fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = fg.static.nn.fc(x, hidden, activation="tanh")
        if shared_weight:  # the same weight used twice: its gradient is a sum, not one product
            w = fg.static.create_parameter([hidden, hidden], "float32", name="shared_w")
            h = fg.tanh(fg.matmul(fg.tanh(fg.matmul(h, w)), w))
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, 3), y))
        dist.DistributedOptimizer(optimizer, **options).minimize(loss, startup)
    return main, startup, loss


OPTIMIZERS = {
    "sgd": lambda: fg.optimizer.SGD(0.1),
    "momentum-nesterov-l2": lambda: fg.optimizer.Momentum(0.05, use_nesterov=True, weight_decay=0.01),
    "adam-clip": lambda: fg.optimizer.Adam(0.05, grad_clip=fg.nn.ClipGradByGlobalNorm(0.1)),
    "adamw": lambda: fg.optimizer.AdamW(0.05, weight_decay=0.1),
}


def train(main, startup, loss, steps=5):
    scope, exe = fg.Scope(), fg.Executor()
    fg.seed(3)
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    losses = [float(exe.run(main, feed={"x": rng.standard_normal((2 + k, 3)).astype("float32"),
                                        "y": rng.integers(0, 3, (2 + k, 1))}, fetch_list=[loss], scope=scope)[0])
              for k in range(steps)]
    return losses, {p.name: np.array(scope[p.name]) for p in main.all_parameters()}


@pytest.mark.parametrize("sharding", [False, True], ids=["default", "sharded"])
@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def test_split_program_in_a_world_of_one_trains_as_its_optimizer(kind, sharding):
    """One rank: the split op computes the whole gradients, and training equals the plain
    optimizer's; the backward's weight-gradient products and bias sums are gone from it."""
    plain_losses, plain = train(*build(OPTIMIZERS[kind](), split_grads=False))
    main, startup, loss = build(OPTIMIZERS[kind](), split_grads=True, sharding=sharding)
    losses, params = train(main, startup, loss)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    for name in plain:
        np.testing.assert_allclose(params[name], plain[name], rtol=1e-5, atol=1e-7)
    ops = [op.type for op in main.global_block().ops]
    fused = sharding and kind != "adam-clip"  # clipping needs every gradient first: the sharded buckets then
    expected = split_grads.split_update_op(OPTIMIZERS[kind]()) if fused else "c_split_matmul_grad"
    if sharding and not fused:
        assert "c_bucket_reducescatter" in ops and not any(t.startswith("c_split") for t in ops)
        return
    assert ops.count(expected) == 1 and not any(t.startswith("c_bucket") for t in ops)
    assert not any(op.type == "matmul" and op.attr("transpose_x") for op in main.global_block().ops)
    assert not any(op.type == "reduce_as" and op.output_arg_names[0].endswith(".b_0@GRAD")
                   for op in main.global_block().ops)


def test_gradients_that_are_not_one_product_keep_the_buckets():
    """A weight used twice gets its gradient as a sum: it stays with the bucketed all-reduce, the
    others are split; the program trains as the plain one."""
    plain_losses, plain = train(*build(fg.optimizer.Momentum(0.05), shared_weight=True, split_grads=False))
    main, startup, loss = build(fg.optimizer.Momentum(0.05), shared_weight=True, split_grads=True)
    losses, params = train(main, startup, loss)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    for name in plain:
        np.testing.assert_allclose(params[name], plain[name], rtol=1e-5, atol=1e-7)
    ops = main.global_block().ops
    (split,) = [op for op in ops if op.type == "c_split_matmul_grad"]
    (bucket,) = [op for op in ops if op.type == "c_bucket_allreduce"]
    assert bucket.inputs["X"] == ["shared_w@GRAD"]
    assert sorted(split.outputs["Out"]) == ["fc_0.b_0@GRAD", "fc_0.w_0@GRAD", "fc_1.b_0@GRAD", "fc_1.w_0@GRAD"]


def test_split_grads_switch(monkeypatch):
    """The argument wins; without it FLUIDGRAD_SPLIT_GRADS (0 or 1), else the default."""
    monkeypatch.setenv("FLUIDGRAD_SPLIT_GRADS", "1")
    assert dist.DistributedOptimizer(fg.optimizer.SGD(0.1)).split_grads
    assert not dist.DistributedOptimizer(fg.optimizer.SGD(0.1), split_grads=False).split_grads
    monkeypatch.setenv("FLUIDGRAD_SPLIT_GRADS", "0")
    assert not dist.DistributedOptimizer(fg.optimizer.SGD(0.1)).split_grads
    monkeypatch.setenv("FLUIDGRAD_SPLIT_GRADS", "yes")
    with pytest.raises(ValueError, match="FLUIDGRAD_SPLIT_GRADS must be 0 or 1, got 'yes'"):
        dist.DistributedOptimizer(fg.optimizer.SGD(0.1))
    monkeypatch.delenv("FLUIDGRAD_SPLIT_GRADS")
    assert dist.DistributedOptimizer(fg.optimizer.SGD(0.1)).split_grads == split_grads.SPLIT_BY_DEFAULT


def test_split_ops_refuse_bad_operands_by_name():
    with fg.program_guard(fg.Program()):
        block = fg.default_main_program().global_block()
        x, y = fg.static.data("x", [None, 3], "float32"), fg.static.data("y", [None, 4], "float32")
        z, v = fg.static.data("z", [5, 4], "float32"), fg.static.data("v", [None, 4], "float64")
        g, b = block.create_var("g"), block.create_var("b")
        with pytest.raises(ValueError, match="c_split_matmul_grad: key must name the op's shared buffers"):
            block.append_op("c_split_matmul_grad", {"X": [x], "Y": [y]}, {"Out": [g]})
        with pytest.raises(TypeError, match="c_split_matmul_grad: X and Y must be floating tensors of one dtype"):
            block.append_op("c_split_matmul_grad", {"X": [x], "Y": [v]}, {"Out": [g]}, {"key": "k"})
        with pytest.raises(ValueError, match=r"c_split_matmul_grad: .*must be 2-D, with one number of rows"):
            block.append_op("c_split_matmul_grad", {"X": [fg.static.data("w", [2, 3], "float32")], "Y": [z]},
                            {"Out": [g]}, {"key": "k"})
        with pytest.raises(ValueError, match=r"c_split_matmul_grad: biases must index the Y \(0 to 0\), got \[1\]"):
            block.append_op("c_split_matmul_grad", {"X": [x], "Y": [y]}, {"Out": [g, b]}, {"key": "k", "biases": [1]})
        with pytest.raises(ValueError, match="c_split_matmul_grad: 1 outputs Out for 1 weight gradients and 1 bias"):
            block.append_op("c_split_matmul_grad", {"X": [x], "Y": [y]}, {"Out": [g]}, {"key": "k", "biases": [0]})
        block.append_op("c_split_matmul_grad", {"X": [x], "Y": [y]}, {"Out": [g, b]}, {"key": "k", "biases": [0]})
        assert g.shape == (3, 4) and b.shape == (4,)
        lr = fg.static.data("lr", [1], "float32")
        p = fg.static.data("p", [4, 3], "float32")
        with pytest.raises(ValueError, match=r"c_split_sgd: Param must match the gradients one to one .*"
                                             r"expected \[\[3, 4\]\]"):
            block.append_op("c_split_sgd", {"X": [x], "Y": [y], "Param": [p], "LearningRate": lr},
                            {"ParamOut": [p]}, {"key": "k", "copy": "c"})
        with pytest.raises(ValueError, match="c_split_sgd: copy must name the node copy"):
            block.append_op("c_split_sgd", {"X": [x], "Y": [y], "Param": [g], "LearningRate": lr},
                            {"ParamOut": [g]}, {"key": "k"})
    with pytest.raises(fg.framework.errors.FluidgradError,
                       match="c_split_matmul_grad: built for nranks=2, but this job has 1 rank"):
        fg.dispatch.apply_op("c_split_matmul_grad", {"X": [fg.to_tensor(np.ones((2, 3), "float32"))],
                                                     "Y": [fg.to_tensor(np.ones((2, 4), "float32"))]},
                             {"key": "k", "nranks": 2})
