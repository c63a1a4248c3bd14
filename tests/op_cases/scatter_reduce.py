"""Op cases: scatter_reduce (fluidgrad/ops/scatter_reduce.py), every reduction with and without
X's own entries, repeated indices; prod also at zeros of X and Src (torch's exact gradient there)."""
from __future__ import annotations

import numpy as np

from fluidgrad.testing import OpCase as Case

_RNG = np.random.default_rng(1414)   # its own draws: the shared generator's order stays the other tables'
_INDEX = np.array([[0, 4, 0, 2], [1, 1, 1, 3], [4, 0, 4, 4]])   # repeats, and untouched entries (3 of row 0)


def _distinct(*shape):
    n = int(np.prod(shape))
    return (_RNG.permutation(n) * 0.25 - 2.0).reshape(shape)


def _away_from_zero(*shape):
    return _RNG.uniform(0.5, 1.5, shape) * _RNG.choice([-1.0, 1.0], shape)


def _case(reduce, include_self, x, src, id_="", second_order=True):
    return Case("scatter_reduce", {"X": x, "Index": _INDEX, "Src": src},
                {"axis": 1, "reduce": reduce, "include_self": include_self},
                id=id_ or f"scatter_reduce-{reduce}{'' if include_self else '-without-self'}",
                torch_fn=lambda X, Index, Src: X.scatter_reduce(1, Index, Src, reduce, include_self=include_self),
                second_order=second_order)


_VALUES = _distinct(3, 9)   # no ties between X and Src, so amax / amin pick one entry each
_X_ZEROS, _SRC_ZEROS = _away_from_zero(3, 5), _away_from_zero(3, 4)
_X_ZEROS[0, 0] = 0.0              # X's own zero where Src also lands
_SRC_ZEROS[0, 1] = 0.0            # a lone zero among the entries reduced into [0, 4]
_TWO_ZEROS = _SRC_ZEROS.copy()
_TWO_ZEROS[2, [0, 2]] = 0.0       # two zeros reduced into [2, 4]: the first derivatives are all 0 there, the
# second ones are not, and torch refuses that double backward ("Double backward is unsupported for src when
# >1 zeros in src are scattered to the same position"): first order only

CASES = [
    *[_case(reduce, include_self, _VALUES[:, :5].copy(), _VALUES[:, 5:].copy())
      for reduce in ("sum", "mean", "amax", "amin") for include_self in (True, False)],
    *[_case("prod", include_self, _away_from_zero(3, 5), _away_from_zero(3, 4)) for include_self in (True, False)],
    _case("prod", True, _X_ZEROS, _SRC_ZEROS, "scatter_reduce-prod-zeros"),
    _case("prod", False, _X_ZEROS, _TWO_ZEROS, "scatter_reduce-prod-two-zeros", second_order=False),
    Case("scatter_reduce", {"X": _distinct(4, 2), "Index": np.array([[3, 0], [3, 3]]), "Src": _distinct(2, 2)},
         {"axis": 0, "reduce": "mean", "include_self": False}, id="scatter_reduce-mean-axis0",
         torch_fn=lambda X, Index, Src: X.scatter_reduce(0, Index, Src, "mean", include_self=False)),
]
