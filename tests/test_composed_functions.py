"""The common functions composed of registered ops (fluidgrad/tensor/composed.py) against
PyTorch: values and gradients in eager and static mode, other axes and arguments, and the
refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

from both_modes import compare_with_torch

RNG = np.random.default_rng(21)
A = RNG.uniform(-2, 2, (3, 4))
B = RNG.uniform(-2, 2, (3, 4))
V3 = RNG.uniform(-2, 2, (4, 3))
W3 = RNG.uniform(-2, 2, (4, 3))

DIFFERENTIABLE = {
    "dot of vectors": (lambda x, y: fg.dot(x[0], y[0]), lambda x, y: torch.dot(x[0], y[0]), A, B),
    "dot of rows": (lambda x, y: fg.dot(x, y), lambda x, y: (x * y).sum(-1), A, B),
    "cross axis=1": (lambda x, y: fg.cross(x, y, axis=1), lambda x, y: torch.cross(x, y, dim=1), V3, W3),
    "cross default axis": (lambda x, y: fg.cross(x.T, y.T), lambda x, y: torch.cross(x.T, y.T, dim=0), V3, W3),
    "kron": (lambda x, y: fg.kron(x, y[:2, :3]), lambda x, y: torch.kron(x, y[:2, :3]), A, B),
    "kron of ranks 1 and 2": (lambda x, y: fg.kron(x[0], y[:2]), lambda x, y: torch.kron(x[0], y[:2]), A, B),
    "diff": (lambda x, y: fg.diff(x, axis=1), lambda x, y: torch.diff(x, dim=1), A, B),
    "diff n=2 axis=0 prepend": (lambda x, y: fg.diff(x, n=2, axis=0, prepend=y[:1]),
                                lambda x, y: torch.diff(x, n=2, dim=0, prepend=y[:1]), A, B),
    "lerp": (lambda x, y: fg.lerp(x, y, 0.3), lambda x, y: torch.lerp(x, y, 0.3), A, B),
    "lerp tensor weight": (lambda x, y: fg.lerp(x, y, y * y), lambda x, y: torch.lerp(x, y, y * y), A, B),
    "logcumsumexp": (lambda x, y: fg.logcumsumexp(x * 30, axis=1), lambda x, y: torch.logcumsumexp(x * 30, dim=1), A, B),
    "logcumsumexp flat": (lambda x, y: fg.logcumsumexp(x), lambda x, y: torch.logcumsumexp(x.reshape(-1), 0), A, B),
    "quantile": (lambda x, y: fg.quantile(x, 0.3, axis=1), lambda x, y: torch.quantile(x, 0.3, dim=1), A, B),
    "quantile several": (lambda x, y: fg.quantile(x, [0.0, 0.5, 1.0], axis=0, keepdim=True),
                         lambda x, y: torch.quantile(x, torch.tensor([0.0, 0.5, 1.0], dtype=x.dtype), dim=0,
                                                     keepdim=True), A, B),
    "median odd": (lambda x, y: fg.median(x, axis=0), lambda x, y: torch.median(x, dim=0).values, A, B),
    "median min": (lambda x, y: fg.median(x, axis=1, mode="min"), lambda x, y: torch.median(x, dim=1).values, A, B),
    "median avg": (lambda x, y: fg.median(x, axis=1), lambda x, y: torch.quantile(x, 0.5, dim=1), A, B),
    "moveaxis": (lambda x, y: fg.moveaxis(fg.reshape(x, [3, 2, 2]), [0, 2], [2, 0]) * 1.0,
                 lambda x, y: torch.moveaxis(x.reshape(3, 2, 2), [0, 2], [2, 0]) * 1.0, A, B),
    "rot90 k=1": (lambda x, y: fg.rot90(x), lambda x, y: torch.rot90(x), A, B),
    "rot90 k=3": (lambda x, y: fg.rot90(x, 3, [1, 0]), lambda x, y: torch.rot90(x, 3, [1, 0]), A, B),
    "rot90 k=2": (lambda x, y: fg.rot90(x, -2), lambda x, y: torch.rot90(x, -2), A, B),
    "masked_select": (lambda x, y: fg.sum(fg.masked_select(x, y > 0) ** 2),     # (a static shape: summed)
                      lambda x, y: (torch.masked_select(x, y > 0) ** 2).sum(), A, B),
}


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
def test_values_and_gradients_match_torch_in_both_modes(name):
    ours, theirs, x, y = DIFFERENTIABLE[name]
    uses_y = name.split()[0] in ("dot", "cross", "kron", "lerp") or "prepend" in name
    compare_with_torch(ours, theirs, {"x": x, "y": y}, wrt=["x", "y"] if uses_y else ["x"])


def test_closeness_and_counts_match_torch():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, 2.0])
    y = np.array([1.0 + 1e-9, np.nan, np.inf, np.inf, 1e-9, 2.1])
    tx, ty = torch.tensor(x), torch.tensor(y)
    for equal_nan in (False, True):
        np.testing.assert_array_equal(fg.isclose(fg.to_tensor(x), fg.to_tensor(y), equal_nan=equal_nan).numpy(),
                                      torch.isclose(tx, ty, equal_nan=equal_nan).numpy())
        assert bool(fg.allclose(fg.to_tensor(x), fg.to_tensor(x), equal_nan=equal_nan)) == \
            torch.allclose(tx, tx, equal_nan=equal_nan)
    assert bool(fg.equal_all(fg.to_tensor(A), fg.to_tensor(A))) and not bool(fg.equal_all(fg.to_tensor(A),
                                                                                            fg.to_tensor(A[:2])))
    np.testing.assert_array_equal(fg.count_nonzero(fg.to_tensor(np.sign(A).clip(0)), axis=1).numpy(),
                                  torch.count_nonzero(torch.tensor(np.sign(A).clip(0)), dim=1).numpy())
    assert int(fg.numel(fg.to_tensor(A))) == 12
    nan_inf = np.array([np.nan, np.inf, -np.inf, 1.5], "float32")
    np.testing.assert_array_equal(fg.nan_to_num(fg.to_tensor(nan_inf)).numpy(),
                                  torch.nan_to_num(torch.tensor(nan_inf)).numpy())
    np.testing.assert_array_equal(fg.nan_to_num(fg.to_tensor(nan_inf), 1.0, 2.0, -3.0).numpy(), [1.0, 2.0, -3.0, 1.5])


def test_bad_arguments_are_refused_clearly():
    a = fg.to_tensor(A)
    with pytest.raises(ValueError, match="cross: expects inputs of one shape with an axis of size 3"):
        fg.cross(a[:2], a[:2])
    with pytest.raises(ValueError, match=r"dot: expects two vectors .* got \[3, 4\] and \[4\]"):
        fg.dot(a, a[0])
    with pytest.raises(ValueError, match=r"quantile: q must be in \[0, 1\]"):
        fg.quantile(a, 1.5)
    with pytest.raises(ValueError, match="moveaxis: source"):
        fg.moveaxis(a, [0, 0], [0, 1])
    with pytest.raises(ValueError, match="median: mode must be"):
        fg.median(a, mode="max")
    with fg.program_guard(fg.Program(), fg.Program()):
        with pytest.raises(ValueError, match=r"numel: x has unknown dimensions \[-1, 4\]"):
            fg.numel(fg.static.data("x", [None, 4], "float64"))
