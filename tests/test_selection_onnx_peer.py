"""ONNX's own node test cases (onnx.backend.test.case.node) as a peer suite for the selection,
indexing and shape-building ops: every single-node case of the op types below runs through
fluidgrad's public functions in eager mode, and must give ONNX's expected outputs. The cases
where fluidgrad's documented semantics differ (docs/guide/indexing.md) are listed with the
reason and must keep differing (so the list stays true)."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.dispatch import apply_op
from fluidgrad.framework import program as program_module

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx.backend.test.case.node import collect_testcases  # noqa: E402

T = fg.to_tensor
_REDUCE = {"none": "assign", "add": "add", "mul": "mul", "max": "amax", "min": "amin"}


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _where(a, c, x, y):
    return fg.where(T(c), T(x), T(y))


def _arg(name):
    def run(a, x):
        attrs = {"axis": a.get("axis", 0), "keepdim": bool(a.get("keepdims", 1)),
                 "select_last_index": bool(a.get("select_last_index", 0)), "dtype": "int64"}
        if not attrs["select_last_index"]:
            fn = fg.argmax if name == "arg_max" else fg.argmin
            return fn(T(x), attrs["axis"], attrs["keepdim"])
        return apply_op(name, {"X": T(x)}, attrs)
    return run


def _topk(a, x, k):
    return fg.topk(T(x), int(k[0]), a.get("axis", -1), bool(a.get("largest", 1)), bool(a.get("sorted", 1)))


def _scatter_elements(a, x, index, updates):
    return fg.put_along_axis(T(x), T(index.astype(np.int64)), T(updates), a.get("axis", 0),
                             reduce=_REDUCE[_text(a.get("reduction", "none"))])


def _scatter_nd(a, x, index, updates):
    return apply_op("scatter_nd", {"X": T(x), "Index": T(index), "Updates": T(updates)},
                    {"reduce": _REDUCE[_text(a.get("reduction", "none"))]})


def _one_hot(a, indices, depth, values):
    hot = fg.one_hot(T(indices.astype(np.int64)), int(np.asarray(depth).reshape(-1)[0]), a.get("axis", -1))
    off, on = (float(v) for v in values)
    return fg.cast(fg.scale(hot, on - off, off), values.dtype)


def _trilu(a, x, k=None):
    k = 0 if k is None else int(k)
    return (fg.triu if a.get("upper", 1) else fg.tril)(T(x), k)


def _expand(a, x, shape):
    return fg.expand(T(x), list(np.broadcast_shapes(x.shape, tuple(int(d) for d in shape))))


def _pad(a, x, pads, value=None, axes=None):
    rank = x.ndim
    axes = list(range(rank)) if axes is None else [int(ax) % rank for ax in axes]
    pairs = [[0, 0] for _ in range(rank)]
    n = len(axes)
    for i, ax in enumerate(axes):
        pairs[ax] = [int(pads[i]), int(pads[i + n])]
    value = 0.0 if value is None or np.asarray(value).size == 0 else float(np.asarray(value).reshape(-1)[0])
    mode = _text(a.get("mode", "constant"))
    last_first = [p for pair in reversed(pairs) for p in pair]
    if mode == "constant":
        return F.pad(T(x), [p for pair in pairs for p in pair], value=value)
    return F.pad(T(x), last_first, mode=mode)


def _range(a, start, limit, delta):
    return fg.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)


def _slice(a, x, starts, ends, axes=None, steps=None):
    axes = list(range(len(starts))) if axes is None else [int(v) for v in axes]
    steps = [1] * len(starts) if steps is None else [int(v) for v in steps]
    clamp = lambda v: int(max(min(int(v), 2**31 - 1), -2**31))  # noqa: E731
    return fg.strided_slice(T(x), axes, [clamp(v) for v in starts], [clamp(v) for v in ends], steps)


def _flatten(a, x):
    axis = a.get("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    return fg.reshape(T(x), [int(np.prod(x.shape[:axis])), -1])


RUNNERS = {
    "Where": _where,
    "ArgMax": _arg("arg_max"),
    "ArgMin": _arg("arg_min"),
    "TopK": _topk,
    "GatherElements": lambda a, x, i: fg.take_along_axis(T(x), T(i.astype(np.int64)), a.get("axis", 0)),
    "ScatterElements": _scatter_elements,
    "GatherND": lambda a, x, i: fg.gather_nd(T(x), T(i), batch_dims=a.get("batch_dims", 0)),
    "ScatterND": _scatter_nd,
    "OneHot": _one_hot,
    "Trilu": _trilu,
    "Tile": lambda a, x, r: fg.tile(T(x), [int(v) for v in r]),
    "Expand": _expand,
    "Pad": _pad,
    "Range": _range,
    "NonZero": lambda a, x: fg.transpose(fg.nonzero(T(x)), [1, 0]),
    "Slice": _slice,
    "Unsqueeze": lambda a, x, axes: fg.unsqueeze(T(x), [int(v) for v in axes]),
    "Squeeze": lambda a, x, axes=None: fg.squeeze(T(x), None if axes is None else [int(v) for v in axes]),
    "Flatten": _flatten,
    "Reshape": lambda a, x, shape: fg.reshape(T(x), [int(v) for v in shape]),
}

# Documented differences (docs/guide/indexing.md): these cases must fail, for the reason given.
DIFFERENT = {
    "test_onehot_with_axis": "labels outside [-depth, depth) raise IndexError (ONNX: an all-off row)",
    "test_onehot_without_axis": "labels outside [-depth, depth) raise IndexError (ONNX: an all-off row)",
    "test_onehot_out_of_range_indices": "labels outside [-depth, depth) raise IndexError (ONNX: an all-off row)",
    "test_onehot_negative_indices": "negative labels raise IndexError as in torch's F.one_hot (ONNX: from the end)",
    "test_gather_elements_negative_indices": "take_along_axis raises IndexError on a negative index as torch.gather "
                                             "(ONNX: from the end; the ONNX importer wraps)",
    "test_scatter_elements_with_negative_indices": "put_along_axis raises IndexError on a negative index as "
                                                   "torch.scatter (ONNX: from the end; the ONNX importer wraps)",
    "test_reshape_allowzero_reordered": "reshape's 0 copies the input's size (Paddle), so this one raises; "
                                        "ONNX allowzero=1 makes 0 a size",
    "test_top_k_uint64": "uint64 is not a fluidgrad dtype: the cast raises",
    "test_onehot_with_bfloat16_values": "bfloat16 is not a fluidgrad dtype: the cast raises",
    "test_range_bfloat16_type_positive_delta": "bfloat16 is not a fluidgrad dtype: arange raises",
}


def _cases():
    out = []
    for case in collect_testcases():
        nodes = case.model.graph.node
        if len(nodes) == 1 and nodes[0].op_type in RUNNERS and case.data_sets:
            out.append(case)
    return out


CASES = _cases()


def _run(case):
    node = case.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    inputs, expected = case.data_sets[0]
    feeds = dict(zip([i.name for i in case.model.graph.input], inputs))
    args = [feeds.get(name) if name else None for name in node.input]
    while args and args[-1] is None:
        args.pop()
    out = RUNNERS[node.op_type](attrs, *args)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return [o.numpy() for o in outs], expected


def _agrees(got, expected):
    if len(got) < len(expected):
        return False
    for g, e in zip(got, expected):
        if g.shape != np.asarray(e).shape or not np.allclose(g.astype(np.float64), np.asarray(e).astype(np.float64),
                                                              rtol=1e-5, atol=1e-6):
            return False
    return True


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_node_case(case, monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)  # eager, outside the fixture's program_guard
    if case.name in DIFFERENT:
        with pytest.raises(Exception) if "raise" in DIFFERENT[case.name] else _no_raise():
            got, expected = _run(case)
            assert not _agrees(got, expected), f"{case.name} now agrees with ONNX: drop it from DIFFERENT"
        return
    got, expected = _run(case)
    assert _agrees(got, expected), f"{case.name}: got {got}, ONNX expects {expected}"


class _no_raise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
