"""Op cases of fluidgrad/ops/unique.py's set membership: isin (unique itself is tested in
tests/test_data_dependent_ops.py: its output sizes are known only at run time)."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import ints

CASES = [
    OpCase("isin", {"X": ints(6, 3, 4), "TestX": np.array([0, 2, 5])}, torch_fn=lambda X, TestX: T.isin(X, TestX),
           grad=False),
    OpCase("isin", {"X": ints(6, 3, 4), "TestX": ints(6, 2, 2)}, {"invert": True}, id="isin-invert-2d-test",
           torch_fn=lambda X, TestX: T.isin(X, TestX, invert=True), grad=False),
    OpCase("isin", {"X": np.array([0.5, np.nan, -0.0, 2.0]), "TestX": np.array([np.nan, 0.0, 0.5])}, id="isin-float",
           torch_fn=lambda X, TestX: T.isin(X, TestX), grad=False),
    OpCase("isin", {"X": np.array([[True, False]]), "TestX": np.array([False])}, id="isin-bool",
           numpy_fn=lambda X, TestX: np.isin(X, TestX), grad=False),   # PyTorch's isin refuses bool
]
