"""Loss layers."""
from __future__ import annotations

from typing import Any

from .. import functional as NF
from ..layer import Layer

__all__ = ['CrossEntropyLoss', 'MSELoss']


class CrossEntropyLoss(Layer):
    """The Layer form of `nn.functional.cross_entropy` (logits and integer labels by default)."""
    def __init__(self, reduction: str = "mean", soft_label: bool = False, axis: int = -1) -> None:
        super().__init__()
        self.reduction, self.soft_label, self.axis = reduction, soft_label, axis

    def forward(self, input: Any, label: Any) -> Any:
        return NF.cross_entropy(input, label, reduction=self.reduction, soft_label=self.soft_label, axis=self.axis)


class MSELoss(Layer):
    """The Layer form of `nn.functional.mse_loss`."""
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Any, label: Any) -> Any:
        return NF.mse_loss(input, label, self.reduction)
