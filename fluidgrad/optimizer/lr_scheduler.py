"""torch.optim.lr_scheduler's schedulers: built on an optimizer, stepped once per epoch (or batch).

    opt = fluidgrad.optimizer.SGD(model.parameters(), lr=0.1)
    scheduler = fluidgrad.optimizer.lr_scheduler.StepLR(opt, step_size=30, gamma=0.1)
    for epoch in range(90):
        train(...)              # opt.step() per batch
        scheduler.step()        # the optimizer's rate for the next epoch

Each torch-form scheduler holds the Paddle scheduler of the same formula
(`fluidgrad.optimizer.lr`: StepDecay for StepLR, CosineAnnealingDecay for CosineAnnealingLR, ...),
built on the optimizer's initial rate and stepped with it; after each step the new rate is set on
the optimizer with `set_lr`, so an eager `step()` uses it and a static program reads it from its
rate variable at the next run. The formulas are the closed forms, equal to torch's recursive
ones to rounding.

fluidgrad's parameter groups keep a ratio to the optimizer's rate, so every group follows a
schedule that is a factor times the initial rate in proportion (torch's exactly). The schedules
that take absolute rates (CosineAnnealingLR's and CosineAnnealingWarmRestarts' eta_min,
ReduceLROnPlateau's min_lr, OneCycleLR's max_lr: one value for every group, or for min_lr and
max_lr a list of one per group, as torch), and LambdaLR / MultiplicativeLR given a list of functions,
run one schedule per group when there are several, and set each group's rate (a static program
built with several groups reads each group's rate from its own variable, which that write
updates: `scheduler.step()` between Executor runs). `get_last_lr()` lists the groups' rates.
"""
from __future__ import annotations

import bisect
from typing import Any, Callable, Sequence

from ..lr import LRScheduler as _Schedule
from ..lr.cyclic import CosineAnnealingWarmRestarts as _WarmRestarts
from ..lr.cyclic import OneCycleLR as _OneCycle
from ..lr.decay import (CosineAnnealingDecay, ExponentialDecay, LambdaDecay, MultiplicativeDecay, MultiStepDecay,
                        PolynomialDecay, StepDecay)
from ..lr.decay import LinearLR as _Linear
from ..lr.plateau import ReduceOnPlateau
from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR",
           "MultiplicativeLR", "LinearLR", "ConstantLR", "PolynomialLR", "OneCycleLR", "CosineAnnealingWarmRestarts",
           "ReduceLROnPlateau", "SequentialLR"]


def _group_rates(optimizer: Optimizer, rate: float) -> list[float]:
    """The rate of each parameter group when the optimizer's own rate is `rate` (torch's per-group list)."""
    groups = optimizer.param_groups
    return [rate * optimizer._group_factor(group) for group in groups] if groups else [rate]


def _checked_optimizer(owner: str, optimizer: Any) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: the first argument must be a fluidgrad optimizer, got {type(optimizer).__name__}")
    if isinstance(optimizer._learning_rate, _Schedule):
        raise TypeError(f"{owner}: {type(optimizer).__name__}'s rate is already driven by "
                        f"{type(optimizer._learning_rate).__name__} (fluidgrad.optimizer.lr); give the optimizer a "
                        f"float rate to schedule it the torch way")
    return optimizer


def _per_group(owner: str, name: str, value: Any, optimizer: Optimizer) -> list[Any]:
    """A setting torch takes per parameter group: one value for all, or a list of one per group."""
    groups = max(len(optimizer.param_groups), 1)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"{owner}: expected {groups} values for {name} (one per parameter group), got "
                             f"{len(value)}")
        return [float(v) for v in value]
    return [float(value)] * groups


def _one(owner: str, name: str, value: Any) -> Any:
    """A per-group setting (torch takes a list, one per group): one value serves the one rate here."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"{owner}: {name} per parameter group is not supported (fluidgrad schedules one rate "
                             f"per optimizer, groups in proportion); give one value, got {len(value)}")
        return value[0]
    return value


class LRScheduler:
    """torch's base class: `step()`, `get_last_lr()`, `last_epoch`, `base_lrs`, `state_dict()` /
    `load_state_dict()`. A subclass names its Paddle formula in `_schedule(base_lr, last_epoch)`."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1, verbose: Any = "deprecated") -> None:
        owner = type(self).__name__
        self.optimizer = _checked_optimizer(owner, optimizer)
        base_lr = self._initial_rate(last_epoch)
        self.base_lrs = _group_rates(optimizer, base_lr)
        # schedules of absolute rates run one per group (module docstring); others one for the optimizer
        self.group_schedules: list[_Schedule] | None = None
        if self._absolute and len(optimizer.param_groups) > 1:
            self.base_lrs = self._group_bases()
            self.group_schedules = [self._schedule(rate, last_epoch, index) for index, rate in enumerate(self.base_lrs)]
            self.schedule = self.group_schedules[0]
        else:
            self.schedule = self._schedule(base_lr, last_epoch)   # already stepped to last_epoch + 1
        self._step_count = 1
        self._apply()

    def _initial_rate(self, last_epoch: int) -> float:
        """torch's `initial_lr`: the optimizer's rate when its first scheduler was made (kept, so a
        second scheduler on it starts from the same rate); resuming (last_epoch >= 0) needs it."""
        if last_epoch == -1:
            if getattr(self.optimizer, "_initial_lr", None) is None:
                self.optimizer._initial_lr = self.optimizer.get_lr()
        elif getattr(self.optimizer, "_initial_lr", None) is None:
            raise KeyError(f"{type(self).__name__}: resuming with last_epoch={last_epoch} needs the optimizer's "
                           f"initial rate ('initial_lr'), set by a scheduler built with last_epoch=-1; none was")
        return self.optimizer._initial_lr

    _absolute = False   # whether the schedule takes absolute rates (one schedule per group)

    def _group_bases(self) -> list[float]:
        """Each group's initial rate (torch's initial_lr per group)."""
        return [float(group["lr"]) for group in self.optimizer.param_groups]

    def _schedules(self) -> list[_Schedule]:
        return self.group_schedules if self.group_schedules is not None else [self.schedule]

    def _schedule(self, base_lr: float, last_epoch: int) -> _Schedule:
        raise NotImplementedError(f"{type(self).__name__} must define _schedule(base_lr, last_epoch)")

    @property
    def last_epoch(self) -> int:
        return self.schedule.last_epoch

    @last_epoch.setter
    def last_epoch(self, value: int) -> None:
        for schedule in self._schedules():
            schedule.last_epoch = value

    def _apply(self) -> None:
        if self.group_schedules is None:
            self.optimizer.set_lr(self.schedule.last_lr)
            self._last_lr = _group_rates(self.optimizer, self.schedule.last_lr)
            return
        rates = [float(schedule.last_lr) for schedule in self.group_schedules]
        base = max(rates)
        self.optimizer.set_lr(base)
        if base > 0:   # all at 0: the ratios stay as they were
            for group, rate in zip(self.optimizer.param_groups, rates):
                group["lr"] = rate
        self._last_lr = rates

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to `epoch`, torch's deprecated form) and set the optimizer's rate."""
        for schedule in self._schedules():
            schedule.step(epoch)
        self._step_count += 1
        self._apply()

    def _initial_step(self) -> None:
        self._step_count = 0
        self.step()

    def get_last_lr(self) -> list[float]:
        """The rate of each parameter group after the last step."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Plain values (no optimizer, no functions): the schedule's state and the bookkeeping."""
        state = {**self.schedule.state_dict(), "base_lrs": list(self.base_lrs), "_step_count": self._step_count,
                 "_last_lr": list(self._last_lr)}
        if self.group_schedules is not None:
            state["group_schedules"] = [schedule.state_dict() for schedule in self.group_schedules]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Resume at the saved epoch; the optimizer takes the restored rate."""
        self.schedule.set_state_dict(state_dict)
        if self.group_schedules is not None and "group_schedules" in state_dict:
            for schedule, state in zip(self.group_schedules, state_dict["group_schedules"]):
                schedule.set_state_dict(state)
        self.base_lrs = [float(v) for v in state_dict.get("base_lrs", self.base_lrs)]
        self._step_count = int(state_dict.get("_step_count", self._step_count))
        self._apply()


class StepLR(LRScheduler):
    """lr = initial * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1,
                 verbose: Any = "deprecated") -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int) -> _Schedule:
        return StepDecay(base_lr, self.step_size, self.gamma, last_epoch)


class MultiStepLR(LRScheduler):
    """lr = initial * gamma ** (number of milestones reached); a repeated milestone counts twice."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1,
                 verbose: Any = "deprecated") -> None:
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int) -> _Schedule:
        return MultiStepDecay(base_lr, self.milestones, self.gamma, last_epoch)


class ExponentialLR(LRScheduler):
    """lr = initial * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1, verbose: Any = "deprecated") -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int) -> _Schedule:
        return ExponentialDecay(base_lr, self.gamma, last_epoch)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial - eta_min) (1 + cos(pi epoch / T_max)) / 2 (on past T_max, as torch)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1,
                 verbose: Any = "deprecated") -> None:
        self.T_max, self.eta_min = T_max, eta_min
        self._eta_mins = _per_group(type(self).__name__, "eta_min", eta_min, _checked_optimizer(
            type(self).__name__, optimizer))
        super().__init__(optimizer, last_epoch)

    _absolute = True

    def _schedule(self, base_lr: float, last_epoch: int, index: int = 0) -> _Schedule:
        return CosineAnnealingDecay(base_lr, self.T_max, self._eta_mins[index], last_epoch)


def _functions(owner: str, lr_lambda: Any, optimizer: Any) -> list[Callable[[int], float]]:
    """torch's lr_lambda: one function for every group, or a list of one per group."""
    groups = max(len(_checked_optimizer(owner, optimizer).param_groups), 1)
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * groups
    if len(lr_lambda) != groups:
        raise ValueError(f"{owner}: Expected {groups} lr_lambdas (one per parameter group), but got {len(lr_lambda)}")
    return list(lr_lambda)


class LambdaLR(LRScheduler):
    """lr = initial * lr_lambda(epoch); a list of functions, one per parameter group, gives each
    group its own schedule from its own initial rate (as torch), in eager and static mode alike."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
                 last_epoch: int = -1, verbose: Any = "deprecated") -> None:
        self.lr_lambdas = _functions(type(self).__name__, lr_lambda, optimizer)
        self.lr_lambda, self._absolute = self.lr_lambdas[0], isinstance(lr_lambda, (list, tuple))
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int, index: int = 0) -> _Schedule:
        return LambdaDecay(base_lr, self.lr_lambdas[index], last_epoch)


class MultiplicativeLR(LRScheduler):
    """lr = initial * lr_lambda(1) * ... * lr_lambda(epoch); a list: one function per group, as LambdaLR."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
                 last_epoch: int = -1, verbose: Any = "deprecated") -> None:
        self.lr_lambdas = _functions(type(self).__name__, lr_lambda, optimizer)
        self.lr_lambda, self._absolute = self.lr_lambdas[0], isinstance(lr_lambda, (list, tuple))
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int, index: int = 0) -> _Schedule:
        return MultiplicativeDecay(base_lr, self.lr_lambdas[index], last_epoch)


class LinearLR(LRScheduler):
    """The initial rate times a factor moving linearly from start_factor to end_factor over total_iters."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1, verbose: Any = "deprecated") -> None:
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int) -> _Schedule:
        return _Linear(base_lr, self.total_iters, self.start_factor, self.end_factor, last_epoch)


class ConstantLR(LRScheduler):
    """The initial rate times `factor` for the first total_iters epochs, then the initial rate."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1,
                 verbose: Any = "deprecated") -> None:
        if not 0.0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: factor must lie in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int) -> _Schedule:
        factor, total = self.factor, self.total_iters
        return LambdaDecay(base_lr, lambda epoch: factor if epoch < total else 1.0, last_epoch)


class PolynomialLR(LRScheduler):
    """lr = initial * (1 - min(epoch, total_iters) / total_iters) ** power."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1,
                 verbose: Any = "deprecated") -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def _schedule(self, base_lr: float, last_epoch: int) -> _Schedule:
        return PolynomialDecay(base_lr, self.total_iters, 0.0, self.power, False, last_epoch)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every T_0, T_0 T_mult, ... epochs; `step(epoch)` takes fractions."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1,
                 verbose: Any = "deprecated") -> None:
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        self._eta_mins = _per_group(type(self).__name__, "eta_min", eta_min, _checked_optimizer(
            type(self).__name__, optimizer))
        super().__init__(optimizer, last_epoch)

    _absolute = True

    def _schedule(self, base_lr: float, last_epoch: int, index: int = 0) -> _Schedule:
        return _WarmRestarts(base_lr, self.T_0, self.T_mult, self._eta_mins[index], last_epoch)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: from max_lr / div_factor up to max_lr over pct_start of total_steps (or
    epochs * steps_per_epoch), then down to max_lr / div_factor / final_div_factor; stepped per batch.

    `cycle_momentum` (torch's default) moves the momentum the other way, from max_momentum to
    base_momentum and back, written into every parameter group as torch writes it: `momentum`
    (SGD, which it switches on at SGD(momentum=0) as torch does, Momentum, RMSprop) or beta1 of
    `betas` (Adam, AdamW, Adamax, NAdam, RAdam). An optimizer with neither, or one whose static
    program fixed its momentum when minimize() built it, is an error saying to pass
    cycle_momentum=False."""

    def __init__(self, optimizer: Optimizer, max_lr: float | Sequence[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum: float = 0.85,
                 max_momentum: float = 0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1, verbose: Any = "deprecated") -> None:
        owner = "OneCycleLR"
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = int(epochs) * int(steps_per_epoch)
        self._max_lrs = _per_group(owner, "max_lr", max_lr, _checked_optimizer(owner, optimizer))
        self.total_steps, self.max_lr = total_steps, self._max_lrs[0]
        self._phases = dict(phase_pct=pct_start, anneal_strategy=anneal_strategy, three_phase=three_phase)
        self.div_factor, self.final_div_factor = float(div_factor), float(final_div_factor)
        self.cycle_momentum = bool(cycle_momentum)
        if self.cycle_momentum:
            _check_cycled_momentum(optimizer)
            low, high = float(_one(owner, "base_momentum", base_momentum)), float(_one(owner, "max_momentum",
                                                                                      max_momentum))
            if not 0.0 < low <= high:
                raise ValueError(f"OneCycleLR: need 0 < base_momentum <= max_momentum, got {low}, {high}")
            # the same phases over momentum values: max -> base -> max (three-phase: -> max)
            self.momentum_schedule = _OneCycle(low, total_steps, divide_factor=low / high, end_learning_rate=high,
                                               last_epoch=last_epoch, **self._phases)
        super().__init__(optimizer, last_epoch)

    def _initial_rate(self, last_epoch: int) -> float:
        """torch sets the initial rate to max_lr / div_factor, whatever the optimizer's was."""
        self.optimizer._initial_lr = self.max_lr / self.div_factor
        return self.optimizer._initial_lr

    _absolute = True

    def _group_bases(self) -> list[float]:
        return [rate / self.div_factor for rate in self._max_lrs]

    def _schedule(self, base_lr: float, last_epoch: int, index: int = 0) -> _Schedule:
        return _OneCycle(self._max_lrs[index], self.total_steps, divide_factor=self.div_factor,
                         end_learning_rate=base_lr / self.final_div_factor, last_epoch=last_epoch, **self._phases)

    def step(self, epoch: int | None = None) -> None:
        if self.cycle_momentum:
            self.momentum_schedule.step(epoch)
        super().step(epoch)

    def _apply(self) -> None:
        if self.cycle_momentum:
            key = _check_cycled_momentum(self.optimizer)
            for group in self.optimizer.param_groups:
                group[key] = self.momentum_schedule.last_lr
        super()._apply()


def _check_cycled_momentum(optimizer: Optimizer) -> str:
    """The option that cycle_momentum writes into the groups: beta1 (torch's betas[0]) or momentum."""
    owner = type(optimizer).__name__
    key = "beta1" if "beta1" in optimizer.options else "momentum" if "momentum" in optimizer.options else None
    if key is None:
        raise ValueError(f"OneCycleLR: optimizer must support momentum or beta1 with `cycle_momentum` option "
                         f"enabled, and {owner} has neither; pass cycle_momentum=False")
    if optimizer._lr_vars:
        raise ValueError(f"OneCycleLR: cycle_momentum=True cannot reach a static program: {owner}'s update ops "
                         f"fixed their momentum when minimize() built them; pass cycle_momentum=False")
    return key


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by `factor` when `step(metric)` has not improved for more than `patience`
    epochs (torch's; Paddle's ReduceOnPlateau). It scales the optimizer's current rate."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | Sequence[float] = 0.0, eps: float = 1e-8, verbose: Any = "deprecated") -> None:
        self._options = dict(mode=mode, factor=factor, patience=patience, threshold=threshold,
                             threshold_mode=threshold_mode, cooldown=cooldown,
                             epsilon=eps)
        self._min_lrs = _per_group(type(self).__name__, "min_lr", min_lr, _checked_optimizer(
            type(self).__name__, optimizer))
        super().__init__(optimizer, 0)

    _absolute = True

    def _initial_rate(self, last_epoch: int) -> float:
        return self.optimizer.get_lr()

    def _schedule(self, base_lr: float, last_epoch: int, index: int = 0) -> _Schedule:
        return ReduceOnPlateau(base_lr, min_lr=self._min_lrs[index], **self._options)

    def step(self, metrics: Any = None, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this epoch's metric (e.g. the validation loss) and reduce the rate if it stalled."""
        for schedule in self._schedules():
            schedule.step(metrics, epoch)
        self._step_count += 1
        self._apply()

    @property
    def best(self) -> float:
        return self.schedule.best

    @property
    def num_bad_epochs(self) -> int:
        return self.schedule.num_bad_epochs


class SequentialLR:
    """Run `schedulers` one after another, switching at each of `milestones` (an epoch count);
    each scheduler restarts from its epoch 0 when its turn comes."""

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1, verbose: Any = "deprecated") -> None:
        if not schedulers:
            raise ValueError("SequentialLR: expects at least one scheduler")
        for i, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau) or not isinstance(scheduler, LRScheduler):
                raise TypeError(f"SequentialLR: schedulers[{i}] is a {type(scheduler).__name__}; it takes the "
                                f"epoch-stepped torch-form schedulers (not ReduceLROnPlateau)")
            if scheduler.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: schedulers[{i}] ({type(scheduler).__name__}) schedules another "
                                 f"optimizer than the one given")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expects one milestone fewer than schedulers, got {len(schedulers)} "
                             f"schedulers and {len(milestones)} milestones")
        self.optimizer, self._schedulers, self._milestones = optimizer, list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        optimizer.set_lr(optimizer._initial_lr)
        for scheduler in self._schedulers:       # undo the step each took when built
            scheduler.last_epoch -= 1
        first = self._schedulers[bisect.bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        scheduler.step(0 if index > 0 and self._milestones[index - 1] == self.last_epoch else None)
        self._last_lr = scheduler.get_last_lr()

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "_milestones": list(self._milestones), "_last_lr": list(self._last_lr),
                "_schedulers": [scheduler.state_dict() for scheduler in self._schedulers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.last_epoch = int(state_dict["last_epoch"])
        self._last_lr = list(state_dict["_last_lr"])
        for scheduler, state in zip(self._schedulers, state_dict["_schedulers"]):
            scheduler.load_state_dict(state)
        current = self._schedulers[bisect.bisect_right(self._milestones, self.last_epoch)]
        current._apply()
