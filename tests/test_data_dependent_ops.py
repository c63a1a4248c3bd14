"""Ops whose output size is known only at run time (declared -1), so the op-case table, which
checks declared shapes, cannot take them: unique and non_max_suppression. Each is checked in
eager and static mode against an independent reference (PyTorch, or ONNX's own reference
implementation)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.dispatch import apply_op
from test_indexing import assert_matches, both_modes


# ------------------------------------------------------------------ unique
def _torch_unique(x, **kw):
    values, inverse, counts = torch.unique(torch.tensor(x), return_inverse=True, return_counts=True, **kw)
    return values, inverse.reshape(-1), counts


@pytest.mark.parametrize("x", [np.array([[2.0, 1.0, 2.0], [0.5, 1.0, 2.0]]),
                               np.random.default_rng(0).integers(0, 5, (4, 6)),
                               np.array([7]), np.zeros((0,))], ids=["float", "int", "one", "empty"])
def test_unique_equals_pytorch(x):
    got = both_modes(lambda t: fg.unique(t, return_inverse=True, return_counts=True), x)
    assert_matches(got, _torch_unique(x))
    first = both_modes(lambda t: fg.unique(t, return_index=True)[1], x)[0]
    np.testing.assert_array_equal(x.reshape(-1)[first], got[0])  # the first occurrence of each value
    assert all(list(x.reshape(-1)).index(v) == i for v, i in zip(got[0].tolist(), first.tolist()))


def test_unique_along_an_axis_equals_pytorch():
    x = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [1, 0, 1]])
    got = both_modes(lambda t: fg.unique(t, return_inverse=True, return_counts=True, axis=0), x)
    assert_matches(got, _torch_unique(x, dim=0))
    got = both_modes(lambda t: fg.unique(t, return_inverse=True, return_counts=True, axis=1), x.T.copy())
    assert_matches(got, _torch_unique(x.T.copy(), dim=1))


def test_unique_in_order_of_first_occurrence():
    x = np.array([3.0, 1.0, 3.0, 0.0, 1.0, 5.0])
    values, first, inverse, counts = both_modes(
        lambda t: list(apply_op("unique", {"X": t}, {"axis": [], "sorted": False, "dtype": "int32"})), x)
    np.testing.assert_array_equal(values, [3.0, 1.0, 0.0, 5.0])
    np.testing.assert_array_equal(first, [0, 1, 3, 5])
    np.testing.assert_array_equal(values[inverse], x)
    np.testing.assert_array_equal(counts, [2, 2, 1, 1])
    assert first.dtype == np.int32


def test_unique_declares_run_time_sizes_and_refuses_bad_attributes():
    with fg.program_guard(fg.Program(), fg.Program()):
        x = fg.static.data("x", [4, 3], "float32")
        out, index, inverse, counts = fg.unique(x, return_index=True, return_inverse=True, return_counts=True)
        assert list(out.shape) == [-1] and list(inverse.shape) == [12] and list(counts.shape) == [-1]
        rows = fg.unique(x, axis=0)
        assert list(rows.shape) == [-1, 3]
        with pytest.raises(fg.framework.errors.DTypeError, match="unique"):
            fg.unique(x, dtype="float32")
        with pytest.raises(fg.framework.errors.ShapeError, match="unique"):
            fg.unique(x, axis=2)
