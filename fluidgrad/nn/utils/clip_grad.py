"""torch.nn.utils.clip_grad / convert_parameters for eager training loops: clip the gradients
already in `.grad` (clip_grad_norm_, clip_grad_value_) and flatten parameters to one vector and back.

The clipping functions change the `.grad` Tensors in place between backward and step, as
PyTorch's do; an optimizer's `grad_clip=` (nn.ClipGradByGlobalNorm, ...) is the Paddle way
that does the same inside step()."""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from ... import functions
from ...eager import Tensor, to_tensor


def _with_grads(parameters: Any) -> list[Tensor]:
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients together so that their joint `norm_type` norm is at most max_norm
    (by max_norm / (norm + 1e-6), as PyTorch); returns the norm before clipping, a 0-D Tensor."""
    grads = [p.grad for p in _with_grads(parameters)]
    if not grads:
        return to_tensor(np.array(0.0, dtype="float32"))
    norm_type = float(norm_type)
    if math.isinf(norm_type):
        total = max(float(np.max(np.abs(g.numpy()))) for g in grads)
    else:
        total = sum(float(np.sum(np.abs(g.numpy().astype("float64")) ** norm_type)) for g in grads) ** (1 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}")
    factor = min(float(max_norm) / (total + 1e-6), 1.0)
    if factor < 1.0:
        for grad in grads:
            grad.set_value((grad.numpy() * factor).astype(grad.dtype))
    return to_tensor(np.array(total, dtype=grads[0].dtype))


def clip_grad_value_(parameters: Any, clip_value: float) -> None:
    """Clip every gradient element to [-clip_value, clip_value] in place."""
    for grad in (p.grad for p in _with_grads(parameters)):
        grad.set_value(np.clip(grad.numpy(), -float(clip_value), float(clip_value)))


def parameters_to_vector(parameters: Iterable[Tensor], name: str | None = None) -> Any:
    """All parameters flattened and joined into one 1-D tensor (differentiable)."""
    return functions.concat([functions.reshape(p, [-1]) for p in parameters], axis=0)


def vector_to_parameters(vec: Any, parameters: Iterable[Tensor], name: str | None = None) -> None:
    """Write consecutive pieces of the 1-D `vec` into the parameters (the inverse of parameters_to_vector)."""
    values, offset = np.asarray(vec.numpy() if hasattr(vec, "numpy") else vec).reshape(-1), 0
    parameters = list(parameters)
    total = sum(int(np.prod(p.shape)) for p in parameters)
    if values.size != total:
        raise ValueError(f"vector_to_parameters: the vector has {values.size} values, the parameters {total}")
    for param in parameters:
        size = int(np.prod(param.shape))
        param.set_value(values[offset:offset + size].reshape(param.shape))
        offset += size
