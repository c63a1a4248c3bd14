"""LRScheduler: a learning rate as a function of the epoch (or step) counter `last_epoch`,
published to the optimizers that use it (see the package docstring)."""
from __future__ import annotations

import numbers
from typing import Any, Callable


def is_rate(value: Any) -> bool:
    """A learning rate given as a number: a Python or NumPy int or float (a config computed with
    NumPy gives np.float32), never a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(value).__name__ != "bool_"


class LRScheduler:
    """Base class: subclasses define `get_lr()`, the rate at epoch `self.last_epoch`, and list in
    `state_keys` any further attribute a resumed run needs (state_dict / set_state_dict)."""

    state_keys: tuple[str, ...] = ("last_epoch", "last_lr")

    def __init__(self, learning_rate: float = 0.1, last_epoch: int = -1, verbose: bool = False) -> None:
        if not is_rate(learning_rate):
            raise TypeError(f"{type(self).__name__}: learning_rate must be a number, "
                            f"got {type(learning_rate).__name__}")
        self.base_lr = float(learning_rate)
        self.last_epoch = last_epoch
        self.verbose = verbose
        self.last_lr = self.base_lr
        self._listeners: list[Callable[[float], None]] = []
        self._first_step()

    def _first_step(self) -> None:
        """Construction steps once, to epoch last_epoch + 1 (0 by default), as Paddle's does."""
        self.step()

    def __call__(self) -> float:
        return self.last_lr

    def get_lr(self) -> float:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """PyTorch's name, so PyTorch's value: a list of one rate per parameter group (a scheduler
        drives one rate here, so a list of one; group ratios apply on top). Paddle's ways to read
        the rate as a float are `scheduler()` and `scheduler.last_lr`."""
        return [self.last_lr]

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
        return {key: getattr(self, key) for key in self.state_keys}

    def set_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at the saved epoch; a static program's `lr_var` takes the restored rate too."""
        missing = [key for key in self.state_keys if key not in state]
        if missing:
            raise KeyError(f"{type(self).__name__}.set_state_dict: the state lacks {missing} "
                           f"(it has {sorted(state)})")
        for key in self.state_keys:
            value = state[key]
            if hasattr(value, "item"):     # a 0-D array or tensor read back by fluidgrad.load
                value = value.item()
            setattr(self, key, type(getattr(self, key))(value))
        self._publish()

    set_dict = set_state_dict   # Paddle 1's name
