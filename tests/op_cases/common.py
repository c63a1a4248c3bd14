"""Input generators shared by the op-case tables (fixed seed: the tables are deterministic)."""
from __future__ import annotations

import numpy as np

_RNG = np.random.default_rng(20261121)


def rand(*shape, lo=-1.0, hi=1.0):
    return _RNG.uniform(lo, hi, size=shape)


def pos(*shape):
    """Positive values well inside the domain of log, sqrt, pow."""
    return rand(*shape, lo=0.5, hi=2.0)


def nonzero(*shape):
    """Values at least 0.1 from 0: relu, abs, sign and steps are smooth there."""
    x = rand(*shape, lo=0.1, hi=1.0)
    return x * _RNG.choice([-1.0, 1.0], size=shape)


def distinct(*shape):
    """A permutation of well separated values, so max/min have no accidental ties."""
    n = int(np.prod(shape))
    return (_RNG.permutation(n) * 0.25 - 1.0).reshape(shape).astype(np.float64)


def probs(*shape):
    x = rand(*shape, lo=0.2, hi=1.0)
    return x / x.sum(-1, keepdims=True)


def ints(high, *shape):
    return _RNG.integers(0, high, size=shape).astype(np.int64)
