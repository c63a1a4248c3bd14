"""Eager DataParallel's fused default update (distributed/eager_fused.py: each bucket's sum over
ranks and the optimizer's update in one pass at step()), through the real launcher on 2, 3 and 4
ranks; and its deferred gradients in a world of one's terms."""
from __future__ import annotations

import json

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.distributed.eager_fused import DeferredGrad

TOLERANCE = 2e-5  # float32 rounding after 20 steps
STATE_TOLERANCE = 1e-4  # Adam's second moments (see test_distributed_eager_sharding.py)
FUSED = ["sgd", "sgd-no_sync", "momentum", "momentum-no_sync", "adam", "adam-no_sync", "sgd-one-bucket",
         "adam-per-parameter", "momentum-nesterov-l2-schedule", "adamw-distributed", "adamw-groups", "sgd-distributed-minimize", "sgd-l2-mpi", "adam-mpi",
         "momentum-numpy", "adam-resume", "momentum-zero_grad",
         "sgd-discard", "adam-discard-mpi", "sgd-streamed", "adam-no_sync-streamed", "adam-ordinary"]
# the optimizer's own step: gradients read before it (completed then), clipping, fusing off
UNFUSED = ["momentum-read", "adam-norm", "sgd-unfused", "momentum-read-streamed", "sgd-unfused-streamed"]
STATE_ENTRIES = {"sgd": 0, "momentum": 6, "adam": 24, "adamw": 24}


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_fused_eager_training_equals_single_process_on_the_whole_batch(tmp_path, nproc):
    """SGD, Momentum (Nesterov, L2, a schedule), Adam, AdamW and SGD (through DistributedOptimizer, step() and
    minimize(loss));
    with and without no_sync; several buckets, one, one per parameter; shared memory (two ranks:
    each adds the rows itself; more: the shared sum) and MPI; compiled and NumPy; a checkpoint
    loaded back mid-run; zero-filled gradients kept between steps (folded into the next
    buckets); a backward whose reduction nobody reads or applies (completed by the next one): after 20 steps the loss, every parameter and the optimizer state match,
    the ranks hold the same values, every step's `.grad` was deferred after backward and every
    bucket of every step was updated by the fused step, and `.grad` read after the step is the
    averaged gradient; two ranks' rows streamed or written with ordinary stores alike. Reading the gradients before the step, clipping or the switch send every bucket through the optimizer's own step, with the same results."""
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
    from test_distributed import launch
    out = tmp_path / "result.json"
    result = launch(nproc, "eager_fused.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(out.read_text())
    assert found["world"] == nproc and found["shared"]
    cases = found["cases"]
    assert sorted(cases) == sorted(FUSED + UNFUSED)
    problems = []
    for name, case in cases.items():
        for what, bound in (("loss", TOLERANCE), ("params", TOLERANCE), ("grads", TOLERANCE),
                            ("state", STATE_TOLERANCE)):
            if not case[what] < bound:
                problems.append(f"{name}: {what} differs by {case[what]:.2e} (relative)")
        if case["spread"] != 0.0 or case["n_state"] != [STATE_ENTRIES[name.split("-")[0]]] * 2:
            problems.append(f"{name}: spread {case['spread']}, state entries {case['n_state']}")
        fused = name in FUSED
        expected = (20 * case["buckets"] if fused else 0, 20 if "unfused" not in name else 0)
        if (case["fused_buckets"], case["deferred_steps"]) != expected:
            problems.append(f"{name}: {case['fused_buckets']} buckets fused, {case['deferred_steps']} steps "
                            f"deferred; expected {expected}")
        if name == "adam-per-parameter" and case["buckets"] != 6 or name == "sgd-one-bucket" and case["buckets"] != 1:
            problems.append(f"{name}: {case['buckets']} buckets")
    assert not problems, "\n".join(problems)


def test_deferred_grad_is_a_tensor_computed_when_read():
    """What the optimizer and user code see of a deferred gradient: its shape and dtype without
    the sum, its value (computed once) through data, numpy() and arithmetic."""
    class Source:
        calls = 0

        def materialize(self, index):
            Source.calls += 1
            return np.full((2, 3), float(index), "float32")

    grad = DeferredGrad(Source(), 4, (2, 3), np.dtype("float32"))
    assert grad.shape == (2, 3) and grad.dtype == "float32" and grad.ndim == 2 and Source.calls == 0
    assert grad.pending and isinstance(grad, fg.Tensor)
    np.testing.assert_array_equal((grad * 2).numpy(), np.full((2, 3), 8.0))
    np.testing.assert_array_equal(grad.numpy(), np.full((2, 3), 4.0))
    assert Source.calls == 1 and not grad.pending
