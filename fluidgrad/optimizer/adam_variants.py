"""NAdam and RAdam (paddle.optimizer / torch.optim): Adam with Nesterov momentum, and Adam with a
rectified adaptive rate. As every optimizer: the update is a registered op
(ops/optim_adam_variants.py), appended per parameter by static `minimize()` and run by eager
`step()`; `weight_decay` is L2 added to the gradient (torch's default, Paddle's regularizer);
torch's spellings (`betas=`, `eps=`) work too (keywords.py).
"""
from __future__ import annotations

from typing import Any, Iterable

from ..lr import LRScheduler
from ..nn.clip import GradientClipBase
from .adaptive import _check
from .optimizer import Optimizer, default_rate


class NAdam(Optimizer):
    """Adam whose step looks ahead along the momentum (Nesterov), with the momentum coefficient
    warming up by `momentum_decay` (default rate 0.002, as Paddle and torch)."""

    op_type = "nadam"

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, momentum_decay: float = 0.004, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name,
                         lr=default_rate(learning_rate, lr, 0.002))
        _check("NAdam", beta1=(beta1, 0.0, 1.0), beta2=(beta2, 0.0, 1.0), epsilon=(epsilon, 0.0, None),
               momentum_decay=(momentum_decay, 0.0, None))
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.momentum_decay = float(momentum_decay)
        self.accumulators = {"Moment1": (0.0, "param"), "Moment2": (0.0, "param"), "MuProduct": (1.0, "scalar"),
                             "Step": (0.0, "scalar")}

    def update_attrs(self) -> dict[str, Any]:
        return {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                "momentum_decay": self.momentum_decay}


class RAdam(Optimizer):
    """Adam without a warm-up schedule: while the adaptive rate's variance is intractable (the
    first steps) it takes momentum steps, then Adam's steps times the rectification term."""

    op_type = "radam"

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameters: Iterable[Any] | None = None, weight_decay: float | None = None,
                 grad_clip: GradientClipBase | None = None, name: str | None = None, *,
                 lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        _check("RAdam", beta1=(beta1, 0.0, 1.0), beta2=(beta2, 0.0, 1.0), epsilon=(epsilon, 0.0, None))
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.accumulators = {"Moment1": (0.0, "param"), "Moment2": (0.0, "param"), "Step": (0.0, "scalar")}

    def update_attrs(self) -> dict[str, Any]:
        return {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}


__all__ = ["NAdam", "RAdam"]
