"""Learning-rate schedulers (Paddle 2 names; also `fluidgrad.optimizer.lr`).

A scheduler is a function of the epoch (or step) counter `last_epoch`:

    sched = StepDecay(0.1, step_size=30, gamma=0.1)
    opt = fluidgrad.optimizer.SGD(learning_rate=sched)
    opt.minimize(loss)
    for epoch in range(90):
        ...exe.run(...)...
        sched.step()          # the next run uses the new rate

How the new rate reaches a static program: the optimizer keeps the rate in a persistable
1-element variable (`opt.lr_var`); `step()` notifies the optimizers using this scheduler,
and each writes `last_lr` into that variable in `global_scope()` (once the startup program
has created it there) and into its startup initialiser. A program run in another scope:
call `opt.sync_lr(scope)` once after the startup program; later steps update it too.
"""
from __future__ import annotations

import math
from typing import Any, Callable


class LRScheduler:
    """Base class: subclasses define `get_lr()`, the rate at epoch `self.last_epoch`."""

    def __init__(self, learning_rate: float = 0.1, last_epoch: int = -1, verbose: bool = False) -> None:
        if not isinstance(learning_rate, (int, float)):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number, "
                            f"got {type(learning_rate).__name__}")
        self.base_lr = float(learning_rate)
        self.last_epoch = last_epoch
        self.verbose = verbose
        self.last_lr = self.base_lr
        self._listeners: list[Callable[[float], None]] = []
        self.step()

    def __call__(self) -> float:
        return self.last_lr

    def get_lr(self) -> float:
        raise NotImplementedError

    def get_last_lr(self) -> float:
        return self.last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance to the next epoch (or jump to `epoch`) and publish the new rate."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(epoch)
        self.last_lr = float(self.get_lr())
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")
        self._publish()

    def _publish(self) -> None:
        """Tell the optimizers using this scheduler (and so their static `lr_var`s) the rate."""
        for listener in self._listeners:
            listener(self.last_lr)

    def _subscribe(self, listener: Callable[[float], None]) -> None:
        """Called with every new rate: how an optimizer keeps its `lr_var` in step."""
        self._listeners.append(listener)

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "last_lr": self.last_lr}

    def set_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at the saved epoch; a static program's `lr_var` takes the restored rate too."""
        self.last_epoch = int(state["last_epoch"])
        self.last_lr = float(state["last_lr"])
        self._publish()


class StepDecay(LRScheduler):
    """lr = learning_rate * gamma ** (epoch // step_size)  (torch StepLR)."""

    def __init__(self, learning_rate: float, step_size: int, gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepDecay: step_size must be a positive integer, got {step_size!r}")
        if gamma >= 1.0:
            raise ValueError(f"StepDecay: gamma must be < 1.0 to decay, got {gamma}")
        self.step_size, self.gamma = step_size, float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepDecay(LRScheduler):
    """lr = learning_rate * gamma ** (number of milestones <= epoch)  (torch MultiStepLR)."""

    def __init__(self, learning_rate: float, milestones: list[int], gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if list(milestones) != sorted(milestones):
            raise ValueError(f"MultiStepDecay: milestones must increase, got {milestones}")
        self.milestones, self.gamma = list(milestones), float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma ** sum(1 for m in self.milestones if self.last_epoch >= m)


class PiecewiseDecay(LRScheduler):
    """values[i] while epoch < boundaries[i] (and values[-1] after the last boundary)."""

    def __init__(self, boundaries: list[int], values: list[float], last_epoch: int = -1, verbose: bool = False) -> None:
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseDecay: needs one more value than boundaries, got {len(boundaries)} "
                             f"boundaries and {len(values)} values")
        if list(boundaries) != sorted(boundaries):
            raise ValueError(f"PiecewiseDecay: boundaries must increase, got {boundaries}")
        self.boundaries, self.values = list(boundaries), [float(v) for v in values]
        super().__init__(values[0], last_epoch, verbose)

    def get_lr(self) -> float:
        return self.values[sum(1 for b in self.boundaries if self.last_epoch >= b)]


class LambdaDecay(LRScheduler):
    """lr = learning_rate * lr_lambda(epoch)  (torch LambdaLR)."""

    def __init__(self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if not callable(lr_lambda):
            raise TypeError(f"LambdaDecay: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * float(self.lr_lambda(self.last_epoch))


class ExponentialDecay(LRScheduler):
    """lr = learning_rate * gamma ** epoch  (torch ExponentialLR)."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.gamma ** self.last_epoch


class CosineAnnealingDecay(LRScheduler):
    """lr = eta_min + (learning_rate - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.

    The closed form of torch's CosineAnnealingLR (it keeps oscillating past T_max, as torch's does).
    """

    def __init__(self, learning_rate: float, T_max: int, eta_min: float = 0.0, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingDecay: T_max must be a positive integer, got {T_max!r}")
        self.T_max, self.eta_min = T_max, float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        cosine = (1.0 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2.0
        return self.eta_min + (self.base_lr - self.eta_min) * cosine


class LinearWarmup(LRScheduler):
    """Rise linearly from start_lr to end_lr over `warmup_steps`, then follow `learning_rate`
    (a number, or a scheduler restarted from epoch 0 at the end of the warm-up)."""

    def __init__(self, learning_rate: float | LRScheduler, warmup_steps: int, start_lr: float, end_lr: float,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        if not isinstance(warmup_steps, int) or warmup_steps <= 0:
            raise ValueError(f"LinearWarmup: warmup_steps must be a positive integer, got {warmup_steps!r}")
        if not isinstance(learning_rate, (int, float, LRScheduler)):
            raise TypeError(f"LinearWarmup: learning_rate must be a number or an LRScheduler, "
                            f"got {type(learning_rate).__name__}")
        self.learning_rate = learning_rate
        self.warmup_steps, self.start_lr, self.end_lr = warmup_steps, float(start_lr), float(end_lr)
        super().__init__(start_lr, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch < self.warmup_steps:
            return self.start_lr + (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)


__all__ = ["CosineAnnealingDecay", "ExponentialDecay", "LRScheduler", "LambdaDecay", "LinearWarmup",
           "MultiStepDecay", "PiecewiseDecay", "StepDecay"]
