"""Grad mode, per thread (as in PyTorch): whether ops run now are recorded for backward.

`no_grad()` in one thread never stops another thread from recording. The state also holds
the tracer of `jit.to_static` (a trace belongs to the thread that runs it) and whether the
engine is running a backward pass (for messages, e.g. of the NaN/Inf check).
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable


class _ThreadState(threading.local):
    """Class attributes are each new thread's defaults."""

    grad_enabled = True
    tracer: Any = None      # set by jit.to_static while tracing
    in_backward = False


state = _ThreadState()


def is_grad_enabled() -> bool:
    """Whether eager ops record a graph in this thread (False inside `no_grad()`)."""
    return state.grad_enabled


def set_grad_enabled(mode: bool) -> None:
    """Turn recording on or off for this thread; usable as a context manager, as PyTorch's."""
    state.grad_enabled = bool(mode)


class _GradMode:
    """Context manager and decorator setting grad mode for a block or a function."""

    mode = True

    def __enter__(self) -> None:
        self._saved = state.grad_enabled
        state.grad_enabled = self.mode

    def __exit__(self, *exc: Any) -> None:
        state.grad_enabled = self._saved

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            saved = state.grad_enabled
            state.grad_enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                state.grad_enabled = saved
        return wrapper


class no_grad(_GradMode):
    """Record nothing inside: `with no_grad(): ...` or `@no_grad()` (also `@no_grad`)."""

    mode = False

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        if fn is not None and callable(fn):
            return self(fn)
        return self


class enable_grad(_GradMode):
    """Record again inside a `no_grad` block."""

    mode = True


def set_tracer(tracer: Any) -> Any:
    """Route this thread's eager ops to `tracer` (None: run them); returns the previous one."""
    saved, state.tracer = state.tracer, tracer
    return saved
