"""Grad mode, per thread (as in PyTorch): whether ops run now are recorded for backward.

`no_grad()` in one thread never stops another thread from recording. The state also holds
the tracer of `jit.to_static` (a trace belongs to the thread that runs it), whether the
engine is running a backward pass (for messages, e.g. of the NaN/Inf check), and whether a
forward is being run again by `recompute` (whose state updates, such as BatchNorm's running
statistics, were made the first time and must not be made twice).
"""
from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable


class _AllDefault:
    """`on` while no thread has grad mode off or a tracer set: then an op needs not read its
    thread's state (a thread-local read costs about as much as a plain one four times over,
    and every eager op would pay it twice)."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = True


all_default = _AllDefault()
_unusual_threads = 0  # threads with grad mode off or a tracer set
_count_lock = threading.Lock()


class _ThreadState(threading.local):
    """Class attributes are each new thread's defaults. Setting `grad_enabled` or `tracer`
    keeps `all_default` true to the count of threads away from the defaults."""

    _grad_enabled = True
    _tracer: Any = None
    _unusual = False
    in_backward = False
    recomputing = False

    @property
    def grad_enabled(self) -> bool:
        return self._grad_enabled

    @grad_enabled.setter
    def grad_enabled(self, mode: bool) -> None:
        self._grad_enabled = mode
        self._recount()

    @property
    def tracer(self) -> Any:
        """Set by jit.to_static while tracing."""
        return self._tracer

    @tracer.setter
    def tracer(self, tracer: Any) -> None:
        self._tracer = tracer
        self._recount()

    def _recount(self) -> None:
        unusual = not self._grad_enabled or self._tracer is not None
        if unusual is self._unusual:
            return
        global _unusual_threads
        self._unusual = unusual
        with _count_lock:
            _unusual_threads += 1 if unusual else -1
            all_default.on = _unusual_threads == 0


state = _ThreadState()


def is_grad_enabled() -> bool:
    """Whether eager ops record a graph in this thread (False inside `no_grad()`)."""
    return state.grad_enabled


def is_recomputing() -> bool:
    """Whether this thread is running a forward again for `recompute`'s backward: code that
    updates state as a side effect (running statistics) skips the update, made the first time."""
    return state.recomputing


class recomputing:
    """Marks a block as a forward run again (see is_recomputing); nests."""

    def __enter__(self) -> None:
        self._saved, state.recomputing = state.recomputing, True

    def __exit__(self, *exc: Any) -> None:
        state.recomputing = self._saved




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
        if inspect.isgeneratorfunction(fn):
            return _generator_in_mode(fn, mode)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            saved = state.grad_enabled
            state.grad_enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                state.grad_enabled = saved
        return wrapper


class _InMode:
    """Grad mode `mode` for one resumption of a generator, the caller's mode restored after it."""

    def __init__(self, mode: bool) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self._saved, state.grad_enabled = state.grad_enabled, self.mode

    def __exit__(self, *exc: Any) -> None:
        state.grad_enabled = self._saved


def _generator_in_mode(fn: Callable, mode: bool) -> Callable:
    """A generator function whose body runs in grad mode `mode` at each resumption (torch's
    decorators do the same): the mode cannot be set once around the call, which only creates
    the generator, and it must not leak into the caller's code between two `next()`s."""

    @functools.wraps(fn)
    def generator(*args: Any, **kwargs: Any) -> Any:
        with _InMode(mode):
            gen = fn(*args, **kwargs)
        try:
            with _InMode(mode):
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with _InMode(mode):
                        gen.close()
                    raise
                except BaseException as error:
                    with _InMode(mode):
                        response = gen.throw(error)
                else:
                    with _InMode(mode):
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value
    return generator


class no_grad(_GradMode):
    """Record nothing inside: `with no_grad(): ...` or `@no_grad()` (also `@no_grad`)."""

    mode = False

    def __new__(cls, fn: Callable | None = None):
        self = super().__new__(cls)
        if fn is not None and callable(fn):
            return self(fn)
        return self


class inference_mode(_GradMode):
    """PyTorch's inference_mode: no_grad for a block or a function (`with inference_mode():`,
    `@inference_mode()`, `@inference_mode`); inference_mode(False) records as usual."""

    def __new__(cls, mode: Any = True):
        self = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):   # bare @inference_mode
            self.mode = False
            return self(mode)
        return self

    def __init__(self, mode: Any = True) -> None:
        self.mode = not bool(mode)


class set_grad_enabled(_GradMode):
    """Turn recording on or off for this thread now; as a context manager (or decorator), as
    PyTorch's, it restores the mode found when it was made."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._made_in = state.grad_enabled
        state.grad_enabled = self.mode

    def __enter__(self) -> None:
        self._saved = self._made_in

    def __call__(self, fn: Callable) -> Callable:
        state.grad_enabled = self._made_in  # as a decorator it only sets the mode inside `fn`
        return super().__call__(fn)


class enable_grad(_GradMode):
    """Record again inside a `no_grad` block."""

    mode = True


def set_tracer(tracer: Any) -> Any:
    """Route this thread's eager ops to `tracer` (None: run them); returns the previous one."""
    saved, state.tracer = state.tracer, tracer
    return saved
