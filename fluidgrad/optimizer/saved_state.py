"""An optimizer's state dict in torch's form: every parameter group's options and every
parameter's accumulators, so that training resumes bit for bit.

    {"state": {0: {"Moment1": array, ...}, ...},            # by position in the parameter list
     "param_groups": [{"lr": 0.1, "learning_rate": 1.0, "beta1": 0.9, ..., "maximize": False,
                       "params": [0, 1]}, ...],
     "lr": 0.1,                                             # the optimizer's own rate (a float rate)
     "LR_Scheduler": {...}}                                 # a fluidgrad.optimizer.lr scheduler's state

Why torch's form: a group's options (momentum, betas, weight_decay, amsgrad, lr_decay, keys a
user wrote) are part of what a step computes, and torch code reads `state_dict()["param_groups"]`
and `["state"]`. The options are saved under fluidgrad's names (`beta1`, `epsilon`, ...); loading
takes torch's spellings too (`betas`, `eps`), as a group does. A group's `lr` is its rate and
`learning_rate` its ratio to the optimizer's rate (Paddle's meaning), and the top-level "lr" is
that rate: restored as they were, the rates an eager step or a static program forms are the same
products, bit for bit. Loading checks the groups and their sizes against this optimizer's before
it changes anything.

Earlier state dicts (flat `<param name>.<slot>` entries, a static program's `<param>_<slot>_<k>`
variables, "LR_Scheduler" and a "param_groups" list of rates alone: Paddle's form) are read by
`Optimizer.set_state_dict` as before; a static program's variables are saved in that flat form
beside these keys.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..lr import LRScheduler, is_rate
from ..regularizer import L1Decay, L2Decay, WeightDecayRegularizer
from .keywords import TORCH_SPELLINGS
from .param_groups import option_key

TORCH_KEYS = ("state", "param_groups", "lr")
# keys of a saved group that are not options to write into the group
_GROUP_RATE_KEYS = ("params", "lr", "learning_rate", "maximize")


def is_torch_form(state: Any) -> bool:
    """Whether `state` is this module's form (or torch's): "state", or groups listing their "params"."""
    groups = state.get("param_groups")
    return "state" in state or (isinstance(groups, (list, tuple)) and bool(groups)
                                and all(isinstance(g, dict) and "params" in g for g in groups))


def _key(param: Any) -> Any:
    return param if isinstance(param, str) else option_key(param)


def _plain(value: Any) -> Any:
    """A group's value as fluidgrad.save stores it: a regularizer as its coefficient (L2) or
    {"L1Decay": coefficient}; NumPy scalars as Python numbers."""
    if isinstance(value, WeightDecayRegularizer):
        return value.coeff if type(value) is L2Decay else {type(value).__name__: value.coeff}
    return value.item() if isinstance(value, np.generic) else value


def _unplain(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and set(value) <= {"L1Decay", "L2Decay"}:
        kind, coeff = next(iter(value.items()))
        return (L1Decay if kind == "L1Decay" else L2Decay)(coeff)
    return value


def torch_form(optimizer: Any) -> dict[str, Any]:
    """"state", "param_groups" and (a float rate) "lr" of an optimizer built with parameters."""
    params = optimizer._parameter_list
    position = {_key(p): i for i, p in enumerate(params)}
    state = {i: {slot: np.array(value) for slot, value in optimizer._eager_state[id(p)].items()}
             for i, p in enumerate(params) if optimizer._eager_state.get(id(p))}
    groups = []
    for group in optimizer.param_groups:
        entry = {key: _plain(value) for key, value in group.items() if key != "params"}
        entry["learning_rate"] = group.rate_factor
        if optimizer.takes_maximize:
            entry["maximize"] = bool(optimizer.maximize)
        entry["params"] = [position[_key(p)] for p in group["params"]]
        groups.append(entry)
    saved: dict[str, Any] = {"state": state, "param_groups": groups}
    if not isinstance(optimizer._learning_rate, LRScheduler):
        saved["lr"] = optimizer.get_lr()
    return saved


def load_torch_form(optimizer: Any, saved: dict[str, Any], checked: Any) -> None:
    """Restore what `torch_form` gave (or torch's own "param_groups" options); `checked(value,
    shape, name)` gives a saved array of the expected shape or raises. Every check runs before
    anything changes."""
    owner = f"{type(optimizer).__name__}.set_state_dict"
    by_id = _saved_parameters(optimizer, owner, saved.get("param_groups"))
    restored = _restored_arrays(optimizer, owner, saved.get("state", {}), by_id,
                                _slots_after(optimizer, saved["param_groups"]), checked)
    rate = saved.get("lr")
    if rate is not None and not isinstance(optimizer._learning_rate, LRScheduler):
        if not is_rate(rate):
            raise ValueError(f"{owner}: the state's lr must be a number, got {rate!r}")
        optimizer._learning_rate = float(rate)
    for index, (group, entry) in enumerate(zip(optimizer.param_groups, saved["param_groups"])):
        _restore_group(optimizer, owner, index, group, entry)
    maximize = {bool(entry["maximize"]) for entry in saved["param_groups"] if "maximize" in entry}
    if len(maximize) > 1:
        raise ValueError(f"{owner}: the state's parameter groups differ in maximize; a fluidgrad optimizer "
                         "maximizes all its groups or none")
    if maximize and optimizer.takes_maximize:
        optimizer.maximize = maximize.pop()
    optimizer._groups_version += 1
    optimizer._on_new_lr(optimizer.get_lr())
    saved_ids = {id(param) for param, _ in restored}
    for param in optimizer._parameter_list:   # torch's rule: a parameter the state does not hold starts afresh
        for held in ((optimizer._fitted, optimizer._power_bases) if id(param) in saved_ids else
                     (optimizer._eager_state, optimizer._fitted, optimizer._power_bases)):
            held.pop(id(param), None)
    for param, slots in restored:   # into the dict the optimizer holds (a sharded step may hold it too)
        held = optimizer._eager_state.setdefault(id(param), {})
        held.clear()
        held.update(slots)


def _saved_parameters(optimizer: Any, owner: str, groups: Any) -> dict[int, Any]:
    """The saved parameter ids -> this optimizer's parameters, group by group and in order
    (torch's rule); a different number of groups, or of parameters in a group, is an error."""
    if optimizer._parameter_list is None:
        raise ValueError(f"{owner}: the state holds parameter groups and parameter state, but this optimizer was "
                         "built without parameters (a static program's optimizer saves its accumulators by name)")
    ours = optimizer.param_groups
    if not isinstance(groups, (list, tuple)) or not all(isinstance(g, dict) and "params" in g for g in groups):
        raise ValueError(f"{owner}: the state's param_groups must be a list of dicts with 'params', got {groups!r:.80}")
    if len(groups) != len(ours):
        raise ValueError(f"{owner}: the state has {len(groups)} parameter groups, this optimizer has {len(ours)}")
    by_id: dict[int, Any] = {}
    for index, (entry, group) in enumerate(zip(groups, ours)):
        if len(entry["params"]) != len(group["params"]):
            raise ValueError(f"{owner}: parameter group {index} holds {len(entry['params'])} parameters in the "
                             f"state, {len(group['params'])} in this optimizer")
        by_id.update((int(saved_id), param) for saved_id, param in zip(entry["params"], group["params"]))
    return by_id


def _restored_arrays(optimizer: Any, owner: str, state: Any, by_id: dict[int, Any],
                     groups: dict[int, dict[str, tuple[float, str]]],
                     checked: Any) -> list[tuple[Any, dict[str, np.ndarray]]]:
    """Each saved parameter's accumulators, checked against the update its saved group gives."""
    if not isinstance(state, dict):
        raise ValueError(f"{owner}: the state's 'state' must be a dict of parameter id -> accumulators")
    restored = []
    for saved_id, slots in state.items():
        param = by_id.get(int(saved_id))
        if param is None or not isinstance(slots, dict):
            raise ValueError(f"{owner}: the state holds accumulators of parameter {saved_id!r}, which no parameter "
                             f"group lists (ids {sorted(by_id)[:6]}...)")
        value = param._array if isinstance(getattr(param, "_array", None), np.ndarray) else np.asarray(param)
        expected = groups[id(param)]
        arrays = {}
        for slot, array in slots.items():
            if slot not in expected:
                raise ValueError(f"{owner}: state[{saved_id}] has an accumulator {slot!r}; the update of its group "
                                 f"has {sorted(expected)}")
            shape = value.shape if expected[slot][1] == "param" else (1,)
            arrays[slot] = checked(array, shape, f"state[{saved_id}].{slot} (parameter "
                                   f"{getattr(param, 'name', None) or saved_id})").astype(value.dtype)
        restored.append((param, arrays))
    return restored


def _slots_after(optimizer: Any, entries: list[dict[str, Any]]) -> dict[int, dict[str, tuple[float, str]]]:
    """The accumulators of each parameter's update under its group's saved options (an option
    switched in the saved group adds one: amsgrad's Moment2Max, lr_decay's Step). Building
    those updates checks the saved options before any is written."""
    slots = {}
    for group, entry in zip(optimizer.param_groups, entries):
        accumulators = optimizer._cached_update(_settings_after(optimizer, group, entry)).accumulators
        for param in group["params"]:
            slots[id(param)] = accumulators
    return slots


def _settings_after(optimizer: Any, group: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """The group's options with the saved ones in (fluidgrad's names or torch's spellings)."""
    settings = optimizer._settings(group)
    for key, value in entry.items():
        names = TORCH_SPELLINGS.get(key) if key not in settings else (key,)
        if not names or not all(name in settings for name in names):
            continue
        parts = value if len(names) > 1 else (value,)
        if len(names) > 1 and (not isinstance(value, (tuple, list)) or len(value) != len(names)):
            raise ValueError(f"{type(optimizer).__name__}.set_state_dict: a parameter group's {key} must be a pair "
                             f"({', '.join(names)}), got {value!r}")
        settings.update(zip(names, parts))
    return settings


def _restore_group(optimizer: Any, owner: str, index: int, group: Any, entry: dict[str, Any]) -> None:
    """The saved options written into `group` where they differ from its own (a static program's
    fixed options then raise, naming the option); its rate as saved."""
    for key, value in entry.items():
        if key in _GROUP_RATE_KEYS:
            continue
        value = _unplain(value)
        try:
            same = key in group and _equal(group[key], value)
        except Exception:   # noqa: BLE001 - a value that does not compare: write it
            same = False
        if not same:
            try:
                group[key] = value
            except (TypeError, ValueError) as error:
                raise ValueError(f"{owner}: parameter group {index}: cannot restore {key}={value!r}: {error}") from None
    ratio = entry.get("learning_rate")
    if is_rate(ratio) and not isinstance(ratio, bool):
        if float(ratio) != group.rate_factor:
            if index in optimizer._folded_groups:
                raise ValueError(f"{owner}: parameter group {index}: its rate ratio {ratio} differs from "
                                 f"{group.rate_factor}, which the static program's rate variable fixed")
            group.rate_factor = float(ratio)
    elif entry.get("lr") is not None and not _equal(group["lr"], entry["lr"]):
        group["lr"] = float(entry["lr"])


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, WeightDecayRegularizer) or isinstance(b, WeightDecayRegularizer):
        return type(a) is type(b) and a.coeff == b.coeff
    return bool(a == b)
