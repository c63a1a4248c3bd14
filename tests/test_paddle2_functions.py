"""Paddle 2 functions built on registered ops: diag, kthvalue, tensordot (values and gradients
against PyTorch in eager and static mode), eye, atan2, isin, erfinv as users call them
(dtypes, broadcasting, a run-time batch axis) and the refusals of bad arguments."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.ops.elementwise import _erfinv_newton

from both_modes import compare_with_torch

RNG = np.random.default_rng(5)
A = RNG.uniform(-2, 2, (3, 4))
V = RNG.uniform(-2, 2, (4,))
C = RNG.uniform(-2, 2, (2, 3, 4))


def _torch_diag_padded(v, offset, padding):
    out = torch.diag(v, offset)
    return out + padding * (1 - torch.diag(torch.ones_like(v), offset))


CASES = {
    "diag of a vector": (lambda x: fg.diag(x), lambda x: torch.diag(x), V),
    "diag of a vector above": (lambda x: fg.diag(x, offset=3), lambda x: torch.diag(x, 3), V),
    "diag of a vector below, padded": (lambda x: fg.diag(x, offset=-2, padding_value=0.5),
                                       lambda x: _torch_diag_padded(x, -2, 0.5), V),
    "diag of a matrix": (lambda x: fg.diag(x), lambda x: torch.diag(x), A),
    "diag of a matrix above": (lambda x: fg.diag(x, 2), lambda x: torch.diag(x, 2), A),
    "diag of a matrix below": (lambda x: fg.diag(x, -1), lambda x: torch.diag(x, -1), A),
    "kthvalue last axis": (lambda x: fg.kthvalue(x, 2)[0], lambda x: torch.kthvalue(x, 2)[0], A),
    "kthvalue axis 0 keepdim": (lambda x: fg.kthvalue(x, 3, axis=0, keepdim=True)[0],
                                lambda x: torch.kthvalue(x, 3, 0, keepdim=True)[0], A),
    "kthvalue of a 3-D tensor": (lambda x: fg.kthvalue(x, 1, axis=1)[0], lambda x: torch.kthvalue(x, 1, 1)[0], C),
    "tensordot default axes": (lambda x: fg.tensordot(x, fg.transpose(x, [1, 2, 0]), axes=2),
                               lambda x: torch.tensordot(x, x.permute(1, 2, 0), dims=2), C),
    "tensordot axes=1": (lambda x: fg.tensordot(x, fg.transpose(x, [1, 0]), 1),
                         lambda x: torch.tensordot(x, x.T, 1), A),
    "tensordot paired lists": (lambda x: fg.tensordot(x, x[0], [[2, 1], [1, 0]]),
                               lambda x: torch.tensordot(x, x[0], ([2, 1], [1, 0])), C),
    "tensordot one list for both": (lambda x: fg.tensordot(x, x, [[0, 2]]),
                                    lambda x: torch.tensordot(x, x, ([0, 2], [0, 2])), C),
    "tensordot axes=0 (outer)": (lambda x: fg.tensordot(x[0], x[1], 0),
                                 lambda x: torch.tensordot(x[0], x[1], 0), A),
    "atan2 with a broadcast second argument": (lambda x: fg.atan2(x, x[1]), lambda x: torch.atan2(x, x[1]), A),
    "erfinv": (lambda x: fg.erfinv(x / 2.5), lambda x: torch.erfinv(x / 2.5), A),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch_in_both_modes(name):
    ours, theirs, x = CASES[name]
    compare_with_torch(ours, theirs, {"x": x}, wrt=["x"])


def test_kthvalue_indices_and_ties_match_torch():
    values, indices = fg.kthvalue(fg.to_tensor(A), 2, axis=1)
    expected = torch.kthvalue(torch.tensor(A), 2, 1)
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())
    assert str(indices.dtype) == "int64"
    ties = fg.to_tensor(np.array([[3.0, 1.0, 3.0, 2.0]]), stop_gradient=False)
    value, index = fg.kthvalue(ties, 3)
    assert float(value.numpy()[0]) == 3.0 and int(index.numpy()[0]) in (0, 2)
    fg.sum(value).backward()
    assert ties.grad.numpy().sum() == 1.0 and ties.grad.numpy()[0, int(index.numpy()[0])] == 1.0


def test_eye_in_both_modes_and_dtypes(monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)   # eager outside the suite's program_guard
    np.testing.assert_array_equal(fg.eye(3, 2).numpy(), np.eye(3, 2, dtype="float32"))
    assert str(fg.eye(2, dtype="int64").dtype) == "int64"
    fg.set_default_dtype("float64")
    try:
        assert str(fg.eye(2).dtype) == "float64"
    finally:
        fg.set_default_dtype("float32")
    monkeypatch.undo()
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        identity = fg.eye(4, 3)
        assert isinstance(identity, fg.Variable) and list(identity.shape) == [4, 3]
    np.testing.assert_array_equal(fg.Executor().run(main, fetch_list=[identity])[0], np.eye(4, 3))


def test_tensordot_with_a_run_time_batch_axis():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3, 4], "float64")
        w = fg.static.data("w", [4, 3, 5], "float64")
        out = fg.tensordot(x, w, [[1, 2], [1, 0]])
        assert list(out.shape) == [-1, 5]
    w0 = RNG.uniform(-1, 1, (4, 3, 5))
    got, = fg.Executor().run(main, feed={"x": C, "w": w0}, fetch_list=[out])
    np.testing.assert_allclose(got, np.tensordot(C, w0, ([1, 2], [1, 0])), rtol=1e-12)


def test_atan2_of_integers_and_numbers():
    ys, xs = np.array([1, -1, 0, -3]), np.array([0, -1, -2, 4])
    got = fg.atan2(fg.to_tensor(ys), fg.to_tensor(xs))
    expected = torch.atan2(torch.tensor(ys), torch.tensor(xs))
    assert str(got.dtype) == "float32"
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(fg.atan2(fg.to_tensor(A), 1.0).numpy(), np.arctan2(A, 1.0), rtol=1e-12)


def test_isin_promotes_dtypes_and_takes_lists():
    x = np.array([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(fg.isin(fg.to_tensor(x), [2, 6, 9]).numpy(), np.isin(x, [2, 6, 9]))
    np.testing.assert_array_equal(fg.isin(fg.to_tensor(x), fg.to_tensor(np.array([2.0, 5.5])), invert=True).numpy(),
                                  torch.isin(torch.tensor(x), torch.tensor([2.0, 5.5]), invert=True).numpy())


def test_erfinv_without_scipy_matches_torch_to_double_precision():
    """The NumPy-only kernel (used when SciPy, the `fast` extra, is missing)."""
    x = np.concatenate([np.linspace(-1, 1, 2001), [1 - 2.0 ** -52, -1 + 1e-13, 1e-300, 0.0, 1.5, -2.0, np.nan]])
    expected = torch.erfinv(torch.tensor(x)).numpy()
    np.testing.assert_allclose(_erfinv_newton(x), expected, rtol=4e-15, atol=1e-300)


def test_bad_arguments_are_refused_with_the_function_name():
    a = fg.to_tensor(A)
    with pytest.raises(ValueError, match=r"diag: expects a 1-D or 2-D tensor, got shape \[2, 3, 4\]"):
        fg.diag(fg.to_tensor(C))
    with pytest.raises(ValueError, match=r"kthvalue: k=5 must lie in \[1, 4\]"):
        fg.kthvalue(a, 5)
    with pytest.raises(ValueError, match="kthvalue: axis 2 is out of range"):
        fg.kthvalue(a, 1, axis=2)
    with pytest.raises(ValueError, match=r"tensordot: axes \[1\] of x \(shape \[3, 4\]\) and \[0\] of y"):
        fg.tensordot(a, a, 1)
    with pytest.raises(ValueError, match=r"tensordot: axes=3 must lie in \[0, 2\]"):
        fg.tensordot(a, a, 3)
    with pytest.raises(ValueError, match="eye: num_rows and num_columns must be >= 0"):
        fg.eye(-1)
    with pytest.raises(ValueError, match=r"op atan2.*\[3, 4\].*\[3\]"):
        fg.atan2(a, fg.to_tensor(np.ones(3)))
