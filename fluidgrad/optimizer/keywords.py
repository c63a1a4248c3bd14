"""PyTorch's spellings of optimizer keywords, taken beside Paddle's: one table for every optimizer.

Why one table: `Adam(params, lr=1e-3, betas=(0.9, 0.98), eps=1e-9)` (torch.optim) and
`Adam(learning_rate=1e-3, beta1=0.9, beta2=0.98, epsilon=1e-9)` (Paddle 2) name the same
settings; each optimizer's `__init__` takes Paddle's names, and `Optimizer.__init_subclass__`
wraps it with `accepting_torch_spellings`, which rewrites a torch keyword into the Paddle one(s)
the class takes before the call. A class that takes the torch name itself (SGD's `momentum`)
keeps it; a class without the Paddle target leaves the torch name alone, so Python's own
"unexpected keyword argument" TypeError names it. Both spellings of one setting at once is a
TypeError naming both. (`lr` / `learning_rate` and a positional parameter list: optimizer.py.)
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ..lr import LRScheduler

# torch.optim's keyword -> the Paddle keyword(s) it fills (a pair is unpacked into two)
TORCH_SPELLINGS: dict[str, tuple[str, ...]] = {
    "betas": ("beta1", "beta2"),                # Adam, AdamW, Adamax, NAdam, RAdam
    "eps": ("epsilon",),
    "alpha": ("rho",),                          # RMSprop's smoothing constant
    "nesterov": ("use_nesterov",),              # SGD(momentum=, nesterov=)
    "step_sizes": ("learning_rate_range",),     # Rprop's (min, max) step
}


def accepting_torch_spellings(init: Callable[..., None]) -> Callable[..., None]:
    """`init` (an optimizer's __init__) also taking torch's keywords for the Paddle ones it has,
    and torch's positional order `Adam(model.parameters(), 0.05)`: parameters, then the rate."""
    params = list(inspect.signature(init).parameters)
    spellings = {torch_name: paddle_names for torch_name, paddle_names in TORCH_SPELLINGS.items()
                 if torch_name not in params and all(name in params for name in paddle_names)}

    @functools.wraps(init)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> None:
        # called as torch calls it (parameters first, or lr=): the defaults are torch's (adaptive.py)
        self.__dict__.setdefault("_torch_call", bool(args and _is_parameter_list(args[0])) or "lr" in kwargs)
        if args and _is_parameter_list(args[0]):
            args = _torch_positional(type(self).__name__, params, args, kwargs)
        if any(name in kwargs for name in spellings):
            owner = type(self).__name__
            given = set(params[1:1 + len(args)]) | set(kwargs)    # positional ones fill the first names
            for torch_name in [name for name in spellings if name in kwargs]:
                kwargs.update(_paddle_keywords(owner, torch_name, spellings[torch_name], kwargs.pop(torch_name),
                                               given))
        maximize = kwargs.pop("maximize", None) if getattr(self, "takes_maximize", False) else None
        init(self, *args, **kwargs)
        if maximize is not None:   # torch's maximize=True: gradient ascent (optimizer.py negates the gradients)
            self.maximize = bool(maximize)
    return wrapped


def _is_parameter_list(value: Any) -> bool:
    """A first positional argument that is parameters (torch's order), not Paddle's learning rate."""
    return hasattr(value, "__iter__") and not isinstance(value, (str, bytes, LRScheduler))


def _torch_positional(owner: str, params: list[str], args: tuple, kwargs: dict[str, Any]) -> tuple:
    """torch.optim's `(params, lr)` positional order moved into keywords, so the rate never lands in
    the Paddle slot that follows `learning_rate` (Adam's beta1, Adagrad's epsilon ...)."""
    if "parameters" in kwargs:
        raise TypeError(f"{owner}: parameters given twice (first argument and parameters=)")
    if len(args) > 2:
        raise TypeError(f"{owner}: after the parameters and the learning rate, give the other settings by "
                        f"keyword (got {len(args)} positional arguments: torch's and Paddle's orders differ)")
    kwargs["parameters"] = args[0]
    if len(args) == 2:
        rate_name = "lr" if "lr" in params else "learning_rate"
        if "lr" in kwargs or "learning_rate" in kwargs:
            raise TypeError(f"{owner}: the learning rate given twice (second argument and "
                            f"{'lr' if 'lr' in kwargs else 'learning_rate'}=)")
        kwargs[rate_name] = args[1]
    return ()


def _paddle_keywords(owner: str, torch_name: str, paddle_names: tuple[str, ...], value: Any,
                     given: set[str]) -> dict[str, Any]:
    clash = [name for name in paddle_names if name in given]
    if clash:
        raise TypeError(f"{owner}: {torch_name}= (PyTorch) and {', '.join(n + '=' for n in clash)} (Paddle) set the "
                        "same thing; give one of them")
    if len(paddle_names) == 1:
        return {paddle_names[0]: value}
    if not isinstance(value, (tuple, list)) or len(value) != len(paddle_names):
        raise TypeError(f"{owner}: {torch_name} must be a pair ({', '.join(paddle_names)}), got {value!r}")
    return dict(zip(paddle_names, value))
