"""Loading an optimizer state dict of the flat form earlier fluidgrad versions wrote: each eager
parameter's accumulators as `<param name>.<slot>` entries, and "param_groups" a list of the
groups' rates alone (Paddle's form; a static program's `<param>_<slot>_<k>` variables are read
by `Optimizer.set_state_dict` itself). Why kept: checkpoints written before state dicts took
torch's form (saved_state.py) must still resume.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..lr import LRScheduler


def load_flat_form(optimizer: Any, state: dict[str, Any], used: set[str], checked: Any) -> None:
    """Each `<name>.<slot>` entry into the accumulator of the parameter of that name (or, when the
    model was built again with new names, of the same position); the groups' rates. Adds the
    entries taken to `used`; `checked(value, shape, name)` gives a saved array of that shape or raises."""
    own = optimizer._eager_state_keys()
    for key, param in _saved_parameter_keys(optimizer, state, own):
        value = param._array if isinstance(getattr(param, "_array", None), np.ndarray) else np.asarray(param)
        for slot, (_, kind) in optimizer._update_of(param).accumulators.items():
            if f"{key}.{slot}" in state:
                shape = value.shape if kind == "param" else (1,)
                restored = checked(state[f"{key}.{slot}"], shape, f"{key}.{slot}").astype(value.dtype)
                optimizer._eager_state.setdefault(id(param), {})[slot] = restored
                used.add(f"{key}.{slot}")
    if "param_groups" in state:
        _restore_group_rates(optimizer, state["param_groups"])
        used.add("param_groups")


def _saved_parameter_keys(optimizer: Any, state: dict[str, Any], own: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """(key in the state, parameter) pairs: by name when every saved name is one of `own`,
    else by position among the parameters whose state is saved (a model built again gets
    new names, in the same order; PyTorch's optimizer state is keyed by position too)."""
    names, slots = [key for key, _ in own], optimizer._all_slots()
    saved = list(dict.fromkeys(k.rsplit(".", 1)[0] for k in state
                               if "." in k and k.rsplit(".", 1)[1] in slots))
    if not saved or set(saved) <= set(names):
        return own
    holders = own if len(saved) == len(own) else [(k, p) for k, p in own
                                                   if not getattr(p, "stop_gradient", False)]
    if len(saved) != len(holders):
        raise ValueError(f"{type(optimizer).__name__}.set_state_dict: the state holds accumulators of "
                         f"{len(saved)} parameters under other names, e.g. {saved[:3]}; this optimizer has "
                         f"{len(own)} parameters, {len(holders)} of them trainable, so they cannot be "
                         f"matched by position")
    return [(key, param) for key, (_, param) in zip(saved, holders)]


def _restore_group_rates(optimizer: Any, saved: Any) -> None:
    """Each group's saved rate; a scheduler's own state restores its rate."""
    owner = type(optimizer).__name__
    if not isinstance(saved, (list, tuple)) or len(saved) != len(optimizer.param_groups) \
            or not all(isinstance(g, dict) and "lr" in g for g in saved):
        raise ValueError(f"{owner}.set_state_dict: the state's param_groups ({saved!r:.80}) do not match this "
                         f"optimizer's {len(optimizer.param_groups)} parameter groups")
    if isinstance(optimizer._learning_rate, LRScheduler):
        return
    rates = [float(np.asarray(g["lr"]).reshape(-1)[0]) for g in saved]
    for group, rate in zip(optimizer.param_groups, rates):
        if not np.isclose(group["lr"], rate, rtol=1e-12, atol=0):
            group["lr"] = rate
