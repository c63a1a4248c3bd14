"""Paddle's name scopes: ops appended inside `with static.name_scope("encoder"):` carry the attribute
`op_namescope` "/encoder/" (nested scopes "/encoder/layer/"), which `str(program)` lists with the
op's other attributes. As in Paddle, a name entered again under the same parent gets a suffix
("/encoder_1/"), so each `with` block's ops stay told apart. Outside every scope ops get no such
attribute (Paddle's "/")."""
from __future__ import annotations

import contextlib
from typing import Iterator

OP_NAMESCOPE = "op_namescope"


class _Scope:
    __slots__ = ("name", "parent", "children")

    def __init__(self, name: str, parent: "_Scope | None") -> None:
        self.name, self.parent = name, parent
        self.children: dict[str, int] = {}   # name -> times entered under this scope

    def child(self, prefix: str) -> "_Scope":
        count = self.children.get(prefix, 0)
        self.children[prefix] = count + 1
        return _Scope(prefix if count == 0 else f"{prefix}_{count}", self)

    def path(self) -> str:
        parts, scope = [], self
        while scope.parent is not None:
            parts.append(scope.name)
            scope = scope.parent
        return "/" + "".join(f"{p}/" for p in reversed(parts))


_ROOT = _Scope("", None)
_current = _ROOT


@contextlib.contextmanager
def name_scope(prefix: str | None = None) -> Iterator[None]:
    """Ops appended inside carry op_namescope "/.../prefix/" (paddle.static.name_scope)."""
    global _current
    if not prefix or not isinstance(prefix, str):
        raise ValueError(f"name_scope: the prefix must be a non-empty string, got {prefix!r}")
    outer = _current
    _current = outer.child(prefix)
    try:
        yield
    finally:
        _current = outer


def current_name_scope() -> str | None:
    """The op_namescope of ops appended now, or None outside every name scope."""
    return None if _current is _ROOT else _current.path()
