"""One argument under two names: Paddle's (the signature's) and PyTorch's (a keyword-only
alias), e.g. label= / target=, epsilon= / eps=, so code written for either library runs."""
from __future__ import annotations

from typing import Any


def either(fn: str, name: str, value: Any, default: Any, torch_name: str, torch_value: Any) -> Any:
    """The value given as `name` or as `torch_name` (not both); a required argument (default
    None) given as neither is a TypeError, as Python's own for a missing argument."""
    if torch_value is None:
        if value is None and default is None:
            raise TypeError(f"{fn}: missing the argument {name}= (PyTorch's {torch_name}=)")
        return value
    if value is not None and (default is None or value != default):
        raise TypeError(f"{fn}: give {name}= or {torch_name}=, not both")
    return torch_value
