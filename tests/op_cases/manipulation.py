"""Op cases: shape building (fluidgrad/ops/manipulation.py, and flatten / squeeze / assign_value)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

from fluidgrad.testing import OpCase as Case
from op_cases.common import rand

T = torch


def _transpose_of(forward):
    """The adjoint of a linear `forward(x)` at X, the way a *_grad op computes it (differentiable in X)."""
    def fn(X, Target):
        base = T.zeros_like(Target, requires_grad=True)
        out = T.autograd.grad(forward(base), base, X, create_graph=X.requires_grad)[0]
        return out if X.requires_grad else out.detach()
    return fn


def _pad_torch(paddings, mode, value=0.0):
    """Our per-axis (before, after) list as PyTorch's last-axis-first tuple."""
    pairs = [(paddings[2 * i], paddings[2 * i + 1]) for i in range(len(paddings) // 2)]
    flat = tuple(p for pair in reversed(pairs) for p in pair)
    while len(flat) > 2 and flat[-2:] == (0, 0):
        flat = flat[:-2]
    if mode == "constant":
        return lambda X: TF.pad(X, flat, value=value)
    return lambda X: TF.pad(X, flat, mode=mode)


_PADS = [0, 0, 1, 2, 2, 1]

CASES = [
    Case("tile", {"X": rand(2, 3)}, {"repeat_times": [2, 1, 2]}, torch_fn=lambda X: T.tile(X, (2, 1, 2))),
    Case("tile", {"X": rand(2, 3, 2)}, {"repeat_times": [3, 1]}, id="tile-short-repeats",
         torch_fn=lambda X: T.tile(X, (3, 1))),
    Case("tile_grad", {"X": rand(2, 2, 6), "Target": rand(2, 3)}, {"repeat_times": [2, 1, 2]},
         torch_fn=_transpose_of(lambda x: T.tile(x, (2, 1, 2)))),
    Case("expand", {"X": rand(3, 1)}, {"shape": [2, -1, 4]}, torch_fn=lambda X: X.expand(2, 3, 4)),
    Case("expand", {"X": rand()}, {"shape": [2, 3]}, id="expand-scalar", torch_fn=lambda X: X.expand(2, 3)),
    Case("expand", {"X": rand(3, 1), "ShapeTensor": np.array([2, -1, 4], "int64")}, {"shape": [2, 3, 4]},
         id="expand-shape-tensor", torch_fn=lambda X, ShapeTensor: X.expand(2, 3, 4)),
    Case("flip", {"X": rand(2, 3, 4)}, {"axis": [0, 2]}, torch_fn=lambda X: T.flip(X, [0, 2])),
    Case("flip", {"X": rand(3, 4)}, {"axis": [-1]}, id="flip-negative-axis", torch_fn=lambda X: T.flip(X, [-1])),
    Case("flip", {"X": np.array(0.3)}, {"axis": [0]}, id="flip-0d", torch_fn=lambda X: T.flip(X, [0])),
    Case("roll", {"X": rand(2, 3, 4)}, {"shifts": [1, -2], "axis": [0, 2]},
         torch_fn=lambda X: T.roll(X, (1, -2), (0, 2))),
    Case("roll", {"X": rand(3, 4)}, {"shifts": [5]}, id="roll-flat", torch_fn=lambda X: T.roll(X, 5)),
    Case("range", {}, {"start": 1, "end": 10, "step": 3, "dtype": "int64"},
         torch_fn=lambda: T.arange(1, 10, 3)),
    Case("range", {}, {"start": 0.5, "end": 2.0, "step": 0.25, "dtype": "float64"}, id="range-float",
         torch_fn=lambda: T.arange(0.5, 2.0, 0.25, dtype=T.float64)),
    Case("range", {}, {"start": 5, "end": -3, "step": -2, "dtype": "int64"}, id="range-down",
         torch_fn=lambda: T.arange(5, -3, -2)),
    Case("linspace", {}, {"start": -1.0, "stop": 2.0, "num": 7, "dtype": "float64"},
         torch_fn=lambda: T.linspace(-1.0, 2.0, 7, dtype=T.float64)),
    Case("linspace", {}, {"start": 0.0, "stop": 1.0, "num": 1, "dtype": "float64"}, id="linspace-one",
         torch_fn=lambda: T.linspace(0.0, 1.0, 1, dtype=T.float64)),
    Case("eye", {}, {"num_rows": 3, "num_columns": 5, "dtype": "float64"},
         torch_fn=lambda: T.eye(3, 5, dtype=T.float64)),
    Case("eye", {}, {"num_rows": 4, "dtype": "int32"}, id="eye-square-int", torch_fn=lambda: T.eye(4, dtype=T.int32)),
    Case("eye", {}, {"num_rows": 0, "num_columns": 2, "dtype": "float64"}, id="eye-empty",
         torch_fn=lambda: T.eye(0, 2, dtype=T.float64)),
    Case("repeat_index", {"X": rand(3, 4)}, {"repeats": 2, "axis": 1},
         torch_fn=lambda X: T.arange(4).repeat_interleave(2)),
    Case("assign_value", {}, {"shape": [2, 2], "dtype": "float64", "values": [1.0, 2.5, -3.0, 4.0]},
         torch_fn=lambda: T.tensor([[1.0, 2.5], [-3.0, 4.0]], dtype=T.float64)),
    Case("flatten", {"X": rand(2, 3, 4, 5)}, {"start_axis": 1, "stop_axis": 2},
         torch_fn=lambda X: T.flatten(X, 1, 2)),
    Case("flatten", {"X": rand()}, id="flatten-scalar", torch_fn=lambda X: X.reshape(1)),
    Case("squeeze", {"X": rand(3, 1, 4, 1)}, {"axes": []}, id="squeeze-all", torch_fn=lambda X: X.squeeze()),
    Case("pad", {"X": rand(2, 3, 4)}, {"paddings": [1, 0, 0, 2, 3, 1], "value": 0.5},
         torch_fn=lambda X: TF.pad(X, (3, 1, 0, 2, 1, 0), value=0.5)),
    Case("pad", {"X": rand(3, 4, 5)}, {"paddings": [-1, 1, 0, 2, 1, -2]}, id="pad-constant-crop",
         torch_fn=lambda X: TF.pad(X, (1, -2, 0, 2, -1, 1))),
    *[Case("pad", {"X": rand(2, 3, 4)}, {"paddings": _PADS, "mode": mode}, id=f"pad-{mode}",
           torch_fn=_pad_torch(_PADS, mode)) for mode in ("reflect", "replicate", "circular")],
    Case("pad", {"X": rand(2, 3, 4)}, {"paddings": _PADS, "mode": "edge"}, id="pad-edge",
         torch_fn=_pad_torch(_PADS, "replicate")),
    Case("pad", {"X": rand()}, {"paddings": []}, id="pad-0d-nothing",  # stays 0-D, through grad of grad
         torch_fn=lambda X: X.clone()),
    Case("pad", {"X": rand()}, {"paddings": [], "mode": "edge"}, id="pad-0d-edge-nothing",
         torch_fn=lambda X: X.clone()),
    Case("pad", {"X": rand(5)}, {"paddings": [2, 3], "mode": "reflect"}, id="pad-reflect-1d",
         torch_fn=lambda X: TF.pad(X[None], (2, 3), mode="reflect")[0]),
    Case("pad_grad", {"X": rand(2, 6, 7), "Target": rand(2, 3, 4)}, {"paddings": _PADS, "mode": "reflect"},
         torch_fn=_transpose_of(_pad_torch(_PADS, "reflect"))),
    Case("pad_grad", {"X": rand(2, 6, 7), "Target": rand(2, 3, 4)}, {"paddings": _PADS, "mode": "constant",
                                                                      "value": 2.0},
         id="pad_grad-constant", torch_fn=_transpose_of(_pad_torch(_PADS, "constant"))),
]
