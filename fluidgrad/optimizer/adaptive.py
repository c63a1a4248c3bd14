"""Optimizers with per-coordinate rates: RMSProp, Adagrad, Adamax, Adadelta, Rprop (Paddle 2's names and
arguments; `lr=` and parameters first also work, as for every fluidgrad optimizer).

Each names its update op (ops/optim_adaptive.py) and its accumulators; the base class does the
rest the same way for all: static `minimize()` appends the op per parameter, eager `step()`
runs its kernel, `state_dict()` saves the accumulators, `weight_decay` is L2 added to the
gradient and ParamAttr(learning_rate=...) / parameter groups scale the rate per parameter.
The updates follow torch.optim's formulas (see the ops for where Paddle places epsilon).
"""
from __future__ import annotations

from typing import Any, Iterable


from ..lr import LRScheduler, is_rate
from ..nn.clip import GradientClipBase
from .optimizer import Optimizer, Update, default_rate


def _check(owner: str, **bounds: tuple[float, float, float]) -> None:
    """Each value must lie in [low, high) (high None: no upper bound)."""
    for name, (value, low, high) in bounds.items():
        if not (is_rate(value) and low <= value and (high is None or value < high)):
            raise ValueError(f"{owner}: {name} must lie in [{low}, {'inf' if high is None else high}), got {value}")


class RMSProp(Optimizer):
    """Divides the rate by a running root mean square of the gradients (rho: its decay); centered
    subtracts the running mean gradient's square; momentum accumulates the scaled steps."""

    op_type = "rmsprop"
    options = ("rho", "epsilon", "momentum", "centered")

    def __init__(self, learning_rate: float | LRScheduler | None = None, rho: float = 0.95, epsilon: float = 1e-6,
                 momentum: float = 0.0, centered: bool = False, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        self._update_for({"rho": rho, "epsilon": epsilon, "momentum": momentum, "centered": centered})
        self.rho, self.epsilon, self.momentum, self.centered = float(rho), float(epsilon), float(momentum), \
            bool(centered)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        rho, epsilon, momentum, centered = (settings[k] for k in ("rho", "epsilon", "momentum", "centered"))
        _check(type(self).__name__, rho=(rho, 0.0, 1.0), epsilon=(epsilon, 0.0, None), momentum=(momentum, 0.0, None))
        # accumulators an option leaves unused are one-element placeholders (see the op)
        return Update("rmsprop", {"rho": float(rho), "epsilon": float(epsilon), "momentum": float(momentum),
                                  "centered": bool(centered)},
                      {"MeanSquare": (0.0, "param"), "MeanGrad": (0.0, "param" if centered else "scalar"),
                       "Moment": (0.0, "param" if momentum else "scalar")})


class Adagrad(Optimizer):
    """Divides the rate by the root of each coordinate's summed squared gradients (which start at
    initial_accumulator_value). torch's `lr_decay` (a group option too) runs step t at
    lr / (1 + (t - 1) lr_decay): the `adagrad_decay` op, whose Step accumulator counts each
    parameter's steps, in a static program as in eager steps."""

    op_type = "adagrad"
    options = ("epsilon", "initial_accumulator_value", "lr_decay")

    def __init__(self, learning_rate: float | LRScheduler | None = None, epsilon: float | None = None,
                 parameters: Iterable[Any] | None = None, weight_decay: float | None = None,
                 grad_clip: GradientClipBase | None = None, name: str | None = None,
                 initial_accumulator_value: float = 0.0, *, lr: float | LRScheduler | None = None,
                 lr_decay: float = 0.0) -> None:
        torch_call = _torch_call(self)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name,
                         lr=default_rate(learning_rate, lr, 0.01) if torch_call else lr)
        epsilon = (1e-10 if torch_call else 1e-6) if epsilon is None else epsilon
        self._update_for({"epsilon": epsilon, "initial_accumulator_value": initial_accumulator_value,
                          "lr_decay": lr_decay})
        self.epsilon, self.initial_accumulator_value = float(epsilon), float(initial_accumulator_value)
        self.lr_decay = float(lr_decay)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        epsilon, initial, lr_decay = settings["epsilon"], settings["initial_accumulator_value"], settings["lr_decay"]
        _check("Adagrad", epsilon=(epsilon, 0.0, None), initial_accumulator_value=(initial, 0.0, None),
               lr_decay=(lr_decay, 0.0, None))
        if lr_decay:
            return Update("adagrad_decay", {"epsilon": float(epsilon), "lr_decay": float(lr_decay)},
                          {"Moment": (float(initial), "param"), "Step": (0.0, "scalar")})
        return Update("adagrad", {"epsilon": float(epsilon)}, {"Moment": (float(initial), "param")})


class Adamax(Optimizer):
    """Adam with the running maximum of |g| (decaying by beta2) in place of the root mean square."""

    op_type = "adamax"
    options = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameters: Iterable[Any] | None = None, weight_decay: float | None = None,
                 grad_clip: GradientClipBase | None = None, name: str | None = None, *,
                 lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name,
                         lr=default_rate(learning_rate, lr, 0.002) if _torch_call(self) else lr)
        self._update_for({"beta1": beta1, "beta2": beta2, "epsilon": epsilon})
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        beta1, beta2, epsilon = settings["beta1"], settings["beta2"], settings["epsilon"]
        _check("Adamax", beta1=(beta1, 0.0, 1.0), beta2=(beta2, 0.0, 1.0), epsilon=(epsilon, 0.0, None))
        # Beta1Pow starts at beta1**1: the first step's bias correction (torch's beta1 ** step)
        return Update("adamax", {"beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon)},
                      {"Moment": (0.0, "param"), "InfNorm": (0.0, "param"), "Beta1Pow": (float(beta1), "scalar")},
                      {"Beta1Pow": float(beta1)})


class Adadelta(Optimizer):
    """Steps of sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g times the rate (rho: the decay of both
    running averages); Paddle's default rate is 0.001, PyTorch's 1.0."""

    op_type = "adadelta"
    options = ("rho", "epsilon")

    def __init__(self, learning_rate: float | LRScheduler | None = None, epsilon: float = 1e-6,
                 rho: float | None = None, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        torch_call = _torch_call(self)
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name,
                         lr=default_rate(learning_rate, lr, 1.0) if torch_call else lr)
        rho = (0.9 if torch_call else 0.95) if rho is None else rho
        self._update_for({"rho": rho, "epsilon": epsilon})
        self.rho, self.epsilon = float(rho), float(epsilon)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        rho, epsilon = settings["rho"], settings["epsilon"]
        _check("Adadelta", rho=(rho, 0.0, 1.0), epsilon=(epsilon, 0.0, None))
        return Update("adadelta", {"rho": float(rho), "epsilon": float(epsilon)},
                      {"AvgSquaredGrad": (0.0, "param"), "AvgSquaredUpdate": (0.0, "param")})


class Rprop(Optimizer):
    """Resilient backpropagation: per-coordinate step sizes that grow by etas[1] while the
    gradient's sign holds and shrink by etas[0] when it flips, within learning_rate_range; the
    rate is the initial step size. For full-batch training (the signs of minibatch gradients are
    noise). torch's `step_sizes=` is `learning_rate_range`."""

    op_type = "rprop"
    options = ("learning_rate_range", "etas")

    def __init__(self, learning_rate: float | LRScheduler | None = None,
                 learning_rate_range: tuple[float, float] | None = None, parameters: Iterable[Any] | None = None,
                 etas: tuple[float, float] = (0.5, 1.2), grad_clip: GradientClipBase | None = None,
                 multi_precision: bool = False, name: str | None = None, *,
                 lr: float | LRScheduler | None = None) -> None:
        torch_call = _torch_call(self)
        super().__init__(learning_rate, parameters, None, grad_clip, name,
                         lr=default_rate(learning_rate, lr, 0.01) if torch_call else lr)
        if learning_rate_range is None:
            learning_rate_range = (1e-6, 50.0) if torch_call else (1e-5, 50.0)
        self._update_for({"learning_rate_range": learning_rate_range, "etas": etas})
        self.learning_rate_range = _pair("Rprop", "learning_rate_range", learning_rate_range)
        self.etas = _pair("Rprop", "etas", etas)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        low, high = _pair("Rprop", "learning_rate_range", settings["learning_rate_range"])
        eta_negative, eta_positive = _pair("Rprop", "etas", settings["etas"])
        if not 0 < low <= high:
            raise ValueError(f"Rprop: learning_rate_range must be (min, max) with 0 < min <= max, "
                             f"got {settings['learning_rate_range']}")
        if not 0 < eta_negative < 1 < eta_positive:
            raise ValueError(f"Rprop: etas must be (eta_negative, eta_positive) with 0 < eta_negative < 1 < "
                             f"eta_positive, got {settings['etas']}")
        return Update("rprop", {"eta_negative": eta_negative, "eta_positive": eta_positive, "step_size_min": low,
                                "step_size_max": high},
                      {"Prev": (0.0, "param"), "StepSize": (0.0, "param"), "Step": (0.0, "scalar")})


def _torch_call(optimizer: Any) -> bool:
    """Whether the optimizer is being built as torch builds it (parameters first, or lr=): the settings
    not given then take torch's defaults (Adadelta lr 1.0 and rho 0.9, Adamax lr 0.002, Rprop lr 0.01
    and step sizes (1e-6, 50), Adagrad eps 1e-10), else Paddle's (keywords.py sets the flag)."""
    return bool(getattr(optimizer, "_torch_call", False))


def _pair(owner: str, name: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{owner}: {name} must be a pair of numbers, got {value!r}")
    return float(value[0]), float(value[1])


class RMSprop(RMSProp):
    """torch.optim.RMSprop: RMSProp with torch's defaults (lr 0.01, alpha = rho 0.99, eps 1e-8;
    Paddle's RMSProp has rho 0.95 and epsilon 1e-6 and no default rate). The update is the same
    op: epsilon outside the root, as torch places it."""

    def __init__(self, learning_rate: float | LRScheduler | None = None, rho: float = 0.99, epsilon: float = 1e-8,
                 momentum: float = 0.0, centered: bool = False, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        if learning_rate is None and lr is None:
            lr = 0.01
        super().__init__(learning_rate, rho, epsilon, momentum, centered, parameters, weight_decay, grad_clip,
                         name, lr=lr)

__all__ = ["Adadelta", "Adagrad", "Adamax", "RMSProp", "RMSprop", "Rprop"]
