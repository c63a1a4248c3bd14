"""Converters for convolution, pooling and normalisation (1-D and 2-D spatial, NCHW)."""
from __future__ import annotations

import math
from typing import Any, Sequence



from .convert_common import binary, normalize_axes
from .convert_table import converter


def _spatial_pads(ctx: Any, in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                  dilations: Sequence[int]) -> list[int]:
    """ONNX pads [x1_begin, x2_begin, ..., x1_end, ...], honouring auto_pad."""
    n = len(kernel)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", "") :
        return [int(p) for p in (ctx.attr("pads") or [0] * 2 * n)]
    if auto_pad == "VALID":
        return [0] * 2 * n
    begins, ends = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        if size < 0:
            raise ctx.unsupported(f"auto_pad={auto_pad} on an input of unknown size")
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def _as_2d(ctx: Any, x: Any) -> tuple[Any, bool]:
    """1-D spatial input (N, C, L) becomes (N, C, 1, L); 2-D passes; others are refused."""
    spatial = len(x.shape) - 2
    if spatial == 2:
        return x, False
    if spatial == 1:
        return ctx.op("unsqueeze", {"X": x}, axes=[2]), True
    raise ctx.unsupported(f"{spatial}-D spatial input {list(x.shape)}: fluidgrad has 2-D (and 1-D) kernels")


def _two(values: Sequence[int], was_1d: bool, fill: int) -> list[int]:
    return [fill] + list(values) if was_1d else list(values)


def _fluid_pads(pads: Sequence[int], was_1d: bool) -> list[int]:
    """ONNX [h_begin, w_begin, h_end, w_end] -> fluidgrad [top, bottom, left, right]."""
    if was_1d:
        return [0, 0, pads[0], pads[1]]
    return [pads[0], pads[2], pads[1], pads[3]]


@converter("Conv")
def _conv(ctx):
    x, w = ctx.input(0), ctx.input(1)
    kernel = ctx.attr("kernel_shape") or list(w.shape[2:])
    n = len(kernel)
    strides = ctx.attr("strides") or [1] * n
    dilations = ctx.attr("dilations") or [1] * n
    pads = _spatial_pads(ctx, x.shape[2:], kernel, strides, dilations)
    x2, was_1d = _as_2d(ctx, x)
    w2 = ctx.op("unsqueeze", {"X": w}, axes=[2]) if was_1d else w
    bias = ctx.input(2) if ctx.has_input(2) else None
    out = ctx.op("conv2d", {"Input": x2, "Filter": w2, "Bias": bias}, strides=_two(strides, was_1d, 1),
                 paddings=_fluid_pads(pads, was_1d), dilations=_two(dilations, was_1d, 1),
                 groups=int(ctx.attr("group", 1)))
    return ctx.op("squeeze", {"X": out}, axes=[2]) if was_1d else out


def _pool(ctx: Any, pooling_type: str) -> Any:
    x = ctx.input(0)
    kernel = list(ctx.attr("kernel_shape"))
    n = len(kernel)
    strides = ctx.attr("strides") or [1] * n
    dilations = ctx.attr("dilations") or [1] * n
    if any(d != 1 for d in dilations):
        raise ctx.unsupported(f"pooling with dilations {dilations}")
    pads = _spatial_pads(ctx, x.shape[2:], kernel, strides, dilations)
    if ctx.attr("ceil_mode", 0):
        pads = _ceil_pads(ctx, x.shape[2:], kernel, strides, pads, pooling_type)
    x2, was_1d = _as_2d(ctx, x)
    exclusive = not ctx.attr("count_include_pad", 0)
    out = ctx.op("pool2d", {"X": x2}, pooling_type=pooling_type, ksize=_two(kernel, was_1d, 1),
                 strides=_two(strides, was_1d, 1), paddings=_fluid_pads(pads, was_1d), exclusive=exclusive)
    out = ctx.op("squeeze", {"X": out}, axes=[2]) if was_1d else out
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise ctx.unsupported("the Indices output of MaxPool")
    return out


def _ceil_pads(ctx, sizes, kernel, strides, pads, pooling_type):
    """Ceil mode = extra padding at the end, for windows that start inside the input."""
    n = len(kernel)
    if pooling_type != "max" and ctx.attr("count_include_pad", 0):
        raise ctx.unsupported("ceil_mode with count_include_pad")
    ends = list(pads[n:])
    for i, (size, k, s) in enumerate(zip(sizes, kernel, strides)):
        if size < 0:
            raise ctx.unsupported("ceil_mode on an input of unknown size")
        padded = size + pads[i] + pads[n + i]
        out = math.ceil((padded - k) / s) + 1
        if (out - 1) * s >= size + pads[i]:
            out -= 1
        ends[i] += max((out - 1) * s + k - padded, 0)
    return list(pads[:n]) + ends


converter("MaxPool")(lambda ctx: _pool(ctx, "max"))
converter("AveragePool")(lambda ctx: _pool(ctx, "avg"))


def _global_pool(op_type: str):
    def convert(ctx):
        x = ctx.input(0)
        return ctx.op(op_type, {"X": x}, axis=list(range(2, len(x.shape))), keepdim=True)
    return convert


converter("GlobalAveragePool")(_global_pool("reduce_mean"))
converter("GlobalMaxPool")(_global_pool("reduce_max"))


@converter("BatchNormalization")
def _batch_norm(ctx):
    x = ctx.input(0)
    training = bool(ctx.attr("training_mode", 0)) if ctx.opset >= 14 else len(ctx.node.output) > 1
    inputs = {"X": x, "Scale": ctx.input(1), "Bias": ctx.input(2), "Mean": ctx.input(3), "Variance": ctx.input(4)}
    y, mean_out, var_out, _, _ = ctx.op("batch_norm", inputs, epsilon=float(ctx.attr("epsilon", 1e-5)),
                                         momentum=float(ctx.attr("momentum", 0.9)), is_test=not training)
    return [y, mean_out, var_out]


@converter("LayerNormalization")
def _layer_norm(ctx):
    x = ctx.input(0)
    axis = normalize_axes([ctx.attr("axis", -1)], len(x.shape))[0]
    scale = ctx.op("reshape", {"X": ctx.input(1)}, shape=[-1])
    bias = ctx.op("reshape", {"X": ctx.input(2)}, shape=[-1]) if ctx.has_input(2) else None
    y, mean, variance = ctx.op("layer_norm", {"X": x, "Scale": scale, "Bias": bias}, begin_norm_axis=axis,
                               epsilon=float(ctx.attr("epsilon", 1e-5)))
    if len(ctx.node.output) < 2:
        return y
    stats_shape = [d if d >= 0 else 0 for d in x.shape[:axis]] + [1] * (len(x.shape) - axis)
    mean = ctx.op("reshape", {"X": mean}, shape=stats_shape)
    eps = ctx.scalar(float(ctx.attr("epsilon", 1e-5)), x.dtype)
    inv_std = binary(ctx, "elementwise_div", ctx.scalar(1.0, x.dtype),
                     ctx.op("sqrt", {"X": binary(ctx, "elementwise_add", variance, eps)}))
    return [y, mean, ctx.op("reshape", {"X": inv_std}, shape=stats_shape)]


@converter("InstanceNormalization")
def _instance_norm(ctx):
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    axes = list(range(2, len(x.shape)))
    centred = binary(ctx, "elementwise_sub", x, ctx.op("reduce_mean", {"X": x}, axis=axes, keepdim=True))
    variance = ctx.op("reduce_mean", {"X": binary(ctx, "elementwise_mul", centred, centred)}, axis=axes, keepdim=True)
    eps = ctx.scalar(float(ctx.attr("epsilon", 1e-5)), x.dtype)
    normed = binary(ctx, "elementwise_div", centred, ctx.op("sqrt", {"X": binary(ctx, "elementwise_add", variance, eps)}))
    shape = [-1] + [1] * len(axes)
    out = binary(ctx, "elementwise_mul", normed, ctx.op("reshape", {"X": scale}, shape=shape))
    return binary(ctx, "elementwise_add", out, ctx.op("reshape", {"X": bias}, shape=shape))



