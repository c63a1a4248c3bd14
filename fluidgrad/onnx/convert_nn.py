"""Converters for convolution, pooling and normalisation (1-D and 2-D spatial, NCHW)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .convert_common import binary, cast, mul_scalar, normalize_axes, via_float
from .convert_table import converter


def _pairs(onnx_pads: Sequence[int], n: int) -> list[int]:
    """ONNX [x1_begin, x2_begin, ..., x1_end, ...] -> fluidgrad [lo0, hi0, lo1, hi1, ...]."""
    pads = list(onnx_pads) or [0] * 2 * n
    return [int(v) for i in range(n) for v in (pads[i], pads[n + i])]


def _window_attrs(ctx: Any, n: int) -> dict:
    """strides, dilations, paddings and padding_algorithm of a Conv / pooling node."""
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    algorithm = {"NOTSET": "EXPLICIT", "VALID": "VALID", "SAME_UPPER": "SAME_UPPER",
                 "SAME_LOWER": "SAME_LOWER"}[auto_pad]
    return dict(strides=[int(s) for s in (ctx.attr("strides") or [1] * n)],
                dilations=[int(d) for d in (ctx.attr("dilations") or [1] * n)],
                paddings=_pairs(ctx.attr("pads") or [], n), padding_algorithm=algorithm)


def _spatial_rank(ctx: Any, x: Any) -> int:
    n = len(x.shape) - 2
    if n not in (1, 2, 3):
        raise ctx.unsupported(f"{n}-D spatial input {list(x.shape)}: fluidgrad has 1-D, 2-D and 3-D kernels")
    return n


@converter("Conv")
def _conv(ctx):
    x, w = ctx.input(0), ctx.input(1)
    n = _spatial_rank(ctx, x)
    bias = ctx.input(2) if ctx.has_input(2) else None
    return ctx.op(f"conv{n}d", {"Input": x, "Filter": w, "Bias": bias}, groups=int(ctx.attr("group", 1)),
                  **_window_attrs(ctx, n))


@converter("ConvTranspose")
def _conv_transpose(ctx):
    x, w = ctx.input(0), ctx.input(1)
    n = _spatial_rank(ctx, x)
    if ctx.attr("output_shape") is not None:
        raise ctx.unsupported("ConvTranspose with output_shape (give pads and output_padding)")
    if (ctx.attr("auto_pad", "NOTSET") or "NOTSET") not in ("NOTSET", "VALID"):
        raise ctx.unsupported(f"ConvTranspose with auto_pad={ctx.attr('auto_pad')}")
    attrs = _window_attrs(ctx, n)
    attrs["padding_algorithm"] = "EXPLICIT"
    bias = ctx.input(2) if ctx.has_input(2) else None
    return ctx.op(f"conv{n}d_transpose", {"Input": x, "Filter": w, "Bias": bias}, groups=int(ctx.attr("group", 1)),
                  output_padding=[int(p) for p in (ctx.attr("output_padding") or [0] * n)], **attrs)


def _pool(ctx: Any, pooling_type: str) -> Any:
    x = ctx.input(0)
    n = _spatial_rank(ctx, x)
    attrs = _window_attrs(ctx, n)
    if pooling_type == "max" and len(ctx.node.output) > 1 and ctx.node.output[1]:
        return _max_pool_with_indices(ctx, x, n, attrs)
    if pooling_type == "avg" and ctx.opset < 19:
        attrs["dilations"] = [1] * n
    if pooling_type == "max" and not x.dtype.startswith("float"):   # exact through float64
        return via_float(ctx, x, lambda v: ctx.op(f"pool{n}d", {"X": v}, pooling_type="max",
                                                   ksize=[int(k) for k in ctx.attr("kernel_shape")],
                                                   ceil_mode=bool(ctx.attr("ceil_mode", 0)), **attrs))
    return ctx.op(f"pool{n}d", {"X": x}, pooling_type=pooling_type, ksize=[int(k) for k in ctx.attr("kernel_shape")],
                  exclusive=not ctx.attr("count_include_pad", 0), ceil_mode=bool(ctx.attr("ceil_mode", 0)), **attrs)


def _max_pool_with_indices(ctx: Any, x: Any, n: int, attrs: dict) -> list:
    """MaxPool with its Indices output: fluidgrad's argmax within each plane, made a flat index
    into the whole tensor (row-major, or column-major planes for storage_order=1)."""
    if any(d < 0 for d in x.shape[2:]):
        raise ctx.unsupported(f"the Indices output needs static spatial sizes, got {list(x.shape)}")
    y, mask = ctx.op(f"max_pool{n}d_with_index", {"X": x}, ksize=[int(k) for k in ctx.attr("kernel_shape")],
                     ceil_mode=bool(ctx.attr("ceil_mode", 0)), **attrs)
    mask = cast(ctx, mask, "int64")
    spatial = list(x.shape[2:])
    if int(ctx.attr("storage_order", 0)) == 1 and n == 2:
        rows = binary(ctx, "elementwise_floordiv", mask, ctx.scalar(spatial[1], "int64"))
        cols = binary(ctx, "elementwise_mod", mask, ctx.scalar(spatial[1], "int64"))
        mask = binary(ctx, "elementwise_add", rows, binary(ctx, "elementwise_mul", cols,
                                                            ctx.scalar(spatial[0], "int64")))
    plane_size = int(np.prod(spatial))
    if x.shape[0] >= 0 and x.shape[1] >= 0:
        planes = ctx.constant(np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(
            [x.shape[0], x.shape[1]] + [1] * n) * plane_size)
    else:
        planes = mul_scalar(ctx, _plane_numbers(ctx, mask, n), plane_size)
    return [y, binary(ctx, "elementwise_add", mask, planes)]


def _plane_numbers(ctx: Any, mask: Any, n: int) -> Any:
    """0, 1, 2, ... over the N*C planes of `mask` (shape [N, C, 1, ...]) for an N or C known only
    at run time: an exclusive running count of ones."""
    ones = ctx.op("reduce_max", {"X": ctx.op("fill_any_like", {"X": mask}, value=1.0, dtype="int64")},
                  axis=list(range(2, 2 + n)), keepdim=True)
    count = ctx.op("cumsum", {"X": ctx.op("reshape", {"X": ones}, shape=[-1])}, axis=0, exclusive=True)
    return ctx.op("reshape_as", {"X": count, "Target": ones})


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





from . import convert_attention, convert_deform, convert_loss, convert_resize, convert_rnn, convert_sampling  # noqa: E402,F401,E501  (the NN converters kept in their own files register too)


@converter("LpPool")
def _lp_pool(ctx):
    """(sum over the window of |x|^p)^(1/p): an average pool of |x|^p (padding counted as
    zeros) times the window size."""
    x = ctx.input(0)
    n = _spatial_rank(ctx, x)
    p = float(ctx.attr("p", 2))
    ksize = [int(k) for k in ctx.attr("kernel_shape")]
    powered = ctx.op("elementwise_pow", {"X": ctx.op("abs", {"X": x}), "Y": ctx.scalar(p, x.dtype)})
    avg = ctx.op(f"pool{n}d", {"X": powered}, pooling_type="avg", ksize=ksize, exclusive=False,
                 ceil_mode=bool(ctx.attr("ceil_mode", 0)), **_window_attrs(ctx, n))
    total = binary(ctx, "elementwise_mul", avg, ctx.scalar(float(np.prod(ksize)), x.dtype))
    return ctx.op("elementwise_pow", {"X": total, "Y": ctx.scalar(1.0 / p, x.dtype)})


@converter("GlobalLpPool")
def _global_lp_pool(ctx):
    """(sum over all spatial positions of |x|^p)^(1/p), kept as 1 x 1 planes."""
    x = ctx.input(0)
    p = float(ctx.attr("p", 2))
    powered = ctx.op("elementwise_pow", {"X": ctx.op("abs", {"X": x}), "Y": ctx.scalar(p, x.dtype)})
    total = ctx.op("reduce_sum", {"X": powered}, axis=list(range(2, len(x.shape))), keepdim=True)
    return ctx.op("elementwise_pow", {"X": total, "Y": ctx.scalar(1.0 / p, x.dtype)})


def _image_shape(ctx, x):
    if len(x.shape) != 4 or any(d < 0 for d in x.shape[1:]):
        raise ctx.unsupported(f"an input {list(x.shape)} (4-D, with known channels and spatial sizes)")
    return x.shape


def _blocks(ctx, x, shape, perm, out_shape):
    """reshape -> transpose -> reshape, the batch (entry 0) copied so that it may be unknown."""
    moved = ctx.op("transpose", {"X": ctx.op("reshape", {"X": x}, shape=[0] + shape)}, perm=perm)
    return ctx.op("reshape", {"X": moved}, shape=[0] + out_shape)


@converter("DepthToSpace")
def _depth_to_space(ctx):
    """Channels into b x b blocks of pixels (PixelShuffle): DCR reads the block index first, CRD last."""
    x, b = ctx.input(0), int(ctx.attr("blocksize"))
    _, c, h, w = _image_shape(ctx, x)
    if c % (b * b):
        raise ctx.unsupported(f"{c} channels are not a multiple of blocksize^2 = {b * b}")
    if ctx.attr("mode", "DCR") == "CRD":
        return _blocks(ctx, x, [c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3], [c // (b * b), h * b, w * b])
    return _blocks(ctx, x, [b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2], [c // (b * b), h * b, w * b])


@converter("SpaceToDepth")
def _space_to_depth(ctx):
    """b x b blocks of pixels into channels (DCR: block index first; CRD: last, PixelUnshuffle)."""
    x, b = ctx.input(0), int(ctx.attr("blocksize"))
    _, c, h, w = _image_shape(ctx, x)
    if h % b or w % b:
        raise ctx.unsupported(f"spatial sizes {h} x {w} are not multiples of blocksize {b}")
    perm = [0, 1, 3, 5, 2, 4] if ctx.attr("mode", "DCR") == "CRD" else [0, 3, 5, 1, 2, 4]
    return _blocks(ctx, x, [c, h // b, b, w // b, b], perm, [c * b * b, h // b, w // b])


@converter("LpNormalization")
def _lp_normalization(ctx):
    """x / ||x||_p along `axis` (p = 1 or 2); a zero norm gives zeros."""
    x = ctx.input(0)
    axis = normalize_axes([ctx.attr("axis", -1)], len(x.shape))[0]
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.unsupported(f"p={p} (ONNX allows 1 and 2)")
    if p == 1:
        norm = ctx.op("reduce_sum", {"X": ctx.op("abs", {"X": x})}, axis=[axis], keepdim=True)
    else:
        norm = ctx.op("sqrt", {"X": ctx.op("reduce_sum", {"X": binary(ctx, "elementwise_mul", x, x)},
                                           axis=[axis], keepdim=True)})
    zero = ctx.scalar(0.0, x.dtype)
    is_zero = binary(ctx, "equal", norm, zero)
    safe = ctx.op("where", {"Condition": is_zero, "X": ctx.scalar(1.0, x.dtype), "Y": norm})
    return ctx.op("where", {"Condition": is_zero, "X": zero, "Y": binary(ctx, "elementwise_div", x, safe)})


@converter("CausalConvWithState")
def _causal_conv_with_state(ctx):
    """Depthwise causal conv1d over [past_state, input]; the last k-1 steps are the new state."""
    x, w = ctx.input(0), ctx.input(1)
    batch, channels, length = x.shape
    k = w.shape[2]
    if min(batch, channels, length, k) < 0:
        raise ctx.unsupported(f"unknown dimensions in input {list(x.shape)} or weight {list(w.shape)}")
    past = ctx.input(3) if ctx.has_input(3) else \
        ctx.op("fill_constant", {}, shape=[batch, channels, k - 1], value=0.0, dtype=x.dtype)
    padded = ctx.op("concat", {"X": [past, x]}, axis=2) if k > 1 else x
    bias = ctx.input(2) if ctx.has_input(2) else None
    y = ctx.op("conv1d", {"Input": padded, "Filter": w, "Bias": bias}, groups=channels, strides=[1], dilations=[1],
               paddings=[0, 0], padding_algorithm="EXPLICIT")
    if (ctx.attr("activation", "none") or "none") in ("silu", "swish"):
        y = ctx.op("silu", {"X": y})
    total = length + k - 1
    state = ctx.op("slice", {"X": padded}, axes=[2], starts=[total - (k - 1)], ends=[total])
    return [y, state]


@converter("Col2Im")
def _col2im(ctx):
    """col2im (fold): `unfold_grad` adds each window's column back into the image (2-D images)."""
    x = ctx.input(0)
    image = [int(v) for v in ctx.const(1, "image_shape")]
    block = [int(v) for v in ctx.const(2, "block_shape")]
    if len(image) != 2:
        raise ctx.unsupported(f"{len(image)}-D images (fluidgrad's unfold is 2-D)")
    batch, columns = x.shape[0], x.shape[1]
    if batch < 0 or columns < 0:
        raise ctx.unsupported(f"unknown dimensions in input {list(x.shape)}")
    channels = columns // int(np.prod(block))
    like = ctx.op("fill_constant", {}, shape=[batch, channels] + image, value=0.0, dtype=x.dtype)
    return ctx.op("unfold_grad", {"DY": x, "X": like}, kernel_sizes=block,
                  strides=[int(s) for s in (ctx.attr("strides") or [1, 1])],
                  dilations=[int(d) for d in (ctx.attr("dilations") or [1, 1])],
                  paddings=_pairs(ctx.attr("pads") or [], 2))
