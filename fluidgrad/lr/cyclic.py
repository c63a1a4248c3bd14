"""Schedulers that go up and down: one cycle (OneCycleLR), repeated triangles (CyclicLR) and
cosine annealing with warm restarts. Each rate is a closed form of the step, so `step(epoch)`
jumps exactly and a restored `last_epoch` resumes the schedule."""
from __future__ import annotations

import math
from typing import Callable

from .base import LRScheduler, is_rate
from .decay import _positive_int


def _cosine(start: float, end: float, fraction: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * fraction) + 1.0)


def _linear(start: float, end: float, fraction: float) -> float:
    return start + (end - start) * fraction


class OneCycleLR(LRScheduler):
    """The 1cycle policy (torch OneCycleLR): from max_learning_rate / divide_factor up to
    max_learning_rate over the first phase_pct of total_steps, then down to end_learning_rate;
    with `three_phase` back down to the start over a second equal phase, then to the end. Each
    phase anneals by `anneal_strategy` ('cos' or 'linear'). Stepping past total_steps is an error."""

    def __init__(self, max_learning_rate: float, total_steps: int, divide_factor: float = 25.0,
                 end_learning_rate: float = 0.0001, phase_pct: float = 0.3, anneal_strategy: str = "cos",
                 three_phase: bool = False, last_epoch: int = -1, verbose: bool = False) -> None:
        if not is_rate(max_learning_rate) or max_learning_rate < 0:
            raise ValueError(f"OneCycleLR: max_learning_rate must be a non-negative number, got {max_learning_rate!r}")
        self.total_steps = _positive_int("OneCycleLR", "total_steps", total_steps)
        if not 0.0 <= phase_pct <= 1.0:
            raise ValueError(f"OneCycleLR: phase_pct must be in [0, 1], got {phase_pct}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        if not divide_factor > 0:
            raise ValueError(f"OneCycleLR: divide_factor must be positive, got {divide_factor}")
        initial = float(max_learning_rate) / float(divide_factor)
        peak, end = float(max_learning_rate), float(end_learning_rate)
        if three_phase:
            self._boundaries = [0.0, phase_pct * total_steps - 1, 2 * phase_pct * total_steps - 2, total_steps - 1.0]
            self._rates = [initial, peak, initial, end]
        else:
            self._boundaries = [0.0, phase_pct * total_steps - 1, total_steps - 1.0]
            self._rates = [initial, peak, end]
        self._anneal: Callable[[float, float, float], float] = _cosine if anneal_strategy == "cos" else _linear
        self.three_phase = bool(three_phase)
        super().__init__(initial, last_epoch, verbose)

    def get_lr(self) -> float:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped to {step}, past total_steps={self.total_steps}")
        phases = len(self._rates) - 1
        for i in range(phases):
            start, end = self._boundaries[i], self._boundaries[i + 1]
            if step <= end or i == phases - 1:
                return self._anneal(self._rates[i], self._rates[i + 1], (step - start) / (end - start))
        raise AssertionError("unreachable")


_SCALE_FUNCTIONS: dict[str, tuple[Callable[[float, float], float], str]] = {
    "triangular": (lambda x, gamma: 1.0, "cycle"),
    "triangular2": (lambda x, gamma: 1.0 / 2.0 ** (x - 1), "cycle"),
    "exp_range": (lambda x, gamma: gamma ** x, "iterations"),
}


class CyclicLR(LRScheduler):
    """Cyclical learning rates (torch CyclicLR): the rate climbs from base_learning_rate to
    max_learning_rate over step_size_up steps and back over step_size_down (default: the same),
    the amplitude scaled per cycle ('triangular': constant, 'triangular2': halved each cycle) or
    per step ('exp_range': exp_gamma ** step), or by your `scale_fn` of the cycle or step number
    (`scale_mode`)."""

    def __init__(self, base_learning_rate: float, max_learning_rate: float, step_size_up: int,
                 step_size_down: int | None = None, mode: str = "triangular", exp_gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 last_epoch: int = -1, verbose: bool = False) -> None:
        if not is_rate(max_learning_rate) or max_learning_rate < 0:
            raise ValueError(f"CyclicLR: max_learning_rate must be a non-negative number, got {max_learning_rate!r}")
        up = _positive_int("CyclicLR", "step_size_up", step_size_up)
        down = up if step_size_down is None else _positive_int("CyclicLR", "step_size_down", step_size_down)
        if scale_fn is None:
            if mode not in _SCALE_FUNCTIONS:
                raise ValueError(f"CyclicLR: mode must be one of {sorted(_SCALE_FUNCTIONS)} (or give scale_fn), "
                                 f"got {mode!r}")
            function, scale_mode = _SCALE_FUNCTIONS[mode]
            self._scale = lambda x: function(x, self.exp_gamma)
        else:
            if scale_mode not in ("cycle", "iterations"):
                raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
            self._scale = scale_fn
        self.max_lr, self.mode, self.exp_gamma, self.scale_mode = float(max_learning_rate), mode, float(exp_gamma), scale_mode
        self.cycle_size = up + down
        self.step_up_ratio = up / self.cycle_size
        super().__init__(base_learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        step = self.last_epoch
        cycle = 1 + step // self.cycle_size
        position = 1.0 + step / self.cycle_size - cycle       # the fraction of this cycle done
        if position <= self.step_up_ratio:
            height = position / self.step_up_ratio
        else:
            height = (1.0 - position) / (1.0 - self.step_up_ratio)
        scale = self._scale(cycle if self.scale_mode == "cycle" else step)
        return self.base_lr + (self.max_lr - self.base_lr) * height * scale


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from learning_rate to eta_min over T_0 epochs, then restarting, each
    period T_mult times the previous (SGDR; torch CosineAnnealingWarmRestarts). `step(epoch)`
    takes fractional epochs too (a step per batch: `step(epoch + i / batches)`)."""

    state_keys = ("last_epoch", "last_lr", "epoch")

    def __init__(self, learning_rate: float, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        self.T_0 = _positive_int("CosineAnnealingWarmRestarts", "T_0", T_0)
        if not isinstance(T_mult, int) or isinstance(T_mult, bool) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got {T_mult!r}")
        self.T_mult, self.eta_min = T_mult, float(eta_min)
        self.epoch = float(last_epoch)
        super().__init__(learning_rate, last_epoch, verbose)

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or jump to `epoch` (a float is fine)."""
        if epoch is not None and epoch < 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: epoch must be non-negative, got {epoch}")
        self.epoch = max(self.epoch + 1.0, 0.0) if epoch is None else float(epoch)
        super().step(math.floor(self.epoch))

    def get_lr(self) -> float:
        start, period = 0.0, float(self.T_0)
        if self.T_mult == 1:
            start = math.floor(self.epoch / period) * period
        while self.epoch >= start + period:               # which restart the epoch falls in
            start, period = start + period, period * self.T_mult
        return _cosine(self.base_lr, self.eta_min, (self.epoch - start) / period)
