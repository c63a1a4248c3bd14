"""GradScaler: dynamic loss scaling for mixed-precision training (paddle.amp.GradScaler, with
torch.amp.GradScaler's names too).

Why: float16 gradients of small values underflow to zero. The loss is multiplied by a large
scale before `backward()`, so the gradients are too; before the update they are divided by it
again (`unscale_`), and a step whose gradients hold an inf or a NaN (the scale was too large) is
skipped. `update()` then adapts the scale: times `decr_ratio` after `decr_every_n_nan_or_inf`
such steps (never below 1), times `incr_ratio` after `incr_every_n_steps` good steps in a row
(Paddle's update_loss_scaling rule). Eager mode: the gradients are the parameters' `.grad`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dispatch import is_tensor
from ..framework import Variable

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"

# torch.amp.GradScaler's keyword -> Paddle's
_TORCH_SPELLINGS = {"init_scale": "init_loss_scaling", "growth_factor": "incr_ratio", "backoff_factor": "decr_ratio",
                    "growth_interval": "incr_every_n_steps", "enabled": "enable"}


class GradScaler:
    """scale(loss).backward(); step(optimizer) (or minimize(optimizer, ...)); update()."""

    def __init__(self, enable: bool = True, init_loss_scaling: float = 65536.0, incr_ratio: float = 2.0,
                 decr_ratio: float = 0.5, incr_every_n_steps: int = 2000, decr_every_n_nan_or_inf: int = 1,
                 use_dynamic_loss_scaling: bool = True, **torch_keywords: Any) -> None:
        given = dict(enable=enable, init_loss_scaling=init_loss_scaling, incr_ratio=incr_ratio,
                     decr_ratio=decr_ratio, incr_every_n_steps=incr_every_n_steps)
        defaults = dict(enable=True, init_loss_scaling=65536.0, incr_ratio=2.0, decr_ratio=0.5,
                        incr_every_n_steps=2000)
        for torch_name, value in torch_keywords.items():
            if torch_name == "device":          # torch.amp.GradScaler("cuda", ...): fluidgrad runs on the CPU
                continue
            if torch_name not in _TORCH_SPELLINGS:
                raise TypeError(f"GradScaler got an unexpected keyword argument {torch_name!r}")
            name = _TORCH_SPELLINGS[torch_name]
            if given[name] != defaults[name]:
                raise TypeError(f"GradScaler: {torch_name}= (PyTorch) and {name}= (Paddle) set the same thing; "
                                "give one of them")
            given[name] = value
        if not given["init_loss_scaling"] > 0 or not given["incr_ratio"] > 1 or not 0 < given["decr_ratio"] < 1:
            raise ValueError(f"GradScaler: init_loss_scaling must be > 0, incr_ratio > 1 and decr_ratio in (0, 1), "
                             f"got {given['init_loss_scaling']}, {given['incr_ratio']}, {given['decr_ratio']}")
        for name, value in (("incr_every_n_steps", given["incr_every_n_steps"]),
                            ("decr_every_n_nan_or_inf", decr_every_n_nan_or_inf)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"GradScaler: {name} must be a positive integer, got {value!r}")
        self._enable = bool(given["enable"])
        self._init_loss_scaling = self._scale = float(given["init_loss_scaling"])
        self._incr_ratio, self._decr_ratio = float(given["incr_ratio"]), float(given["decr_ratio"])
        self._incr_every_n_steps, self._decr_every_n_nan_or_inf = int(given["incr_every_n_steps"]), \
            int(decr_every_n_nan_or_inf)
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)
        self._good_steps = self._bad_steps = 0
        self._found_inf = False
        self._states: dict[int, str] = {}       # id(optimizer) -> where it is in this iteration

    # ------------------------------------------------------------------ the loop
    def scale(self, var: Any) -> Any:
        """`var * scale` (the loss, before backward); `var` itself when disabled."""
        if not self._enable:
            return var
        if isinstance(var, Variable):
            raise TypeError("GradScaler works in eager mode (the loss is a Tensor); a static program scales "
                            f"its loss by multiplying it, got the Variable {var.name}")
        if not is_tensor(var):
            raise TypeError(f"GradScaler.scale: expected the loss Tensor, got {type(var).__name__}")
        return var * self._scale

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of `optimizer`'s parameters by the scale, in place, and note whether
        any is inf or NaN (torch's `unscale_`: e.g. before clipping them). Once per step."""
        if not self._enable:
            return
        state = self._states.get(id(optimizer), _READY)
        if state == _UNSCALED:
            raise RuntimeError("GradScaler.unscale_() has already been called on this optimizer since the "
                               "last update()")
        if state == _STEPPED:
            raise RuntimeError("GradScaler.unscale_() is being called after step(); call update() first")
        inverse = 1.0 / self._scale
        found_inf = False
        for param in optimizer._eager_parameters():
            grad = getattr(param, "grad", None)
            if grad is None:
                continue
            array = grad.data
            if array.dtype.kind == "f":
                unscaled = array * array.dtype.type(inverse)
                found_inf = found_inf or not bool(np.isfinite(unscaled).all())
                grad.set_value(unscaled)
        self._found_inf = self._found_inf or found_inf
        self._states[id(optimizer)] = _UNSCALED

    def step(self, optimizer: Any) -> Any:
        """Unscale (unless `unscale_` did) and run `optimizer.step()`, or skip it when a gradient is
        inf or NaN. The scale changes in `update()`."""
        if not self._enable:
            return optimizer.step()
        if self._states.get(id(optimizer), _READY) == _STEPPED:
            raise RuntimeError("GradScaler.step() has already been called since the last update()")
        if self._states.get(id(optimizer), _READY) == _READY:
            self.unscale_(optimizer)
        result = None if self._found_inf else optimizer.step()
        self._states[id(optimizer)] = _STEPPED
        return result

    def minimize(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Paddle's one call: step(optimizer) through `optimizer.minimize(*args)`, then update()."""
        if not self._enable:
            return optimizer.minimize(*args, **kwargs)
        if self._states.get(id(optimizer), _READY) == _STEPPED:
            raise RuntimeError("GradScaler.minimize() has already been called since the last update()")
        if self._states.get(id(optimizer), _READY) == _READY:
            self.unscale_(optimizer)
        result = (None, None) if self._found_inf else optimizer.minimize(*args, **kwargs)
        self._states[id(optimizer)] = _STEPPED
        self.update()
        return result

    def update(self, new_scale: float | None = None) -> None:
        """Adapt the scale to this iteration's gradients (dynamic loss scaling), or set it to
        `new_scale` (torch); then start the next iteration."""
        if not self._enable:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        elif self._use_dynamic_loss_scaling:
            self._adapt(self._found_inf)
        self._found_inf = False
        self._states.clear()

    def _adapt(self, found_inf: bool) -> None:
        if found_inf:
            self._good_steps, self._bad_steps = 0, self._bad_steps + 1
            if self._bad_steps == self._decr_every_n_nan_or_inf:
                self._scale, self._bad_steps = max(self._scale * self._decr_ratio, 1.0), 0
        else:
            self._good_steps, self._bad_steps = self._good_steps + 1, 0
            if self._good_steps == self._incr_every_n_steps:
                grown = self._scale * self._incr_ratio
                self._scale, self._good_steps = (grown if np.isfinite(grown) else self._scale), 0

    # ------------------------------------------------------------------ reading and setting
    def is_enable(self) -> bool:
        return self._enable

    is_enabled = is_enable

    def is_use_dynamic_loss_scaling(self) -> bool:
        return self._use_dynamic_loss_scaling

    def get_scale(self) -> float:
        """The current loss scale (torch's name)."""
        return self._scale if self._enable else 1.0

    def get_init_loss_scaling(self) -> float:
        return self._init_loss_scaling

    def set_init_loss_scaling(self, value: float) -> None:
        """Set the initial scale and restart from it."""
        self._init_loss_scaling = self._scale = float(value)

    def get_incr_ratio(self) -> float:
        return self._incr_ratio

    def set_incr_ratio(self, value: float) -> None:
        if not value > 1:
            raise ValueError(f"GradScaler: incr_ratio must be > 1, got {value}")
        self._incr_ratio = float(value)

    def get_decr_ratio(self) -> float:
        return self._decr_ratio

    def set_decr_ratio(self, value: float) -> None:
        if not 0 < value < 1:
            raise ValueError(f"GradScaler: decr_ratio must lie in (0, 1), got {value}")
        self._decr_ratio = float(value)

    def get_incr_every_n_steps(self) -> int:
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, value: int) -> None:
        self._incr_every_n_steps = int(value)

    def get_decr_every_n_nan_or_inf(self) -> int:
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, value: int) -> None:
        self._decr_every_n_nan_or_inf = int(value)

    def state_dict(self) -> dict[str, Any]:
        """The scale and its counters (Paddle's keys), to resume training with the same scale."""
        if not self._enable:
            return {}
        return {"scale": np.array([self._scale], "float32"), "incr_ratio": self._incr_ratio,
                "decr_ratio": self._decr_ratio, "incr_every_n_steps": self._incr_every_n_steps,
                "decr_every_n_nan_or_inf": self._decr_every_n_nan_or_inf, "incr_count": self._good_steps,
                "decr_count": self._bad_steps, "use_dynamic_loss_scaling": self._use_dynamic_loss_scaling}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enable:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state is empty (saved from a disabled scaler?)")
        self._scale = float(np.asarray(state_dict["scale"]).reshape(-1)[0])
        self._incr_ratio, self._decr_ratio = float(state_dict["incr_ratio"]), float(state_dict["decr_ratio"])
        self._incr_every_n_steps = int(state_dict["incr_every_n_steps"])
        self._decr_every_n_nan_or_inf = int(state_dict["decr_every_n_nan_or_inf"])
        self._good_steps, self._bad_steps = int(state_dict["incr_count"]), int(state_dict["decr_count"])
        self._use_dynamic_loss_scaling = bool(state_dict["use_dynamic_loss_scaling"])

    set_state_dict = load_state_dict


AmpScaler = GradScaler
