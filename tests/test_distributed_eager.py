"""Eager DataParallel's gradients, through the real launcher: each step's `.grad` is the
average of every rank's gradient, is written into the arrays of the step before only when
nobody holds them, and never changes under a caller who kept it (a Tensor, its array or a
view); a parameter one rank leaves unused gets the others' gradient averaged with zeros."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.eager.apply import record_custom
from fluidgrad.eager.node import CustomOp


def test_a_node_offering_a_buffer_gets_the_matmul_gradient_written_into_it():
    """What DataParallel's gather node relies on, in one process: the weight gradient lands in
    the offered buffer (the same values as without the offer); a second reader of the same
    output is not offered it again, and its gradient is added as usual."""
    rng = np.random.default_rng(0)
    x, w_value = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal((3, 2)).astype("float32")
    bucket = np.full(10, np.nan, "float32")
    buffer, offers, seen = bucket[2:8].reshape(3, 2), [], []  # a view: the engine copies it into .grad

    def offer(node, index):
        offers.append(index)
        return buffer if len(offers) == 1 else None

    def grad(g):
        seen.append(g.output_grad("Out")[0])
        g.set_input_grad("X", [seen[-1]])
    routing = CustomOp("test_routing", grad, offer)
    for twice in (False, True):
        offers.clear()
        w = fg.to_tensor(w_value, stop_gradient=False)
        (routed,) = record_custom(routing, [w], [w._array], {})
        out = fg.matmul(fg.to_tensor(x), routed)
        if twice:
            out = out + fg.matmul(fg.to_tensor(2 * x), routed)
        out.sum().backward()
        expected = x.T @ np.ones((4, 2), "float32") * (3 if twice else 1)
        np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-6)
        assert (seen[-1] is buffer) == (not twice) and offers == ([0, 0] if twice else [0])
        assert w.grad.numpy() is not buffer  # a .grad is an array of its own, never the bucket


pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")

ROOT = Path(__file__).resolve().parent.parent

_GRADS = """
    import json, sys, weakref
    import numpy as np
    import fluidgrad as fg
    from fluidgrad.ops.comm import get_world

    class Net(fg.nn.Layer):
        def __init__(self):
            super().__init__()
            self.first, self.last, self.spare = fg.nn.Linear(5, 4), fg.nn.Linear(4, 2), fg.nn.Linear(4, 2)

        def forward(self, x, use_spare, twice):
            h = fg.tanh(self.first(x))
            out = self.last(h)
            if twice:  # `last` read twice: its weight's gradient is a sum, not one op's output
                out = out + self.last(h * 0.5)
            return out + self.spare(h) if use_spare else out

    world = get_world()
    fg.seed(11 + world.rank)  # different initial values: the wrapper broadcasts rank 0's
    model = Net()
    dp = fg.DataParallel(model)
    reference = Net()
    reference.set_state_dict(model.state_dict())
    params, ref_params = model.parameters(), reference.parameters()
    rng = np.random.default_rng(5)
    problems, held, reused, before = [], [], 0, []
    for step in range(6):
        xs = rng.standard_normal((world.size, 3, 5)).astype("float32")
        spare = [r == 0 or step % 2 == 0 for r in range(world.size)]  # rank 0 alone uses `spare` on odd steps
        local = []
        for r in range(world.size):
            (reference(fg.to_tensor(xs[r]), spare[r], step >= 4) ** 2).sum().backward()
            local.append([np.zeros(p.shape, "float32") if p.grad is None else p.grad.numpy().copy() for p in ref_params])
            for p in ref_params:
                p.clear_grad()
        (dp(fg.to_tensor(xs[world.rank]), spare[world.rank], step >= 4) ** 2).sum().backward()
        for i, p in enumerate(params):
            expected = np.mean([g[i] for g in local], axis=0)
            error = float(np.abs(p.grad.numpy() - expected).max())
            if error > 1e-5:
                problems.append(f"step {step}: parameter {i} is off the average by {error:.2e}")
        reused += sum(b() is p.grad.numpy() for b, p in zip(before, params))
        if step in (1, 3):  # keep this step's gradients: as Tensors, and (step 3) as an array and a view
            kept = [p.grad for p in params] if step == 1 else [p.grad.numpy() for p in params[:3]] + [
                p.grad.numpy()[:1] for p in params[3:]]
            held.append((step, kept, [np.array(k.numpy() if hasattr(k, "numpy") else k) for k in kept]))
        before = [weakref.ref(p.grad.numpy()) for p in params]
        # an SGD step writes the parameters (not the gradients) and clear_grad drops the `.grad`s
        for p, q in zip(params, ref_params):
            p.set_value(p.numpy() - 0.1 * p.grad.numpy())
            q.set_value(p.numpy().copy())
            p.clear_grad()
    for step, kept, values in held:
        for k, value in zip(kept, values):
            if not np.array_equal(k.numpy() if hasattr(k, "numpy") else k, value):
                problems.append(f"a gradient kept at step {step} changed in a later step")
    if world.rank == 0:
        json.dump({"problems": problems, "reused": reused}, open(sys.argv[1], "w"))
"""


@pytest.mark.parametrize(("nproc", "path"), [(2, "auto"), (2, "mpi"), (3, "auto")])
def test_data_parallel_gradients_are_averages_that_never_change_under_their_holder(tmp_path, nproc, path):
    """Two ranks through shared memory (rows summed straight into the kept arrays) and through
    MPI's Iallreduce, three through shared memory (a shared result copied into them)."""
    script, out = tmp_path / "script.py", tmp_path / "out.json"
    script.write_text(textwrap.dedent(_GRADS))
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "FLUIDGRAD_ALLREDUCE": path}
    result = subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", str(nproc), str(script), str(out)],
                            env=env, capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(out.read_text())
    assert found["problems"] == []
    # 6 parameters x 5 steps after the first, less those kept at steps 1 and 3 (6 each, the
    # step after): the arrays nobody held were written again, not allocated anew
    assert found["reused"] == 6 * 5 - 2 * 6
