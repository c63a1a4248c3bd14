"""Op cases of fluidgrad/ops/sampling.py: multinomial and bernoulli, checked by their support,
shape and dtype (their distributions are tested by statistics in tests/test_sampling.py)."""
from __future__ import annotations

import numpy as np

from fluidgrad.testing import OpCase

PROBS = np.array([[0.0, 0.2, 0.5, 0.3], [0.6, 0.0, 0.0, 0.4], [0.25, 0.25, 0.25, 0.25]])


def _multinomial_check(outs, case):
    (out,) = outs
    probs, attrs = case.inputs["X"], case.attrs
    assert out.dtype == np.int64 and out.shape == probs.shape[:-1] + (attrs["num_samples"],)
    rows = probs.reshape(-1, probs.shape[-1])
    for row, drawn in zip(rows, out.reshape(len(rows), -1)):
        assert np.all(row[drawn] > 0), "a category of probability 0 was drawn"
        if not attrs.get("replacement", False):
            assert len(set(drawn.tolist())) == drawn.size, "a category repeats without replacement"


def _bernoulli_check(outs, case):
    (out,) = outs
    probs = case.inputs["X"]
    assert out.dtype == probs.dtype and out.shape == probs.shape
    assert set(np.unique(out).tolist()) <= {0.0, 1.0}
    assert np.all(out[probs == 0] == 0) and np.all(out[probs == 1] == 1)


CASES = [
    OpCase("multinomial", {"X": PROBS}, {"num_samples": 40, "replacement": True, "seed": 7},
           check_fn=_multinomial_check, grad=False),
    OpCase("multinomial", {"X": PROBS}, {"num_samples": 2, "seed": 7}, id="multinomial-without-replacement",
           check_fn=_multinomial_check, grad=False),
    OpCase("multinomial", {"X": np.array([3.0, 0.0, 1.0])}, {"num_samples": 5, "replacement": True, "seed": 7},
           id="multinomial-1d-unnormalised", check_fn=_multinomial_check, grad=False),
    OpCase("bernoulli", {"X": np.tile(np.array([0.0, 0.3, 0.5, 1.0]), (6, 1))}, {"seed": 7},
           check_fn=_bernoulli_check, grad=False),
    # a zero gradient (PyTorch's): the draws, their seed fixed, do not move as the probabilities do
    OpCase("bernoulli", {"X": np.tile(np.array([0.2, 0.45, 0.7]), (4, 1))}, {"seed": 11}, id="bernoulli-zero-gradient",
           check_fn=_bernoulli_check),
]
