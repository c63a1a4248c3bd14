"""Shape-building ops: tile, expand, pad, flip, roll, range, linspace, repeat_index.

Each gradient is an op whose own gradient is the forward op again (tile <-> tile_grad,
pad <-> pad_grad, flip and roll are their own transposes), so grad of grad comes free.
"""
from __future__ import annotations

import math

import numpy as np

from .grad_builder import GradBuilder
from .registry import NO_GRADIENT, register_op
from .shape_rules import float_only, normalize_axis


# ---------------------------------------------------------------- tile
def _padded(shape, repeat_times):
    return [1] * (len(repeat_times) - len(shape)) + list(shape)


def _tile_infer(ctx):
    repeat = list(ctx.attr("repeat_times"))
    if any(r < 0 for r in repeat):
        raise ctx.shape_error(f"repeat_times {repeat} must not be negative")
    shape = list(ctx.shape("X"))
    repeat = [1] * (len(shape) - len(repeat)) + repeat
    ctx.set_output("Out", [d * r if d >= 0 else -1 for d, r in zip(_padded(shape, repeat), repeat)], ctx.dtype("X"))


def _grad_helper_infer(ctx):
    """tile_grad and pad_grad carry gradients: floating point only."""
    float_only(ctx, "X")
    ctx.set_output("Out", ctx.shape("Target"), ctx.dtype("X"))


def _tile_grad_kernel(dout, target, repeat_times):
    repeat = [1] * (dout.ndim - len(repeat_times)) + list(repeat_times)
    base = _padded(target.shape, repeat)
    interleaved = [n for pair in zip(repeat, base) for n in pair]
    return dout.reshape(interleaved).sum(axis=tuple(range(0, 2 * len(base), 2))).reshape(target.shape)


def _tile_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("tile_grad", {"X": g.output_grad("Out"), "Target": g.input_like("X")},
                               repeat_times=g.attr("repeat_times")))


register_op("tile", inputs="X", outputs="Out", attrs={"repeat_times": [1]},
            kernel=lambda x, repeat_times: np.tile(x, repeat_times), infer=_tile_infer,
            grad=_tile_grad,
            doc="X repeated repeat_times[i] times along axis i (leading axes added as needed).")


def _tile_grad_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("tile", {"X": g.output_grad("Out")},
                               repeat_times=g.attr("repeat_times")))


register_op("tile_grad", inputs="X Target", outputs="Out", attrs={"repeat_times": [1]},
            kernel=_tile_grad_kernel, infer=_grad_helper_infer,
            grad=_tile_grad_grad,
            doc="Sums the tiles of X back into Target's shape (the transpose of tile).")


# ---------------------------------------------------------------- expand (broadcast_to)
def _expanded_shape(x_shape, shape):
    lead = len(shape) - len(x_shape)
    return [x_shape[i - lead] if d == -1 and i >= lead else d for i, d in enumerate(shape)]


def _expand_kernel(x, shape_tensor, shape):
    if shape_tensor is not None:  # sizes computed at run time (expand_as of a traced unknown batch)
        shape = [int(d) for d in np.asarray(shape_tensor).reshape(-1)]
    try:
        return np.array(np.broadcast_to(x, _expanded_shape(x.shape, shape)))
    except ValueError:
        raise ValueError(f"expand: cannot expand X of shape {list(x.shape)} to {shape}") from None


def _expand_infer(ctx):
    x, shape = list(ctx.shape("X")), list(ctx.attr("shape"))
    lead = len(shape) - len(x)
    out = _expanded_shape(x, shape)
    if ctx.has_input("ShapeTensor"):  # `shape` holds the sizes known now, -1 for those computed at run time
        sizes = ctx.shape("ShapeTensor")
        if not ctx.dtype("ShapeTensor").startswith(("int", "uint")) or len(sizes) != 1 or \
                sizes[0] not in (-1, len(shape)):
            raise ctx.shape_error(f"ShapeTensor must be a 1-D integer tensor with {len(shape)} entries, got "
                                  f"{ctx.describe('ShapeTensor')}")
        out = list(shape)
        shape = [1 if d == -1 else d for d in shape]
    if lead < 0 or any(d == -1 for d in shape[:lead]) or any(
            d not in (1, out[i + lead]) and d != -1 and out[i + lead] != -1 for i, d in enumerate(x)):
        raise ctx.shape_error(f"cannot expand {ctx.describe('X')} to {shape}")
    ctx.set_output("Out", out, ctx.dtype("X"))


def _expand_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("reduce_as", {"X": g.output_grad("Out"), "Target": g.input_like("X")}))


register_op("expand", inputs="X ShapeTensor?", outputs="Out", attrs={"shape": [1]},
            kernel=_expand_kernel,
            infer=_expand_infer,
            grad=_expand_grad,
            doc="X broadcast to `shape` (-1 keeps X's size): paddle.expand / broadcast_to, ONNX Expand.")


# ---------------------------------------------------------------- pad
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "replicate", "edge": "replicate",
              "circular": "circular", "wrap": "circular"}


def _source_positions(n, before, after, mode):
    """For each position of the padded axis, the position of X it copies (-1: the constant)."""
    raw = np.arange(-before, n + after)
    if mode == "constant":
        return np.where((raw >= 0) & (raw < n), raw, -1)
    if mode == "replicate":
        return np.clip(raw, 0, n - 1)
    if mode == "circular":
        return raw % n
    if n == 1:
        return np.zeros_like(raw)
    period = 2 * (n - 1)
    folded = raw % period
    return np.where(folded < n, folded, period - folded)


def _pairs(paddings):
    return [(paddings[2 * i], paddings[2 * i + 1]) for i in range(len(paddings) // 2)]


def _constant_slices(shape, paddings):
    """Constant padding (negative sizes crop): the slices of X kept and where they land in Out."""
    kept, placed = [], []
    for n, (before, after) in zip(shape, _pairs(paddings)):
        lo, hi = max(0, -before), n - max(0, -after)
        kept.append(slice(lo, max(lo, hi)))
        placed.append(slice(max(0, before), max(0, before) + max(0, hi - lo)))
    return tuple(kept), tuple(placed)


def _pad_kernel(x, paddings, mode, value):
    mode = _PAD_MODES[mode]
    if mode == "constant":   # one fill and one slice copy, whatever the rank
        kept, placed = _constant_slices(x.shape, paddings)
        shape = [max(0, n + before + after) for n, (before, after) in zip(x.shape, _pairs(paddings))]
        out = np.full(shape, value, dtype=x.dtype) if value != 0 else np.zeros(shape, dtype=x.dtype)
        out[placed] = x[kept]
        return out
    if _few_edge_slices(paddings):
        return _pad_by_slices(x, paddings, mode)
    out = x
    for axis, (before, after) in enumerate(_pairs(paddings)):
        if before or after:
            out = np.take(out, _source_positions(out.shape[axis], before, after, mode), axis=axis)
    return out if out is not x else x.copy()


_EDGE_SLICES = 8   # per axis; beyond it (long reflections), one gather per axis


def _few_edge_slices(paddings) -> bool:
    return all(0 <= before and 0 <= after and before + after <= _EDGE_SLICES for before, after in _pairs(paddings))


def _edge_slices(shape, paddings, mode):
    """For each padded axis in order, each pad position and the interior position it copies,
    as index tuples into the padded array: earlier axes span their padded extent, later ones
    their interior (so, in order, every pad copies an already-filled position)."""
    pairs = _pairs(paddings)
    interior = [slice(before, before + n) for n, (before, _) in zip(shape, pairs)]
    for axis, (n, (before, after)) in enumerate(zip(shape, pairs)):
        src = _source_positions(n, before, after, mode)
        for pos in list(range(before)) + list(range(before + n, before + n + after)):
            lead, tail = [slice(None)] * axis, interior[axis + 1:]
            yield tuple(lead + [pos] + tail), tuple(lead + [before + int(src[pos])] + tail)


def _pad_by_slices(x, paddings, mode):
    """Reflect / replicate / circular with short pads: the interior in one copy, each pad
    position one slice copy (np.take's gather per axis costs a full pass each)."""
    pairs = _pairs(paddings)
    out = np.empty([n + before + after for n, (before, after) in zip(x.shape, pairs)], dtype=x.dtype)
    out[tuple(slice(before, before + n) for n, (before, _) in zip(x.shape, pairs))] = x
    for pad, source in _edge_slices(x.shape, paddings, mode):
        out[pad] = out[source]
    return out


def _pad_grad_kernel(dout, target, paddings, mode, value):
    """Each padded position sends its gradient back to the position it copied."""
    mode = _PAD_MODES[mode]
    if mode == "constant":   # the kept part, back where it came from
        kept, placed = _constant_slices(target.shape, paddings)
        if all(k.start == 0 and k.stop == n for k, n in zip(kept, target.shape)):
            return np.asarray(dout[placed], order="C")  # (ascontiguousarray would make a 0-D value 1-D)
        out = np.zeros(target.shape, dtype=dout.dtype)
        out[kept] = dout[placed]
        return out
    if _few_edge_slices(paddings):   # each pad position's gradient added back, last axis first
        grad = dout.copy()
        for pad, source in reversed(list(_edge_slices(target.shape, paddings, mode))):
            grad[source] += grad[pad]
        return np.asarray(grad[tuple(slice(before, before + n) for n, (before, _)
                                   in zip(target.shape, _pairs(paddings)))], order="C")
    out = dout
    for axis, (before, after) in enumerate(_pairs(paddings)):
        if before == after == 0:
            continue
        n = target.shape[axis]
        src = _source_positions(n, before, after, mode)
        picks = np.zeros((n, len(src)), dtype=dout.dtype)
        kept = np.flatnonzero(src >= 0)
        picks[src[kept], kept] = 1
        out = np.moveaxis(np.tensordot(picks, np.moveaxis(out, axis, 0), axes=1), 0, axis)
    return out if out is not dout else dout.copy()


def _pad_infer(ctx):
    shape, paddings, mode = list(ctx.shape("X")), list(ctx.attr("paddings")), ctx.attr("mode")
    if len(paddings) != 2 * len(shape):
        raise ctx.shape_error(f"paddings {paddings} must give (before, after) for each axis of {ctx.describe('X')}")
    if mode not in _PAD_MODES:
        raise ctx.shape_error(f"mode {mode!r} is not one of {sorted(_PAD_MODES)}")
    out = []
    for axis, (d, (before, after)) in enumerate(zip(shape, _pairs(paddings))):
        if d == 0 and (before or after) and _PAD_MODES[mode] != "constant":
            raise ctx.shape_error(f"cannot pad the empty axis {axis} of {ctx.describe('X')} in mode {mode!r}")
        if d >= 0 and d + before + after < 0:
            raise ctx.shape_error(f"paddings {before}, {after} crop more than axis {axis} of {ctx.describe('X')}")
        out.append(d + before + after if d >= 0 else -1)
    ctx.set_output("Out", out, ctx.dtype("X"))


_PAD_ATTRS = {"paddings": [0, 0], "mode": "constant", "value": 0.0}


def _pad_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("pad_grad", {"X": g.output_grad("Out"), "Target": g.input_like("X")},
                               paddings=g.attr("paddings"), mode=g.attr("mode")))


register_op("pad", inputs="X", outputs="Out", attrs=_PAD_ATTRS, kernel=_pad_kernel, infer=_pad_infer,
            grad=_pad_grad,
            doc="Pads (or, with negative sizes, crops) every axis: paddings = [before0, after0, before1, "
                "...]; mode constant, reflect, replicate (edge) or circular (wrap). Reflection and wrapping "
                "repeat when a padding is longer than the axis.")


def _pad_grad_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("pad", {"X": g.output_grad("Out")}, paddings=g.attr("paddings"),
                               mode=g.attr("mode"), value=0.0))


register_op("pad_grad", inputs="X Target", outputs="Out", attrs=_PAD_ATTRS, kernel=_pad_grad_kernel,
            infer=_grad_helper_infer,
            grad=_pad_grad_grad,
            doc="The transpose of pad: each padded position's gradient goes to the position it copied.")


# ---------------------------------------------------------------- flip / roll
def _axes_infer(ctx, axes):
    for axis in axes:
        normalize_axis(ctx, axis, len(ctx.shape("X")))
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _flip_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("flip", {"X": g.output_grad("Out")}, axis=g.attr("axis")))


register_op("flip", inputs="X", outputs="Out", attrs={"axis": [0]},
            kernel=lambda x, axis: np.flip(x, tuple(axis) if x.ndim else ()).copy(),  # 0-D: axis 0 / -1 allowed
            infer=lambda ctx: _axes_infer(ctx, ctx.attr("axis")),
            grad=_flip_grad,
            doc="X reversed along each of `axis`.")


def _roll_kernel(x, shifts, axis):
    if not axis:
        return np.roll(x.reshape(-1), shifts).reshape(x.shape)
    return np.roll(x, shifts, tuple(axis))


def _roll_infer(ctx):
    shifts, axis = ctx.attr("shifts"), ctx.attr("axis")
    if axis and len(shifts) != len(axis):
        raise ctx.shape_error(f"shifts {shifts} and axis {axis} must have one length")
    if not axis and len(shifts) != 1:
        raise ctx.shape_error(f"without axis, roll takes one shift, got {shifts}")
    _axes_infer(ctx, axis)


def _roll_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("roll", {"X": g.output_grad("Out")},
                               shifts=[-s for s in g.attr("shifts")], axis=g.attr("axis")))


register_op("roll", inputs="X", outputs="Out", attrs={"shifts": [0], "axis": []}, kernel=_roll_kernel,
            infer=_roll_infer,
            grad=_roll_grad,
            doc="X shifted cyclically by shifts[i] along axis[i] (no axis: over the flattened X).")


# ---------------------------------------------------------------- range / linspace
def _range_length(start, end, step):
    return max(0, math.ceil((end - start) / step))


def _range_infer(ctx):
    start, end, step = ctx.attr("start"), ctx.attr("end"), ctx.attr("step")
    if step == 0:
        raise ctx.shape_error("step must not be 0")
    ctx.set_output("Out", [_range_length(start, end, step)], ctx.attr("dtype"))


def _range_kernel(start, end, step, dtype):
    n = _range_length(start, end, step)
    return (start + np.arange(n, dtype=np.float64 if isinstance(step, float) or isinstance(start, float)
                              else np.int64) * step).astype(dtype)


register_op("range", inputs=(), outputs="Out", attrs={"start": 0, "end": 1, "step": 1, "dtype": "int64"},
            kernel=_range_kernel, infer=_range_infer, grad=NO_GRADIENT,
            doc="start, start + step, ... up to end (excluded): ONNX Range, paddle.arange.")


def _linspace_kernel(start, stop, num, dtype):
    """PyTorch's formula: the first half counts up from start, the second down from stop."""
    if num == 1:
        return np.array([start], dtype=dtype)
    step = (stop - start) / (num - 1)
    i = np.arange(num, dtype=np.float64)
    half = num // 2
    out = np.where(i < half, start + step * i, stop - step * (num - 1 - i))
    return out.astype(dtype) if np.dtype(dtype).kind == "f" else np.trunc(out).astype(dtype)


def _linspace_infer(ctx):
    if ctx.attr("num") < 0:
        raise ctx.shape_error(f"num must not be negative, got {ctx.attr('num')}")
    ctx.set_output("Out", [ctx.attr("num")], ctx.attr("dtype"))


register_op("linspace", inputs=(), outputs="Out", attrs={"start": 0.0, "stop": 1.0, "num": 2, "dtype": "float32"},
            kernel=_linspace_kernel, infer=_linspace_infer, grad=NO_GRADIENT,
            doc="num evenly spaced values from start to stop, both included.")


def _eye_columns(num_rows, num_columns):
    return num_rows if num_columns < 0 else num_columns


def _eye_infer(ctx):
    rows, columns = ctx.attr("num_rows"), ctx.attr("num_columns")
    if rows < 0:
        raise ctx.shape_error(f"num_rows must not be negative, got {rows}")
    ctx.set_output("Out", [rows, _eye_columns(rows, columns)], ctx.attr("dtype"))


register_op("eye", inputs=(), outputs="Out", attrs={"num_rows": 1, "num_columns": -1, "dtype": "float32"},
            kernel=lambda num_rows, num_columns, dtype: np.eye(num_rows, _eye_columns(num_rows, num_columns),
                                                               dtype=dtype),
            infer=_eye_infer, grad=NO_GRADIENT,
            doc="The identity matrix [num_rows, num_columns] (num_columns -1: square), paddle.eye.")


# ---------------------------------------------------------------- repeat_index (repeat_interleave)
def _repeat_index_kernel(x, repeats_tensor, repeats, axis):
    n = x.shape[axis]
    counts = repeats if repeats_tensor is None else np.asarray(repeats_tensor).reshape(-1)
    if repeats_tensor is not None and counts.size not in (1, n):
        raise ValueError(f"repeat_interleave: {counts.size} repeats for axis {axis} of size {n}")
    if np.any(np.asarray(counts) < 0):
        raise ValueError(f"repeat_interleave: repeats must not be negative, got {counts}")
    return np.repeat(np.arange(n, dtype=np.int64), counts)


def _repeat_index_infer(ctx):
    shape = ctx.shape("X")
    axis = normalize_axis(ctx, ctx.attr("axis"), len(shape))
    if ctx.has_input("Repeats"):
        if not ctx.dtype("Repeats").startswith(("int", "uint")):
            raise ctx.dtype_error(f"Repeats must be integers, got {ctx.describe('Repeats')}")
        length = -1
    else:
        length = shape[axis] * ctx.attr("repeats") if shape[axis] >= 0 else -1
    ctx.set_output("Out", [length], "int64")


register_op("repeat_index", inputs="X Repeats?", outputs="Out", attrs={"repeats": 1, "axis": 0},
            kernel=_repeat_index_kernel, infer=_repeat_index_infer, grad=NO_GRADIENT,
            doc="Positions 0, 0, 1, 1, ... along X's axis, each repeated (Repeats[i] or `repeats` times): "
                "gathering them is repeat_interleave, whose gradient is then gather's.")

