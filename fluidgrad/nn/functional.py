"""Neural-network functions (Paddle 2 `paddle.nn.functional` names), for both modes.

Every function goes through `dispatch.apply_op`: given Variables it appends ops to the
current program, given eager Tensors it computes at once. Parameters are arguments here;
the layer builders (`fluidgrad.static.nn`) and eager Layers create and own them.
"""
from __future__ import annotations

from typing import Any, Sequence

from .. import functions as F
from ..dispatch import apply_op, is_tensor
from ..functions import one_hot, relu, sigmoid, tanh  # noqa: F401  (re-exported)

__all__ = ["avg_pool2d", "batch_norm", "conv2d", "cross_entropy", "dropout", "embedding", "layer_norm", "linear",
           "log_softmax", "max_pool2d", "mse_loss", "one_hot", "relu", "sigmoid", "softmax",
           "softmax_with_cross_entropy", "tanh"]


def softmax(x: Any, axis: int = -1) -> Any:
    return apply_op("softmax", {"X": x}, {"axis": int(axis)})


def log_softmax(x: Any, axis: int = -1) -> Any:
    return apply_op("log_softmax", {"X": x}, {"axis": int(axis)})


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    return apply_op("leaky_relu", {"X": x}, {"alpha": float(negative_slope)})


# ---------------------------------------------------------------- losses
def softmax_with_cross_entropy(logits: Any, label: Any, soft_label: bool = False, axis: int = -1,
                               return_softmax: bool = False) -> Any:
    """Per-example loss, shaped like logits with `axis` of size 1 (label: [N, 1] or [N] ints)."""
    softmax_out, loss = apply_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                                 {"soft_label": bool(soft_label), "axis": int(axis)})
    return (loss, softmax_out) if return_softmax else loss


def _reduce(loss: Any, reduction: str, fn: str) -> Any:
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def cross_entropy(input: Any, label: Any, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                  soft_label: bool = False, axis: int = -1, use_softmax: bool = True) -> Any:
    """Paddle 2 semantics: `input` are logits (softmax applied inside) unless use_softmax=False,
    in which case `input` are probabilities along the last axis.

    Hard labels ([N, 1] or [N] integers) may carry a class `weight` ([C]) and an `ignore_index`;
    the mean then divides by the total weight of the counted samples (as Paddle and PyTorch).
    With the default ignore_index=-100 no label is ignored, and a label outside [0, C) is an error.
    """
    if soft_label and weight is not None:
        raise ValueError("cross_entropy: weight is only supported with hard labels (soft_label=False)")
    weighted = not soft_label and (weight is not None or ignore_index != -100)
    if weighted:
        if len(label.shape) == len(input.shape) - 1:
            label = F.unsqueeze(label, axis % len(input.shape))
        counted = F.not_equal(label, ignore_index)
        label = F.multiply(label, F.cast(counted, label.dtype))       # ignored labels read class 0
    if use_softmax:
        loss = softmax_with_cross_entropy(input, label, soft_label=soft_label, axis=axis)
    else:
        loss = apply_op("cross_entropy", {"X": input, "Label": label}, {"soft_label": bool(soft_label)})
    if not weighted:
        return _reduce(loss, reduction, "cross_entropy")
    factor = F.cast(counted, loss.dtype)
    if weight is not None:
        factor = F.multiply(factor, F.gather(weight, label, axis=0))   # shaped like the loss
    loss = F.multiply(loss, factor)
    if reduction == "mean":
        return F.divide(F.sum(loss), F.sum(factor))
    return _reduce(loss, reduction, "cross_entropy")


def mse_loss(input: Any, label: Any, reduction: str = "mean") -> Any:
    return _reduce(F.square(F.subtract(input, label)), reduction, "mse_loss")


# ---------------------------------------------------------------- dense layers
def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """x @ weight + bias, weight shaped [in, out] (Paddle's layout)."""
    out = F.matmul(x, weight)
    return out if bias is None else F.add(out, bias)


def embedding(x: Any, weight: Any, padding_idx: int | None = None) -> Any:
    """Rows of `weight` picked by the integer ids `x`: shape x.shape + [dim]."""
    if padding_idx is not None:
        raise ValueError("embedding: padding_idx is not supported; leave it None")
    return F.gather(weight, x, axis=0)


def dropout(x: Any, p: float = 0.5, training: bool = True, mode: str = "upscale_in_train",
            seed: int = 0) -> Any:
    """Zero each element with probability p. upscale_in_train (default, as PyTorch) scales the
    kept ones by 1/(1-p) while training; downgrade_in_infer scales by (1-p) at inference."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must lie in [0, 1], got {p}")
    if mode not in ("upscale_in_train", "downgrade_in_infer"):
        raise ValueError(f"dropout: mode must be 'upscale_in_train' or 'downgrade_in_infer', got {mode!r}")
    out, _mask = apply_op("dropout", {"X": x}, {"dropout_prob": float(p), "is_test": not training,
                                               "seed": int(seed), "dropout_implementation": mode})
    return out


# ---------------------------------------------------------------- convolution and pooling
def _padding(padding: Any, kernel: Sequence[int], dilation: Sequence[int], what: str) -> list[int]:
    """int, [h, w], [top, bottom, left, right], 'valid' or 'same' (stride 1) -> op paddings."""
    if isinstance(padding, str):
        if padding.lower() == "valid":
            return [0, 0]
        if padding.lower() == "same":
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            return pads
        raise ValueError(f"{what}: padding must be a number, a list, 'valid' or 'same', got {padding!r}")
    return [int(padding)] * 2 if isinstance(padding, int) else [int(p) for p in padding]


def _pair(value: Any) -> list[int]:
    return [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]


def conv2d(x: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1, data_format: str = "NCHW") -> Any:
    """NCHW cross-correlation; weight is [out_channels, in_channels / groups, KH, KW]."""
    if isinstance(padding, str) and padding.lower() == "same" and _pair(stride) != [1, 1]:
        raise ValueError(f"conv2d: padding='same' needs stride 1, got stride {stride}")
    dilations = _pair(dilation)
    attrs = {"strides": _pair(stride), "paddings": _padding(padding, list(weight.shape[2:]), dilations, "conv2d"),
             "dilations": dilations, "groups": int(groups), "data_format": data_format}
    return apply_op("conv2d", {"Input": x, "Filter": weight, "Bias": bias}, attrs)


def _pool(x: Any, kind: str, kernel_size: Any, stride: Any, padding: Any, exclusive: bool,
          data_format: str) -> Any:
    ksize = _pair(kernel_size)
    attrs = {"pooling_type": kind, "ksize": ksize, "strides": _pair(stride if stride is not None else kernel_size),
             "paddings": _padding(padding, ksize, [1, 1], f"{kind}_pool2d"), "global_pooling": False,
             "exclusive": bool(exclusive), "data_format": data_format}
    return apply_op("pool2d", {"X": x}, attrs)


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, data_format: str = "NCHW") -> Any:
    """Max over windows; stride defaults to kernel_size, padding counts as -inf."""
    return _pool(x, "max", kernel_size, stride, padding, True, data_format)


def avg_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, exclusive: bool = True,
               data_format: str = "NCHW") -> Any:
    """Mean over windows; `exclusive` (Paddle's default) leaves padding out of the count, as
    PyTorch's count_include_pad=False."""
    return _pool(x, "avg", kernel_size, stride, padding, exclusive, data_format)


# ---------------------------------------------------------------- normalization
def _write_back(target: Any, value: Any) -> None:
    """Eager mode: running statistics are updated in the Tensors the caller owns."""
    if is_tensor(target) and hasattr(target, "set_value"):
        target.set_value(value)


def batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any, training: bool = False,
               momentum: float = 0.9, epsilon: float = 1e-5, data_format: str = "NCHW",
               use_global_stats: bool | None = None) -> Any:
    """Normalise over every axis but the channel axis 1. Training uses batch statistics and
    updates running = momentum * running + (1 - momentum) * batch (unbiased variance, as
    PyTorch); otherwise the running statistics are used."""
    if data_format not in ("NCHW", "NC", "NCL"):
        raise ValueError(f"batch_norm: only channel-first layouts are supported, got {data_format!r}")
    attrs = {"momentum": float(momentum), "epsilon": float(epsilon), "is_test": not training,
             "use_global_stats": bool(use_global_stats) if use_global_stats is not None else not training}
    y, mean_out, var_out, _saved_mean, _saved_inv_std = apply_op(
        "batch_norm", {"X": x, "Scale": weight, "Bias": bias, "Mean": running_mean, "Variance": running_var}, attrs)
    if training:
        _write_back(running_mean, mean_out)
        _write_back(running_var, var_out)
    return y


def layer_norm(x: Any, normalized_shape: int | Sequence[int], weight: Any = None, bias: Any = None,
               epsilon: float = 1e-5) -> Any:
    """Normalise over the trailing `normalized_shape` axes of x."""
    dims = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if list(x.shape[len(x.shape) - len(dims):]) != [int(d) for d in dims]:
        raise ValueError(f"layer_norm: normalized_shape {dims} does not match the trailing axes of shape "
                         f"{list(x.shape)}")
    y, _mean, _var = apply_op("layer_norm", {"X": x, "Scale": weight, "Bias": bias},
                              {"begin_norm_axis": len(x.shape) - len(dims), "epsilon": float(epsilon)})
    return y
