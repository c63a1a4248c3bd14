"""Writes into memory another rank reads, with non-temporal ("streaming") stores.

Why: a data-parallel step on one node writes, every step, memory the other ranks read the step
before (this rank's row of a shared gradient bucket, comm_buckets.py). The peer's core still
holds those cache lines, so each ordinary store must first take the line away from it, one
request per 64-byte line. Where the two cores are close (one L3) that costs nothing measurable;
where they are not (another CCX or die, as on a 2-vCPU virtual machine whose vCPUs the host
moves about: benchmarks/bench_dist.py's CrossCoreProbe) it costs about 25 ns per line, 1 ms per
2.7 MB, measured here (1.08 ms against 0.13 ms for the same 2.7 MB copy streamed). A streaming
store writes whole lines to memory without asking for them, and invalidates the other copies on
the way; the reader then reads the row from memory instead of from the writer's cache.

`stream_copy(dst, src)` is np.copyto(dst, src) through streaming stores when numba is there
(ops/accel.py; the `fast` extra) and the arrays are 1-D, contiguous, of one float dtype;
otherwise np.copyto. The bits written are the same either way. `STREAM`
(FLUIDGRAD_STREAM_SHARED=0: off) says whether writes into shared rows stream at all; the
benchmark compares both.

Streamed rows cost more when the cores are close (a pack pass of their own, and the peer reads
them from memory rather than from the shared cache), so neither choice wins in both states
(docs/distributed.md). `StoreChooser` asks the machine each step: it rewrites a little of the
row about to be written with ordinary stores and times it (`probe_ns_per_line`).
"""
from __future__ import annotations

import functools
import os
import time
from collections import deque
from typing import Callable

import numpy as np

from . import accel

# on: writes into memory other ranks read (shared bucket rows) use streaming stores, and those
# rows are not offered to the gradients' producers (placement), whose stores are ordinary ones
STREAM = accel.Switch("FLUIDGRAD_STREAM_SHARED")
LINE = 64  # bytes: a cache line, and the unit a streaming vector store writes
PROBE_BYTES = 32 << 10  # 512 lines: 13 us when the lines are far, 1-2 us when near
# ns per 64-byte line. Measured under load (17:20 UTC, ordinary stores, probe by probe): most
# probes 7-10 ns, the backward's placed GEMMs 2.13-2.27 ms; the slowest fifth 16 ns, 2.35-2.38 ms
# (streaming then gains little); with the cores apart on an idle machine a line costs about 25
# and those GEMMs 0.6 ms more, which streaming saves
FAR_NS = 14.0
# static mode's two-rank rows (the fused replicated update, comm_shards.update_replicated):
# "adaptive" (the default: StoreChooser), or forced, for comparisons: "stream", "ordinary"
ROWS_POLICY = os.environ.get("FLUIDGRAD_STREAM_ROWS", "adaptive")


class StoreChooser:
    """Per bucket: whether this step's writes into a two-rank shared row stream. `stream_now(row)`
    rewrites the first PROBE_BYTES of this rank's row for the coming step (memory the step
    overwrites anyway, which the peer is done reading) with ordinary stores and times it: above
    FAR_NS per line the peer's cache still held those lines. The rows are streamed when at
    least two of the last three probes found that, so one preempted probe changes nothing. Each
    rank decides for its own stores; the values written, hence the sums, are the same bits
    either way. `policy()` gives "adaptive", "stream" or "ordinary"."""

    def __init__(self, policy: Callable[[], str] = lambda: ROWS_POLICY) -> None:
        self.policy = policy
        self.verdicts: deque[bool] = deque(maxlen=3)
        self.streamed_steps = self.steps = 0

    def stream_now(self, row: np.ndarray) -> bool:
        """Whether this step's row is streamed; `row`: this rank's row for the coming reduction
        (its first PROBE_BYTES are overwritten)."""
        policy = self.policy()
        if not enabled() or policy == "ordinary":
            return False
        self.steps += 1
        if policy == "stream":
            self.streamed_steps += 1
            return True
        self.verdicts.append(probe_ns_per_line(row) > FAR_NS)
        far = sum(self.verdicts) >= 2
        self.streamed_steps += far
        return far


def probe_ns_per_line(row: np.ndarray) -> float:
    """ns per 64-byte line to rewrite the first PROBE_BYTES of `row` with ordinary stores."""
    part = row[:max(1, PROBE_BYTES // row.itemsize)]
    start = time.perf_counter_ns()
    part.fill(0)
    return (time.perf_counter_ns() - start) / max(1, part.nbytes // LINE)


def enabled() -> bool:
    """Whether writes into shared rows stream (compiled: numba there, and not switched off)."""
    return STREAM.on and accel.enabled()


def stream_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src, with streaming stores where it can (see the module docstring)."""
    if (enabled() and dst.ndim == 1 and src.shape == dst.shape and accel.takes(dst, src)
            and dst.flags.c_contiguous and src.flags.c_contiguous and dst.flags.writeable
            and dst.flags.aligned):  # whole elements up to a line boundary: then every store is aligned
        _stream_loop(dst, src)
        return
    np.copyto(dst, src)


@functools.cache
def _register() -> None:
    """Teach numba `stream_line(dst, src, k)`: dst[k:k + LINE / itemsize] = src[...] in one
    vector store marked !nontemporal (dst + k aligned to LINE bytes)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def stream_line(typingctx, dst, src, k):
        if not (isinstance(dst, types.Array) and dst == src and isinstance(dst.dtype, types.Float)):
            return None

        def codegen(context, builder, sig, args):
            aryty = sig.args[0]
            element = context.get_value_type(aryty.dtype)
            width = LINE // context.get_abi_sizeof(element)
            vector = ir.VectorType(element, width)
            out = context.make_array(aryty)(context, builder, args[0])
            into = context.make_array(aryty)(context, builder, args[1])
            load_at = builder.bitcast(builder.gep(into.data, [args[2]]), vector.as_pointer())
            store_at = builder.bitcast(builder.gep(out.data, [args[2]]), vector.as_pointer())
            value = builder.load(load_at, align=context.get_abi_sizeof(element))
            store = builder.store(value, store_at, align=LINE)
            store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
            return context.get_dummy_value()
        return types.void(dst, src, k), codegen

    globals()["stream_line"] = stream_line


def stream_line(dst, src, k):  # replaced by the numba intrinsic (_register) before _stream_loop compiles
    raise RuntimeError("comm_stream.stream_line runs only inside compiled code")


def _stream_loop_py(dst, src):
    """The head copied element by element up to a LINE boundary of dst, then whole lines streamed,
    then the tail."""
    n = dst.size
    itemsize = dst.itemsize
    per_line = LINE // itemsize
    head = ((LINE - dst.ctypes.data % LINE) % LINE) // itemsize
    if head > n:
        head = n
    for k in range(head):
        dst[k] = src[k]
    k = head
    while k + per_line <= n:
        stream_line(dst, src, k)
        k += per_line
    for j in range(k, n):
        dst[j] = src[j]


_jitted = accel.jit(_stream_loop_py, depends_on=(__file__,))


def _stream_loop(dst: np.ndarray, src: np.ndarray) -> None:
    _register()
    _jitted(dst, src)


def _stream_sgd_py(grad, scale, param, lr, decay):
    """fused_shards' SGD (`param -= lr * (grad * scale + decay * param)`, the same expression, so
    the same bits), each new line of `param` computed into `grad` (this rank's scratch, not read
    again) and streamed from there into `param`: param lines the peer read are not taken from it
    first. Head and tail up to LINE boundaries with ordinary stores."""
    n = param.size
    per_line = LINE // param.itemsize
    head = ((LINE - param.ctypes.data % LINE) % LINE) // param.itemsize
    if head > n:
        head = n
    for k in range(head):
        p = param[k]
        param[k] = p - lr * (grad[k] * scale + decay * p)
    k = head
    while k + per_line <= n:
        for j in range(k, k + per_line):
            p = param[j]
            grad[j] = p - lr * (grad[j] * scale + decay * p)
        stream_line(param, grad, k)
        k += per_line
    for j in range(k, n):
        p = param[j]
        param[j] = p - lr * (grad[j] * scale + decay * p)


_stream_sgd_jitted = accel.jit(_stream_sgd_py, depends_on=(__file__,))


def stream_sgd(grad: np.ndarray, scale, param: np.ndarray, lr, decay) -> bool:
    """SGD of `param` (1-D, in a window other ranks read) from `grad` times `scale`, its new values
    written with streaming stores, `grad` overwritten; False (nothing done) where it cannot."""
    if not (enabled() and param.ndim == 1 and grad.shape == param.shape and accel.takes(param, grad)
            and param.flags.c_contiguous and grad.flags.c_contiguous and param.flags.writeable
            and grad.flags.writeable and param.flags.aligned and param.dtype == grad.dtype):
        return False
    _register()
    t = param.dtype.type
    _stream_sgd_jitted(grad, t(scale), param, t(lr), t(decay))
    return True
