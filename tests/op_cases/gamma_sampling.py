"""Op cases of fluidgrad/ops/gamma_sampling.py: standard_gamma (its seed fixed, a draw is a smooth
function of the concentration, so central differences check the implicit gradient),
standard_gamma_grad against torch's regularised incomplete gamma differentiated numerically,
gammainc against torch.special.gammainc (and its gradients in both arguments numerically), and
poisson's counts (their statistics are in tests/test_distribution_families.py)."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

CONCENTRATION = np.array([[0.3, 1.0, 2.5], [7.0, 0.8, 30.0]])


def _positive_draws(outs, case):
    (out,) = outs
    x = case.inputs["X"]
    assert out.dtype == x.dtype and out.shape == x.shape and np.all(out > 0) and np.all(np.isfinite(out))


def _counts(outs, case):
    (out,) = outs
    x = case.inputs["X"]
    assert out.dtype == x.dtype and out.shape == x.shape
    assert np.all(out >= 0) and np.all(out == np.round(out)) and np.all(out[x == 0] == 0)


def _implicit_reference(outs, case):
    """-(dP/dalpha) / p(y): P's slope by central differences of torch.special.gammainc (so to 1e-7,
    not the runner's 1e-12)."""
    a, y = T.tensor(case.inputs["X"]), T.tensor(case.inputs["Y"])
    step = 1e-5 * a
    slope = (T.special.gammainc(a + step, y) - T.special.gammainc(a - step, y)) / (2 * step)
    density = T.distributions.Gamma(a, T.ones_like(a)).log_prob(y).exp()
    (out,) = outs
    assert out.dtype == case.inputs["X"].dtype
    np.testing.assert_allclose(out, (-slope / density).numpy(), rtol=1e-7)


def _incomplete_gamma(outs, case):
    """torch.special.gammainc, itself good to ~2e-9 (so not the runner's 1e-12)."""
    (out,) = outs
    expected = T.special.gammainc(T.tensor(case.inputs["X"]), T.tensor(case.inputs["Y"])).numpy()
    assert out.dtype == case.inputs["X"].dtype
    np.testing.assert_allclose(out, expected, rtol=1e-8, atol=1e-300)


CASES = [
    OpCase("standard_gamma", {"X": CONCENTRATION}, {"seed": 7}, check_fn=_positive_draws, second_order=False),
    OpCase("standard_gamma", {"X": np.array([0.05, 0.2, 150.0])}, {"seed": 3}, id="standard_gamma-small-and-large",
           check_fn=_positive_draws, second_order=False),
    OpCase("standard_gamma_grad", {"X": np.array([[0.3, 1.0, 2.5], [7.0, 0.8, 30.0]]),
                                   "Y": np.array([[0.01, 0.7, 6.0], [5.0, 2.9, 31.5]])},
           check_fn=_implicit_reference, grad=False),
    # its gradient in X reads standard_gamma_grad, which has none: no grad of grad
    OpCase("gammainc", {"X": np.array([[0.3, 1.0, 2.5], [7.0, 0.8, 30.0]]),
                        "Y": np.array([[0.05, 0.7, 6.0], [5.0, 2.9, 31.5]])},
           check_fn=_incomplete_gamma, second_order=False),
    OpCase("poisson", {"X": np.array([[0.0, 0.5, 3.0], [12.0, 1.0, 40.0]])}, {"seed": 5}, check_fn=_counts, grad=False),
    # a zero gradient (torch's): the counts, their seed fixed, do not move as the rates do
    OpCase("poisson", {"X": np.array([[0.2, 0.5, 3.0], [12.0, 1.0, 40.0]])}, {"seed": 5}, id="poisson-zero-gradient",
           check_fn=_counts),
]
