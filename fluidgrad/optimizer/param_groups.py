"""Parameter groups (torch's `optimizer.param_groups`, Paddle's parameter-group dicts): which
parameters an optimizer updates, and with which options.

Why their own module: a group is where torch code reads and writes an optimizer's options
(`for g in opt.param_groups: g["weight_decay"] = 0.5`; OneCycleLR cycling `g["momentum"]` or
`g["betas"]`), and each write must reach the next step. A group holds the options given for it (at
construction, in `add_param_group`, or written since); an option it does not hold reads as the
optimizer's own (its attribute, `opt.momentum`, so writing that changes every group without its
own). torch's spellings read and write the same options (`betas` is (beta1, beta2), `eps`
epsilon, `nesterov` use_nesterov, `alpha` rho: keywords.py); `lr` (Paddle: `learning_rate`, a
ratio) is the group's rate, kept as a ratio to the optimizer's so a scheduler scales it; any other
key is stored, as torch stores it. Eager steps read the options at every step; a static program
fixes them when minimize() builds its update ops, so writing one afterwards is an error (not the
rate: it lives in a variable the program reads).
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Iterable, Iterator

import numpy as np

from ..dispatch import is_tensor
from ..framework import Variable, optimize_options
from ..lr import is_rate
from .keywords import TORCH_SPELLINGS

_RATE_KEYS = ("lr", "learning_rate")


def option_key(param: Any) -> Any:
    """How an optimizer keys a parameter: a static Variable by name, a Tensor by identity."""
    return param.name if isinstance(param, Variable) else id(param)


class ParamGroup(dict):
    """One parameter group, as torch's: reading an option gives the group's value (or the
    optimizer's), writing one changes what the next step uses (see the module docstring)."""

    def __init__(self, optimizer: Any, items: dict[str, Any], rate_factor: float = 1.0) -> None:
        super().__init__()
        self._optimizer, self.rate_factor, self._regularizer = optimizer, rate_factor, None
        for key, value in items.items():
            if key not in _RATE_KEYS:
                self._store(key, value, checked=False)   # the optimizer is still being built: checked at its step

    # ------------------------------------------------------------------ names
    def _options(self) -> tuple[str, ...]:
        return self._optimizer.options + ("weight_decay",)

    def _spelling(self, key: Any) -> tuple[str, ...] | None:
        """The options a torch spelling stands for in this optimizer (None: not one)."""
        names = TORCH_SPELLINGS.get(key) if isinstance(key, str) else None
        return names if names and all(name in self._optimizer.options for name in names) else None

    # ------------------------------------------------------------------ reading
    def __missing__(self, key: Any) -> Any:
        if key in _RATE_KEYS:
            return self._optimizer._group_rate(self)
        if key in self._options():
            return self._optimizer._default_option(key)
        names = self._spelling(key)
        if names is not None:
            return self[names[0]] if len(names) == 1 else tuple(self[name] for name in names)
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __contains__(self, key: Any) -> bool:
        return dict.__contains__(self, key) or key in _RATE_KEYS or key in self._options() \
            or self._spelling(key) is not None

    def keys(self) -> list[Any]:  # type: ignore[override]
        """params, lr, every option (the group's or the optimizer's), then other keys stored."""
        front = ["params", "lr", *self._options()]
        return front + [key for key in dict.keys(self) if key not in front]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return [(key, self[key]) for key in self.keys()]

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[key] for key in self.keys()]

    def copy(self) -> dict[str, Any]:
        return dict(self.items())

    def __repr__(self) -> str:
        return repr(self.copy())

    def holds(self, key: str) -> bool:
        """Whether the group has its own value of option `key` (else it reads the optimizer's)."""
        return dict.__contains__(self, key)

    @property
    def regularizer(self) -> Any:
        """The weight decay of this group's parameters as a regularizer (the optimizer's when the
        group has no weight_decay of its own)."""
        return self._regularizer if self.holds("weight_decay") else self._optimizer.regularization

    # ------------------------------------------------------------------ writing
    def __setitem__(self, key: Any, value: Any) -> None:
        if key in _RATE_KEYS:
            self._optimizer._set_group_rate(self, value)
        else:
            self._store(key, value)

    def _store(self, key: Any, value: Any, checked: bool = True) -> None:
        optimizer = self._optimizer
        names = self._spelling(key)
        if names is not None and len(names) > 1:
            if not isinstance(value, (tuple, list)) or len(value) != len(names):
                raise TypeError(f"{type(optimizer).__name__}: a parameter group's {key} must be a pair "
                                f"({', '.join(names)}), got {value!r}")
            for name, part in zip(names, value):
                self._store(name, part, checked)
            return
        key = names[0] if names is not None else key
        if key in self._options():
            if checked:
                optimizer._check_group_option(self, key, value)
            if key == "weight_decay":
                self._regularizer = optimizer._regularizer(value)
            optimizer._groups_version += 1
        dict.__setitem__(self, key, value)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


def _outside_this_package() -> int:
    """The stacklevel of the first caller outside fluidgrad.optimizer (a warning names the user's line)."""
    frame, level, here = sys._getframe(1), 1, os.path.dirname(os.path.abspath(__file__))
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def once_each(owner: str, params: list[Any]) -> list[Any]:
    """The parameters with repeats dropped, warning as torch does (which then updates a repeated
    parameter twice per step; here it is updated once)."""
    seen: set[Any] = set()
    unique = [p for p in params if not (option_key(p) in seen or seen.add(option_key(p)))]
    if len(unique) != len(params):
        warnings.warn(f"{owner}: optimizer contains a parameter group with duplicate parameters (each is updated "
                      "once per step); list each parameter once", UserWarning, stacklevel=_outside_this_package())
    return unique


def refuse_shared(owner: str, held: list[Any], params: list[Any]) -> None:
    """A parameter in two groups would be updated twice per step, with two sets of options: torch's
    ValueError."""
    keys = {option_key(p) for p in held}
    shared = [getattr(p, "name", None) or "<unnamed>" for p in params if option_key(p) in keys]
    if shared:
        raise ValueError(f"{owner}: some parameters appear in more than one parameter group: {shared[:3]} already "
                         "belong to one")


def checked_parameters(owner: str, items: Iterable[Any]) -> list[Any]:
    """The parameters as a list; anything but Tensors / Variables (or static names) is a TypeError
    (a Layer given instead of its parameters(), NumPy arrays) rather than a step that updates nothing."""
    if hasattr(items, "parameters") and callable(items.parameters):
        raise TypeError(f"{owner}: parameters must be Tensors; got a {type(items).__name__} layer, "
                        "pass its .parameters()")
    if isinstance(items, (str, bytes, np.ndarray)) or is_tensor(items) or isinstance(items, Variable) \
            or not hasattr(items, "__iter__"):
        raise TypeError(f"{owner}: parameters must be a list of Tensors, got a {type(items).__name__}")
    params = list(items)
    for param in params:
        if not (is_tensor(param) or isinstance(param, (Variable, str))):
            raise TypeError(f"{owner}: parameters must be Tensors (or static Variables), got a "
                            f"{type(param).__name__}" + (", pass model.parameters()"
                                                          if hasattr(param, "parameters") else ""))
        if is_tensor(param) and not param.is_leaf:   # torch's rule: its update would never reach a leaf
            raise ValueError(f"{owner}: can't optimize a non-leaf Tensor (shape {list(param.shape)}, the result of an "
                             f"op): make the leaf the parameter, e.g. (fg.randn(...) * 0.01).requires_grad_() "
                             f"or nn.Parameter(...)")
    return params


class GroupedParameters:
    """The Optimizer's parameter-group bookkeeping: building groups, finding a parameter's group,
    and each parameter's rate factor and weight decay."""

    options: tuple[str, ...] = ()      # the update's options a group may set (attribute names)
    param_groups: list[ParamGroup]
    _group_of: dict[Any, ParamGroup]
    _groups_version: int

    def _take_parameters(self, parameters: Any) -> list[Any]:
        """A flat parameter list; parameter groups (dicts with "params" and their own options, as
        torch and Paddle take them) are flattened, their options kept in their ParamGroup. A
        group's "learning_rate" multiplies the optimizer's rate, as in Paddle 2; its "lr" is the
        group's own rate, as in PyTorch. Either way the group keeps a fixed ratio to the
        optimizer's rate, so a scheduler scales it too."""
        owner = type(self).__name__
        if isinstance(parameters, dict):
            parameters = [parameters]
        elif not isinstance(parameters, (list, tuple)):
            parameters = checked_parameters(owner, parameters)
        if not parameters:
            raise ValueError(f"{owner}: optimizer got an empty parameter list (layers kept in a plain Python "
                             "list are not in model.parameters(): use nn.LayerList / ModuleList)")
        if not any(isinstance(item, dict) for item in parameters):
            parameters = [{"params": parameters}]
        flat: list[Any] = []
        for index, group in enumerate(parameters):
            params = self._add_group(index, group)
            refuse_shared(owner, flat, params)
            flat.extend(params)
        return flat

    def _add_group(self, index: int, group: Any) -> list[Any]:
        """Check one parameter group and append it to `param_groups`; returns its parameters."""
        owner = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{owner}: parameter group {index} must be a dict with 'params' (every item "
                            f"is a group once one is), got {type(group).__name__}")
        params = group["params"]
        params = once_each(owner, checked_parameters(
            f"{owner} parameter group {index}", [params] if is_tensor(params) or isinstance(params, Variable) else params))
        made = ParamGroup(self, {**group, "params": params}, self._rate_factor(index, group))
        made.built_rate = self._group_rate(made)   # a static optimizer's state_dict saves the rates changed since
        for param in params:
            self._group_of[option_key(param)] = made
        self.param_groups.append(made)
        self._groups_version += 1
        return params

    def _rate_factor(self, index: int, group: dict[str, Any]) -> float:
        owner = type(self).__name__
        if "learning_rate" in group and "lr" in group:
            raise ValueError(f"{owner}: parameter group {index}: give 'learning_rate' (Paddle: a ratio to the "
                             "optimizer's rate) or 'lr' (PyTorch: the group's own rate), not both")
        if group.get("learning_rate") is not None:
            if not is_rate(group["learning_rate"]):
                raise ValueError(f"{owner}: parameter group {index}: learning_rate must be a float, "
                                 f"got {group['learning_rate']!r}")
            return float(group["learning_rate"])
        if group.get("lr") is not None:
            rate, base = group["lr"], self.get_lr()
            if not is_rate(rate) or base == 0:
                raise ValueError(f"{owner}: parameter group {index}: lr must be a float and the "
                                 f"optimizer's own rate non-zero, got {rate!r} and {base!r}")
            return float(rate) / base
        return 1.0

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add parameters to optimize, with their own options (PyTorch's `add_param_group`, e.g.
        layers unfrozen while fine-tuning; Paddle's `_add_param_group`): a dict with "params" and
        optionally "lr" (its own rate), "learning_rate" (a ratio to the optimizer's rate), and any
        option of the optimizer ("weight_decay", "betas", "momentum", ...); options not given are
        the optimizer's. The parameters join the next `step()`; their accumulators are created at
        their first update. A parameter may belong to one group only. In static mode the group
        applies to later `minimize()` calls."""
        if self._parameter_list is None:
            raise ValueError(f"{type(self).__name__}.add_param_group: this optimizer was built without "
                             "parameters (static mode: it updates every trainable parameter of the program); "
                             "give parameters= at construction to use parameter groups")
        if not isinstance(param_group, dict):
            raise TypeError(f"{type(self).__name__}.add_param_group: expected a dict with 'params', "
                            f"got {type(param_group).__name__}")
        params = param_group.get("params")
        candidates = [params] if is_tensor(params) or isinstance(params, Variable) else params
        if candidates is not None and not isinstance(candidates, (str, bytes)) and hasattr(candidates, "__iter__"):
            candidates = list(candidates)
            refuse_shared(f"{type(self).__name__}.add_param_group", self._parameter_list, candidates)
            param_group = {**param_group, "params": candidates}
        self._parameter_list = self._parameter_list + self._add_group(len(self.param_groups), param_group)

    _add_param_group = add_param_group

    @property
    def defaults(self) -> dict[str, Any]:
        """torch's `optimizer.defaults`: the rate and every option a group without its own reads."""
        return {"lr": self.get_lr(), **{name: self._default_option(name) for name in self.options + ("weight_decay",)}}

    def _group_index(self, group: ParamGroup) -> int:
        """The group's position in `param_groups` (by identity: groups holding equal values differ)."""
        return next(i for i, held in enumerate(self.param_groups) if held is group)

    def _group_factor(self, group: ParamGroup) -> float:
        return group.rate_factor

    def _group_rate(self, group: ParamGroup) -> float:
        return self.get_lr() * group.rate_factor

    def _set_group_rate(self, group: ParamGroup, value: Any) -> None:
        """`group["lr"] = value`: the optimizer's own rate for a one-group optimizer, else the
        group's ratio to it (eager: read at each step)."""
        owner = type(self).__name__
        if not is_rate(value):
            raise TypeError(f"{owner}: a parameter group's lr must be a number, got {type(value).__name__}")
        if len(self.param_groups) == 1 and group.rate_factor:
            self.set_lr(float(value) / group.rate_factor)
            return
        base = self.get_lr()
        folded = self._group_index(group) in self._folded_groups
        if base == 0 or folded:
            raise ValueError(f"{owner}: cannot set one parameter group's lr to {value} "
                             + ("in static mode: minimize() ran while the optimizer had one parameter group, "
                                "and the program's rate variable fixed this group's ratio; use set_lr or a scheduler"
                                if folded else "while the optimizer's own rate is 0"))
        group.rate_factor = float(value) / base
        self._groups_version += 1
        if self._lr_vars:   # a static program reads each group's rate from its variable
            self._on_new_lr(base)

    def _check_group_option(self, group: ParamGroup, key: str, value: Any) -> None:
        """A write of option `key` into `group`: refused once a static program fixed the options,
        else checked by building the update it would give."""
        owner = type(self).__name__
        if self._lr_vars:
            raise ValueError(f"{owner}: cannot set a parameter group's {key} after minimize() built the static "
                             f"program's update ops, which fixed it (only the rate follows: set_lr or a scheduler)")
        if key == "weight_decay":
            self._regularizer(value)
            return
        self._update_for({**self._settings(group), key: value})

    def _per_parameter(self) -> bool:
        """Whether some group has a rate or a weight decay of its own."""
        return any(g.rate_factor != 1.0 or g.holds("weight_decay") for g in self.param_groups)

    def _options(self, param: Any) -> tuple[float, Any]:
        """(learning-rate factor, regularizer) of one parameter: its group's options times its
        ParamAttr(learning_rate=...); its ParamAttr(regularizer=...) before its group's or the
        optimizer's weight decay (as Paddle)."""
        group = self._group_of.get(option_key(param))
        factor, decay = (1.0, self.regularization) if group is None else (group.rate_factor, group.regularizer)
        own_factor, own_decay, _ = optimize_options(param)
        return factor * own_factor, own_decay if own_decay is not None else decay

    def _own_update(self, param: Any) -> bool:
        """Whether the parameter's group sets an option of the update to a value of its own."""
        group = self._group_of.get(option_key(param))
        return group is not None and any(group.holds(name) and group[name] != getattr(self, name)
                                         for name in self.options)
