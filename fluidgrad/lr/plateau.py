"""ReduceOnPlateau: the one scheduler driven by a metric rather than the epoch count."""
from __future__ import annotations

import math
from typing import Any

from .base import LRScheduler


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by `factor` when the metric passed to `step(metrics)` has not improved
    for more than `patience` steps (paddle.optimizer.lr.ReduceOnPlateau, torch ReduceLROnPlateau).

    Improving means beating the best value so far by `threshold` (relative: best * (1 -+
    threshold); absolute: best -+ threshold) in `mode` 'min' or 'max'. After a reduction,
    `cooldown` steps pass before bad steps count again; the rate never goes below `min_lr`, and
    a change smaller than `epsilon` is skipped. As torch's, the best value is tracked during the
    cooldown too."""

    state_keys = ("last_epoch", "last_lr", "best", "num_bad_epochs", "cooldown_counter")

    def __init__(self, learning_rate: float, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr: float = 0.0,
                 epsilon: float = 1e-8, verbose: bool = False) -> None:
        mode, threshold_mode = str(mode).lower(), str(threshold_mode).lower()
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceOnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceOnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        if not factor < 1.0:
            raise ValueError(f"ReduceOnPlateau: factor must be < 1.0 to reduce the rate, got {factor}")
        self.mode, self.threshold_mode, self.factor = mode, threshold_mode, float(factor)
        self.patience, self.threshold, self.cooldown = int(patience), float(threshold), int(cooldown)
        self.min_lr, self.epsilon = float(min_lr), float(epsilon)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        super().__init__(learning_rate, last_epoch=0, verbose=verbose)

    def _first_step(self) -> None:
        """No metric yet: the schedule starts at epoch 0 with the initial rate."""
        self._publish()

    def get_lr(self) -> float:
        return self.last_lr

    def step(self, metrics: Any = None, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this step's metric (a number, or an array or Tensor of one element) and
        reduce the rate when it has stalled."""
        if metrics is None:
            raise TypeError("ReduceOnPlateau.step needs the metric: step(metrics), e.g. step(val_loss)")
        current = _number(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        if self._is_better(current):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print(f"Epoch {self.last_epoch}: ReduceOnPlateau set learning rate to {self.last_lr}.")
        self._publish()

    def _is_better(self, current: float) -> bool:
        sign = -1.0 if self.mode == "min" else 1.0      # written as torch's, so that an infinite best works
        if self.threshold_mode == "rel":
            bar = self.best * (1.0 + sign * self.threshold)
        else:
            bar = self.best + sign * self.threshold
        return current < bar if self.mode == "min" else current > bar


def _number(metrics: Any) -> float:
    size = getattr(metrics, "size", 1)
    if not isinstance(size, int) or size != 1 or isinstance(metrics, (str, bytes)):
        shape = list(getattr(metrics, "shape", ()))
        raise TypeError(f"ReduceOnPlateau.step: metrics must be a number or hold one value, got "
                        f"{type(metrics).__name__} of shape {shape}")
    return float(metrics.item() if hasattr(metrics, "item") else metrics)
