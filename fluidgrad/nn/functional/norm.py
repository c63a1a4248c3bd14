"""Normalisation functions, for both modes.

The ops normalise per channel on axis 1; a channel-last `data_format` (NLC, NHWC, NDHWC: channels
on the last axis) gets the same answer: batch_norm on the input seen as [positions, C] (a
reshape), the others on the input moved to channel-first (see layout.py)."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ... import functions as F
from ...dispatch import apply_op, as_state_variable, beside, is_tensor
from ...eager.mode import is_recomputing, state
from ...framework import Variable, unique_name
from .layout import channel_last_of_any_rank, to_channel_first, to_channel_last
from ...framework.torch_forms import torch_keywords

__all__ = ['batch_norm', 'sync_batch_norm', 'layer_norm', 'group_norm', 'instance_norm', 'rms_norm', 'local_response_norm',
           'normalize']

_SPATIAL_FIRST = ("NCL", "NCW", "NCHW", "NCDHW")


def _write_back(target: Any, value: Any) -> None:
    """Eager mode: running statistics are updated in the Tensors the caller owns, once per
    forward (not again when `recompute` runs the forward a second time for backward)."""
    if is_tensor(target) and hasattr(target, "set_value") and not is_recomputing():
        target.set_value(value)


def _channel_last_rows(x: Any, data_format: str, fn: str) -> Any:
    """x of a channel-last layout as [rows, C], the NC form a per-channel norm works on; None
    for a channel-first layout."""
    if not channel_last_of_any_rank(data_format, ("NC",) + _SPATIAL_FIRST, fn):
        return None
    channels = x.shape[-1] if len(x.shape) >= 2 else -1
    if channels < 0:
        raise ValueError(f"{fn}: data_format {data_format!r} needs input of rank >= 2 with a known "
                         f"channel axis (the last), got shape {list(x.shape)}")
    return F.reshape(x, [-1, channels])


def _static_batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any, attrs: dict[str, Any],
                       training: bool) -> Any:
    """An nn Layer's batch_norm on a static Variable: its running statistics (Tensors) join the
    Program as persistable Variables that the op updates in place while training (MeanOut /
    VarianceOut, as static.nn.batch_norm), their values living in the scope."""
    mean, variance = as_state_variable(running_mean), as_state_variable(running_var)
    weight, bias = beside(weight, x), beside(bias, x)
    block = x.block.program.current_block()
    stats = ({"MeanOut": mean, "VarianceOut": variance} if training else
             {"MeanOut": block.create_var(unique_name("batch_norm.mean_out"), stop_gradient=True),
              "VarianceOut": block.create_var(unique_name("batch_norm.variance_out"), stop_gradient=True)})
    outputs = {"Y": block.create_var(unique_name("batch_norm.tmp")), **stats,
               "SavedMean": block.create_var(unique_name("batch_norm.saved_mean"), stop_gradient=True),
               "SavedVariance": block.create_var(unique_name("batch_norm.saved_inv_std"), stop_gradient=True)}
    block.append_op("batch_norm", {"X": x, "Scale": weight, "Bias": bias, "Mean": mean, "Variance": variance},
                    outputs, {**attrs, "data_layout": "NCHW"})
    return outputs["Y"]


def _check_values_per_channel(x: Any, data_format: str) -> None:
    """Batch statistics of one value per channel (a last batch of one sample) would normalise every
    value to 0 and pull the running variance toward 0: refused, as torch refuses it."""
    shape = list(x.shape)
    channel = 1 if data_format in ("NC",) + _SPATIAL_FIRST else len(shape) - 1
    others = [d for i, d in enumerate(shape) if i != channel]
    if len(shape) >= 2 and all(d >= 0 for d in others) and math.prod(others) == 1:
        raise ValueError(f"batch_norm: Expected more than 1 value per channel when training (batch statistics), "
                         f"got input size {shape}")


def _untracked_statistics(x: Any, running_mean: Any, running_var: Any, batch_stats: bool) -> tuple[Any, Any]:
    """torch's F.batch_norm(x, None, None, training=True): batch statistics with no running ones to
    update; the op still takes Mean / Variance, so per-channel zeros and ones (shaped by a per-channel
    sum of x, whose channel count may be known only at run time) stand in for them."""
    if not batch_stats:
        raise ValueError(f"batch_norm: running_mean and running_var are needed to normalise with the running "
                         f"statistics (training=False), got running_mean={running_mean!r} and "
                         f"running_var={running_var!r} for input of shape {list(x.shape)}")
    per_channel = F.sum(x, axis=[0] + list(range(2, len(x.shape))))
    if running_mean is None:
        running_mean = apply_op("fill_any_like", {"X": per_channel}, {"value": 0.0})
    if running_var is None:
        running_var = apply_op("fill_any_like", {"X": per_channel}, {"value": 1.0})
    return running_mean, running_var


def batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None,
               training: bool = False, momentum: float = 0.9, epsilon: float = 1e-5, data_format: str = "NCHW",
               use_global_stats: bool | None = None, name: str | None = None) -> Any:
    """Normalise over every axis but the channel axis (1, or the last one for NLC / NHWC / NDHWC).
    Training uses batch statistics and updates running = momentum * running + (1 - momentum) *
    batch (unbiased variance, as PyTorch); otherwise the running statistics are used.
    use_global_stats (Paddle's) overrides that choice in both phases: True normalises with the
    running statistics, False with the batch's (in eval too, then leaving the running ones as they are, and
    in a static program's clone(for_test=True), as Paddle's trainable_statistics)."""
    batch_stats = training if use_global_stats is None else not use_global_stats
    if batch_stats:
        _check_values_per_channel(x, data_format)
    rows = _channel_last_rows(x, data_format, "batch_norm")
    if rows is not None:
        y = batch_norm(rows, running_mean, running_var, weight, bias, training, momentum, epsilon, "NC",
                       use_global_stats)
        return apply_op("reshape_as", {"X": y, "Target": x})
    tracked = running_mean is not None and running_var is not None
    if not tracked:
        running_mean, running_var = _untracked_statistics(x, running_mean, running_var, batch_stats)
    if weight is None or bias is None:  # no affine part: scale 1, shift 0
        weight = apply_op("fill_any_like", {"X": running_mean}, {"value": 1.0}) if weight is None else weight
        bias = apply_op("fill_any_like", {"X": running_mean}, {"value": 0.0}) if bias is None else bias
    attrs = {"momentum": float(momentum), "epsilon": float(epsilon), "is_test": not (training or batch_stats),
             "use_global_stats": not batch_stats,   # an explicit False keeps batch statistics in clone(for_test=True)
             "trainable_statistics": use_global_stats is not None and not use_global_stats}
    if isinstance(x, Variable) and is_tensor(running_mean) and state.tracer is None:
        return _static_batch_norm(x, running_mean, running_var, weight, bias, attrs, training)
    y, mean_out, var_out, _saved_mean, _saved_inv_std = apply_op(
        "batch_norm", {"X": x, "Scale": weight, "Bias": bias, "Mean": running_mean, "Variance": running_var}, attrs)
    if training and tracked:
        _write_back(running_mean, mean_out)
        _write_back(running_var, var_out)
    return y


def sync_batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any, training: bool = True,
                    momentum: float = 0.9, epsilon: float = 1e-5, data_format: str = "NCHW") -> Any:
    """batch_norm with the statistics of the global batch, every rank's part of it (SyncBatchNorm
    under a launcher). Composed of ordinary ops: per-channel sums and counts, then the sum of
    squared deviations, each all-reduced (c_allreduce_sum, whose gradient is the all-reduce of
    the gradient), so the backward all-reduces the statistics' gradients as PyTorch's does.
    In a world of one it equals batch_norm (which SyncBatchNorm then runs: one fused op)."""
    if not training:
        return batch_norm(x, running_mean, running_var, weight, bias, False, momentum, epsilon, data_format)
    rows = _channel_last_rows(x, data_format, "sync_batch_norm")
    if rows is not None:
        y = sync_batch_norm(rows, running_mean, running_var, weight, bias, True, momentum, epsilon, "NC")
        return apply_op("reshape_as", {"X": y, "Target": x})
    rank = len(x.shape)
    if rank < 2 or x.shape[1] < 0:
        raise ValueError(f"sync_batch_norm: needs channel-first input of rank >= 2 with known channels, got shape "
                         f"{list(x.shape)} and data_format {data_format!r}")
    axes, per_channel = [0] + list(range(2, rank)), [1, -1] + [1] * (rank - 2)
    sums, counts = F.split(apply_op("c_allreduce_sum", {"X": F.concat(
        [F.sum(x, axis=axes), F.sum(F.ones_like(x), axis=axes)])}), 2)
    mean = F.divide(sums, counts)
    centered = F.subtract(x, F.reshape(mean, per_channel))
    squares = apply_op("c_allreduce_sum", {"X": F.sum(F.square(centered), axis=axes)})
    variance = F.divide(squares, counts)
    scale = F.pow(F.scale(variance, 1.0, float(epsilon)), -0.5)
    y = F.multiply(centered, F.reshape(scale if weight is None else F.multiply(scale, weight), per_channel))
    y = y if bias is None else F.add(y, F.reshape(bias, per_channel))
    unbiased = F.divide(squares, F.maximum(F.scale(counts, 1.0, -1.0), F.ones_like(counts)))
    for target, batch in ((running_mean, mean), (running_var, unbiased)):
        if target is not None:
            _write_back(target, F.add(F.scale(target, float(momentum)),
                                      F.scale(F.cast(batch, target.dtype), 1.0 - float(momentum))))
    return y


def layer_norm(x: Any, normalized_shape: int | Sequence[int], weight: Any = None, bias: Any = None,
               epsilon: float = 1e-5, name: str | None = None) -> Any:
    """Normalise over the trailing `normalized_shape` axes of x."""
    dims = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if list(x.shape[len(x.shape) - len(dims):]) != [int(d) for d in dims]:
        raise ValueError(f"layer_norm: normalized_shape {dims} does not match the trailing axes of shape "
                         f"{list(x.shape)}")
    y, _mean, _var = apply_op("layer_norm", {"X": x, "Scale": weight, "Bias": bias},
                              {"begin_norm_axis": len(x.shape) - len(dims), "epsilon": float(epsilon)})
    return y


def _normalized_dims(x: Any, normalized_shape: int | Sequence[int], fn: str) -> list[int]:
    dims = [normalized_shape] if isinstance(normalized_shape, int) else [int(d) for d in normalized_shape]
    if not dims or len(dims) > len(x.shape) or list(x.shape[len(x.shape) - len(dims):]) != dims:
        raise ValueError(f"{fn}: normalized_shape {dims} does not match the trailing axes of shape {list(x.shape)}")
    return dims


def _channel_affine(y: Any, weight: Any, bias: Any, ndim: int) -> Any:
    """y * weight + bias with [C] parameters broadcast along axis 1."""
    trailing = [1] * (ndim - 2)
    if weight is not None:
        y = F.multiply(y, F.reshape(weight, [-1] + trailing))
    if bias is not None:
        y = F.add(y, F.reshape(bias, [-1] + trailing))
    return y


def _is_tensor_like(value: Any) -> bool:
    return is_tensor(value) or isinstance(value, Variable)


def group_norm(x: Any, num_groups: int, epsilon: Any = 1e-5, weight: Any = None, bias: Any = None,
               data_format: str = "NCHW", name: str | None = None, *, eps: float | None = None) -> Any:
    """Normalise each group of channels of each sample over its channels and positions, then
    scale and shift per channel. Runs the fused layer_norm op on [N, groups, rest].

    Paddle's order is (x, num_groups, epsilon, weight, bias), torch's (input, num_groups, weight,
    bias, eps): a tensor third is never an epsilon, so it is torch's weight (the next two torch's
    bias and eps); `eps=` is torch's keyword for epsilon."""
    if _is_tensor_like(epsilon):
        if weight is not None and _is_tensor_like(bias):
            raise TypeError("group_norm: got a weight in the epsilon position (torch's order) and both weight= "
                            "and bias= besides; give (x, num_groups, weight, bias, eps) or Paddle's order")
        torch_eps = 1e-5 if bias is None or _is_tensor_like(bias) else bias
        epsilon, weight, bias = torch_eps, epsilon, (bias if weight is None else weight)
    if eps is not None:
        epsilon = eps
    if channel_last_of_any_rank(data_format, ("NC",) + _SPATIAL_FIRST, "group_norm"):
        return to_channel_last(group_norm(to_channel_first(x), num_groups, epsilon, weight, bias))
    shape = list(x.shape)
    if len(shape) < 2 or shape[1] < 0 or shape[1] % int(num_groups):
        raise ValueError(f"group_norm: needs channel-first input whose channels divide by num_groups="
                         f"{num_groups}, got shape {shape} and data_format {data_format!r}")
    per_channel = [shape[0]] + shape[2:]   # torch's check (its batch_norm's): one sample of one position
    if all(d >= 0 for d in per_channel) and math.prod(per_channel) == 1:
        raise ValueError(f"group_norm: Expected more than 1 value per channel when training, got input of shape "
                         f"{shape} and num_groups={num_groups}")
    grouped = F.reshape(x, [0, int(num_groups), -1])
    y, _mean, _var = apply_op("layer_norm", {"X": grouped}, {"begin_norm_axis": 2, "epsilon": float(epsilon)})
    y = apply_op("reshape_as", {"X": y, "Target": x})
    return _channel_affine(y, weight, bias, len(shape))


def instance_norm(x: Any, running_mean: Any = None, running_var: Any = None, weight: Any = None, bias: Any = None,
                  use_input_stats: bool = True, momentum: float = 0.9, eps: float = 1e-5,
                  data_format: str = "NCHW", name: str | None = None) -> Any:
    """Normalise each channel of each sample over its positions (group_norm with one channel
    per group). use_input_stats=False normalises with the given running statistics instead."""
    if channel_last_of_any_rank(data_format, _SPATIAL_FIRST, "instance_norm"):
        return to_channel_last(instance_norm(to_channel_first(x), running_mean, running_var, weight, bias,
                                             use_input_stats, momentum, eps))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
        return batch_norm(x, running_mean, running_var, weight, bias, training=False, epsilon=eps,
                          use_global_stats=True)
    if x.shape[1] < 0:
        raise ValueError(f"instance_norm: the channel axis of shape {list(x.shape)} must be known")
    spatial = list(x.shape)[2:]
    if all(d >= 0 for d in spatial) and math.prod(spatial) == 1:   # as torch: each value would normalise to 0
        raise ValueError(f"instance_norm: Expected more than 1 spatial element when training, got input of shape "
                         f"{list(x.shape)}")
    return group_norm(x, x.shape[1], eps, weight, bias)


def rms_norm(x: Any, normalized_shape: int | Sequence[int], weight: Any = None, epsilon: float = 1e-6) -> Any:
    """x / sqrt(mean(x^2 over the trailing normalized_shape axes) + epsilon) * weight."""
    dims = _normalized_dims(x, normalized_shape, "rms_norm")
    ndim = len(x.shape)
    mean_square = F.mean(F.square(x), axis=list(range(ndim - len(dims), ndim)), keepdim=True)
    y = F.multiply(x, F.pow(F.scale(mean_square, 1.0, float(epsilon)), -0.5))
    return y if weight is None else F.multiply(y, weight)


def local_response_norm(x: Any, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0,
                        data_format: str = "NCHW", name: str | None = None) -> Any:
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta (zero padded, as
    PyTorch and Paddle): an average pool along the channel axis."""
    if channel_last_of_any_rank(data_format, _SPATIAL_FIRST, "local_response_norm"):
        return to_channel_last(local_response_norm(to_channel_first(x), size, alpha, beta, k))
    shape = list(x.shape)
    if len(shape) < 3 or shape[1] < 0:
        raise ValueError(f"local_response_norm: needs channel-first input of rank >= 3 with known channels, "
                         f"got shape {shape} and data_format {data_format!r}")
    size = int(size)
    planes = F.reshape(F.square(x), [0, 1, shape[1], -1])
    mean = apply_op("pool2d", {"X": planes}, {"pooling_type": "avg", "ksize": [size, 1], "strides": [1, 1],
                                              "paddings": [size // 2, (size - 1) // 2, 0, 0], "exclusive": False})
    mean = apply_op("reshape_as", {"X": mean, "Target": x})
    return F.multiply(x, F.pow(F.scale(mean, float(alpha), float(k)), -float(beta)))


@torch_keywords
def normalize(x: Any, p: float = 2, axis: int = 1, epsilon: float = 1e-12, name: str | None = None) -> Any:
    """x / max(||x||_p along axis, epsilon)."""
    if not (p > 0 and math.isfinite(p)):
        raise ValueError(f"normalize: p must be a positive finite number, got {p}")
    # the p_norm op: float16 sums of |x|^p in float32, as PyTorch (a float16 sum of squares overflows)
    norm = apply_op("p_norm", {"X": x}, {"porder": float(p), "axis": [axis], "keepdim": True, "reduce_all": False})
    norm = apply_op("clip", {"X": norm}, {"min": float(epsilon), "max": float("inf")})
    return F.divide(x, norm)
