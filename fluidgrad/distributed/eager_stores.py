"""Which stores eager DataParallel writes its two-rank shared rows with, chosen step by step.

Why: each step a rank rewrites its row of a shared bucket, which the peer read two steps before.
Where the two cores share a cache that costs what a private write costs, and the weight
gradients' GEMMs write straight into the row (placement: no pack at all). Where they do not
(another CCX or die; on a 2-vCPU virtual machine whenever the host places the vCPUs apart, for
minutes at a time) every ordinary store must first take its line away from the peer's cache,
about 25 ns per 64-byte line, 1 ms per 2.7 MB; streaming (non-temporal) stores then cost 0.2 ms
(ops/comm_stream.py). Streamed rows cost more when the cores are close (a pack pass of their own,
and the peer reads them from memory), so neither choice wins in both states (measured:
docs/distributed.md). Static mode's fused update chooses the same way (comm_stream.ROWS_POLICY).

`StoreChooser.stream_now(row)` (ops/comm_stream.py) probes this rank's row for the coming step
(memory the next pack overwrites anyway; the peer is done reading it, see
data_parallel._ReduceStep.begin). Here only eager mode's policy is kept.
"""
from __future__ import annotations

from ..ops import comm_stream
from ..ops.comm_stream import FAR_NS, PROBE_BYTES, probe_ns_per_line  # noqa: F401  (the probe, for callers)

# "adaptive" (the default), or forced for comparisons: "stream", "ordinary"
POLICY = "adaptive"


class StoreChooser(comm_stream.StoreChooser):
    """comm_stream.StoreChooser under eager mode's POLICY."""

    def __init__(self) -> None:
        super().__init__(lambda: POLICY)
