"""fluidgrad.linalg's cholesky_solve, triangular_solve (Paddle), solve_triangular (torch) and
matrix_exp against torch (values and gradients, eager and static, batches that broadcast), the
NumPy paths used without SciPy, and the errors for factors and right-hand sides that do not fit.
(The ops themselves: tests/op_cases/matrix_functions.py.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from both_modes import compare_with_torch
from fluidgrad.ops import matrix_functions
from fluidgrad.testing import check_program_grad

R = np.random.default_rng(12)


def _spd(*shape):
    a = R.uniform(-1, 1, shape)
    return a @ np.swapaxes(a, -1, -2) + 2.0 * np.eye(shape[-1])


def _factor(*shape):
    return R.uniform(-1, 1, shape) + 3.0 * np.eye(shape[-1])


CASES = {
    "cholesky_solve lower": (lambda b, a: fg.linalg.cholesky_solve(b, fg.linalg.cholesky(a)),
                             lambda b, a: torch.cholesky_solve(b, torch.linalg.cholesky(a)),
                             lambda: {"b": R.normal(size=(3, 2)), "a": _spd(3, 3)}),
    "cholesky_solve upper": (lambda b, a: fg.linalg.cholesky_solve(b, fg.linalg.cholesky(a, upper=True), upper=True),
                             lambda b, a: torch.cholesky_solve(b, torch.linalg.cholesky(a, upper=True), upper=True),
                             lambda: {"b": R.normal(size=(2, 4, 1)), "a": _spd(2, 4, 4)}),
    "cholesky_solve factor": (lambda b, l: fg.linalg.cholesky_solve(b, l),   # only the lower triangle is read
                              lambda b, l: torch.cholesky_solve(b, torch.tril(l)),
                              lambda: {"b": R.normal(size=(3, 2)), "l": _factor(3, 3)}),
    "solve_triangular left=False": (
        lambda a, b: fg.linalg.solve_triangular(a, b, upper=False, left=False),
        lambda a, b: torch.linalg.solve_triangular(a, b, upper=False, left=False),
        lambda: {"a": np.tril(_factor(3, 3)), "b": R.normal(size=(2, 3))}),
    "solve_triangular broadcast batch": (
        lambda a, b: fg.linalg.solve_triangular(a, b, upper=True, unitriangular=True),
        lambda a, b: torch.linalg.solve_triangular(torch.triu(a), b, upper=True, unitriangular=True),
        lambda: {"a": _factor(3, 3), "b": R.normal(size=(2, 3, 2))}),
    "triangular_solve transpose": (
        lambda a, b: fg.linalg.triangular_solve(a, b, upper=False, transpose=True),
        lambda a, b: torch.linalg.solve_triangular(torch.tril(a).mT, b, upper=True),
        lambda: {"a": _factor(2, 3, 3), "b": R.normal(size=(1, 3, 2))}),
    "matrix_exp": (lambda a: fg.linalg.matrix_exp(a), lambda a: torch.linalg.matrix_exp(a),
                   lambda: {"a": 2.0 * R.normal(size=(2, 3, 3))}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_torch_eager_and_static(name):
    ours, theirs, inputs = CASES[name]
    values = inputs()
    compare_with_torch(ours, theirs, values, wrt=list(values), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_against_central_differences(name):
    ours, _, inputs = CASES[name]
    values = inputs()
    check_program_grad(lambda v: ours(**v), values, wrt=list(values), rtol=1e-6, atol=1e-8)


def test_the_numpy_paths_match_scipys(monkeypatch):
    a, b = _factor(2, 4, 4), R.normal(size=(2, 4, 3))
    big = 3.0 * R.normal(size=(2, 5, 5))
    with_scipy = [matrix_functions._triangular_solve_kernel(a, b, upper, transpose, unit)
                  for upper in (True, False) for transpose in (True, False) for unit in (True, False)]
    exp_with_scipy = matrix_functions._matrix_exp_kernel(big)
    monkeypatch.setattr(matrix_functions, "_scipy_linalg", lambda: None)
    without = [matrix_functions._triangular_solve_kernel(a, b, upper, transpose, unit)
               for upper in (True, False) for transpose in (True, False) for unit in (True, False)]
    np.testing.assert_allclose(without, with_scipy, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(matrix_functions._matrix_exp_kernel(big), exp_with_scipy, rtol=1e-12)
    np.testing.assert_allclose(matrix_functions._matrix_exp_kernel(big),
                               torch.linalg.matrix_exp(torch.tensor(big)).numpy(), rtol=1e-12)
    small = matrix_functions._matrix_exp_kernel(np.zeros((2, 2), "float32"))
    assert small.dtype == np.float32 and (small == np.eye(2)).all()


def test_factors_and_right_hand_sides_that_do_not_fit_are_errors(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    a = fg.to_tensor(_factor(3, 3))
    with pytest.raises(ValueError, match=r"triangular_solve.*\[3, 3\].*\[4, 2\]"):
        fg.linalg.triangular_solve(a, fg.to_tensor(R.normal(size=(4, 2))))
    with pytest.raises(ValueError, match="triangular_solve.*square"):
        fg.linalg.solve_triangular(fg.to_tensor(R.normal(size=(3, 2))), fg.to_tensor(R.normal(size=(3, 2))),
                                   upper=True)
    with pytest.raises(TypeError, match="upper"):
        fg.linalg.solve_triangular(a, a)           # torch's upper is a required keyword
    with pytest.raises(ValueError, match="matrix_exp.*square"):
        fg.linalg.matrix_exp(fg.to_tensor(R.normal(size=(2, 3))))
