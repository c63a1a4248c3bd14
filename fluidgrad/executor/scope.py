"""Scopes: where variable values live between and during runs."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np


class Scope:
    """A mapping from variable names to arrays, with a parent chain for lookups.

    `scope[name]` searches this scope and then its ancestors; `scope[name] = value` sets it
    here. A `while` keeps one child scope per iteration; its gradient reads them back.
    """

    __slots__ = ("vars", "parent")

    def __init__(self, parent: "Scope | None" = None) -> None:
        self.vars: dict[str, Any] = {}
        self.parent = parent

    def find_owner(self, name: str) -> "Scope | None":
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope
            scope = scope.parent
        return None

    def __getitem__(self, name: str) -> Any:
        owner = self.find_owner(name)
        if owner is None:
            raise KeyError(f"variable {name!r} is not in this scope nor in its parents")
        return owner.vars[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self.vars[name] = value

    def __contains__(self, name: str) -> bool:
        return self.find_owner(name) is not None

    def __delitem__(self, name: str) -> None:
        del self.vars[name]

    def get(self, name: str, default: Any = None) -> Any:
        owner = self.find_owner(name)
        return default if owner is None else owner.vars[name]

    def assign(self, name: str, value: Any) -> None:
        """Write to the scope that already holds `name` (an outer variable), else here."""
        owner = self.find_owner(name)
        (self if owner is None else owner).vars[name] = value

    def keys(self) -> list[str]:
        return list(self.vars)

    def __iter__(self) -> Iterator[str]:
        return iter(self.vars)

    def __len__(self) -> int:
        return len(self.vars)

    def new_scope(self) -> "Scope":
        return Scope(self)

    def find_var(self, name: str) -> Any:
        """The value of `name` (None if absent): the array itself, which also answers Paddle's
        `find_var(name).get_tensor()` (`np.array(t)`, `t.set(value, place)`)."""
        value = self.get(name)
        if not isinstance(value, np.ndarray):
            return value
        found = value.view(ScopeVariable)
        found._scope, found._name = self, name
        return found

    def __repr__(self) -> str:
        return f"Scope({sorted(self.vars)})"


class ScopeVariable(np.ndarray):
    """What `Scope.find_var` returns: the variable's array (a view of it), plus Paddle's
    `get_tensor()` for code that reads and sets a variable through the scope."""

    _scope: "Scope | None" = None
    _name: str = ""

    def get_tensor(self) -> "ScopeTensor":
        if self._scope is None:
            raise ValueError("get_tensor: this array is not a variable found in a scope (use Scope.find_var)")
        return ScopeTensor(self._scope, self._name)


class ScopeTensor:
    """Paddle's LoDTensor handle of a scope variable: `np.array(t)` reads its current value,
    `t.set(value, place)` replaces it (a copy, cast to the variable's dtype and checked for shape)."""

    def __init__(self, scope: Scope, name: str) -> None:
        self._scope, self._name = scope, name

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = np.asarray(self._scope[self._name])
        return value if dtype is None else value.astype(dtype)

    def shape(self) -> list[int]:
        return list(np.shape(self._scope[self._name]))

    def set(self, value: Any, place: Any = None) -> None:
        current = np.asarray(self._scope[self._name])
        array = np.array(value, dtype=current.dtype)
        if array.shape != current.shape:
            raise ValueError(f"set: variable {self._name!r} has shape {list(current.shape)}, "
                             f"the new value has shape {list(array.shape)}")
        self._scope.assign(self._name, array)

    def __repr__(self) -> str:
        return f"ScopeTensor({self._name!r}, shape={self.shape()})"


_global_scope = Scope()


def global_scope() -> Scope:
    """The scope runs use when none is given: it holds parameters across `Executor.run` calls."""
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope: Scope) -> Iterator[None]:
    """Make `scope` the global scope inside a `with` block (each test or model can have its own)."""
    global _global_scope
    saved, _global_scope = _global_scope, scope
    try:
        yield
    finally:
        _global_scope = saved
