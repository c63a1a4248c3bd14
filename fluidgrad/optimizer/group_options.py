"""The options torch.optim shows in every parameter group (`group["momentum"]`, `group["betas"]`,
`group["eps"]`, `group["weight_decay"]` ...), read from the optimizer's own attributes.

Why read, not copied: fluidgrad's optimizers keep their options as attributes (`opt.momentum`,
`opt.beta1`, which Paddle code sets directly); a group shows them live, so the two spellings never
disagree. A group's own option (given in its dict) is the group's and is stored in it.
"""
from __future__ import annotations

from typing import Any

from ..regularizer import L2Decay

# torch's key -> the optimizer attribute(s) holding it (a pair of attributes reads as a tuple)
_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "momentum": ("momentum",),
    "nesterov": ("use_nesterov",),
    "betas": ("beta1", "beta2"),
    "eps": ("epsilon",),
    "amsgrad": ("amsgrad",),
    "centered": ("centered",),
    "lr_decay": ("lr_decay",),
    "initial_accumulator_value": ("initial_accumulator_value",),
    "momentum_decay": ("momentum_decay",),
    "etas": ("etas",),
    "step_sizes": ("learning_rate_range",),
    "maximize": ("maximize",),
}


def torch_options(optimizer: Any) -> dict[str, Any]:
    """torch's option keys of `optimizer` (but "params" and "lr") with their current values."""
    options: dict[str, Any] = {}
    for key, names in _ATTRIBUTES.items():
        if all(hasattr(optimizer, name) for name in names):
            values = tuple(getattr(optimizer, name) for name in names)
            options[key] = values if len(values) > 1 else values[0]
    if hasattr(optimizer, "rho"):   # RMSprop's alpha, Adadelta's rho
        options["alpha" if "centered" in options else "rho"] = optimizer.rho
    if "momentum" in options and "nesterov" in options:
        options["dampening"] = 0.0
    options["weight_decay"] = weight_decay_of(optimizer)
    return options


def weight_decay_of(optimizer: Any) -> float:
    """The optimizer's weight decay as torch's number (AdamW's decoupled one; an L2Decay's coefficient)."""
    decay = getattr(optimizer, "weight_decay", None)
    if isinstance(decay, (int, float)):
        return float(decay)
    regularizer = getattr(optimizer, "regularization", None)
    return float(regularizer.coeff) if isinstance(regularizer, L2Decay) else 0.0


def set_option(optimizer: Any, key: str, value: Any) -> bool:
    """`group[key] = value` on a one-group optimizer: the optimizer's attribute(s) (what its next step
    reads); False when `key` is not one of them."""
    names = _ATTRIBUTES.get(key) or (("rho",) if key in ("alpha", "rho") and hasattr(optimizer, "rho") else ())
    if not names or not all(hasattr(optimizer, name) for name in names):
        return False
    if len(names) > 1:
        if not isinstance(value, (tuple, list)) or len(value) != len(names):
            raise TypeError(f"{type(optimizer).__name__}: group[{key!r}] must be a pair, got {value!r}")
        for name, item in zip(names, value):
            setattr(optimizer, name, float(item))
    else:
        setattr(optimizer, names[0], type(getattr(optimizer, names[0]))(value))
    return True
