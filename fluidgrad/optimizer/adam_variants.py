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
from .optimizer import Optimizer, Update, default_rate


class NAdam(Optimizer):
    """Adam whose step looks ahead along the momentum (Nesterov), with the momentum coefficient
    warming up by `momentum_decay` (default rate 0.002, as Paddle and torch)."""

    op_type = "nadam"
    options = ("beta1", "beta2", "epsilon", "momentum_decay")

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, momentum_decay: float = 0.004, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name,
                         lr=default_rate(learning_rate, lr, 0.002))
        self._update_for({"beta1": beta1, "beta2": beta2, "epsilon": epsilon, "momentum_decay": momentum_decay})
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.momentum_decay = float(momentum_decay)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        values = {k: settings[k] for k in self.options}
        _check("NAdam", beta1=(values["beta1"], 0.0, 1.0), beta2=(values["beta2"], 0.0, 1.0),
               epsilon=(values["epsilon"], 0.0, None), momentum_decay=(values["momentum_decay"], 0.0, None))
        return Update("nadam", {k: float(v) for k, v in values.items()},
                      {"Moment1": (0.0, "param"), "Moment2": (0.0, "param"), "MuProduct": (1.0, "scalar"),
                       "Step": (0.0, "scalar")})


class RAdam(Optimizer):
    """Adam without a warm-up schedule: while the adaptive rate's variance is intractable (the
    first steps) it takes momentum steps, then Adam's steps times the rectification term."""

    op_type = "radam"
    options = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameters: Iterable[Any] | None = None, weight_decay: float | None = None,
                 grad_clip: GradientClipBase | None = None, name: str | None = None, *,
                 lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        self._update_for({"beta1": beta1, "beta2": beta2, "epsilon": epsilon})
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        beta1, beta2, epsilon = settings["beta1"], settings["beta2"], settings["epsilon"]
        _check("RAdam", beta1=(beta1, 0.0, 1.0), beta2=(beta2, 0.0, 1.0), epsilon=(epsilon, 0.0, None))
        return Update("radam", {"beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon)},
                      {"Moment1": (0.0, "param"), "Moment2": (0.0, "param"), "Step": (0.0, "scalar")})


__all__ = ["NAdam", "RAdam"]
