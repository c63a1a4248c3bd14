"""Softmax and the cross-entropy losses."""
from __future__ import annotations

import numpy as np

from . import fused_softmax
from .grad_builder import GradBuilder
from .registry import ZERO_GRADIENT, register_op
from .shape_rules import float_only, normalize_axis, same_dtype


def _narrow(array) -> bool:
    """float16 / bfloat16 (bfloat16 is NumPy kind "V", from ml_dtypes)."""
    return getattr(array, "dtype", None) is not None and array.dtype.itemsize < 4 and array.dtype.kind in "fV"


def in_float32(kernel):
    """`kernel` computed in float32 for float16 / bfloat16 inputs, each output rounded once at the
    end (as PyTorch's kernels): a row sum over 1000 classes in bfloat16 is off by percents."""
    def wide(*args, **attrs):
        narrow = next((a.dtype for a in args if _narrow(a)), None)
        if narrow is None:
            return kernel(*args, **attrs)
        out = kernel(*[a.astype(np.float32) if _narrow(a) else a for a in args], **attrs)
        if isinstance(out, tuple):
            return tuple(o.astype(narrow) if o.dtype == np.float32 else o for o in out)
        return out.astype(narrow) if out.dtype == np.float32 else out
    wide.__name__, wide.__doc__ = kernel.__name__, kernel.__doc__
    return wide


def row_max(x, axis=-1):
    """max(x, axis, keepdims=True). NumPy reduces a short, contiguous last axis slowly (a call
    per row); across rows of a transposed copy it is one vectorised pass, 2-3x faster for the
    rows of attention scores and of a small vocabulary."""
    if axis % x.ndim == x.ndim - 1 and 1 < x.shape[-1] <= 64 and x.size >= 64 * x.shape[-1] \
            and x.flags.c_contiguous:
        rows = x.reshape(-1, x.shape[-1])
        return np.ascontiguousarray(rows.T).max(axis=0).reshape(x.shape[:-1] + (1,))
    return x.max(axis=axis, keepdims=True)


def row_sum(x, axis=-1):
    """sum(x, axis, keepdims=True); a float last axis as one matrix-vector product (BLAS)."""
    if axis % x.ndim == x.ndim - 1 and x.dtype in (np.float32, np.float64) and x.ndim > 1:
        return np.matmul(x, np.ones(x.shape[-1], dtype=x.dtype))[..., None]
    return x.sum(axis=axis, keepdims=True)


def _softmax_kernel(x, axis=-1):
    """One output buffer: shift, exponentiate and normalise in place."""
    if x.size == 0:  # nothing to normalise (x.max would raise): an empty result, as in PyTorch
        return x.copy()
    if x.ndim == 0:  # one value along its own axis (as PyTorch): 1
        return np.ones_like(x)
    if fused_softmax.compiled(x, axis=axis):
        return fused_softmax.softmax(x)
    out = np.subtract(x, row_max(x, axis))
    np.exp(out, out=out)
    out /= row_sum(out, axis)
    return out


def _softmax_infer(ctx):
    float_only(ctx, "X")
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("X")))
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _row_dot(a, b, axis):
    """sum(a * b, axis, keepdims=True) without the product's temporary on the last axis."""
    if axis % a.ndim == a.ndim - 1 and a.shape == b.shape and a.dtype.kind == "f":  # not bfloat16
        return np.einsum("...i,...i->...", a, b)[..., None]
    return np.multiply(a, b).sum(axis=axis, keepdims=True)


def _softmax_grad_kernel(out, dout, axis=-1):
    """DX = Out * (DOut - sum(DOut * Out, axis)), in one output buffer."""
    if out.ndim == 0:  # a 0-D softmax is constant 1
        return np.zeros_like(dout)
    if fused_softmax.compiled(out, dout, axis=axis) and out.shape == dout.shape:
        return fused_softmax.softmax_grad(out, dout)
    dx = np.subtract(dout, _row_dot(dout, out, axis))
    dx *= out
    return dx


def _softmax_vjp(g, out, dout, axis):
    """out * (dout - sum(dout * out, axis)): the softmax Jacobian applied to dout (one fused op)."""
    return g.op("softmax_grad", {"Out": out, "DOut": dout}, axis=axis)


def _softmax_grad_grad(g: GradBuilder) -> None:
    """DX is linear in DOut (its gradient is softmax_grad again). In Out, with s = sum(DOut Out)
    and t = sum(G Out): dOut = G (DOut - s) - DOut t."""
    out, dout, cotangent, axis = g.input("Out"), g.input("DOut"), g.output_grad("DX"), g.attr("axis")
    if g.needs_input_grad("DOut"):
        g.set_input_grad("DOut", _softmax_vjp(g, out, cotangent, axis))
    if g.needs_input_grad("Out"):
        def row_sum(a, b):
            return g.op("reduce_sum", {"X": g.op("elementwise_mul", {"X": a, "Y": b})}, axis=[axis], keepdim=True)
        first = g.op("elementwise_mul", {"X": cotangent,
                                         "Y": g.op("elementwise_sub", {"X": dout, "Y": row_sum(dout, out)})})
        second = g.op("elementwise_mul", {"X": dout, "Y": row_sum(cotangent, out)})
        g.set_input_grad("Out", g.op("elementwise_sub", {"X": first, "Y": second}))


def _softmax_grad_infer(ctx):
    float_only(ctx, "Out", "DOut")
    if ctx.shape("Out") != ctx.shape("DOut") or ctx.dtype("Out") != ctx.dtype("DOut"):
        raise ctx.shape_error(f"Out and DOut must match, got {ctx.describe('Out')} and {ctx.describe('DOut')}")
    normalize_axis(ctx, ctx.attr("axis"), len(ctx.shape("Out")), "Out")
    ctx.set_output("DX", ctx.shape("DOut"), ctx.dtype("DOut"))


def _softmax_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", _softmax_vjp(g, g.output("Out"), g.output_grad("Out"),
                                       g.attr("axis")))


register_op("softmax", inputs="X", outputs="Out", attrs={"axis": -1}, kernel=in_float32(_softmax_kernel),
            infer=_softmax_infer,
            grad=_softmax_grad)
register_op("softmax_grad", inputs="Out DOut", outputs="DX", attrs={"axis": -1}, kernel=in_float32(_softmax_grad_kernel),
            infer=_softmax_grad_infer, grad=_softmax_grad_grad,
            doc="The gradient of softmax from its output: Out * (DOut - sum(DOut * Out, axis)).")


def _hard_label(label, logits_ndim, axis):
    """Labels come as [N, 1] (Paddle) or [N] (PyTorch); return them with a size-1 `axis`."""
    if label.ndim == logits_ndim - 1:
        label = np.expand_dims(label, axis)
    return label


def _ignored_labels(label, classes, ignore_index, op):
    """The mask of labels equal to `ignore_index`, or None when there is none; any other label
    outside [0, classes) is an error (NumPy would silently wrap -1, or read past the row).

    One min and one max decide the common case (every label a class, ignore_index not one)."""
    if not label.size:
        return None
    low, high = label.min(), label.max()
    if 0 <= low and high < classes and not 0 <= ignore_index < classes:
        return None
    ignored = label == ignore_index
    bad = ((label < 0) | (label >= classes)) & ~ignored
    if bad.any():
        value = int(label[bad].flat[0])
        raise IndexError(f"{op}: Label holds {value}, out of range for {classes} classes "
                         f"(labels must lie in [0, {classes}) or equal ignore_index={ignore_index})")
    return ignored if ignored.any() else None


def _zero_where(values, ignored):
    """values with the positions of `ignored` (broadcast along the class axis) set to 0, in place."""
    if ignored is not None:
        values[np.broadcast_to(ignored, values.shape)] = 0
    return values


def _one_hot_like_kernel(label, logits, axis=-1, ignore_index=-100):
    """Ignored labels give a row of zeros: the loss ops build their gradients from this."""
    axis = axis % logits.ndim
    label = _hard_label(label, logits.ndim, axis)
    classes = logits.shape[axis]
    ignored = _ignored_labels(label, classes, ignore_index, "one_hot_like")
    shape = [1] * logits.ndim
    shape[axis] = classes
    return _zero_where((label == np.arange(classes).reshape(shape)).astype(logits.dtype), ignored)


register_op("one_hot_like", inputs="Label Logits", outputs="Out", attrs={"axis": -1, "ignore_index": -100},
            kernel=_one_hot_like_kernel,
            infer=lambda ctx: ctx.set_output("Out", ctx.shape("Logits"), ctx.dtype("Logits")),
            grad=ZERO_GRADIENT, doc="One-hot labels laid out like Logits along `axis` (zeros at ignore_index); "
                                      "constant in both.")


def _label_shape_wanted(input_shape, class_axis):
    """The label's shape for an input: the input's, without `class_axis` (-1: none)."""
    shape = list(input_shape)
    if class_axis >= 0:
        del shape[class_axis]
    return shape


def _check_label_shape_kernel(label, input, loss="", class_axis=-1):
    """The label itself, once its shape is checked against the input's: a loss built with a
    batch size known only at run time refuses a fed label batch of another size there (NumPy
    would broadcast a batch of one over every row: a wrong loss, no error)."""
    if list(label.shape) != _label_shape_wanted(input.shape, class_axis):
        raise ValueError(f"{loss}: label of shape {list(label.shape)} does not fit input of shape "
                         f"{list(input.shape)}" + (f" (one label per element, the class axis {class_axis} "
                                                   f"left out)" if class_axis >= 0 else " (the same shape)")
                         + ": the batch sizes differ")
    return label


def _check_label_shape_infer(ctx):
    want = _label_shape_wanted(ctx.shape("Input"), ctx.attr("class_axis"))
    got = list(ctx.shape("Label"))
    if len(got) != len(want) or any(a != b and -1 not in (a, b) for a, b in zip(got, want)):
        raise ctx.shape_error(f"{ctx.attr('loss')}: {ctx.describe('Label')} does not fit {ctx.describe('Input')}")
    ctx.set_output("Out", got, ctx.dtype("Label"))


def _check_label_shape_grad(g: GradBuilder) -> None:
    if g.needs_input_grad("Label"):
        g.set_input_grad("Label", g.output_grad("Out"))


register_op("check_label_shape", inputs="Label Input", outputs="Out", attrs={"loss": "", "class_axis": -1},
            kernel=_check_label_shape_kernel, infer=_check_label_shape_infer, grad=_check_label_shape_grad,
            doc="Label itself, checked at run time to have Input's shape without class_axis (-1: Input's shape); "
                "`loss` names the loss in the error.")


def _swce_kernel(logits, label, soft_label=False, axis=-1, ignore_index=-100):
    """Softmax in one buffer; the loss is log(sum(exp(shifted))) - shifted[label] (hard labels),
    read before the buffer is exponentiated in place. A hard label equal to `ignore_index` gives
    loss 0 (its softmax row is computed as any other)."""
    axis = axis % logits.ndim
    ignored = None
    if not soft_label:
        given = label.shape
        label = _hard_label(label, logits.ndim, axis)
        if label.shape != logits.shape[:axis] + (1,) + logits.shape[axis + 1:]:
            # a fed batch of another size (batch -1 in the program): PyTorch refuses, NumPy would broadcast
            raise ValueError(f"softmax_with_cross_entropy: Label of shape {list(given)} does not fit Logits of "
                             f"shape {list(logits.shape)}: one label per row on axis {axis} (the batch sizes differ)")
        ignored = _ignored_labels(label, logits.shape[axis], ignore_index, "softmax_with_cross_entropy")
        # one pass per row (numba), which reads one label per row
        if label.shape[:-1] == logits.shape[:-1] and fused_softmax.compiled(logits, axis=axis):
            return fused_softmax.softmax_cross_entropy(logits, label, ignore_index)
        if ignored is not None:
            label = np.where(ignored, 0, label)
    softmax = np.subtract(logits, row_max(logits, axis))
    if soft_label:
        loss = -_row_dot(label, softmax, axis)
        label_sum = label.sum(axis=axis, keepdims=True)
    else:
        loss = -np.take_along_axis(softmax, label.astype(np.int64, copy=False), axis)
    np.exp(softmax, out=softmax)
    total = row_sum(softmax, axis)
    log_z = np.log(total)
    softmax /= total
    loss += log_z * label_sum if soft_label else log_z
    return softmax, _zero_where(loss, ignored)


def _swce_infer(ctx):
    float_only(ctx, "Logits")
    shape = list(ctx.shape("Logits"))
    axis = normalize_axis(ctx, ctx.attr("axis"), len(shape), "Logits")
    label_shape = list(ctx.shape("Label"))
    if ctx.attr("soft_label"):
        float_only(ctx, "Label")
        same_dtype(ctx, "Logits", "Label")
        ok = len(label_shape) == len(shape)
    else:
        if not ctx.dtype("Label").startswith(("int", "uint")):
            raise ctx.dtype_error(f"hard labels must be integers, got {ctx.describe('Label')} "
                                  "(pass soft_label=True for probabilities)")
        expected = shape[:axis] + [1] + shape[axis + 1:]
        ok = label_shape in (expected, shape[:axis] + shape[axis + 1:])
    if not ok:
        raise ctx.shape_error(f"{ctx.describe('Label')} does not fit {ctx.describe('Logits')} on axis {axis}")
    loss_shape = list(shape)
    loss_shape[axis] = 1
    ctx.set_output("Softmax", shape, ctx.dtype("Logits"))
    ctx.set_output("Loss", loss_shape, ctx.dtype("Logits"))


def _swce_grad(g: GradBuilder) -> None:
    logits, label, softmax = g.input("Logits"), g.input("Label"), g.output("Softmax")
    axis = g.attr("axis")
    dloss = g.output_grad("Loss")
    if g.attr("soft_label"):
        label_sum = g.op("reduce_sum", {"X": label}, axis=[axis], keepdim=True)
        diff = g.op("elementwise_sub", {"X": g.op("elementwise_mul", {"X": softmax, "Y": label_sum}), "Y": label})
        if g.needs_input_grad("Label"):
            # log_softmax of the logits, never log(softmax): softmax underflows to 0 for logits
            # far below the maximum, and log(0) = -inf where the true value is finite
            log_softmax = g.op("log_softmax", {"X": logits}, axis=axis)
            g.set_input_grad("Label", g.op("scale", {"X": g.op("elementwise_mul", {"X": log_softmax, "Y": dloss})},
                                           scale=-1.0))
        dlogits = g.op("elementwise_mul", {"X": diff, "Y": dloss})
    else:
        dlogits = g.op("softmax_with_cross_entropy_grad", {"Softmax": softmax, "Label": label, "DLoss": dloss},
                       axis=axis, ignore_index=g.attr("ignore_index"))
    if g.has_output_grad("Softmax"):
        dlogits = g.op("elementwise_add", {"X": dlogits, "Y": _softmax_vjp(g, softmax, g.output_grad("Softmax"), axis)})
    g.set_input_grad("Logits", dlogits)


register_op("softmax_with_cross_entropy", inputs="Logits Label", outputs="Softmax Loss",
            attrs={"soft_label": False, "axis": -1, "ignore_index": -100}, kernel=in_float32(_swce_kernel), infer=_swce_infer,
            grad=_swce_grad,
            doc="Softmax and cross-entropy fused for stability: Loss = logsumexp(Logits) - Logits[Label], "
                "0 (and no gradient) where a hard Label equals ignore_index.")


def _swce_grad_kernel(softmax, label, dloss, axis=-1, ignore_index=-100):
    """DLogits = (Softmax - one_hot(Label)) * DLoss in one buffer: scale, then subtract DLoss
    at each label; rows of ignored labels are 0 (set, not multiplied: DLoss may be inf there,
    the gradient of a mean over no counted label)."""
    axis = axis % softmax.ndim
    dlogits = np.multiply(softmax, dloss)
    label = _hard_label(label, softmax.ndim, axis)
    ignored = _ignored_labels(label, softmax.shape[axis], ignore_index, "softmax_with_cross_entropy_grad")
    label = (label if ignored is None else np.where(ignored, 0, label)).astype(np.int64, copy=False)
    if axis == softmax.ndim - 1 and dloss.shape == label.shape:      # rows: one fancy-indexed update
        rows = dlogits.reshape(-1, softmax.shape[-1])
        rows[np.arange(rows.shape[0]), label.reshape(-1)] -= dloss.reshape(-1)
        return _zero_where(dlogits, ignored)
    picked = np.take_along_axis(dlogits, label, axis)
    picked -= np.broadcast_to(dloss, picked.shape)
    np.put_along_axis(dlogits, label, picked, axis)
    return _zero_where(dlogits, ignored)


def _swce_grad_grad(g: GradBuilder) -> None:
    """Linear in Softmax (times DLoss) and in DLoss (sum over the axis of G (Softmax - one_hot)),
    both times the mask of counted labels (the sum of the one-hot row: 0 where ignored)."""
    softmax, label, dloss, cotangent = g.input("Softmax"), g.input("Label"), g.input("DLoss"), g.output_grad("DLogits")
    axis = g.attr("axis")
    one_hot = g.op("one_hot_like", {"Label": label, "Logits": softmax}, axis=axis, ignore_index=g.attr("ignore_index"))
    counted = g.op("reduce_sum", {"X": one_hot}, axis=[axis], keepdim=True)
    if g.needs_input_grad("Softmax"):
        g.set_input_grad("Softmax", g.op("elementwise_mul", {"X": cotangent,
                                                             "Y": g.op("elementwise_mul", {"X": dloss, "Y": counted})}))
    if g.needs_input_grad("DLoss"):
        diff = g.op("elementwise_sub", {"X": softmax, "Y": one_hot})
        total = g.op("reduce_sum", {"X": g.op("elementwise_mul", {"X": cotangent, "Y": diff})}, axis=[axis],
                     keepdim=True)
        g.set_input_grad("DLoss", g.op("elementwise_mul", {"X": total, "Y": counted}))


def _swce_grad_infer(ctx):
    float_only(ctx, "Softmax", "DLoss")
    shape = list(ctx.shape("Softmax"))
    axis = normalize_axis(ctx, ctx.attr("axis"), len(shape), "Softmax")
    loss_shape = shape[:axis] + [1] + shape[axis + 1:]
    if list(ctx.shape("DLoss")) != loss_shape or ctx.dtype("DLoss") != ctx.dtype("Softmax"):
        raise ctx.shape_error(f"{ctx.describe('DLoss')} must be {ctx.dtype('Softmax')} {loss_shape} for "
                              f"{ctx.describe('Softmax')}")
    ctx.set_output("DLogits", shape, ctx.dtype("Softmax"))


register_op("softmax_with_cross_entropy_grad", inputs="Softmax Label DLoss", outputs="DLogits",
            attrs={"axis": -1, "ignore_index": -100},
            kernel=in_float32(_swce_grad_kernel), infer=_swce_grad_infer, grad=_swce_grad_grad,
            doc="The hard-label gradient of softmax_with_cross_entropy: (Softmax - one_hot(Label)) * DLoss, "
                "0 where Label equals ignore_index.")


def _ce_kernel(x, label, soft_label=False, ignore_index=-100):
    if soft_label:
        return -(label * np.log(x)).sum(axis=-1, keepdims=True)
    label = _hard_label(label, x.ndim, x.ndim - 1)
    ignored = _ignored_labels(label, x.shape[-1], ignore_index, "cross_entropy")
    if ignored is not None:
        label = np.where(ignored, 0, label)
    picked = np.take_along_axis(x, label.astype(np.int64, copy=False), -1)
    return _zero_where(-np.log(picked), ignored)


def _ce_infer(ctx):
    float_only(ctx, "X")
    shape = list(ctx.shape("X"))
    if ctx.attr("soft_label"):
        same_dtype(ctx, "X", "Label")
    else:
        if not ctx.dtype("Label").startswith(("int", "uint")):
            raise ctx.dtype_error(f"hard labels must be integers, got {ctx.describe('Label')}")
        if list(ctx.shape("Label")) not in (shape[:-1] + [1], shape[:-1]):
            raise ctx.shape_error(f"{ctx.describe('Label')} does not fit {ctx.describe('X')} (classes on the last "
                                  f"axis: labels {shape[:-1] + [1]} or {shape[:-1]})")
    ctx.set_output("Y", shape[:-1] + [1], ctx.dtype("X"))


def _ce_grad(g: GradBuilder) -> None:
    x, label, dy = g.input("X"), g.input("Label"), g.output_grad("Y")
    target = label if g.attr("soft_label") else g.op("one_hot_like", {"Label": label, "Logits": x},
                                                     ignore_index=g.attr("ignore_index"))
    ratio = g.op("elementwise_div", {"X": target, "Y": x})
    g.set_input_grad("X", g.op("scale", {"X": g.op("elementwise_mul", {"X": ratio, "Y": dy})}, scale=-1.0))
    if g.attr("soft_label") and g.needs_input_grad("Label"):
        log_x = g.op("log", {"X": x})
        g.set_input_grad("Label", g.op("scale", {"X": g.op("elementwise_mul", {"X": log_x, "Y": dy})}, scale=-1.0))


register_op("cross_entropy", inputs="X Label", outputs="Y", attrs={"soft_label": False, "ignore_index": -100},
            kernel=_ce_kernel, infer=_ce_infer, grad=_ce_grad,
            doc="Cross-entropy of probabilities X (last axis) against labels: Y = -log X[Label], "
                "0 where a hard Label equals ignore_index.")


# ---- the mean over counted labels ("mean" of a hard-label loss with ignore_index)
def _counted(label, like, axis, ignore_index):
    """(the number of labels not equal to ignore_index, and where they are, shaped like `like`, or
    None when all count). `like` is a loss: the logits' shape with `axis` of size 1; label has
    that axis of size 1 or lacks it, or broadcasts over it (a fed batch-1 label)."""
    if label.size == like.size:            # one label per loss entry: a reshape, no broadcast
        ignored = label == ignore_index
        if not ignored.any():
            return like.size, None
        counted = ~ignored.reshape(like.shape)
    else:
        label = _hard_label(label, like.ndim, axis % like.ndim) if like.ndim else label
        counted = np.broadcast_to(label != ignore_index, like.shape)
    return np.count_nonzero(counted), counted


def _counted_mean_kernel(x, label, axis=-1, ignore_index=-100, nan_when_empty=True):
    """sum(X where counted) / count: PyTorch's mean of a loss with ignored labels, NaN (0 / 0)
    when every label is ignored; 0 then with nan_when_empty=False (as the transpose of
    counted_mean_grad, which is 0 then)."""
    count, counted = _counted(label, x, axis, ignore_index)
    total = x.sum() if counted is None else x.sum(where=counted)
    if not count and not nan_when_empty:
        return np.zeros((), x.dtype)
    with np.errstate(invalid="ignore"):
        return np.asarray(total / x.dtype.type(count), dtype=x.dtype)


def _counted_mean_grad_kernel(dout, label, target, axis=-1, ignore_index=-100):
    """DOut / count at each counted position of Target's shape, 0 elsewhere (also when nothing
    counts, as PyTorch: the mean's gradient never reaches an ignored label)."""
    count, counted = _counted(label, target, axis, ignore_index)
    share = dout.dtype.type(dout / max(count, 1))
    if counted is None:
        return np.full(target.shape, share, dout.dtype)
    return np.multiply(counted, share, dtype=dout.dtype)


def _counted_mean_infer(ctx):
    float_only(ctx, "X")
    if not ctx.dtype("Label").startswith(("int", "uint")):
        raise ctx.dtype_error(f"labels must be integers, got {ctx.describe('Label')}")
    ctx.set_output("Out", (), ctx.dtype("X"))


def _counted_mean_grad_infer(ctx):
    float_only(ctx, "DOut")
    if tuple(ctx.shape("DOut")) != ():
        raise ctx.shape_error(f"DOut must be 0-D (the mean's gradient), got {ctx.describe('DOut')}")
    ctx.set_output("DX", ctx.shape("Target"), ctx.dtype("DOut"))


def _counted_mean_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("counted_mean_grad", {"DOut": g.output_grad("Out"), "Label": g.input("Label"),
                                                     "Target": g.input_like("X")},
                               axis=g.attr("axis"), ignore_index=g.attr("ignore_index")))


def _counted_mean_grad_grad(g: GradBuilder) -> None:
    """counted_mean and its gradient are each other's transpose (both linear, same mask)."""
    if g.needs_input_grad("DOut"):
        g.set_input_grad("DOut", g.op("counted_mean", {"X": g.output_grad("DX"), "Label": g.input("Label")},
                                      axis=g.attr("axis"), ignore_index=g.attr("ignore_index"),
                                      nan_when_empty=False))


register_op("counted_mean", inputs="X Label", outputs="Out",
            attrs={"axis": -1, "ignore_index": -100, "nan_when_empty": True},
            kernel=_counted_mean_kernel, infer=_counted_mean_infer, grad=_counted_mean_grad,
            doc="The mean of a per-label loss X over the labels not equal to ignore_index (one op, as "
                "`mean`): cross_entropy's reduction='mean' with ignored labels, NaN when none counts "
                "(0 with nan_when_empty=False).")
register_op("counted_mean_grad", inputs="DOut Label Target", outputs="DX", attrs={"axis": -1, "ignore_index": -100},
            kernel=_counted_mean_grad_kernel, infer=_counted_mean_grad_infer, grad=_counted_mean_grad_grad,
            doc="counted_mean's gradient: DOut / count where the label counts, 0 elsewhere.")


# ---- binary cross-entropy of probabilities (Paddle's bce_loss): PyTorch's value and gradient
# PyTorch's floor for x (1 - x): its EPSILON, 1e-12 rounded to float32 (also for float64)
_BCE_LOG_FLOOR, _BCE_EPS = -100.0, float(np.float32(1e-12))


def _bce_kernel(x, label):
    inside = (x >= 0) & (x <= 1)       # NaN is outside too
    if not inside.all():
        raise ValueError(f"bce_loss: X must hold probabilities in [0, 1], got {x[~inside].flat[0]!s} "
                         f"(X of shape {list(x.shape)}; logits belong in binary_cross_entropy_with_logits)")
    with np.errstate(divide="ignore"):
        log_x = np.maximum(np.log(x), x.dtype.type(_BCE_LOG_FLOOR))
        log_not_x = np.maximum(np.log1p(-x), x.dtype.type(_BCE_LOG_FLOOR))
    return ((label - 1) * log_not_x - label * log_x).astype(x.dtype, copy=False)


def _bce_infer(ctx):
    float_only(ctx, "X", "Label")
    same_dtype(ctx, "X", "Label")
    x, label = ctx.shape("X"), ctx.shape("Label")
    if len(x) != len(label) or any(a != b and -1 not in (a, b) for a, b in zip(x, label)):
        raise ctx.shape_error(f"Label must have the shape of X, got {ctx.describe('Label')} for {ctx.describe('X')}")
    ctx.set_output("Out", x, ctx.dtype("X"))


def _bce_grad(g: GradBuilder) -> None:
    """dX = dOut (X - Label) / max(X (1 - X), 1e-12) (PyTorch's and Paddle's: finite at X = 0 and 1,
    where the clamped logs are flat); dLabel = dOut (log(1 - X) - log X), unclamped as PyTorch's
    (infinite at X = 0 and 1)."""
    x, label, dout = g.input("X"), g.input("Label"), g.output_grad("Out")
    if g.needs_input_grad("X"):
        spread = g.op("elementwise_mul", {"X": x, "Y": g.op("scale", {"X": x}, scale=-1.0, bias=1.0)})
        slope = g.op("elementwise_div", {"X": g.op("elementwise_sub", {"X": x, "Y": label}),
                                         "Y": g.op("clip", {"X": spread}, min=_BCE_EPS)})
        g.set_input_grad("X", g.op("elementwise_mul", {"X": dout, "Y": slope}))
    if g.needs_input_grad("Label"):
        log_x = g.op("log", {"X": x})
        log_not_x = g.op("log1p", {"X": g.op("scale", {"X": x}, scale=-1.0)})
        g.set_input_grad("Label", g.op("elementwise_mul", {"X": dout, "Y": g.op("elementwise_sub",
                                                                                 {"X": log_not_x, "Y": log_x})}))


register_op("bce_loss", inputs="X Label", outputs="Out", kernel=_bce_kernel, infer=_bce_infer, grad=_bce_grad,
            doc="-(Label log X + (1 - Label) log(1 - X)), each log clamped at -100, for probabilities X; "
                "its gradient is PyTorch's (finite at X = 0 and 1).")
