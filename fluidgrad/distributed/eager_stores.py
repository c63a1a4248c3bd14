"""Which stores eager DataParallel writes its two-rank shared rows with, chosen step by step.

Why: each step a rank rewrites its row of a shared bucket, which the peer read two steps before.
Where the two cores share a cache that costs what a private write costs, and the weight
gradients' GEMMs write straight into the row (placement: no pack at all). Where they do not
(another CCX or die; on a 2-vCPU virtual machine whenever the host places the vCPUs apart, for
minutes at a time) every ordinary store must first take its line away from the peer's cache,
about 25 ns per 64-byte line, 1 ms per 2.7 MB; streaming (non-temporal) stores then cost 0.2 ms
(ops/comm_stream.py). Streamed rows cost more when the cores are close (a pack pass of their own,
and the peer reads them from memory), so neither choice wins in both states (measured:
docs/distributed.md). Static mode always streams; eager mode asks the machine each step.

`StoreChooser.stream_now(row)` rewrites PROBE_BYTES of this rank's row for the coming step
(memory the next pack overwrites anyway; the peer is done reading it, see
data_parallel._ReduceStep.begin) with ordinary stores and times it: above FAR_NS per line,
the peer's cache still held those lines. The rows are streamed when at least two of the last
three probes found that, so one preempted probe changes nothing. Each rank decides for its own
stores; the values written, hence the sums, are the same bits either way.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np

from ..ops import comm_stream

PROBE_BYTES = 32 << 10  # 512 lines: 13 us when the lines are far, 1-2 us when near
# ns per 64-byte line. Measured under load (17:20 UTC, ordinary stores, probe by probe): most
# probes 7-10 ns, the backward's placed GEMMs 2.13-2.27 ms; the slowest fifth 16 ns, 2.35-2.38 ms
# (streaming then gains little); with the cores apart on an idle machine a line costs about 25
# and those GEMMs 0.6 ms more, which streaming saves
FAR_NS = 14.0
# "adaptive" (the default), or forced for comparisons: "stream" (static mode's choice), "ordinary"
POLICY = "adaptive"


class StoreChooser:
    """Per wrapper: the last probes' verdicts (see the module docstring)."""

    def __init__(self) -> None:
        self.verdicts: deque[bool] = deque(maxlen=3)
        self.streamed_steps = self.steps = 0

    def stream_now(self, row: np.ndarray) -> bool:
        """Whether this step's rows are streamed; `row`: this rank's row of the largest shared
        bucket for the coming reduction (its first PROBE_BYTES are overwritten)."""
        if not comm_stream.enabled() or POLICY == "ordinary":
            return False
        self.steps += 1
        if POLICY == "stream":
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
    return (time.perf_counter_ns() - start) / max(1, part.nbytes // comm_stream.LINE)
