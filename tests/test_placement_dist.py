"""Placement under the real launcher: gradients written straight into the bucket's row give the
same bits as packing them, through the two-rank shared window (pair of row sets), the 4-rank
one (a shared result) and MPI's Iallreduce; with one bucket or several, SGD and Adam with
global-norm clipping, gradients fetched or not. tests/test_placement.py has the plan-level cases."""
from __future__ import annotations

import json

import pytest

from test_distributed import launch

pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")


@pytest.mark.parametrize("nproc", [2, 4])
def test_placed_gradients_train_bit_for_bit_as_packed_ones(tmp_path, nproc):
    out = tmp_path / "placement.json"
    result = launch(nproc, "placement.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(out.read_text())
    assert found["size"] == nproc and len(found["ranks"]) == nproc
    for rank, cases in enumerate(found["ranks"]):
        assert sorted(cases) == ["adam-clip-shared", "sgd-mpi", "sgd-shared", "sgd-shared-buckets"]
        for name, case in cases.items():
            assert case["problems"] == [], (rank, name, case["problems"])
            n, placed = case["n_grads"], case["placed"]
            if name.endswith("buckets"):  # several buckets, each placed from its second step on
                b = case["n_buckets"]
                assert b >= 2 and len(placed) == b * 5 and sum(placed[b:]) == n * 4, (rank, name, placed)
            else:  # one bucket: the first step creates it, every later step finds all in place
                assert placed == [0] + [n] * 4, (rank, name, placed)
