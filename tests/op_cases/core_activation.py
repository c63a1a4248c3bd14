"""Cases of the core activation ops: one OpCase per line, checked by `fluidgrad.testing.check_op`."""
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
# ---- activation.py: unary functions
c += [Case("exp", {"X": rand(3, 4)}, torch_fn=lambda X: T.exp(X)),
      Case("log", {"X": pos(3, 4)}, torch_fn=lambda X: T.log(X)),
      Case("sqrt", {"X": pos(3, 4)}, torch_fn=lambda X: T.sqrt(X)),
      Case("square", {"X": rand(3, 4)}, torch_fn=lambda X: T.square(X)),
      Case("relu", {"X": nonzero(3, 4)}, torch_fn=lambda X: T.relu(X)),
      Case("sigmoid", {"X": rand(3, 4, lo=-4, hi=4)}, torch_fn=lambda X: T.sigmoid(X)),
      Case("sigmoid", {"X": np.array([-800.0, -30.0, 0.0, 30.0, 800.0])}, id="sigmoid-saturated",
           torch_fn=lambda X: T.sigmoid(X)),
      Case("tanh", {"X": rand(3, 4, lo=-2, hi=2)}, torch_fn=lambda X: T.tanh(X)),
      Case("relu_grad", {"Out": nonzero(3, 4), "DOut": rand(3, 4)},
           torch_fn=lambda Out, DOut: DOut * (Out > 0).to(Out.dtype)),
      Case("sigmoid_grad", {"Out": rand(3, 4, lo=0.05, hi=0.95), "DOut": rand(3, 4)},
           torch_fn=lambda Out, DOut: DOut * Out * (1 - Out)),
      Case("tanh_grad", {"Out": rand(3, 4, lo=-0.95, hi=0.95), "DOut": rand(3, 4)},
           torch_fn=lambda Out, DOut: DOut * (1 - Out * Out)),
      Case("abs", {"X": nonzero(3, 4)}, torch_fn=lambda X: T.abs(X)),
      Case("sin", {"X": rand(3, 4, lo=-3, hi=3)}, torch_fn=lambda X: T.sin(X)),
      Case("cos", {"X": rand(3, 4, lo=-3, hi=3)}, torch_fn=lambda X: T.cos(X)),
      Case("sign", {"X": nonzero(3, 4)}, torch_fn=_zero_grad_of(lambda X: T.sign(X))),
      Case("pow", {"X": pos(3, 4)}, {"factor": 3.0}, torch_fn=lambda X: T.pow(X, 3.0)),
      Case("pow", {"X": pos(3, 4)}, {"factor": -0.5}, id="pow-negative-fraction",
           torch_fn=lambda X: T.pow(X, -0.5)),
      Case("leaky_relu", {"X": nonzero(3, 4)}, {"alpha": 0.1},
           torch_fn=lambda X: TF.leaky_relu(X, 0.1)),
      Case("leaky_step", {"X": nonzero(3, 4)}, {"alpha": 0.1},
           torch_fn=_zero_grad_of(lambda X: T.where(X > 0, T.ones_like(X), T.full_like(X, 0.1))))]

CASES = c
