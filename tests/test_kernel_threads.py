"""Kernels split over threads (fluidgrad/ops/threads.py): every block drawn exactly once, the
threads' results all returned, failures raised after every started helper finished, the pool
made anew after a fork, and the thread count following BLAS's own setting."""
import os
import threading
import time

import numpy as np
import pytest

from fluidgrad.ops import threads


def _drawn_by_thread(n, step, workers, pause=0.0, barrier=None):
    def work(blocks):
        if barrier is not None:
            barrier.wait()
        got = []
        for lo, hi in blocks:
            got.append((lo, hi))
            time.sleep(pause)
        return threading.get_ident(), got
    return threads.run_blocks(work, n, step, workers)


@pytest.mark.parametrize("n, step, workers", [(10, 1, 2), (10, 3, 2), (7, 2, 3), (1, 1, 4), (0, 1, 2), (5, 8, 2)])
def test_every_block_is_drawn_exactly_once(n, step, workers):
    results = _drawn_by_thread(n, step, workers, pause=0.001)
    drawn = sorted(b for _, got in results for b in got)
    expected = [(lo, min(lo + step, n)) for lo in range(0, n, step)] or []
    assert drawn == expected
    assert 1 <= len(results) <= min(workers, max(1, len(expected)))


def test_slow_blocks_are_shared_by_two_threads():
    results = _drawn_by_thread(8, 1, 2, pause=0.01, barrier=threading.Barrier(2, timeout=30))
    assert len(results) == 2
    assert results[0][0] == threading.get_ident()   # the calling thread takes part
    assert len({ident for ident, _ in results}) == 2 and all(got for _, got in results)


def test_a_failing_block_raises_after_every_started_helper_finished():
    finished, both_started = [], threading.Barrier(2, timeout=30)

    def work(blocks):
        both_started.wait()
        for lo, _ in blocks:
            time.sleep(0.01)
            if lo == 3:
                raise ValueError("block 3")
        finished.append(threading.get_ident())

    with pytest.raises(ValueError, match="block 3"):
        threads.run_blocks(work, 8, 1, 2)
    assert len(finished) == 1   # the other thread ran to the end before run_blocks raised


def test_the_pool_is_made_anew_in_a_forked_child(monkeypatch):
    first = threads._executor(1)
    assert threads._executor(1) is first
    monkeypatch.setattr(os, "getpid", lambda: -1)
    assert threads._executor(1) is not first


def test_without_threadpoolctl_kernels_use_one_thread(monkeypatch):
    monkeypatch.setattr(threads, "_blas_controllers", lambda: ())
    assert threads.blas_threads() == 1


def test_the_thread_count_follows_blas_limits():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not threads._blas_controllers():
        pytest.skip("threadpoolctl finds no BLAS library it can set")
    for count in (1, 2):
        with threadpoolctl.threadpool_limits(count, user_api="blas"):
            assert threads.blas_threads() == count


def test_results_of_threads_add_up_to_the_sequential_sum():
    data = np.random.default_rng(0).standard_normal(1000)

    def work(blocks):
        total = 0.0
        for lo, hi in blocks:
            total += data[lo:hi].sum()
        return total
    assert sum(threads.run_blocks(work, 1000, 7, 3)) == pytest.approx(data.sum(), rel=1e-12)
