"""Schedulers whose rate is a closed form of the epoch: decays (step, exponential, polynomial,
...), warm-ups and cosine annealing. Jumping with `step(epoch)` gives the same rate as stepping
there one epoch at a time."""
from __future__ import annotations

import math
from typing import Callable

from .base import LRScheduler, is_rate


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
        if not (is_rate(learning_rate) or isinstance(learning_rate, LRScheduler)):
            raise TypeError(f"LinearWarmup: learning_rate must be a number or an LRScheduler, "
                            f"got {type(learning_rate).__name__}")
        self.learning_rate = learning_rate if isinstance(learning_rate, LRScheduler) else float(learning_rate)
        self.warmup_steps, self.start_lr, self.end_lr = warmup_steps, float(start_lr), float(end_lr)
        super().__init__(start_lr, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch < self.warmup_steps:
            return self.start_lr + (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)


def _positive_int(owner: str, name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return value


class NaturalExpDecay(LRScheduler):
    """lr = learning_rate * exp(-gamma * epoch)."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        if not gamma > 0.0:
            raise ValueError(f"NaturalExpDecay: gamma must be > 0.0 to decay, got {gamma}")
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * math.exp(-self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """lr = learning_rate / (1 + gamma * epoch)."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr / (1.0 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """lr = (learning_rate - end_lr) * (1 - epoch / decay_steps) ** power + end_lr, held at end_lr
    after decay_steps (torch PolynomialLR with end_lr=0); with `cycle` the decay restarts, each
    cycle stretched to the next multiple of decay_steps."""

    def __init__(self, learning_rate: float, decay_steps: int, end_lr: float = 0.0001, power: float = 1.0,
                 cycle: bool = False, last_epoch: int = -1, verbose: bool = False) -> None:
        self.decay_steps = _positive_int("PolynomialDecay", "decay_steps", decay_steps)
        self.end_lr, self.power, self.cycle = float(end_lr), float(power), bool(cycle)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            steps = self.decay_steps * max(1, math.ceil(epoch / self.decay_steps))
        else:
            epoch = min(epoch, steps)
        return (self.base_lr - self.end_lr) * (1.0 - epoch / steps) ** self.power + self.end_lr


class NoamDecay(LRScheduler):
    """The Transformer's schedule: lr = learning_rate * d_model ** -0.5 *
    min(epoch ** -0.5, epoch * warmup_steps ** -1.5) (a linear rise, then 1/sqrt decay)."""

    def __init__(self, d_model: int, warmup_steps: int, learning_rate: float = 1.0, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if not d_model > 0:
            raise ValueError(f"NoamDecay: d_model must be positive, got {d_model!r}")
        self.d_model = d_model
        self.warmup_steps = _positive_int("NoamDecay", "warmup_steps", warmup_steps)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        a = 1.0 if self.last_epoch == 0 else self.last_epoch ** -0.5
        b = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * self.d_model ** -0.5 * min(a, b)


class MultiplicativeDecay(LRScheduler):
    """lr = learning_rate * lr_lambda(1) * ... * lr_lambda(epoch)  (torch MultiplicativeLR)."""

    def __init__(self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if not callable(lr_lambda):
            raise TypeError(f"MultiplicativeDecay: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        lr = self.base_lr
        for epoch in range(1, self.last_epoch + 1):
            lr *= float(self.lr_lambda(epoch))
        return lr


class LinearLR(LRScheduler):
    """The rate scaled by a factor moving linearly from start_factor to end_factor over
    total_steps, then held (torch LinearLR)."""

    def __init__(self, learning_rate: float, total_steps: int, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        self.total_steps = _positive_int("LinearLR", "total_steps", total_steps)
        if not 0.0 < start_factor <= 1.0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0.0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        done = min(self.last_epoch, self.total_steps) / self.total_steps
        return self.base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)
