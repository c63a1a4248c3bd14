"""Convolution, transposed convolution, pooling, interpolation and unfold op cases (1-3 spatial
axes), each against PyTorch; the runner adds the numeric gradient, grad of grad, float32 and
eager == static checks. Shapes are tiny: every input element is perturbed numerically."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

from fluidgrad.ops.geometry import same_pads
from fluidgrad.testing import OpCase

from .common import distinct, rand

_CONV = {1: TF.conv1d, 2: TF.conv2d, 3: TF.conv3d}
_CONV_T = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}
_MAX = {1: TF.max_pool1d, 2: TF.max_pool2d, 3: TF.max_pool3d}
_AVG = {1: TF.avg_pool1d, 2: TF.avg_pool2d, 3: TF.avg_pool3d}
_ADAPTIVE_AVG = {1: TF.adaptive_avg_pool1d, 2: TF.adaptive_avg_pool2d, 3: TF.adaptive_avg_pool3d}
_ADAPTIVE_MAX = {1: TF.adaptive_max_pool1d, 2: TF.adaptive_max_pool2d, 3: TF.adaptive_max_pool3d}
_LAYOUT = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


def _torch_pad(x, pairs):
    """Zero-pad (lo, hi) per spatial axis, in PyTorch's last-axis-first order."""
    flat = [v for lo_hi in reversed(pairs) for v in lo_hi]
    return TF.pad(x, flat) if any(flat) else x


def _grad_of(fn, x, dout, *others):
    """PyTorch's VJP of fn at x for dout, itself differentiable in dout and `others` when they
    require a gradient (fn closes over them)."""
    tracked = dout.requires_grad or any(t.requires_grad for t in others)
    x = x.detach().requires_grad_(True)
    grad = torch.autograd.grad(fn(x), x, dout, create_graph=tracked)[0]
    return grad if tracked else grad.detach()


# ---------------------------------------------------------------- convolution
def _conv_case(nd, x_shape, w_shape, strides, pairs, dilations, groups, bias=True, algorithm="EXPLICIT", tag=""):
    inputs = {"Input": rand(*x_shape), "Filter": rand(*w_shape)}
    if bias:
        inputs["Bias"] = rand(w_shape[0])
    attrs = {"strides": strides, "paddings": [v for p in pairs for v in p], "dilations": dilations,
             "groups": groups, "data_format": _LAYOUT[nd], "padding_algorithm": algorithm}
    if algorithm == "SAME":
        pairs = [same_pads(s, k, st, d, False) for s, k, st, d in zip(x_shape[2:], w_shape[2:], strides, dilations)]

    def torch_fn(Input, Filter, Bias=None):
        return _CONV[nd](_torch_pad(Input, pairs), Filter, Bias, stride=strides, dilation=dilations, groups=groups)
    return OpCase(f"conv{nd}d", inputs, attrs, torch_fn=torch_fn, id=f"conv{nd}d{tag}")


def _conv_grad_cases(nd, x_shape, w_shape, strides, pad, dilations, groups, tag=""):
    """conv's two gradient ops, against torch.nn.grad (Input / Filter give only shapes)."""
    attrs = {"strides": strides, "paddings": [pad] * nd, "dilations": dilations, "groups": groups,
             "data_format": _LAYOUT[nd]}
    x, w = rand(*x_shape), rand(*w_shape)
    out = _CONV[nd](torch.tensor(x), torch.tensor(w), stride=strides, padding=pad, dilation=dilations, groups=groups)
    dout = rand(*out.shape)
    conv = _CONV[nd]

    def input_grad(DOutput, Filter, Input):
        return _grad_of(lambda t: conv(t, Filter, None, strides, pad, dilations, groups), Input, DOutput, Filter)

    def filter_grad(DOutput, Input, Filter):
        return _grad_of(lambda t: conv(Input, t, None, strides, pad, dilations, groups), Filter, DOutput, Input)
    ids = {"id": f"conv{nd}d_input_grad{tag}"} if tag else {}
    return [OpCase(f"conv{nd}d_input_grad", {"DOutput": dout, "Filter": w, "Input": x}, attrs, torch_fn=input_grad,
                   no_grad=("Input",), **ids),
            OpCase(f"conv{nd}d_filter_grad", {"DOutput": dout, "Input": x, "Filter": w}, attrs,
                   torch_fn=filter_grad, no_grad=("Filter",), **({"id": f"conv{nd}d_filter_grad{tag}"} if tag else {}))]


def _transpose_case(nd, x_shape, w_shape, strides, pad, extra, dilations, groups, tag=""):
    inputs = {"Input": rand(*x_shape), "Filter": rand(*w_shape), "Bias": rand(w_shape[1] * groups)}
    attrs = {"strides": strides, "paddings": [pad] * nd, "dilations": dilations, "groups": groups,
             "output_padding": extra, "data_format": _LAYOUT[nd]}

    def torch_fn(Input, Filter, Bias):
        return _CONV_T[nd](Input, Filter, Bias, stride=strides, padding=pad, output_padding=extra, groups=groups,
                           dilation=dilations)
    return OpCase(f"conv{nd}d_transpose", inputs, attrs, torch_fn=torch_fn, id=f"conv{nd}d_transpose{tag}")


CONV_CASES = [
    _conv_case(1, (2, 2, 7), (3, 2, 3), [2], [(1, 1)], [1], 1),
    _conv_case(1, (1, 4, 8), (4, 2, 2), [1], [(2, 0)], [3], 2, bias=False, tag="-asym-dilated-groups"),
    _conv_case(1, (1, 2, 7), (2, 2, 3), [2], [(0, 0)], [1], 1, algorithm="SAME", tag="-same-stride2"),
    _conv_case(2, (2, 2, 5, 4), (3, 2, 3, 2), [1, 2], [(1, 1), (0, 1)], [1, 1], 1),
    _conv_case(2, (1, 4, 5, 5), (4, 1, 2, 2), [1, 1], [(0, 1), (1, 0)], [2, 1], 4, bias=False, tag="-depthwise"),
    _conv_case(2, (1, 2, 5, 6), (2, 2, 3, 3), [2, 3], [(0, 0)] * 2, [1, 1], 1, algorithm="SAME", tag="-same"),
    _conv_case(2, (1, 2, 5, 6), (2, 2, 3, 2), [2, 1], [(0, 0)] * 2, [1, 1], 1, algorithm="VALID", tag="-valid"),
    _conv_case(3, (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), [1, 2, 1], [(1, 0), (1, 1), (0, 0)], [1, 1, 2], 1),
    _conv_case(3, (1, 4, 3, 3, 3), (2, 2, 1, 2, 2), [1, 1, 1], [(0, 0)] * 3, [1, 1, 1], 2, bias=False, tag="-groups"),
]
# 3x3 stride 1 with 8 input channels: with numba the three conv ops run Winograd (ops/winograd.py)
CONV_CASES += [_conv_case(2, (2, 8, 5, 4), (3, 8, 3, 3), [1, 1], [(1, 0), (0, 1)], [1, 1], 1, tag="-winograd")]
CONV_CASES += _conv_grad_cases(2, (1, 8, 5, 3), (3, 8, 3, 3), [1, 1], 1, [1, 1], 1, tag="-winograd")
CONV_CASES += _conv_grad_cases(1, (2, 2, 6), (3, 2, 3), [2], 1, [1], 1)
CONV_CASES += _conv_grad_cases(2, (1, 2, 5, 4), (4, 1, 3, 2), [2, 1], 1, [1, 2], 2)
CONV_CASES += _conv_grad_cases(3, (1, 2, 3, 3, 4), (2, 2, 2, 2, 2), [1, 1, 2], 1, [1, 1, 1], 1)
CONV_CASES += [
    _transpose_case(1, (2, 2, 4), (2, 3, 3), [2], 1, [1], [1], 1),
    _transpose_case(2, (1, 2, 3, 3), (2, 2, 3, 2), [2, 1], 1, [1, 0], [1, 2], 1),
    _transpose_case(2, (1, 4, 2, 3), (4, 1, 2, 2), [1, 2], 0, [0, 1], [2, 1], 2, tag="-groups"),
    _transpose_case(3, (1, 2, 2, 2, 2), (2, 1, 2, 2, 2), [2, 1, 2], 0, [1, 0, 0], [1, 1, 1], 1),
]


# ---------------------------------------------------------------- pooling
def _pool_attrs(nd, kind, ksize, strides, pad, ceil=False, dilation=1, exclusive=True, **extra):
    return {"pooling_type": kind, "ksize": [ksize] * nd, "strides": [strides] * nd, "paddings": [pad] * nd,
            "ceil_mode": ceil, "dilations": [dilation] * nd, "exclusive": exclusive, "data_format": _LAYOUT[nd],
            **extra}


def _max_torch(nd, ksize, strides, pad, ceil=False, dilation=1):
    return lambda X: _MAX[nd](X, ksize, strides, pad, dilation=dilation, ceil_mode=ceil)


def _avg_torch(nd, ksize, strides, pad, ceil=False, exclusive=True):
    return lambda X: _AVG[nd](X, ksize, strides, pad, ceil_mode=ceil, count_include_pad=not exclusive)


POOL_CASES = [
    OpCase("pool1d", {"X": distinct(2, 2, 7)}, _pool_attrs(1, "max", 3, 2, 1, ceil=True),
           torch_fn=_max_torch(1, 3, 2, 1, ceil=True), id="pool1d-max-ceil"),
    OpCase("pool1d", {"X": rand(2, 2, 7)}, _pool_attrs(1, "avg", 3, 2, 1, exclusive=False),
           torch_fn=_avg_torch(1, 3, 2, 1, exclusive=False), id="pool1d-avg-inclusive"),
    OpCase("pool2d", {"X": distinct(1, 2, 6, 5)}, _pool_attrs(2, "max", 2, 2, 1, dilation=2),
           torch_fn=_max_torch(2, 2, 2, 1, dilation=2), id="pool2d-max-dilated"),
    OpCase("pool2d", {"X": rand(1, 2, 5, 6)}, _pool_attrs(2, "avg", 3, 2, 1, ceil=True),
           torch_fn=_avg_torch(2, 3, 2, 1, ceil=True), id="pool2d-avg-ceil-exclusive"),
    OpCase("pool2d", {"X": rand(1, 2, 5, 6)}, _pool_attrs(2, "avg", 3, 2, 1, ceil=True, exclusive=False),
           torch_fn=_avg_torch(2, 3, 2, 1, ceil=True, exclusive=False), id="pool2d-avg-ceil-inclusive"),
    OpCase("pool2d", {"X": rand(2, 2, 5, 6)}, {"pooling_type": "avg", "ksize": [2, 3], "adaptive": True},
           torch_fn=lambda X: TF.adaptive_avg_pool2d(X, (2, 3)), id="pool2d-adaptive-avg"),
    OpCase("pool2d", {"X": distinct(2, 2, 5, 6)}, {"pooling_type": "max", "ksize": [3, 4], "adaptive": True},
           torch_fn=lambda X: TF.adaptive_max_pool2d(X, (3, 4)), id="pool2d-adaptive-max"),
    OpCase("pool2d", {"X": distinct(2, 3, 3, 4)}, {"pooling_type": "max", "global_pooling": True},
           torch_fn=lambda X: TF.adaptive_max_pool2d(X, 1), id="pool2d-global-max"),
    OpCase("pool3d", {"X": distinct(1, 2, 3, 4, 4)}, _pool_attrs(3, "max", 2, 2, 1, ceil=True),
           torch_fn=_max_torch(3, 2, 2, 1, ceil=True), id="pool3d-max-ceil"),
    OpCase("pool3d", {"X": rand(1, 2, 3, 4, 3)}, _pool_attrs(3, "avg", 2, 1, 1),
           torch_fn=_avg_torch(3, 2, 1, 1), id="pool3d-avg"),
    OpCase("pool3d", {"X": rand(1, 2, 3, 4, 5)}, {"pooling_type": "avg", "ksize": [2, 3, 2], "adaptive": True},
           torch_fn=lambda X: TF.adaptive_avg_pool3d(X, (2, 3, 2)), id="pool3d-adaptive-avg"),
]


def _pool_grad_case(nd, x, attrs, fn, tag):
    dout = rand(*fn(torch.tensor(x)).shape)
    return OpCase(f"pool{nd}d_grad", {"X": x, "DOut": dout}, attrs, torch_fn=lambda X, DOut: _grad_of(fn, X, DOut),
                  no_grad=("X",), id=f"pool{nd}d_grad-{tag}")


POOL_CASES += [
    _pool_grad_case(1, distinct(2, 2, 7), _pool_attrs(1, "max", 3, 1, 1), _max_torch(1, 3, 1, 1), "max-overlap"),
    _pool_grad_case(2, rand(1, 2, 5, 4), _pool_attrs(2, "avg", 3, 2, 1, ceil=True, exclusive=False),
                    _avg_torch(2, 3, 2, 1, ceil=True, exclusive=False), "avg"),
    _pool_grad_case(2, distinct(1, 2, 5, 4), _pool_attrs(2, "max", 2, 2, 0, ceil=True),
                    _max_torch(2, 2, 2, 0, ceil=True), "max"),
    _pool_grad_case(3, rand(1, 2, 3, 3, 4), _pool_attrs(3, "avg", 2, 1, 0), _avg_torch(3, 2, 1, 0), "avg"),
]


def _with_index_case(nd, x, ksize, strides, pad, ceil=False, dilation=1, adaptive=None, tag=""):
    if adaptive is not None:
        attrs = {"ksize": adaptive, "adaptive": True, "data_format": _LAYOUT[nd]}

        def torch_fn(X):
            return _ADAPTIVE_MAX[nd](X, adaptive, return_indices=True)
    else:
        attrs = {k: v for k, v in _pool_attrs(nd, "max", ksize, strides, pad, ceil, dilation).items()
                 if k not in ("pooling_type", "exclusive")}

        def torch_fn(X):
            return _MAX[nd](X, ksize, strides, pad, dilation=dilation, ceil_mode=ceil, return_indices=True)
    return OpCase(f"max_pool{nd}d_with_index", {"X": x}, attrs, torch_fn=torch_fn, id=f"max_pool{nd}d_with_index{tag}")


POOL_CASES += [
    _with_index_case(1, distinct(2, 3, 8), 3, 2, 1, ceil=True),
    _with_index_case(1, distinct(2, 2, 7), None, None, None, adaptive=[3], tag="-adaptive"),
    _with_index_case(2, distinct(1, 2, 6, 7), 3, 2, 1, dilation=2, tag="-dilated"),
    _with_index_case(2, distinct(2, 2, 4, 4), 2, 2, 0),
    _with_index_case(2, distinct(1, 2, 5, 7), None, None, None, adaptive=[2, 3], tag="-adaptive"),
    _with_index_case(3, distinct(1, 2, 4, 3, 4), 2, 2, 1, ceil=True),
]

_MASK_X = torch.tensor(distinct(2, 2, 5, 4))
_MASK = TF.max_pool2d(_MASK_X, 2, 1, return_indices=True)[1].numpy()   # overlapping windows: repeated indices
_DISJOINT_MASK = TF.max_pool2d(_MASK_X, 2, 2, ceil_mode=True, return_indices=True)[1].numpy()


def _index_grad_torch(Mask, DOut, X):
    flat = torch.zeros(X.shape[:2] + (int(np.prod(X.shape[2:])),), dtype=DOut.dtype)
    return flat.scatter_add(2, Mask.flatten(2), DOut.flatten(2)).reshape(X.shape)


POOL_CASES += [
    OpCase("max_pool_index_grad", {"Mask": _MASK, "DOut": rand(*_MASK.shape), "X": rand(2, 2, 5, 4)},
           torch_fn=_index_grad_torch, no_grad=("X",)),
    OpCase("max_pool_index_grad", {"Mask": _DISJOINT_MASK, "DOut": rand(*_DISJOINT_MASK.shape), "X": rand(2, 2, 5, 4)},
           {"overlapping": False}, torch_fn=_index_grad_torch, no_grad=("X",), id="max_pool_index_grad-disjoint"),
    OpCase("max_pool_index_select", {"Mask": _MASK, "Y": rand(2, 2, 5, 4)},
           torch_fn=lambda Mask, Y: torch.gather(Y.flatten(2), 2, Mask.flatten(2)).reshape(Mask.shape)),
    OpCase("max_pool2d_select", {"X": _MASK_X.numpy(), "Y": rand(2, 2, 5, 4)}, {"ksize": [2, 2], "strides": [1, 1]},
           torch_fn=lambda X, Y: torch.gather(Y.flatten(2), 2, torch.tensor(_MASK).flatten(2)).reshape(_MASK.shape),
           no_grad=("X",)),
]


# ---------------------------------------------------------------- interpolate, unfold
def _interp_case(x, mode, size=None, scale=None, align_corners=False, tag=""):
    nd = x.ndim - 2
    attrs = {"mode": mode, "out_size": list(size) if size else [], "scales": [scale] * nd if scale else [],
             "align_corners": align_corners}
    corners = None if mode == "nearest" else align_corners

    def torch_fn(X):
        return TF.interpolate(X, size=size, scale_factor=scale, mode=mode, align_corners=corners)
    return OpCase("interpolate", {"X": x}, attrs, torch_fn=torch_fn, id=f"interpolate-{mode}{tag}")


VISION_CASES = [
    _interp_case(rand(1, 2, 3, 4), "nearest", size=(5, 7)),
    _interp_case(rand(1, 2, 3, 3), "nearest", scale=1.5, tag="-scale"),
    _interp_case(rand(2, 2, 5), "linear", size=(8,)),
    _interp_case(rand(1, 2, 3, 4), "bilinear", size=(5, 3)),
    _interp_case(rand(1, 2, 3, 4), "bilinear", size=(5, 6), align_corners=True, tag="-corners"),
    _interp_case(rand(1, 1, 4, 3), "bicubic", scale=1.5, tag="-scale"),
    _interp_case(rand(1, 1, 3, 4), "bicubic", size=(4, 6), align_corners=True, tag="-corners"),
    _interp_case(rand(1, 1, 2, 3, 2), "trilinear", size=(3, 4, 3)),
]
_INTERP_X, _INTERP_DOUT = rand(1, 2, 3, 4), rand(1, 2, 5, 6)
VISION_CASES.append(OpCase(
    "interpolate_grad", {"DOut": _INTERP_DOUT, "X": _INTERP_X},
    {"mode": "bilinear", "out_size": [5, 6], "align_corners": False},
    torch_fn=lambda DOut, X: _grad_of(lambda t: TF.interpolate(t, size=(5, 6), mode="bilinear"), X, DOut),
    no_grad=("X",)))

_UNFOLD = {"kernel_sizes": [2, 3], "strides": [2, 1], "paddings": [1, 0, 0, 1], "dilations": [1, 2]}


def _unfold_torch(X):
    return TF.unfold(TF.pad(X, (0, 1, 1, 0)), (2, 3), dilation=(1, 2), stride=(2, 1))


VISION_CASES += [
    OpCase("unfold", {"X": rand(2, 2, 4, 5)}, _UNFOLD, torch_fn=_unfold_torch),
    OpCase("unfold_grad", {"DY": rand(*_unfold_torch(torch.zeros(2, 2, 4, 5)).shape), "X": rand(2, 2, 4, 5)}, _UNFOLD,
           torch_fn=lambda DY, X: _grad_of(_unfold_torch, X, DY), no_grad=("X",)),
]

CASES = CONV_CASES + POOL_CASES + VISION_CASES


# ---------------------------------------------------------------- fold (col2im)
def _fold_case(x, output_sizes, kernel, strides, pads, dilations, tag):
    attrs = {"output_sizes": list(output_sizes), "kernel_sizes": list(kernel), "strides": list(strides),
             "paddings": [pads[0], pads[0], pads[1], pads[1]], "dilations": list(dilations)}
    return OpCase("fold", {"X": x}, attrs, id=f"fold-{tag}", torch_fn=lambda X: TF.fold(
        X, output_sizes, kernel, dilation=dilations, padding=pads, stride=strides))


CASES += [
    _fold_case(rand(2, 2 * 6, 15), (4, 5), (2, 3), (1, 1), (1, 0), (1, 1), "padded-overlapping"),
    _fold_case(rand(1, 3 * 4, 6), (5, 6), (2, 2), (2, 2), (0, 0), (2, 1), "strided-dilated"),
]
