"""Layer parameters used by a static Program hold the same values as the Program's scope.

An eager parameter Tensor (a Layer's weight) that meets static Variables joins the Program as a
Parameter, and from then on the Program's runs train it in the global scope (dispatch.py). A
user still reads and writes the Layer: `layer.weight.numpy()` after `exe.run(main)`, an eager
evaluation of the trained Layer, `set_value` before the next run. So each Tensor is *bound* to
its Parameter's name, and around every run on the global scope the two are made to agree, by
sharing one array rather than by copying (a copy per run would cost a pass over every parameter
on every step):

- before a run, a Tensor given a new array since the last run (`set_value`, an eager optimizer
  step) passes it to the scope (or, before the startup run, to the startup op that initialises
  the Parameter);
- after a run, a Tensor takes the array the run left in the scope.

Sharing is safe because neither side writes into an array another holds: the executor writes in
place only into arrays no scope holds (executor/inplace.py), the eager in-place optimizer step
only into arrays its Tensor holds alone (optimizer/inplace.py), and a value written in place by
user code is then seen by both, as it should be.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .eager.tensor import Tensor
from .executor import executor as _executor
from .executor.scope import Scope, global_scope


class _Binding:
    """One Tensor's link to its Parameter: the name in the latest Program that lifted it, the
    array both last shared, and the startup op initialising it (None if another program's did)."""

    __slots__ = ("tensor", "name", "shared", "init")

    def __init__(self, tensor: Tensor, name: str, init: Any) -> None:
        key = id(tensor)
        self.tensor = weakref.ref(tensor, lambda ref: _forget(key, ref))
        self.name, self.shared, self.init = name, tensor._array, init


# id(parameter Tensor) -> its binding; an entry goes when its Tensor is collected
_bindings: dict[int, _Binding] = {}


def _forget(key: int, ref: weakref.ref) -> None:
    entry = _bindings.get(key)
    if entry is not None and entry.tensor is ref:
        del _bindings[key]


def bind(tensor: Tensor, name: str, init: Any) -> None:
    """Bind `tensor` to the Parameter `name` that `init` (a startup op, or None) initialises."""
    _bindings[id(tensor)] = _Binding(tensor, name, init)
    if _keep_in_step not in _executor.run_hooks:
        _executor.run_hooks.append(_keep_in_step)


def _binding(tensor: Tensor) -> _Binding | None:
    entry = _bindings.get(id(tensor))
    return entry if entry is not None and entry.tensor() is tensor else None


def _pull(tensor: Tensor, entry: _Binding, scope: Scope) -> None:
    value = scope.get(entry.name)
    if value is None or value is entry.shared or type(value) is not np.ndarray:
        return
    mine = tensor._array
    if value.shape != mine.shape:
        return
    if value.dtype != mine.dtype or not value.flags.writeable:  # a read-only view a kernel returned
        value = np.array(value, dtype=mine.dtype)
        scope.assign(entry.name, value)
    entry.shared = value
    tensor._take_array(value, "a static run")


def _push(tensor: Tensor, entry: _Binding, scope: Scope) -> None:
    array = tensor._array
    if array is entry.shared:
        return
    entry.shared = array
    if entry.name in scope:
        scope.assign(entry.name, array)
    if entry.init is not None:
        entry.init.attrs["values"] = array.reshape(-1).tolist()


def _keep_in_step(scope: Scope, before: bool) -> None:
    """The Executor's hook around a run on the global scope."""
    move = _push if before else _pull
    for entry in list(_bindings.values()):
        tensor = entry.tensor()
        if tensor is not None:
            move(tensor, entry, scope)


def sync_from_scope(tensor: Tensor) -> None:
    """Give a bound Tensor the value the Program's runs left in the global scope, if they left a
    new one since it last agreed with the scope (its own eager updates since are kept)."""
    entry = _binding(tensor)
    if entry is not None:
        _pull(tensor, entry, global_scope())


def write_to_scope(tensor: Tensor) -> None:
    """Give the Program a bound Tensor's value: in the global scope (after the startup run) and
    in the startup op that initialises its Parameter (before it)."""
    entry = _binding(tensor)
    if entry is not None:
        entry.shared = None
        _push(tensor, entry, global_scope())


def bound_parameter_name(tensor: Tensor) -> str | None:
    """The name of the Parameter `tensor` joined a Program as (None if it never did)."""
    entry = _binding(tensor)
    return None if entry is None else entry.name
