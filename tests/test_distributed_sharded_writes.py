"""A user's writes into the parameters and optimizer state of a sharded optimizer (ZeRO stage 1),
through the real launcher on 2 ranks: the parameters are read-only views of the node's one copy
(fetching, saving and state dicts see complete values without a copy), and every write fluidgrad
offers (Tensor.set_value, x[...] = v under no_grad, fluidgrad.assign into a parameter,
Layer/Optimizer.set_state_dict, static `scope[name] = array`, an assign op in a program, static
Optimizer.set_state_dict) takes effect on every rank alike: training goes on exactly as
single-process training on the concatenated batch with the same writes. A collective asked to
write into such a view in place refuses before any rank communicates, saying why and what to do.
The script is tests/dist_scripts/sharded_writes.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve().parent / "dist_scripts" / "sharded_writes.py"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("sharded_writes") / "results.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", "2", str(SCRIPT), str(out)],
                         env=env, capture_output=True, timeout=300, cwd=ROOT, check=False)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-4000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("case", ["eager:set_value", "eager:setitem_no_grad", "eager:assign",
                                  "eager:layer_set_state_dict", "eager:optimizer_set_state_dict",
                                  "static:scope_assign", "static:assign_op", "static:optimizer_set_state_dict"])
def test_writes_into_sharded_parameters_train_as_one_process(results, case):
    found = results[case]
    assert found["read_only"], "the parameter written is a view of the node copy"
    assert found["diff"] < 1e-5, found
    assert found["spread"] == 0.0, found


def test_a_collective_into_a_read_only_view_says_why_and_what_to_do(results):
    message = results["read_only_collective"]
    assert message.startswith("broadcast: the array given (shape [5, 3], float32) is read-only"), message
    assert "sharded optimizer" in message and "pass the Tensor instead" in message
