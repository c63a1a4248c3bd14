"""Op cases of fluidgrad/ops/special.py: lgamma, digamma, polygamma (each one's gradient is the
next, so grad of grad runs the one after)."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import rand

# both sides of 0 (away from the poles 0, -1, -2, ...), small and large arguments
_AWAY_FROM_POLES = np.array([[-2.5, -1.3, -0.4, 0.05], [0.7, 1.0, 3.3, 25.0]])
_POLES = np.array([0.0, -1.0, -2.0, 1e-30, 1e6])

CASES = [
    OpCase("lgamma", {"X": rand(3, 4, lo=0.2, hi=6.0)}, torch_fn=lambda X: T.lgamma(X)),
    OpCase("lgamma", {"X": _AWAY_FROM_POLES}, id="lgamma-negative", torch_fn=lambda X: T.lgamma(X)),
    OpCase("lgamma", {"X": _POLES}, id="lgamma-poles", torch_fn=lambda X: T.lgamma(X), grad=False),
    OpCase("digamma", {"X": rand(3, 4, lo=0.2, hi=6.0)}, torch_fn=lambda X: T.digamma(X)),
    OpCase("digamma", {"X": _AWAY_FROM_POLES}, id="digamma-negative", torch_fn=lambda X: T.digamma(X)),
    OpCase("digamma", {"X": _POLES[[0, 1, 3, 4]]}, id="digamma-poles", torch_fn=lambda X: T.digamma(X), grad=False),
    # torch.polygamma(1, x) (its own trigamma series) is off by ~3e-10 relatively; torch's Hurwitz
    # zeta(2, x), the same function, is exact to double precision as SciPy's (checked with mpmath)
    OpCase("polygamma", {"X": rand(3, 4, lo=0.3, hi=6.0)}, {"n": 1},
           torch_fn=lambda X: T.special.zeta(T.full_like(X, 2.0), X)),
    OpCase("polygamma", {"X": _AWAY_FROM_POLES + np.array([0.0, 0.0, 0.0, 0.3])}, {"n": 2}, id="polygamma-2", torch_fn=lambda X: T.polygamma(2, X)),
    OpCase("polygamma", {"X": rand(2, 3, lo=0.5, hi=4.0)}, {"n": 4}, id="polygamma-4",
           torch_fn=lambda X: T.polygamma(4, X)),
]
