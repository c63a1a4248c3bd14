"""Weight-decay regularizers for the optimizers' `weight_decay=` (Paddle's `paddle.regularizer`).

A float `weight_decay` means `L2Decay(weight_decay)`. The decay term is added to the gradient
after clipping and before the update op: L2 adds coeff * param (torch.optim's weight_decay),
L1 adds coeff * sign(param). AdamW's decoupled decay is different: an attribute of its update.
"""
from __future__ import annotations

import numpy as np

from .framework import Block, Variable
from .framework.emit import emit


class WeightDecayRegularizer:
    """Base of L1Decay / L2Decay: what an optimizer adds to each gradient for weight decay."""
    def __init__(self, coeff: float = 0.0) -> None:
        if not isinstance(coeff, (int, float)) or coeff < 0:
            raise ValueError(f"{type(self).__name__}: coeff must be a non-negative number, got {coeff!r}")
        self.coeff = float(coeff)

    def decay_term(self, block: Block, param: Variable) -> Variable:
        raise NotImplementedError

    def decay_array(self, param: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def append_ops(self, block: Block, param: Variable, grad: Variable) -> Variable:
        """grad + decay term, as optimize ops; the result is named `<grad>@DECAY`."""
        return emit(block, "elementwise_add", {"X": grad, "Y": self.decay_term(block, param)},
                    out_name=f"{grad.name}@DECAY")

    def apply_array(self, param: np.ndarray, grad: np.ndarray) -> np.ndarray:
        return grad + self.decay_array(param)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(coeff={self.coeff})"


class L2Decay(WeightDecayRegularizer):
    """grad += coeff * param."""

    def decay_term(self, block: Block, param: Variable) -> Variable:
        return emit(block, "scale", {"X": param}, {"scale": self.coeff})

    def decay_array(self, param: np.ndarray) -> np.ndarray:
        return param.dtype.type(self.coeff) * param


class L1Decay(WeightDecayRegularizer):
    """grad += coeff * sign(param)."""

    def decay_term(self, block: Block, param: Variable) -> Variable:
        return emit(block, "scale", {"X": emit(block, "sign", {"X": param})}, {"scale": self.coeff})

    def decay_array(self, param: np.ndarray) -> np.ndarray:
        return param.dtype.type(self.coeff) * np.sign(param)


__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]
