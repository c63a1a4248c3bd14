"""Optional compiled kernels: numba (the `fast` extra) for work NumPy can only do in several passes.

Why: a layer norm, a softmax gradient or a col2im costs NumPy four to eight passes over memory
and a temporary each, where one loop in a compiled language makes one pass. numba compiles such
a loop once per argument type (cached on disk). Every kernel that has a compiled version keeps
its NumPy version: that one runs when numba is not installed, when FLUIDGRAD_NUMBA=0, for dtypes
the compiled loop does not take (float16, integers), and in the tests that compare the two.

Usage in an op family::

    @accel.jit
    def _layer_norm_rows(x, w, b, eps, y): ...      # plain loops over float32/float64 arrays

    def layer_norm_kernel(x, ...):
        if accel.enabled() and accel.takes(x):
            ...call _layer_norm_rows...
        ...NumPy version...
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
from typing import Callable, Iterator

import numpy as np

# reassociation lets a sum over a row vectorise; NaN and Inf keep their IEEE meaning (no "fast"
# flag that assumes them away), so NaN checks and inf masks behave as in NumPy
FASTMATH = {"reassoc", "contract", "nsz"}
_COMPILED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))



class Switch:
    """An on/off setting: on unless its environment variable is "0", and switchable for a block
    (`with switch.use(False): ...`, how tests compare a fast path with its plain one)."""

    def __init__(self, variable: str) -> None:
        self.on = os.environ.get(variable, "1") != "0"

    @contextlib.contextmanager
    def use(self, on: bool) -> Iterator[None]:
        before, self.on = self.on, on
        try:
            yield
        finally:
            self.on = before


NUMBA = Switch("FLUIDGRAD_NUMBA")


@functools.cache
def _numba():
    try:
        import numba  # optional: the `fast` extra
    except ImportError:
        return None
    return numba


def installed() -> bool:
    """Whether numba can be imported (imported on the first question, not by `import fluidgrad`)."""
    return _numba() is not None


def enabled() -> bool:
    """Whether kernels should take their compiled path: numba installed and not switched off."""
    return NUMBA.on and installed()


def takes(*arrays: np.ndarray) -> bool:
    """Whether the compiled loops accept these arrays: all float32 or all float64, same dtype."""
    dtype = arrays[0].dtype
    return dtype in _COMPILED_DTYPES and all(a.dtype == dtype for a in arrays)


def use_numba(on: bool) -> contextlib.AbstractContextManager:
    """Switch the compiled kernels on or off for a block (tests compare both paths)."""
    return NUMBA.use(on)


def jit(fn: Callable, depends_on: tuple[str, ...] = ()) -> Callable:
    """`fn` compiled by numba on its first call (nogil, cached on disk, reassociating sums).

    Decorating costs nothing: numba is imported and the loop compiled only when a kernel first
    takes the compiled path. `.py_func` is the plain Python function (for reading and debugging).
    `depends_on`: other source files whose code gets compiled into `fn` (numba overloads and
    intrinsics it calls, e.g. fused_math.py). numba's disk cache checks only `fn`'s own file, so
    their contents' hash salts the cache key: an edit there recompiles `fn` instead of loading
    stale machine code.
    """
    compiled: list[Callable] = []

    @functools.wraps(fn)
    def call(*args):
        if not compiled:
            compiled.append(_compile(fn, source_hash(*depends_on)))
        return compiled[0](*args)

    call.py_func = fn
    return call


@functools.cache
def source_hash(*paths: str) -> str:
    """sha256 of the files' contents (once per process): the cache salt of `jit(depends_on=...)`."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest() if paths else ""


@functools.cache
def _salted_cache_class() -> type:
    """numba's per-function disk cache with a salt added to each entry's key (which numba makes
    of the signature, the CPU and the function's own bytecode and closure)."""
    from numba.core.caching import FunctionCache

    class SaltedCache(FunctionCache):
        def __init__(self, py_func, salt: str):
            self._salt = salt
            super().__init__(py_func)

        def _index_key(self, sig, codegen):
            key = super()._index_key(sig, codegen)
            return key + (self._salt,) if self._salt else key   # unsalted: numba's own key

    return SaltedCache


def _compile(fn: Callable, salt: str = "") -> Callable:
    numba = _numba()
    if numba is None:
        raise RuntimeError(f"{fn.__name__}: the compiled kernel needs numba (pip install 'fluidgrad[fast]')")
    if not salt:
        try:
            return numba.njit(cache=True, nogil=True, fastmath=FASTMATH)(fn)
        except RuntimeError:   # no writable cache directory: compile for this process only
            return numba.njit(cache=False, nogil=True, fastmath=FASTMATH)(fn)
    dispatcher = numba.njit(cache=False, nogil=True, fastmath=FASTMATH)(fn)
    try:
        # what njit(cache=True) does (Dispatcher.enable_caching), with the salted cache; this
        # reaches into numba's caching internals, so any failure there (no writable cache
        # directory, a numba whose internals moved) means compiling for this process only
        dispatcher._cache = _salted_cache_class()(fn, salt)
    except Exception:
        pass
    return dispatcher
