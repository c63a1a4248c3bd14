"""layer_norm and batch_norm (training, inference, global statistics) and their fused gradient
ops, against PyTorch. The runner checks the gradient and the grad of grad (numeric
Hessian-vector products and PyTorch's double backward; eager create_graph equal to static).

The statistics outputs (Mean / Variance, SavedMean / SavedVariance) are differentiable; the
running statistics (Mean / Variance inputs of batch_norm, MeanOut / VarianceOut) are not, as
in PyTorch. The grad ops' cases feed statistics unrelated to X: their gradient is the partial
derivative in each input."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

from fluidgrad.testing import OpCase

from .common import pos, rand

EPS = 1e-5


def _layer_norm(axis, affine=True, stats=False):
    def fn(X, Scale=None, Bias=None):
        tail = list(X.shape[axis:])
        y = TF.layer_norm(X, tail, None if Scale is None else Scale.reshape(tail),
                          None if Bias is None else Bias.reshape(tail), EPS)
        if not stats:
            return y
        rows = X.reshape(int(np.prod(X.shape[:axis], dtype=np.int64)), -1)
        return y, rows.mean(1), rows.var(1, unbiased=False)
    return fn


def _batch_norm(training, momentum=0.9):
    """Y, SavedMean, SavedVariance (the inverse std) of fluidgrad's batch_norm."""
    def fn(X, Scale, Bias, Mean, Variance):
        y = TF.batch_norm(X, Mean.clone(), Variance.clone(), Scale, Bias, training=training,
                          momentum=1 - momentum, eps=EPS)
        axes = [0] + list(range(2, X.ndim))
        mean, var = (X.mean(axes), X.var(axes, unbiased=False)) if training else (Mean, Variance)
        return y, mean, (var + EPS) ** -0.5
    return fn


def _batch_norm_running(momentum=0.9):
    """MeanOut, VarianceOut: the running statistics PyTorch updates in place."""
    def fn(X, Scale, Bias, Mean, Variance):
        mean, var = Mean.clone(), Variance.clone()
        TF.batch_norm(X, mean, var, Scale, Bias, training=True, momentum=1 - momentum, eps=EPS)
        return mean, var
    return fn


def _bn_inputs(*shape):
    c = shape[1]
    return {"X": rand(*shape), "Scale": pos(c), "Bias": rand(c), "Mean": rand(c), "Variance": pos(c)}


def _layer_norm_grad_ref(axis):
    """layer_norm_grad with its statistics as free inputs: PyTorch's aten backward kernel."""
    def fn(X, Mean, Variance, DY, Scale=None):
        tail = list(X.shape[axis:])
        lead = list(X.shape[:axis]) + [1] * len(tail)
        weight = torch.ones(tail, dtype=X.dtype) if Scale is None else Scale.reshape(tail)
        dx, dw, db = torch.ops.aten.native_layer_norm_backward(
            DY, X, tail, Mean.reshape(lead), ((Variance + EPS) ** -0.5).reshape(lead), weight,
            torch.zeros_like(weight), [True, True, True])
        shape = [-1] if Scale is None else list(Scale.shape)
        return dx, dw.reshape(shape), db.reshape(shape)
    return lambda **kw: [t.numpy() for t in fn(**{k: torch.tensor(v) for k, v in kw.items()})]


def _batch_norm_grad_ref(training):
    def fn(X, Scale, SavedMean, SavedVariance, DY):
        t = {k: torch.tensor(v) for k, v in dict(X=X, Scale=Scale, SavedMean=SavedMean, SavedVariance=SavedVariance,
                                                 DY=DY).items()}
        running_var = t["SavedVariance"] ** -2 - EPS
        dx, dw, db = torch.ops.aten.native_batch_norm_backward(
            t["DY"], t["X"], t["Scale"], t["SavedMean"], running_var, t["SavedMean"], t["SavedVariance"],
            training, EPS, [True, True, True])
        return [v.numpy() for v in (dx, dw, db)]
    return fn


CASES = [
    OpCase("layer_norm", {"X": rand(3, 5), "Scale": pos(5), "Bias": rand(5)}, {"begin_norm_axis": 1},
           use_outputs=(0,), torch_fn=_layer_norm(1)),
    OpCase("layer_norm", {"X": rand(2, 3, 4), "Scale": pos(4), "Bias": rand(4)}, {"begin_norm_axis": 2},
           id="layer_norm-stats", torch_fn=_layer_norm(2, stats=True)),
    OpCase("layer_norm", {"X": rand(2, 2, 3), "Scale": pos(2, 3)}, {"begin_norm_axis": 1},
           id="layer_norm-two-axes-scale-only", use_outputs=(0,), torch_fn=_layer_norm(1)),
    OpCase("layer_norm", {"X": rand(2, 3, 2)}, {"begin_norm_axis": 0, "epsilon": EPS},
           id="layer_norm-all-axes-no-affine", use_outputs=(0,), torch_fn=_layer_norm(0)),
    OpCase("batch_norm", _bn_inputs(4, 3, 2), {"is_test": False}, id="batch_norm-train", use_outputs=(0, 3, 4),
           no_grad=("Mean", "Variance"), torch_fn=_batch_norm(True)),
    OpCase("batch_norm", _bn_inputs(2, 2, 2, 2), {"is_test": False, "momentum": 0.8}, id="batch_norm-train-4d",
           use_outputs=(0,), no_grad=("Mean", "Variance"), torch_fn=lambda **kw: _batch_norm(True, 0.8)(**kw)[0]),
    OpCase("batch_norm", _bn_inputs(3, 2, 2), {"is_test": False, "momentum": 0.7}, id="batch_norm-running-stats",
           use_outputs=(1, 2), no_grad=("X", "Scale", "Bias", "Mean", "Variance"), grad=False,
           torch_fn=_batch_norm_running(0.7)),
    OpCase("batch_norm", _bn_inputs(3, 2, 2), {"is_test": True}, id="batch_norm-inference", use_outputs=(0, 3, 4),
           no_grad=("Mean", "Variance"), torch_fn=_batch_norm(False)),
    OpCase("batch_norm", _bn_inputs(3, 2, 2), {"is_test": False, "use_global_stats": True},
           id="batch_norm-global-stats", use_outputs=(0,), no_grad=("Mean", "Variance"),
           torch_fn=lambda **kw: _batch_norm(False)(**kw)[0]),
    OpCase("layer_norm_grad", {"X": rand(3, 4), "Scale": pos(4), "Mean": rand(3) * 0.2, "Variance": pos(3),
                               "DY": rand(3, 4)}, {"begin_norm_axis": 1}, numpy_fn=_layer_norm_grad_ref(1)),
    OpCase("layer_norm_grad", {"X": rand(2, 2, 3), "Mean": rand(2) * 0.2, "Variance": pos(2), "DY": rand(2, 2, 3)},
           {"begin_norm_axis": 1}, id="layer_norm_grad-no-scale", numpy_fn=_layer_norm_grad_ref(1)),
    OpCase("batch_norm_grad", {"X": rand(3, 2, 2), "Scale": pos(2), "SavedMean": rand(2) * 0.2,
                               "SavedVariance": pos(2), "DY": rand(3, 2, 2)}, {"is_test": False},
           numpy_fn=_batch_norm_grad_ref(True)),
    OpCase("batch_norm_grad", {"X": rand(3, 2, 2), "Scale": pos(2), "SavedMean": rand(2) * 0.2,
                               "SavedVariance": pos(2), "DY": rand(3, 2, 2)}, {"is_test": True},
           id="batch_norm_grad-inference", numpy_fn=_batch_norm_grad_ref(False)),
]
