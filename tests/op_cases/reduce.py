"""Op cases of the reductions and scans added in fluidgrad/ops/reduce.py: logsumexp, p_norm,
reduce_prod, reduce_all / reduce_any, cumsum, cumprod (with ONNX's exclusive and reverse)."""
from __future__ import annotations

import numpy as np
import torch as T

from fluidgrad.testing import OpCase

from .common import nonzero, pos, rand


def _scan_torch(fn, axis, exclusive=False, reverse=False):
    """ONNX CumSum semantics written with PyTorch's inclusive forward scan."""
    def scan(X):
        x = T.flip(X, [axis]) if reverse else X
        if exclusive:
            identity = T.zeros_like if fn is T.cumsum else T.ones_like
            x = T.cat([identity(x.narrow(axis, 0, 1)), x.narrow(axis, 0, x.shape[axis] - 1)], axis)
        out = fn(x, axis)
        return T.flip(out, [axis]) if reverse else out
    return scan


def _cumprod_slope(axis, exclusive=False, reverse=False):
    """cumprod's VJP by PyTorch, itself differentiable (double backward) when X or DOut is."""
    def slope(X, DOut):
        differentiable = X.requires_grad or DOut.requires_grad
        x = X if X.requires_grad else X.detach().requires_grad_()
        (dx,) = T.autograd.grad(_scan_torch(T.cumprod, axis, exclusive, reverse)(x), x, DOut,
                                create_graph=differentiable)
        return dx
    return slope


_WITH_ZEROS = np.array([[0.5, 0.0, 2.0, -1.5], [1.5, -0.5, 0.0, 0.0], [2.0, 1.5, -0.5, 1.2]])

CASES = [
    OpCase("logsumexp", {"X": rand(3, 4)}, {"axis": [1]}, torch_fn=lambda X: T.logsumexp(X, 1)),
    OpCase("logsumexp", {"X": rand(2, 3, 4)}, {"axis": [0, 2], "keepdim": True}, id="logsumexp-keepdim",
           torch_fn=lambda X: T.logsumexp(X, (0, 2), keepdim=True)),
    OpCase("logsumexp", {"X": rand(2, 3)}, {"reduce_all": True}, id="logsumexp-all",
           torch_fn=lambda X: T.logsumexp(X, (0, 1))),
    # magnitudes where exp overflows (and underflows) without the shift by the maximum
    OpCase("logsumexp", {"X": np.array([[800.0, 799.0, -5.0], [-800.0, -801.0, -799.5]])}, {"axis": [1]},
           id="logsumexp-extremes", torch_fn=lambda X: T.logsumexp(X, 1)),
    OpCase("p_norm", {"X": rand(3, 4)}, {"porder": 2.0, "axis": [1]},
           torch_fn=lambda X: T.linalg.vector_norm(X, 2, 1)),
    OpCase("p_norm", {"X": rand(3, 4)}, {"porder": 2.0, "reduce_all": True}, id="p_norm-fro",
           torch_fn=lambda X: T.linalg.vector_norm(X)),
    OpCase("p_norm", {"X": nonzero(3, 4)}, {"porder": 3.0, "axis": [0], "keepdim": True}, id="p_norm-3",
           torch_fn=lambda X: T.linalg.vector_norm(X, 3, 0, keepdim=True)),
    OpCase("p_norm", {"X": nonzero(3, 4)}, {"porder": 1.5, "axis": [-1]}, id="p_norm-1.5",
           torch_fn=lambda X: T.linalg.vector_norm(X, 1.5, -1)),
    # a zero row: the gradient there is 0, as in PyTorch, not 0/0
    OpCase("p_norm", {"X": np.array([[0.0, 0.0, 0.0], [0.3, -0.4, 1.2]])}, {"porder": 2.0, "axis": [1]},
           id="p_norm-zero-row", torch_fn=lambda X: T.linalg.vector_norm(X, 2, 1), second_order=False),
    OpCase("reduce_all", {"X": rand(3, 4) > -0.5}, {"axis": [1]}, torch_fn=lambda X: T.all(X, 1), grad=False),
    OpCase("reduce_all", {"X": rand(3, 4) > -0.9}, {"reduce_all": True}, id="reduce_all-all",
           torch_fn=lambda X: T.all(X), grad=False),
    OpCase("reduce_any", {"X": rand(3, 4) > 0.6}, {"axis": [0], "keepdim": True},
           torch_fn=lambda X: T.any(X, 0, keepdim=True), grad=False),
    OpCase("cumsum", {"X": rand(3, 4)}, {"axis": 1}, torch_fn=lambda X: T.cumsum(X, 1)),
    OpCase("cumsum", {"X": rand(3, 4)}, {"axis": 0, "exclusive": True}, id="cumsum-exclusive",
           torch_fn=_scan_torch(T.cumsum, 0, exclusive=True)),
    OpCase("cumsum", {"X": rand(3, 4)}, {"axis": -1, "reverse": True}, id="cumsum-reverse",
           torch_fn=_scan_torch(T.cumsum, 1, reverse=True)),
    OpCase("cumsum", {"X": rand(2, 3, 4)}, {"axis": 1, "exclusive": True, "reverse": True},
           id="cumsum-exclusive-reverse", torch_fn=_scan_torch(T.cumsum, 1, exclusive=True, reverse=True)),
    OpCase("cumsum", {"X": np.arange(12).reshape(3, 4)}, {"axis": 1}, id="cumsum-int", grad=False,
           torch_fn=lambda X: T.cumsum(X, 1)),
    OpCase("cumprod", {"X": pos(3, 4)}, {"axis": 1}, torch_fn=lambda X: T.cumprod(X, 1)),
    OpCase("cumprod", {"X": _WITH_ZEROS}, {"axis": 1}, id="cumprod-zeros", torch_fn=lambda X: T.cumprod(X, 1)),
    OpCase("cumprod", {"X": _WITH_ZEROS}, {"axis": 1, "exclusive": True, "reverse": True},
           id="cumprod-zeros-exclusive-reverse",
           torch_fn=_scan_torch(T.cumprod, 1, exclusive=True, reverse=True)),
    OpCase("cumprod", {"X": np.ascontiguousarray(_WITH_ZEROS.T)}, {"axis": 0, "reverse": True}, id="cumprod-reverse",
           torch_fn=_scan_torch(T.cumprod, 0, reverse=True)),
    OpCase("cumprod_grad", {"X": _WITH_ZEROS, "DOut": rand(3, 4)}, {"axis": 1}, torch_fn=_cumprod_slope(1)),
    OpCase("cumprod_grad", {"X": _WITH_ZEROS, "DOut": rand(3, 4)}, {"axis": 1, "exclusive": True},
           id="cumprod_grad-exclusive", torch_fn=_cumprod_slope(1, exclusive=True)),
    OpCase("cumprod_grad", {"X": np.ascontiguousarray(_WITH_ZEROS.T), "DOut": rand(4, 3)}, {"axis": 0, "reverse": True},
           id="cumprod_grad-reverse", torch_fn=_cumprod_slope(0, reverse=True)),
    OpCase("cumprod", {"X": rand(2, 3, 2)}, {"axis": 1, "exclusive": True}, id="cumprod-middle-axis",
           torch_fn=_scan_torch(T.cumprod, 1, exclusive=True)),
    OpCase("reduce_prod", {"X": nonzero(3, 4) * 2}, {"axis": 1}, torch_fn=lambda X: T.prod(X, 1)),
    OpCase("reduce_prod", {"X": nonzero(3, 4) * 2}, {"axis": 0, "keepdim": True}, id="reduce_prod-keepdim",
           torch_fn=lambda X: T.prod(X, 0, keepdim=True)),
    # one zero and two zeros in a row: exact gradients without dividing by X
    OpCase("reduce_prod", {"X": _WITH_ZEROS}, {"axis": 1}, id="reduce_prod-zeros",
           torch_fn=lambda X: T.prod(X, 1)),
    OpCase("reduce_prod", {"X": np.arange(1, 13).reshape(3, 4)}, {"axis": 1}, id="reduce_prod-int", grad=False,
           torch_fn=lambda X: T.prod(X, 1)),
]
