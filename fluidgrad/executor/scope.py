"""Scopes: where variable values live between and during runs."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator


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
        return self.get(name)

    def __repr__(self) -> str:
        return f"Scope({sorted(self.vars)})"


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
