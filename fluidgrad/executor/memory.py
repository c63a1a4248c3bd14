"""Peak live-array memory of a block run, from the plan's liveness rule and the values' shapes.

The plan deletes every intermediate right after its last reader (fetched values live to the
end), so the bytes alive while op i runs are those of the values written at or before op i and
read at or after it. Shapes are the declared ones, with each unknown (-1) dimension taken from
the feed (the batch); persistable values (parameters, optimizer state) and the feeds themselves
are not counted: they live in the scope or the caller whatever the plan does. Values kept by
sub-blocks (a while loop's step scopes) are not counted either.

This is what recompute changes, so `Executor.run(..., return_stats=True)` reports it. Given the
plan, it also counts what the plan does to memory: a value written into a dying input's buffer
adds no bytes (the buffer lives on until the value's last reader), and a value whose last
readers need only its shape is freed after its last real use.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..framework import FORWARD, Block
from ..framework.names import EMPTY_VAR_NAME, RECOMPUTE_SUFFIX
from .inplace import MIN_ELEMENTS


@dataclass
class RunStats:
    """`peak_live_bytes`: the most bytes of intermediates alive at once, and `peak_op` the index
    of the op running then; `peak_activation_bytes`: the same for activations only (values the
    forward computes, and their recomputed copies), leaving out gradients, which checkpoints do
    not change; `live_bytes` / `activation_bytes`: the profiles, one entry per op in the order
    the plan runs them (`Plan.order`: optimizer ops move up; `peak_op` is a block index)."""

    peak_live_bytes: int
    peak_op: int
    peak_activation_bytes: int
    live_bytes: list[int]
    activation_bytes: list[int]


def live_bytes(block: Block, feeds: Mapping[str, np.ndarray], fetch_names: Sequence[str],
               inplace: Mapping[str, str] | None = None, freed_early: Mapping[str, int] | None = None,
               never_computed: Sequence[str] = (), order: Sequence[int] | None = None) -> RunStats:
    batch = _batch_size(block, feeds)
    sizes: dict[str, int] = {}
    first_write: dict[str, int] = {}
    activations: set[str] = set()
    last_read: dict[str, int] = {}
    ops = block.ops if order is None else [block.ops[i] for i in order]
    for index, op in enumerate(ops):
        for name in op.input_arg_names:
            last_read[name] = index
        for name in op.output_arg_names:
            if name == EMPTY_VAR_NAME or name in feeds or name in first_write:
                continue
            var = block._find_var_recursive(name)
            if var is None or var.persistable:
                continue
            first_write[name] = index
            sizes[name] = _nbytes(var.shape, var.dtype, batch)
            if name in (inplace or {}) and sizes[name] < MIN_ELEMENTS * _itemsize(var.dtype):
                inplace = {k: v for k, v in inplace.items() if k != name}  # too small: the run allocates
            if op.role == FORWARD or RECOMPUTE_SUFFIX in name:
                activations.add(name)
    for name in fetch_names:
        last_read[name] = len(ops)
    for name, index in (freed_early or {}).items():
        var = block._find_var_recursive(name)
        if name in sizes and var is not None and sizes[name] >= MIN_ELEMENTS * _itemsize(var.dtype):
            last_read[name] = index  # smaller values are kept as they are (plan._meta)
    for name in never_computed:
        sizes[name] = 0
    _share_buffers(inplace or {}, first_write, last_read, sizes)
    everything = _profile(len(ops), first_write, last_read, sizes)
    only_activations = _profile(len(ops), {n: first_write[n] for n in activations}, last_read, sizes)
    peak = int(np.argmax(everything)) if everything else 0
    peak_op = order[peak] if order is not None and everything else peak
    return RunStats(everything[peak] if everything else 0, peak_op, max(only_activations, default=0),
                    everything, only_activations)


def _share_buffers(inplace: Mapping[str, str], first_write: dict[str, int], last_read: dict[str, int],
                   sizes: dict[str, int]) -> None:
    """An output written into its input's buffer costs nothing new; the buffer (counted once, at
    its first owner) stays alive until the last reader of any value it held."""
    owner: dict[str, str] = {}
    for out in sorted(inplace, key=lambda n: first_write.get(n, -1)):
        source = inplace[out]
        root = owner.get(source, source)
        if out not in sizes or root not in sizes:
            continue
        owner[out] = root
        sizes[out] = 0
        last_read[root] = max(last_read.get(root, 0), last_read.get(out, first_write[out]))


def _profile(n_ops: int, first_write: dict[str, int], last_read: dict[str, int], sizes: dict[str, int]) -> list[int]:
    """Bytes alive while each op runs: a value lives from its writer to its last reader."""
    delta = [0] * (n_ops + 2)
    for name, start in first_write.items():
        delta[start] += sizes[name]
        delta[max(last_read.get(name, start), start) + 1] -= sizes[name]
    profile, running = [], 0
    for index in range(n_ops):
        running += delta[index]
        profile.append(running)
    return profile


def _batch_size(block: Block, feeds: Mapping[str, np.ndarray]) -> int:
    for name, value in feeds.items():
        var = block._find_var_recursive(name)
        if var is not None and var.shape and var.shape[0] == -1 and np.ndim(value) > 0:
            return int(np.shape(value)[0])
    return 1


def _nbytes(shape: Sequence[int], dtype: str, batch: int) -> int:
    elements = 1
    for dim in shape:
        elements *= batch if dim == -1 else int(dim)
    return elements * _itemsize(dtype)


def _itemsize(dtype: str) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 4
