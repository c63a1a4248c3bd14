"""Binding ranks to cores (`FLUIDGRAD_BIND=1`, ops/comm.py: bind_to_core): rank r of a node runs on
the r-th core the job may use; off by default and with FLUIDGRAD_BIND=0; never with more ranks
than cores."""
from __future__ import annotations

import json
import os

import pytest

from fluidgrad.ops import comm

from test_distributed import launch

CORES = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


@pytest.fixture
def restore_affinity():
    yield
    os.sched_setaffinity(0, CORES)


@pytest.mark.skipif(not CORES, reason="no os.sched_setaffinity on this platform")
def test_bind_to_core_follows_the_switch_and_the_local_rank(monkeypatch, restore_affinity):
    monkeypatch.setenv("MPI_LOCALRANKID", str(len(CORES) - 1))
    monkeypatch.setenv("MPI_LOCALNRANKS", str(len(CORES)))
    monkeypatch.delenv("FLUIDGRAD_BIND", raising=False)
    assert comm.bind_to_core() is None and sorted(os.sched_getaffinity(0)) == CORES  # off by default
    monkeypatch.setenv("FLUIDGRAD_BIND", "0")
    assert comm.bind_to_core() is None and sorted(os.sched_getaffinity(0)) == CORES
    monkeypatch.setenv("FLUIDGRAD_BIND", "1")
    assert comm.bind_to_core() == CORES[-1] and os.sched_getaffinity(0) == {CORES[-1]}
    os.sched_setaffinity(0, CORES)
    monkeypatch.setenv("MPI_LOCALNRANKS", str(len(CORES) + 1))  # more ranks than cores: left free
    assert comm.bind_to_core() is None and sorted(os.sched_getaffinity(0)) == CORES
    monkeypatch.delenv("MPI_LOCALRANKID")  # not started by MPICH's launcher: nothing known, nothing bound
    assert comm.bind_to_core() is None
    monkeypatch.setenv("FLUIDGRAD_BIND", "yes")
    with pytest.raises(ValueError, match="FLUIDGRAD_BIND must be 0 or 1, got 'yes'"):
        comm.bind_to_core()


@pytest.mark.skipif(len(CORES) < 2, reason="binding two ranks needs two cores")
@pytest.mark.parametrize("bind", ["1", "0"])
def test_launched_ranks_are_bound_when_asked(tmp_path, monkeypatch, bind):
    pytest.importorskip("mpi4py", reason="the `dist` extra (mpi4py + the mpich wheel) is not installed")
    monkeypatch.setenv("FLUIDGRAD_BIND", bind)
    out = tmp_path / "bind.json"
    result = launch(2, "bind.py", out)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = json.loads(out.read_text())
    for rank, report in enumerate(reports):
        if bind == "1":
            assert report["core"] == CORES[rank] and report["cores"] == [CORES[rank]]
        else:
            assert report["core"] is None and report["cores"] == CORES
