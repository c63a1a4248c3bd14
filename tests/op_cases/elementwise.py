"""Op cases of fluidgrad/ops/elementwise.py: rounding, erf, erfinv, trigonometry (atan2), remainders, bitwise."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import ints, nonzero, pos, rand


def _u(fn):
    """A PyTorch function called with the op's slot names: X (and Y)."""
    return lambda X, Y=None: fn(X) if Y is None else fn(X, Y)


def _zero_grad_of(fn):
    """Piecewise-constant ops: keep X in PyTorch's graph (0 * X) so both sides give a zero gradient."""
    return lambda X, **kw: fn(X, **kw) + 0 * X


def _away_from_integers(*shape):
    """Values at least 0.1 from an integer (and from .5 for round): rounding is flat there."""
    return np.floor(rand(*shape, lo=-4, hi=4)) + np.array([0.2, 0.35, 0.65, 0.8])[
        np.arange(int(np.prod(shape))) % 4].reshape(shape)


CASES = [
    OpCase("floor", {"X": _away_from_integers(3, 4)}, torch_fn=_zero_grad_of(_u(T.floor))),
    OpCase("ceil", {"X": _away_from_integers(3, 4)}, torch_fn=_zero_grad_of(_u(T.ceil))),
    OpCase("round", {"X": _away_from_integers(3, 4)}, torch_fn=_zero_grad_of(_u(T.round))),
    # half to even, as ONNX Round and PyTorch (not half away from zero)
    OpCase("round", {"X": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])}, id="round-half-to-even",
           torch_fn=_u(T.round), grad=False),
    OpCase("trunc", {"X": _away_from_integers(3, 4)}, torch_fn=_zero_grad_of(_u(T.trunc))),
    OpCase("erf", {"X": rand(3, 4, lo=-2, hi=2)}, torch_fn=_u(T.erf)),
    OpCase("log1p", {"X": rand(3, 4, lo=-0.5, hi=2)}, torch_fn=_u(T.log1p)),
    OpCase("erfinv", {"X": rand(3, 4, lo=-0.95, hi=0.95)}, torch_fn=_u(T.erfinv)),
    OpCase("erfinv", {"X": np.array([-1.0, -1 + 2.0 ** -20, 0.0, 1e-30, 1 - 2.0 ** -23, 1.0, 1.5])}, id="erfinv-edges",
           torch_fn=_u(T.erfinv), grad=False),
    OpCase("logit", {"X": rand(3, 4, lo=0.05, hi=0.95)}, torch_fn=_u(T.logit)),
    OpCase("log1p", {"X": np.array([1e-12, -1e-10, 3e-9])}, id="log1p-tiny", torch_fn=_u(T.log1p)),
    OpCase("expm1", {"X": rand(3, 4, lo=-2, hi=2)}, torch_fn=_u(T.expm1)),
    OpCase("log2", {"X": pos(3, 4)}, torch_fn=_u(T.log2)),
    OpCase("log10", {"X": pos(3, 4)}, torch_fn=_u(T.log10)),
    OpCase("rsqrt", {"X": pos(3, 4)}, torch_fn=_u(T.rsqrt)),
    OpCase("reciprocal", {"X": nonzero(3, 4)}, torch_fn=_u(T.reciprocal)),
    OpCase("tan", {"X": rand(3, 4, lo=-1.2, hi=1.2)}, torch_fn=_u(T.tan)),
    OpCase("asin", {"X": rand(3, 4, lo=-0.9, hi=0.9)}, torch_fn=_u(T.asin)),
    OpCase("acos", {"X": rand(3, 4, lo=-0.9, hi=0.9)}, torch_fn=_u(T.acos)),
    OpCase("atan", {"X": rand(3, 4, lo=-3, hi=3)}, torch_fn=_u(T.atan)),
    # atan2 in all four quadrants, Y broadcast over X's rows; then the axes (jumps at X = 0, Y < 0: no grad)
    OpCase("atan2", {"X": nonzero(3, 4), "Y": nonzero(4)}, torch_fn=_u(T.atan2)),
    OpCase("atan2", {"X": np.array([0.0, 0.0, 0.0, 1.0, -1.0, 0.0]), "Y": np.array([1.0, -1.0, 0.0, 0.0, 0.0, -0.0])},
           id="atan2-axes", torch_fn=_u(T.atan2), grad=False),
    OpCase("sinh", {"X": rand(3, 4, lo=-2, hi=2)}, torch_fn=_u(T.sinh)),
    OpCase("cosh", {"X": rand(3, 4, lo=-2, hi=2)}, torch_fn=_u(T.cosh)),
    OpCase("asinh", {"X": rand(3, 4, lo=-3, hi=3)}, torch_fn=_u(T.asinh)),
    OpCase("acosh", {"X": rand(3, 4, lo=1.2, hi=3)}, torch_fn=_u(T.acosh)),
    OpCase("atanh", {"X": rand(3, 4, lo=-0.9, hi=0.9)}, torch_fn=_u(T.atanh)),
    OpCase("isnan", {"X": np.array([1.0, np.nan, np.inf, -np.inf, 0.0])}, torch_fn=_u(T.isnan), grad=False),
    OpCase("isinf", {"X": np.array([1.0, np.nan, np.inf, -np.inf, 0.0])}, torch_fn=_u(T.isinf), grad=False),
    OpCase("isfinite", {"X": np.array([1.0, np.nan, np.inf, -np.inf, 0.0])}, torch_fn=_u(T.isfinite), grad=False),
    OpCase("isfinite", {"X": ints(5, 2, 3)}, id="isfinite-int", torch_fn=_u(T.isfinite), grad=False),
    # remainders: x / y kept away from integers, where the remainder jumps
    OpCase("elementwise_mod", {"X": _away_from_integers(3, 4) * 1.5, "Y": np.where(nonzero(3, 4) > 0, 1.5, -1.5)},
           torch_fn=_u(T.remainder)),
    OpCase("elementwise_mod", {"X": _away_from_integers(3, 4), "Y": np.array([1.0, -1.0, 1.0, -1.0])},
           id="elementwise_mod-bcast-signs", torch_fn=_u(T.remainder)),
    OpCase("elementwise_mod", {"X": np.array([7, -7, 7, -7]), "Y": np.array([3, 3, -3, -3])}, id="elementwise_mod-int",
           torch_fn=_u(T.remainder), grad=False),
    OpCase("elementwise_fmod", {"X": _away_from_integers(3, 4), "Y": np.array([1.0, -1.0, 1.0, -1.0])},
           torch_fn=_u(T.fmod)),
    OpCase("elementwise_fmod", {"X": np.array([7, -7, 7, -7]), "Y": np.array([3, 3, -3, -3])},
           id="elementwise_fmod-int", torch_fn=_u(T.fmod), grad=False),
    OpCase("elementwise_floordiv", {"X": _away_from_integers(3, 4), "Y": np.array([1.0, -1.0, 1.0, -1.0])},
           torch_fn=lambda X, Y: T.floor(X / Y)),
    OpCase("elementwise_floordiv", {"X": np.array([7, -7, 7, -7]), "Y": np.array([3, 3, -3, -3])},
           id="elementwise_floordiv-int", torch_fn=_u(T.floor_divide), grad=False),
    OpCase("bitwise_and", {"X": ints(16, 3, 4), "Y": ints(16, 4)}, torch_fn=_u(T.bitwise_and), grad=False),
    OpCase("bitwise_or", {"X": ints(16, 3, 4), "Y": ints(16, 3, 4)}, torch_fn=_u(T.bitwise_or), grad=False),
    OpCase("bitwise_xor", {"X": ints(16, 3, 4) - 8, "Y": ints(16, 3, 4)}, torch_fn=_u(T.bitwise_xor), grad=False),
    OpCase("bitwise_xor", {"X": rand(3, 4) > 0, "Y": rand(3, 4) > 0}, id="bitwise_xor-bool",
           torch_fn=_u(T.bitwise_xor), grad=False),
    OpCase("bitwise_not", {"X": ints(16, 3, 4) - 8}, torch_fn=_u(T.bitwise_not), grad=False),
    OpCase("bitwise_not", {"X": rand(3, 4) > 0}, id="bitwise_not-bool", torch_fn=_u(T.bitwise_not), grad=False),
]
