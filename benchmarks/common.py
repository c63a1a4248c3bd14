"""Timing helpers shared by the benchmark scripts: best-of-N wall time, and a table printer."""
from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Sequence

# PyTorch's OpenMP threads spin for a while after each op. In one process with NumPy's BLAS
# threads, the spinning steals the cores from whichever contender runs next; passive waiting
# keeps an in-process comparison fair. It must be set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def limit_threads(threads: int | None) -> Any:
    """Cap NumPy's BLAS and PyTorch to the same number of threads (both, or neither)."""
    if threads is None:
        return contextlib.nullcontext()
    import torch
    from threadpoolctl import threadpool_limits
    torch.set_num_threads(threads)
    return threadpool_limits(threads, user_api="blas")


def best_time(fn: Callable[[], object], repeat: int = 5, number: int = 1, warmup: int = 1) -> float:
    """The best of `repeat` timings of `number` calls, in seconds per call (noise only adds)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n## {title}\n")
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")


def interleaved_best(contenders: dict[str, Callable[[], object]], rounds: int = 10,
                     number: int = 1) -> dict[str, float]:
    """Best seconds per call of each contender, timed in alternation, so that a burst of load
    from elsewhere on a shared machine hits every contender alike."""
    for fn in contenders.values():
        fn()
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / number)
    return best
