"""Gradient clipping, as ops in the program (static) or on arrays (eager). Paddle 2 keeps the
classes in `paddle.nn`; `fluidgrad.optimizer` re-exports them (`fluidgrad.clip` is the
function clamping a tensor, as `paddle.clip`).

An optimizer given `grad_clip=` calls `append_clip_ops(block, params_grads)` after
`append_backward` and before weight decay and the update ops, the order of
`torch.nn.utils.clip_grad_*` followed by `optimizer.step()`. Eager mode calls
`clip_arrays(grads, params)`, the same maths on NumPy arrays. Gradients of parameters made with
ParamAttr(need_clip=False) pass through untouched and out of any global norm.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..framework import Block, Variable, optimize_options
from ..framework.emit import constant, emit

ParamsGrads = list[tuple[Variable, Variable]]


class GradientClipBase:
    """Each subclass clips a list of gradients (`_append_clip_ops`, `_clip_arrays`); the base
    leaves out those of parameters made with ParamAttr(need_clip=False): they are neither
    clipped nor counted in a global norm (as Paddle)."""

    def append_clip_ops(self, block: Block, params_grads: ParamsGrads) -> ParamsGrads:
        chosen = [i for i, (p, _) in enumerate(params_grads) if optimize_options(p)[2]]
        clipped = self._append_clip_ops(block, [params_grads[i] for i in chosen])
        result = list(params_grads)
        for i, pair in zip(chosen, clipped):
            result[i] = pair
        return result

    def clip_arrays(self, grads: Sequence[np.ndarray], params: Sequence[Any] | None = None) -> list[np.ndarray]:
        """The clipped arrays; `params` (the parameters they belong to) tell which to leave alone."""
        chosen = range(len(grads)) if params is None else [i for i, p in enumerate(params) if optimize_options(p)[2]]
        result = list(grads)
        for i, grad in zip(chosen, self._clip_arrays([grads[i] for i in chosen])):
            result[i] = grad
        return result

    def _append_clip_ops(self, block: Block, params_grads: ParamsGrads) -> ParamsGrads:
        raise NotImplementedError

    def _clip_arrays(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError


def _squared_sum(block: Block, grad: Variable) -> Variable:
    square = emit(block, "square", {"X": grad})
    return emit(block, "reduce_sum", {"X": square}, {"axis": None, "keepdim": False, "reduce_all": True})


def _clip_factor(block: Block, norm: Variable, clip_norm: float) -> Variable:
    """clip_norm / max(norm, clip_norm): 1 when the norm is within bounds."""
    bound = constant(block, clip_norm, norm.dtype)
    denom = emit(block, "elementwise_max", {"X": norm, "Y": bound})
    return emit(block, "elementwise_div", {"X": bound, "Y": denom})


def _scaled(block: Block, grad: Variable, factor: Variable) -> Variable:
    return emit(block, "elementwise_mul", {"X": grad, "Y": factor}, out_name=f"{grad.name}@CLIP")


class ClipGradByGlobalNorm(GradientClipBase):
    """Scale all gradients together so that their joint L2 norm is at most `clip_norm`."""

    def __init__(self, clip_norm: float) -> None:
        if clip_norm <= 0:
            raise ValueError(f"ClipGradByGlobalNorm: clip_norm must be positive, got {clip_norm}")
        self.clip_norm = float(clip_norm)

    def _append_clip_ops(self, block: Block, params_grads: ParamsGrads) -> ParamsGrads:
        if not params_grads:
            return params_grads
        squares = [_squared_sum(block, g) for _, g in params_grads]
        total = squares[0] if len(squares) == 1 else emit(block, "sum", {"X": squares})
        factor = _clip_factor(block, emit(block, "sqrt", {"X": total}), self.clip_norm)
        return [(p, _scaled(block, g, factor)) for p, g in params_grads]

    def _clip_arrays(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        if not grads:
            return []
        norm = np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads))
        factor = self.clip_norm / max(norm, self.clip_norm)
        return [g * g.dtype.type(factor) for g in grads]

    def __repr__(self) -> str:
        return f"ClipGradByGlobalNorm(clip_norm={self.clip_norm})"


class ClipGradByNorm(GradientClipBase):
    """Scale each gradient on its own so that its L2 norm is at most `clip_norm`."""

    def __init__(self, clip_norm: float) -> None:
        if clip_norm <= 0:
            raise ValueError(f"ClipGradByNorm: clip_norm must be positive, got {clip_norm}")
        self.clip_norm = float(clip_norm)

    def _append_clip_ops(self, block: Block, params_grads: ParamsGrads) -> ParamsGrads:
        result = []
        for p, g in params_grads:
            factor = _clip_factor(block, emit(block, "sqrt", {"X": _squared_sum(block, g)}), self.clip_norm)
            result.append((p, _scaled(block, g, factor)))
        return result

    def _clip_arrays(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        result = []
        for g in grads:
            norm = float(np.sqrt(np.sum(np.square(g, dtype=np.float64))))
            result.append(g * g.dtype.type(self.clip_norm / max(norm, self.clip_norm)))
        return result

    def __repr__(self) -> str:
        return f"ClipGradByNorm(clip_norm={self.clip_norm})"


class ClipGradByValue(GradientClipBase):
    """Clamp every gradient element into [min, max]; `min` defaults to -max."""

    def __init__(self, max: float, min: float | None = None) -> None:
        self.max = float(max)
        self.min = -self.max if min is None else float(min)
        if self.min > self.max:
            raise ValueError(f"ClipGradByValue: min {self.min} is larger than max {self.max}")

    def _append_clip_ops(self, block: Block, params_grads: ParamsGrads) -> ParamsGrads:
        return [(p, emit(block, "clip", {"X": g}, {"min": self.min, "max": self.max}, out_name=f"{g.name}@CLIP"))
                for p, g in params_grads]

    def _clip_arrays(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [np.clip(g, self.min, self.max).astype(g.dtype) for g in grads]

    def __repr__(self) -> str:
        return f"ClipGradByValue(min={self.min}, max={self.max})"


__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GradientClipBase"]
