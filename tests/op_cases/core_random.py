"""Cases of the core random ops: one OpCase per line, checked by `fluidgrad.testing.check_op`."""
from __future__ import annotations

import numpy as np  # noqa: F401
import torch
import torch.nn.functional as TF  # noqa: F401

from fluidgrad.testing import OpCase as Case

from ._torch_refs import (_ce_torch, _gather_torch, _random_check, _slice_grad_torch, _swce_torch,  # noqa: F401
                          _unreduce_torch, _zero_grad_of)
from .common import distinct, ints, nonzero, pos, probs, rand  # noqa: F401

T = torch
c: list[Case] = []


def _permutation_check(outs, case):
    (out,) = outs
    assert out.dtype == np.int64 and sorted(out.tolist()) == list(range(case.attrs["n"]))
    assert not np.array_equal(out, np.arange(case.attrs["n"])), "a permutation of 50 should move something"


# ---- random.py: no gradient, checked by range and shape
c += [Case("uniform_random", {}, {"shape": [50, 4], "min": -2.0, "max": 3.0, "dtype": "float64", "seed": 7},
           check_fn=_random_check(lambda a: a["min"], lambda a: a["max"])),
      Case("gaussian_random", {}, {"shape": [50, 4], "mean": 1.0, "std": 0.5, "dtype": "float64", "seed": 7},
           check_fn=_random_check(lambda a: a["mean"] - 10 * a["std"], lambda a: a["mean"] + 10 * a["std"])),
      Case("truncated_gaussian_random", {}, {"shape": [50, 4], "mean": 1.0, "std": 0.5, "dtype": "float64",
                                             "seed": 7},
           check_fn=_random_check(lambda a: a["mean"] - 2 * a["std"], lambda a: a["mean"] + 2 * a["std"])),
      Case("truncated_gaussian_random", {}, {"shape": [50, 4], "mean": 1.0, "std": 0.5, "a": -0.25, "b": 1.5,
                                             "dtype": "float64", "seed": 7},
           check_fn=_random_check(lambda a: a["mean"] + a["a"] * a["std"], lambda a: a["mean"] + a["b"] * a["std"])),
      Case("randint", {}, {"shape": [500], "low": -3, "high": 5000, "dtype": "int64", "seed": 7},
           check_fn=_random_check(lambda a: a["low"], lambda a: a["high"] - 1)),
      Case("randperm", {}, {"n": 50, "dtype": "int64", "seed": 7}, check_fn=_permutation_check)]

CASES = c
