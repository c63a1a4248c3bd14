"""DeformConv (2-D): each kernel tap samples the input bilinearly at its offset position (the
grid_sample composition, zeros outside), scaled by the mask; the sampled columns then meet the
filters in one grouped matmul. Differentiable in the input, the offsets, the mask and W."""
from __future__ import annotations

import numpy as np

from ..nn.functional.sampling import sample_grid
from .convert_common import binary
from .convert_table import converter


def _slice(ctx, x, axis: int, start: int, stop: int):
    return ctx.op("slice", {"X": x}, axes=[axis], starts=[start], ends=[stop])


@converter("DeformConv")
def _deform_conv(ctx):
    x, w, offset = ctx.input(0), ctx.input(1), ctx.input(2)
    if len(x.shape) != 4 or min(list(x.shape) + list(w.shape) + list(offset.shape)) < 0:
        raise ctx.unsupported(f"needs a 4-D input with static shapes, got X {list(x.shape)}, "
                              f"offset {list(offset.shape)}")
    batch, channels, height, width = x.shape
    out_channels, _, kh, kw = w.shape
    out_h, out_w = offset.shape[2:]
    group, offset_group = int(ctx.attr("group", 1)), int(ctx.attr("offset_group", 1))
    sh, sw = [int(s) for s in (ctx.attr("strides") or [1, 1])]
    dh, dw = [int(d) for d in (ctx.attr("dilations") or [1, 1])]
    top, left = [int(p) for p in (ctx.attr("pads") or [0, 0, 0, 0])][:2]
    offset = ctx.op("reshape", {"X": offset}, shape=[batch, offset_group, kh * kw, 2, out_h, out_w])
    mask = None
    if ctx.has_input(4):
        mask = ctx.op("reshape", {"X": ctx.input(4)}, shape=[batch, offset_group, kh * kw, 1, out_h, out_w])
    per_group = channels // offset_group
    rows = (np.arange(out_h) * sh - top).reshape(out_h, 1)
    cols = (np.arange(out_w) * sw - left).reshape(1, out_w)
    columns = []
    for g in range(offset_group):
        x_g = _slice(ctx, x, 1, g * per_group, (g + 1) * per_group)
        taps = []
        for k in range(kh * kw):
            i, j = divmod(k, kw)
            shift = ctx.op("reshape", {"X": _slice(ctx, _slice(ctx, offset, 1, g, g + 1), 2, k, k + 1)},
                           shape=[batch, 2, out_h, out_w])
            dy, dx = ctx.op("split", {"X": shift}, n_out=2, num_or_sections=2, axis=1)
            y = binary(ctx, "elementwise_add", dy, ctx.constant((rows + i * dh + 0 * cols).astype(x.dtype)))
            x_pos = binary(ctx, "elementwise_add", dx, ctx.constant((cols + j * dw + 0 * rows).astype(x.dtype)))
            gy = ctx.op("scale", {"X": y}, scale=2.0 / (height - 1), bias=-1.0)
            gx = ctx.op("scale", {"X": x_pos}, scale=2.0 / (width - 1), bias=-1.0)
            grid = ctx.op("transpose", {"X": ctx.op("concat", {"X": [gx, gy]}, axis=1)}, perm=[0, 2, 3, 1])
            sampled = sample_grid(x_g, grid, "linear", "zeros", True, onnx_rules=True)   # (N, Cg, oH, oW)
            if mask is not None:
                m = ctx.op("reshape", {"X": _slice(ctx, _slice(ctx, mask, 1, g, g + 1), 2, k, k + 1)},
                           shape=[batch, 1, out_h, out_w])
                sampled = binary(ctx, "elementwise_mul", sampled, m)
            taps.append(sampled)
        columns.append(ctx.op("stack", {"X": taps}, axis=2))                         # (N, Cg, K, oH, oW)
    stacked = columns[0] if len(columns) == 1 else ctx.op("concat", {"X": columns}, axis=1)
    patches = ctx.op("reshape", {"X": stacked}, shape=[batch, group, channels // group * kh * kw, out_h * out_w])
    filters = ctx.op("reshape", {"X": w}, shape=[group, out_channels // group, -1])
    out = ctx.op("reshape", {"X": ctx.op("matmul", {"X": filters, "Y": patches})},
                 shape=[batch, out_channels, out_h, out_w])
    if ctx.has_input(3):
        out = binary(ctx, "elementwise_add", out, ctx.op("reshape", {"X": ctx.input(3)}, shape=[-1, 1, 1]))
    return out
