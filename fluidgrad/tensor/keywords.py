"""PyTorch's keyword names beside Paddle's for the functions of this package that differ in them
(dim= for axis=, mat1= for x=, boundaries= for sorted_sequence=, ...)."""
from __future__ import annotations

from typing import Any


def paddle_or_torch(fn: str, name: str, value: Any, torch_name: str, torch_value: Any, default: Any = None) -> Any:
    """The argument given as Paddle's `name` or PyTorch's `torch_name`, not both (a TypeError
    naming fn and both spellings); `default` when neither is given."""
    if torch_value is None:
        return default if value is None else value
    if value is not None and value != default:
        raise TypeError(f"{fn}: give {name}= or {torch_name}=, not both")
    return torch_value
