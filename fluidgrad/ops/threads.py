"""A kernel's batch split over as many threads as NumPy's BLAS may use.

Why: a kernel that works in cache-sized blocks (Winograd conv: transform, GEMM, transform per
image) calls BLAS on matrices too small for BLAS to thread, so at two threads it ran at one
thread's speed while PyTorch ran on both cores. Handing the blocks of images out to several
threads (compiled loops are nogil; NumPy releases the GIL in BLAS) uses the cores BLAS was given.
The thread count is BLAS's own setting (OPENBLAS_NUM_THREADS, threadpoolctl's
`threadpool_limits`), read through threadpoolctl (optional, in the `fast` extra; without it one
thread), so that the kernels never run more threads than BLAS was allowed.
"""
from __future__ import annotations

import functools
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

_pool_lock = threading.Lock()
_pool: dict[str, object] = {"executor": None, "workers": 0, "pid": 0}


@functools.cache
def _blas_controllers() -> tuple:
    """threadpoolctl's handles on the BLAS libraries loaded (NumPy's among them); () without it."""
    try:
        from threadpoolctl import ThreadpoolController  # optional: the `fast` extra
    except ImportError:
        return ()
    try:
        return tuple(ThreadpoolController().select(user_api="blas").lib_controllers)
    except Exception:   # a library threadpoolctl cannot query: behave as without it
        return ()


def blas_threads() -> int:
    """The number of threads NumPy's BLAS may use now (the smallest over the BLAS libraries
    loaded); 1 when threadpoolctl is not installed."""
    counts = [c.get_num_threads() for c in _blas_controllers()]
    counts = [n for n in counts if isinstance(n, int) and n > 0]
    return min(counts) if counts else 1


class Blocks:
    """[lo, hi) blocks of range(n), `step` long, handed out one at a time to whichever thread
    asks next (each thread iterates its own `iter(blocks)`; the counter they share is
    itertools.count, whose next() is atomic)."""

    def __init__(self, n: int, step: int) -> None:
        self.n, self.step = n, max(1, step)
        self._starts = itertools.count(0, self.step)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        while (lo := next(self._starts)) < self.n:
            yield lo, min(lo + self.step, self.n)


def _executor(workers: int) -> ThreadPoolExecutor:
    """The process's pool with at least `workers` threads, made anew after a fork (the parent's
    threads do not exist in the child: work queued to them would wait forever)."""
    with _pool_lock:
        if _pool["executor"] is None or _pool["pid"] != os.getpid() or _pool["workers"] < workers:
            _pool.update(executor=ThreadPoolExecutor(workers, thread_name_prefix="fluidgrad-kernel"),
                         workers=workers, pid=os.getpid())
        return _pool["executor"]


def run_blocks(work: Callable[[Iterator[tuple[int, int]]], T], n: int, step: int, threads: int) -> list[T]:
    """work(blocks) in up to `threads` threads (the calling one among them), all drawing the
    `step`-long blocks of range(n) from one `Blocks`; the results of the threads that ran.

    Blocks are drawn, not dealt in fixed shares: on a loaded machine a thread that waits for a
    core takes fewer blocks instead of holding up the others, and a helper that has not started
    by the time the caller ran out of blocks is cancelled rather than waited for. Every helper
    that started has finished when this returns or raises."""
    blocks = Blocks(n, step)
    helpers = min(threads, -(-n // blocks.step)) - 1
    if helpers <= 0:
        return [work(iter(blocks))]
    futures = [_executor(helpers).submit(work, iter(blocks)) for _ in range(helpers)]
    try:
        results = [work(iter(blocks))]
    finally:
        ran = [f for f in futures if not f.cancel()]
        errors = [f.exception() for f in ran]   # waits for each helper, even when one failed
    for err in errors:
        if err is not None:
            raise err
    return results + [f.result() for f in ran]
