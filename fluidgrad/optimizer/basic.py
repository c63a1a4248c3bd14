"""SGD, Momentum, Adam and AdamW: the optimizers every script starts with (Paddle 2's and torch's).

Each names its options (`options`, also the keys of a parameter group) and builds its update from
their values (`_update_for`): the base class (optimizer.py) runs it per parameter group, eagerly
at each step or as static update ops.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..lr import LRScheduler, is_rate
from ..nn.clip import GradientClipBase
from ..regularizer import L2Decay, WeightDecayRegularizer
from .inplace import sgd_in_place
from .optimizer import Optimizer, Update
from .param_groups import option_key

_VELOCITY = {"Velocity": (0.0, "param")}


class SGD(Optimizer):
    """p -= lr * g; with torch.optim.SGD's `momentum=` (and `nesterov=`) the `momentum` op's update,
    as Momentum (an instance of a subclass of SGD that names that op). A group's momentum above 0
    (written, or cycled by OneCycleLR) switches its parameters to that update, as in torch."""

    op_type = "sgd"
    options = ("momentum", "dampening", "use_nesterov")
    in_place_update = staticmethod(sgd_in_place)

    def __new__(cls, *args: Any, momentum: float = 0.0, **kwargs: Any) -> "SGD":
        return super().__new__(_MomentumSGD if cls is SGD and momentum else cls)

    def __init__(self, learning_rate: float | LRScheduler | None = None, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None, momentum: float = 0.0,
                 dampening: float = 0.0, use_nesterov: bool = False) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        if use_nesterov and not momentum:
            raise ValueError("SGD: Nesterov momentum (nesterov=True) needs a momentum > 0")
        self.momentum, self.dampening, self.use_nesterov = momentum, dampening, use_nesterov
        self._update_for(self._settings())
        self.momentum, self.dampening, self.use_nesterov = float(momentum), float(dampening), bool(use_nesterov)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        momentum, dampening = settings["momentum"], settings["dampening"]
        if not is_rate(momentum) or momentum < 0:
            raise ValueError(f"SGD: momentum must be a non-negative float, got {momentum!r}")
        if dampening:
            raise ValueError(f"SGD: dampening={dampening!r} is not supported (only 0, torch.optim.SGD's default: "
                             "its first step is undampened, which the momentum op does not track)")
        if not momentum:
            return Update("sgd", {}, {})
        return Update("momentum", {"mu": float(momentum), "use_nesterov": bool(settings["use_nesterov"])}, _VELOCITY)


class _MomentumSGD(SGD):
    """SGD(momentum=m > 0): v = m * v + g; p -= lr * v (Nesterov: p -= lr * (g + m * v)). Its own
    type, so code dispatching on type(optimizer) (the distributed fused updates) never takes it for
    plain SGD."""

    op_type = "momentum"


_MomentumSGD.__name__ = "SGD"   # errors name the class the user wrote


class Momentum(Optimizer):
    """v = momentum * v + g; p -= lr * v (Nesterov: p -= lr * (g + momentum * v)), torch.optim.SGD's form."""

    op_type = "momentum"
    options = ("momentum", "use_nesterov")

    def __init__(self, learning_rate: float | LRScheduler | None = None, momentum: float = 0.9,
                 parameters: Iterable[Any] | None = None, use_nesterov: bool = False,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        self.momentum, self.use_nesterov = float(momentum), bool(use_nesterov)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        if not is_rate(settings["momentum"]):
            raise ValueError(f"Momentum: momentum must be a float, got {settings['momentum']!r}")
        return Update("momentum", {"mu": float(settings["momentum"]), "use_nesterov": bool(settings["use_nesterov"])},
                      _VELOCITY)


class Adam(Optimizer):
    """Adam with bias correction; `weight_decay` is L2 added to the gradient (torch.optim.Adam).
    `amsgrad=True` (Paddle 2 and torch) divides by the running maximum of the second moment: the
    `adam_amsgrad` op, in an instance of a subclass of Adam (see _MomentumSGD for why); a group may
    switch it on or off for its parameters. A group's new beta1 / beta2 enter the bias correction
    as torch's `beta ** step` (see Optimizer._rebase_powers)."""

    op_type = "adam"
    options = ("beta1", "beta2", "epsilon", "amsgrad")

    def __new__(cls, *args: Any, amsgrad: bool = False, **kwargs: Any) -> "Adam":
        return super().__new__(_AMSGRAD.get(cls, cls) if amsgrad else cls)

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameters: Iterable[Any] | None = None,
                 weight_decay: float | None = None, grad_clip: GradientClipBase | None = None,
                 name: str | None = None, *, lr: float | LRScheduler | None = None, amsgrad: bool = False) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name, lr=lr)
        if bool(amsgrad) != (self.op_type == "adam_amsgrad"):
            raise TypeError(f"{type(self).__name__}: amsgrad={amsgrad!r} does not fit this class's update op "
                            f"{self.op_type}")
        self._update_for({"beta1": beta1, "beta2": beta2, "epsilon": epsilon, "amsgrad": amsgrad})
        self.beta1, self.beta2, self.epsilon, self.amsgrad = float(beta1), float(beta2), float(epsilon), bool(amsgrad)

    def _update_for(self, settings: dict[str, Any]) -> Update:
        beta1, beta2, epsilon = settings["beta1"], settings["beta2"], settings["epsilon"]
        if not (is_rate(beta1) and is_rate(beta2) and 0 <= beta1 < 1 and 0 <= beta2 < 1):
            raise ValueError(f"{type(self).__name__}: beta1 and beta2 must lie in [0, 1), got {beta1}, {beta2}")
        if not is_rate(epsilon):
            raise ValueError(f"{type(self).__name__}: epsilon must be a float, got {epsilon!r}")
        if epsilon < 0:
            raise ValueError(f"{type(self).__name__}: Invalid epsilon value: {epsilon}")
        amsgrad = bool(settings["amsgrad"])
        # beta powers start at beta**1: the first step's bias correction
        accumulators = {"Moment1": (0.0, "param"), "Moment2": (0.0, "param"),
                        **({"Moment2Max": (0.0, "param")} if amsgrad else {}),
                        "Beta1Pow": (float(beta1), "scalar"), "Beta2Pow": (float(beta2), "scalar")}
        return Update("adam_amsgrad" if amsgrad else "adam",
                      {"beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon)}, accumulators,
                      {"Beta1Pow": float(beta1), "Beta2Pow": float(beta2)})


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before the Adam step
    (torch.optim.AdamW; the decay is an attribute of the `adam` op, not added to the gradient).
    A parameter group's weight_decay is its own decoupled decay (as torch.optim.AdamW's groups);
    `apply_decay_param_fun(name)` (Paddle 2) returning False leaves that parameter undecayed."""

    def __init__(self, learning_rate: float | LRScheduler | None = None, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameters: Iterable[Any] | None = None, weight_decay: float = 0.01,
                 lr_ratio: Any = None, apply_decay_param_fun: Callable[[str], bool] | None = None,
                 grad_clip: GradientClipBase | None = None, lazy_mode: bool = False, multi_precision: bool = False,
                 name: str | None = None, *, lr: float | LRScheduler | None = None, amsgrad: bool = False) -> None:
        if isinstance(lr_ratio, GradientClipBase) and grad_clip is None:  # the old positional order
            lr_ratio, grad_clip = None, lr_ratio
        if lr_ratio is not None:
            raise NotImplementedError("AdamW: lr_ratio is not supported; use parameter groups' learning_rate")
        if apply_decay_param_fun is not None and not callable(apply_decay_param_fun):
            raise TypeError(f"AdamW: apply_decay_param_fun must be callable (name -> bool), "
                            f"got {type(apply_decay_param_fun).__name__}")
        self.weight_decay = _decoupled(weight_decay)
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, None, grad_clip, name, lr=lr,
                         amsgrad=amsgrad)
        self._apply_decay_param_fun = apply_decay_param_fun

    def update_attrs(self) -> dict[str, Any]:
        return {**super().update_attrs(), "weight_decay": self.weight_decay}

    def _default_option(self, name: str) -> Any:
        return self.weight_decay if name == "weight_decay" else super()._default_option(name)

    def _check_group_option(self, group: Any, key: str, value: Any) -> None:
        super()._check_group_option(group, key, value)
        if key == "weight_decay":
            _decoupled(value)

    def _options(self, param: Any) -> tuple[float, WeightDecayRegularizer | None]:
        return super()._options(param)[0], None     # a group's weight_decay is decoupled, see _decay_of

    def _decay_of(self, param: Any) -> float:
        """This parameter's decoupled decay: its group's, or the optimizer's; 0 where
        apply_decay_param_fun says no."""
        if self._apply_decay_param_fun is not None and not self._apply_decay_param_fun(param.name):
            return 0.0
        group = self._group_of.get(option_key(param))
        return self.weight_decay if group is None else _decoupled(group["weight_decay"])

    def _update_of(self, param: Any) -> Update:
        update = super()._update_of(param)
        return update._replace(attrs={**update.attrs, "weight_decay": self._decay_of(param)})

    def _kernel_of(self, param: Any, update: Update, kernel: Any) -> Any:
        decay = self._decay_of(param)
        if decay == update.attrs.get("weight_decay", 0.0):   # a group's update has none: the op's default 0
            return kernel
        return self._kernel(update._replace(attrs={**update.attrs, "weight_decay": decay}))


def _decoupled(weight_decay: Any) -> float:
    """AdamW's decay as a coefficient (a float, or an L2Decay's; None is 0)."""
    if weight_decay is None:
        return 0.0
    if isinstance(weight_decay, L2Decay):
        return float(weight_decay.coeff)
    if not is_rate(weight_decay) or weight_decay < 0:
        raise ValueError(f"AdamW: weight_decay (decoupled) must be a non-negative float, got {weight_decay!r}")
    return float(weight_decay)


class _AMSGradAdam(Adam):
    """Adam(amsgrad=True)."""

    op_type = "adam_amsgrad"


class _AMSGradAdamW(AdamW):
    """AdamW(amsgrad=True)."""

    op_type = "adam_amsgrad"


_AMSGradAdam.__name__, _AMSGradAdamW.__name__ = "Adam", "AdamW"
_AMSGRAD: dict[type, type] = {Adam: _AMSGradAdam, AdamW: _AMSGradAdamW}

__all__ = ["Adam", "AdamW", "Momentum", "SGD"]
