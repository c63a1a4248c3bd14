"""Op cases of the activations in fluidgrad/ops/activation.py (gelu, silu, softplus, ...) and of
their fused gradient ops, including the large magnitudes where a naive formula overflows."""
from __future__ import annotations

import numpy as np
import torch as T
import torch.nn.functional as TF

from fluidgrad.testing import OpCase

from .common import nonzero, rand

_EXTREMES = np.array([-800.0, -40.0, -1e-3, 0.0, 1e-3, 40.0, 800.0])


def _slope_of(f):
    """DOut * f'(X) by PyTorch's autograd (kept differentiable, for the second-order check)."""
    def slope(X, DOut):
        x = X if X.requires_grad else X.detach().requires_grad_()
        (dx,) = T.autograd.grad(f(x), x, DOut, create_graph=True)
        return dx if X.requires_grad or DOut.requires_grad else dx.detach()
    return slope


_ACTIVATIONS = {
    "gelu": ({}, lambda x: TF.gelu(x)),
    "gelu-tanh": ({"approximate": True}, lambda x: TF.gelu(x, approximate="tanh")),
    "silu": ({}, TF.silu),
    "mish": ({}, TF.mish),
    "elu": ({"alpha": 0.7}, lambda x: TF.elu(x, 0.7)),
    "softplus": ({}, TF.softplus),
    "softplus-beta": ({"beta": 2.0, "threshold": 3.0}, lambda x: TF.softplus(x, 2.0, 3.0)),
    "log_sigmoid": ({}, TF.logsigmoid),
    "hardswish": ({}, TF.hardswish),
}

CASES: list[OpCase] = []
for _id, (_attrs, _fn) in _ACTIVATIONS.items():
    _op = _id.split("-")[0]
    _x = rand(3, 4, lo=-5, hi=5) if _op == "hardswish" else nonzero(3, 4) * 2.5
    CASES += [OpCase(_op, {"X": _x}, _attrs, torch_fn=lambda X, f=_fn: f(X), id=_id),
              OpCase(f"{_op}_grad", {"X": _x, "DOut": rand(3, 4)}, _attrs, torch_fn=_slope_of(_fn),
                     id=f"{_id}_grad")]
    if _op not in ("hardswish", "elu"):  # smooth: also at large magnitudes, where exp overflows
        CASES.append(OpCase(_op, {"X": _EXTREMES}, _attrs, torch_fn=lambda X, f=_fn: f(X), id=f"{_id}-extremes"))

CASES += [
    OpCase("elu", {"X": np.array([-800.0, -3.0, -0.5, 0.5, 800.0])}, {"alpha": 1.5}, id="elu-extremes",
           torch_fn=lambda X: TF.elu(X, 1.5)),
    OpCase("prelu", {"X": nonzero(2, 4, 3), "Alpha": rand(4, 1, lo=0.05, hi=0.5)},
           torch_fn=lambda X, Alpha: T.where(X > 0, X, Alpha * X)),
    OpCase("prelu", {"X": nonzero(3, 4), "Alpha": rand(1, lo=0.05, hi=0.5)}, id="prelu-shared",
           torch_fn=lambda X, Alpha: TF.prelu(X, Alpha)),
]

# 0-D inputs: the fused kernels write into buffers of their own, also when NumPy's arithmetic on
# a 0-D array gives a scalar
for _id in ("gelu", "gelu-tanh", "silu", "mish", "softplus"):
    _attrs, _fn = _ACTIVATIONS[_id]
    _op = _id.split("-")[0]
    CASES += [OpCase(_op, {"X": np.array(0.7)}, _attrs, torch_fn=lambda X, f=_fn: f(X), id=f"{_id}-0d"),
              OpCase(f"{_op}_grad", {"X": np.array(-1.3), "DOut": np.array(0.6)}, _attrs,
                     torch_fn=_slope_of(_fn), id=f"{_id}_grad-0d")]
