"""Op cases of fluidgrad/ops/matrix_functions.py: triangular_solve (each triangle, transposed,
unit diagonal, batched) and matrix_exp (small norm, and a norm past the Pade bound, where it
scales and squares). The factor's other triangle holds noise: the op must never read it, so
its gradient there is zero, as torch's. (Own generator: the shared one feeds the later modules.)"""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

_RNG = np.random.default_rng(1212)


def _rand(*shape):
    return _RNG.uniform(-1.0, 1.0, size=shape)


def _factor(*shape):
    """Random matrices with a dominant diagonal: each triangle is well conditioned."""
    return _rand(*shape) + 3.0 * np.eye(shape[-1])


def _triangle(x, upper, unit):
    part = T.triu(x, 1 if unit else 0) if upper else T.tril(x, -1 if unit else 0)
    return part + T.eye(x.shape[-1], dtype=x.dtype) if unit else part


def _solve(upper, transpose=False, unit=False):
    def reference(X, Y):
        t = _triangle(X, upper, unit)
        if transpose:
            return T.linalg.solve_triangular(t.mT, Y, upper=not upper)
        return T.linalg.solve_triangular(t, Y, upper=upper)
    return reference


CASES = [
    OpCase("triangular_solve", {"X": _factor(3, 3), "Y": _rand(3, 2)}, torch_fn=_solve(True)),
    OpCase("triangular_solve", {"X": _factor(4, 4), "Y": _rand(4, 3)}, {"upper": False}, id="triangular_solve-lower",
           torch_fn=_solve(False)),
    OpCase("triangular_solve", {"X": _factor(3, 3), "Y": _rand(3, 2)}, {"upper": True, "transpose": True},
           id="triangular_solve-transpose", torch_fn=_solve(True, transpose=True)),
    OpCase("triangular_solve", {"X": _factor(3, 3), "Y": _rand(3, 1)},
           {"upper": False, "transpose": True, "unitriangular": True}, id="triangular_solve-lower-transpose-unit",
           torch_fn=_solve(False, transpose=True, unit=True)),
    OpCase("triangular_solve", {"X": _factor(2, 3, 3), "Y": _rand(2, 3, 2)}, {"unitriangular": True},
           id="triangular_solve-batched-unit", torch_fn=_solve(True, unit=True)),
    OpCase("matrix_exp", {"X": 0.5 * _rand(3, 3)}, torch_fn=lambda X: T.linalg.matrix_exp(X)),
    OpCase("matrix_exp", {"X": 0.5 * _rand(2, 4, 4)}, id="matrix_exp-batched", torch_fn=lambda X: T.linalg.matrix_exp(X)),
    OpCase("matrix_exp", {"X": 4.0 * _rand(3, 3)}, id="matrix_exp-scaled", torch_fn=lambda X: T.linalg.matrix_exp(X)),
]
