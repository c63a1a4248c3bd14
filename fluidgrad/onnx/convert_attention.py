"""Attention (opsets 23-25) and FlexAttention (ai.onnx.preview): scaled dot-product attention
as matmul / softmax ops; FlexAttention's score_mod / prob_mod subgraphs are imported inline.

The masks that depend only on shapes and attributes (causal with its cache offset, the
sliding window, the padding of `nonpad_kv_seqlen`) are computed at import time into one
additive bias; `attn_mask` (boolean or additive) joins it as ops. Grouped-query heads are
repeated with expand + reshape. A query row with no attendable key gives zeros, not NaN
(the softmax runs on a finite bias there, so gradients stay finite too).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .convert_common import binary, cast
from .convert_table import converter

NEG_INF = -np.inf


def _split_heads(ctx: Any, x: Any, heads: int) -> Any:
    """(B, S, H*D) -> (B, H, S, D)."""
    b, s, hidden = x.shape
    x = ctx.op("reshape", {"X": x}, shape=[0, 0, heads, hidden // heads])
    return ctx.op("transpose", {"X": x}, perm=[0, 2, 1, 3])


def _repeat_heads(ctx: Any, x: Any, times: int) -> Any:
    """(B, H, S, D) -> (B, H*times, S, D), each head repeated `times` times in place."""
    if times == 1:
        return x
    b, h, s, d = x.shape
    x = ctx.op("unsqueeze", {"X": x}, axes=[2])
    x = ctx.op("expand", {"X": x}, shape=[b, h, times, s, d])
    return ctx.op("reshape", {"X": x}, shape=[b, h * times, s, d])


def _static_bias(ctx: Any, q_len: int, kv_len: int, past_len: int, nonpad: np.ndarray | None) -> np.ndarray | None:
    """The causal, window and padding bias (0 or -inf), broadcastable to (B, H, q, kv)."""
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    causal = bool(ctx.attr("is_causal", 0))
    if not causal and left < 0 and right < 0 and nonpad is None:
        return None
    offset = np.asarray(past_len if nonpad is None else nonpad.reshape(-1, 1, 1, 1) - q_len)
    diff = np.arange(q_len).reshape(q_len, 1) + offset - np.arange(kv_len).reshape(1, kv_len)
    allowed = np.ones(diff.shape, dtype=bool)
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    if nonpad is not None:
        allowed = allowed & (np.arange(kv_len) < nonpad.reshape(-1, 1, 1, 1))
    return np.where(allowed, 0.0, NEG_INF)


def _mask_bias(ctx: Any, mask: Any, kv_len: int, dtype: str) -> Any:
    """attn_mask as an additive bias: padded to kv_len (False / -inf), booleans as 0 / -inf."""
    short = kv_len - mask.shape[-1]
    if short > 0:
        fill = np.zeros(list(mask.shape[:-1]) + [short], dtype=bool) if mask.dtype == "bool" \
            else np.full(list(mask.shape[:-1]) + [short], NEG_INF, dtype=mask.dtype)
        mask = ctx.op("concat", {"X": [mask, ctx.constant(fill)]}, axis=-1)
    if mask.dtype == "bool":
        return ctx.op("where", {"Condition": mask, "X": ctx.scalar(0.0, dtype), "Y": ctx.scalar(NEG_INF, dtype)})
    return cast(ctx, mask, dtype)


def _softcap(ctx: Any, scores: Any, softcap: float) -> Any:
    capped = ctx.op("tanh", {"X": binary(ctx, "elementwise_div", scores, ctx.scalar(softcap, scores.dtype))})
    return binary(ctx, "elementwise_mul", capped, ctx.scalar(softcap, scores.dtype))


def _guarded_softmax(ctx: Any, scores: Any, bias: Any, bias_const: np.ndarray | None, dtype: str) -> Any:
    """softmax over the last axis; rows whose bias is all -inf give zeros."""
    if bias is None:
        return ctx.op("softmax", {"X": scores}, axis=-1)
    if bias_const is not None and not np.isneginf(bias_const.max(axis=-1)).any():
        return ctx.op("softmax", {"X": binary(ctx, "elementwise_add", scores, bias)}, axis=-1)
    row_max = ctx.op("reduce_max", {"X": bias}, axis=[-1], keepdim=True)
    masked_row = binary(ctx, "equal", row_max, ctx.scalar(NEG_INF, bias.dtype))
    zero = ctx.scalar(0.0, dtype)
    safe_bias = ctx.op("where", {"Condition": masked_row, "X": zero, "Y": bias})
    probs = ctx.op("softmax", {"X": binary(ctx, "elementwise_add", scores, cast(ctx, safe_bias, dtype))}, axis=-1)
    return ctx.op("where", {"Condition": masked_row, "X": zero, "Y": probs})


@converter("Attention", since=23)
def _attention(ctx):
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    three_d = len(q.shape) == 3
    if three_d:
        q = _split_heads(ctx, q, int(ctx.attr("q_num_heads")))
        k = _split_heads(ctx, k, int(ctx.attr("kv_num_heads")))
        v = _split_heads(ctx, v, int(ctx.attr("kv_num_heads")))
    past_len = 0
    if ctx.has_input(4):
        past_len = ctx.input(4).shape[2]
        k = ctx.op("concat", {"X": [ctx.input(4), k]}, axis=2)
        v = ctx.op("concat", {"X": [ctx.input(5), v]}, axis=2)
    present_k, present_v = k, v
    dtype, q_len, kv_len = q.dtype, q.shape[2], k.shape[2]
    if min(q_len, kv_len, q.shape[3]) < 0:
        raise ctx.unsupported(f"unknown sequence or head sizes (Q {list(q.shape)}, K {list(k.shape)})")
    nonpad = ctx.const(6, "nonpad_kv_seqlen").astype(np.int64) if ctx.has_input(6) else None

    bias_const = _static_bias(ctx, q_len, kv_len, past_len, nonpad)
    bias = None if bias_const is None else ctx.constant(bias_const.astype(dtype))
    if ctx.has_input(3):
        mask = _mask_bias(ctx, ctx.input(3), kv_len, dtype)
        bias = mask if bias is None else binary(ctx, "elementwise_add", mask, bias)
        bias_const = None

    heads = q.shape[1]
    k = _repeat_heads(ctx, k, heads // k.shape[1])
    v = _repeat_heads(ctx, v, heads // v.shape[1])
    scale = ctx.attr("scale")
    root = np.asarray(np.sqrt(1.0 / np.sqrt(q.shape[3]) if scale is None else float(scale))).astype(dtype)
    scores = ctx.op("matmul", {"X": binary(ctx, "elementwise_mul", q, ctx.scalar(float(root), dtype)),
                               "Y": binary(ctx, "elementwise_mul", k, ctx.scalar(float(root), dtype))},
                    transpose_y=True)
    softcap = float(ctx.attr("softcap", 0.0) or 0.0)
    if softcap > 0:
        scores = _softcap(ctx, scores, softcap)
    biased = scores if bias is None else binary(ctx, "elementwise_add", scores, bias)

    precision = ctx.attr("softmax_precision")
    softmax_dtype = dtype
    if precision is not None:
        softmax_dtype = dtypes.to_fluidgrad(int(precision), ctx.where())
    probs = _guarded_softmax(ctx, cast(ctx, scores, softmax_dtype),
                             None if bias is None else cast(ctx, bias, softmax_dtype), bias_const, softmax_dtype)
    probs = cast(ctx, probs, dtype)
    y = ctx.op("matmul", {"X": probs, "Y": v})
    if three_d:
        y = ctx.op("reshape", {"X": ctx.op("transpose", {"X": y}, perm=[0, 2, 1, 3])}, shape=[0, 0, -1])
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    qk_out = {0: scores, 1: scores, 2: biased, 3: probs}[mode]
    return [y, present_k, present_v, qk_out]


def _modifier(ctx: Any, graph_attr: str, value: Any) -> Any:
    """Run the score_mod / prob_mod subgraph on `value` (its one input), inline."""
    graph = ctx.attr(graph_attr)
    if graph is None:
        return value
    if len(graph.input) != 1 or len(graph.output) != 1:
        raise ctx.unsupported(f"{graph_attr} must take one tensor and return one")
    body = ctx.subgraph(graph)
    body.env[graph.input[0].name] = value
    body.convert_nodes(ctx.opset)
    out = graph.output[0].name
    const = body.lookup_const(out)
    return ctx.constant(const) if const is not None else body.variable(out)


@converter("ai.onnx.preview:FlexAttention")
def _flex_attention(ctx):
    """Scores = Q K^T * scale, score_mod, softmax (in softmax_precision), prob_mod, then @ V."""
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    if len(q.shape) != 4 or min(q.shape[1], k.shape[1], q.shape[3]) < 0:
        raise ctx.unsupported(f"needs rank-4 Q, K, V with known head counts and sizes, got Q {list(q.shape)}")
    dtype = q.dtype
    precision = ctx.attr("softmax_precision")
    work = dtypes.to_fluidgrad(int(precision), ctx.where()) if precision is not None else \
        ("float64" if dtype == "float64" else "float32")
    heads = q.shape[1]
    k = _repeat_heads(ctx, k, heads // k.shape[1])
    v = _repeat_heads(ctx, v, heads // v.shape[1])
    scale = ctx.attr("scale")
    scale = 1.0 / np.sqrt(q.shape[3]) if scale is None else float(scale)
    scores = ctx.op("matmul", {"X": cast(ctx, q, work), "Y": cast(ctx, k, work)}, transpose_y=True)
    scores = binary(ctx, "elementwise_mul", scores, ctx.scalar(scale, work))
    probs = ctx.op("softmax", {"X": _modifier(ctx, "score_mod", scores)}, axis=-1)
    probs = cast(ctx, _modifier(ctx, "prob_mod", probs), dtype)
    return ctx.op("matmul", {"X": probs, "Y": v})
