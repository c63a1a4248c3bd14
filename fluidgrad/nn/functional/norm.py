"""Normalisation functions, for both modes."""
from __future__ import annotations

from typing import Any, Sequence

from ...dispatch import apply_op, is_tensor

__all__ = ['batch_norm', 'layer_norm']


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
