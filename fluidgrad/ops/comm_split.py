"""Weight gradients split across ranks from shared activations (ops c_split_matmul_grad,
c_split_sgd / c_split_momentum / c_split_adam; distributed/split_grads.py builds them).

Why. A Linear layer's weight gradient is `X^T Y` (X [B, in]: the layer's input, Y [B, out]: the
gradient of its output), and the sum over ranks of `X_r^T Y_r` is the product of the
concatenations, `[X_0; X_1; ...]^T [Y_0; Y_1; ...]`. So instead of each rank computing its whole
weight gradient and then summing it over ranks (2.7 MB per step for the benchmark's MLP, a pack,
a barrier and a sum pass), each rank publishes its X and Y (0.73 MB) into memory every rank on
the node maps (an MPI-3 shared window, the `NodeCopy` machinery), one barrier, and rank r
computes only its rows of every weight gradient over the whole concatenated batch: the same
FLOPs as its own K=B product, K=pB over 1/p of the rows. A bias gradient, the column sums of a
Y, is split the same way (its entries r). An average's 1/p is applied as Y is published (for a
power-of-two world size the same bits as scaling the product).

Then either every rank's rows are written into one shared buffer of averaged gradients that,
after a second barrier, every rank reads (`split_average`: each updates its own parameters from
it, as one process does), or rank r updates its rows of the node's one copy of the parameters
and optimizer state in place and a barrier publishes them (`split_update`: ZeRO stage 1 with no
gradient buffer at all). The rows a rank owns: `own_rows` (uneven for a world size that does
not divide them).

The shared activations: `[rows: p x n | pair 0: X region p x cap_0 x in_0, Y region p x cap_0
x out_0 | pair 1 ...]`, rank q writing its row counts and its rows at `q`. When every rank has
`cap_i` rows of pair i the concatenation is the region itself (one GEMM); otherwise the rows
are gathered first. A rank whose rows exceed the capacity writes only its counts; after the
barrier every rank sees them and all grow the window together (collective, in step), then
publish again. Writing again is safe: a rank writes step t+1's activations only after the
barrier that ends step t, which its peers reach once done reading them.

Across nodes (no shared memory: MPI's path) or in a world of one, each rank computes its whole
local gradients and they are summed by MPI's all-reduce: the same results, none of the saving.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from math import prod
from typing import Any, Callable

import numpy as np

from .comm_shards import Layout, NodeCopy
from .comm_stream import stream_copy
from .placement import Destination, is_placed

# the layers' activations written by their producers straight into this rank's rows of the shared
# window (placement, OpDef.offer_reads) instead of copied there by the op with streaming stores:
# off by default (FLUIDGRAD_SPLIT_PLACE=1: on), as the producers' ordinary stores cost more than
# the copy whenever the peer's core is far (docs/distributed.md, session 10); read when a plan is
# compiled and at every offer
ACTIVATIONS_IN_PLACE = os.environ.get("FLUIDGRAD_SPLIT_PLACE", "0") == "1"
# c_split_sgd on one node: this rank's rows of the parameters written with streaming stores
# (comm_stream.stream_sgd: the peer read them in its forward pass); off by default (measured:
# docs/distributed.md, session 10); read at each step
STREAM_PARAMS = False


def own_rows(n: int, rank: int, nranks: int) -> tuple[int, int]:
    """The rows [lo, hi) of n that rank `rank` of `nranks` computes (and updates)."""
    return rank * n // nranks, (rank + 1) * n // nranks


def gradient_shapes(xs: Sequence[Any], ys: Sequence[Any], biases: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The shapes of the weight gradients [in_i, out_i], then of the bias gradients [out_k]."""
    weights = tuple((int(x.shape[1]), int(y.shape[1])) for x, y in zip(xs, ys))
    return weights + tuple((int(ys[k].shape[1]),) for k in biases)


def local_gradients(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], biases: Sequence[int],
                    layout: Layout, scale: Any) -> np.ndarray:
    """This rank's own gradients, flat at `layout`'s offsets (times `scale`, when not None)."""
    flat = np.empty(layout.padded, xs[0].dtype)
    flat[layout.size:] = 0
    views = _views(flat, layout)
    for x, y, out in zip(xs, ys, views):
        np.matmul(x.T, y, out=out)
    for k, out in zip(biases, views[len(xs):]):
        np.sum(ys[k], axis=0, out=out)
    if scale is not None:
        np.multiply(flat, scale, out=flat)
    return flat


def _views(flat: np.ndarray, layout: Layout) -> list[np.ndarray]:
    return [flat[o:o + s].reshape(shape) for o, s, shape in zip(layout.offsets, layout.sizes, layout.shapes)]


class SharedActivations:
    """Every rank's X and Y of each pair, in one shared window of the node (see the module's
    docstring for the layout). Made collectively (the first step of the op on every rank)."""

    def __init__(self, world: Any, key: str, widths: Sequence[tuple[int, int]], capacities: Sequence[int],
                 dtype: Any) -> None:
        self.world, self.key, self.widths = world, key, list(widths)
        self.capacities = [int(c) for c in capacities]
        p, n = world.size, len(self.widths)
        sizes = [p * n] + [p * c * w for c, (a, b) in zip(self.capacities, self.widths) for w in (a, b)]
        self.copy = shared_buffer(world, f"{key}#rows{self.capacities}", sum(sizes), dtype)
        flat, start = self.copy.flat, 0
        self.counts = flat[:p * n].reshape(p, n)  # each rank's row count of each pair (exact in float up to 2^24)
        start = p * n
        self.own_counts: tuple[int, ...] = ()  # this rank's row counts in its last write
        self._destinations: dict[bool, tuple[tuple[int, ...], list[Destination | None]]] = {}
        self.x_regions, self.y_regions = [], []
        for c, (a, b) in zip(self.capacities, self.widths):
            self.x_regions.append(flat[start:start + p * c * a].reshape(p, c, a))
            start += p * c * a
            self.y_regions.append(flat[start:start + p * c * b].reshape(p, c, b))
            start += p * c * b

    def write(self, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], scale: Any,
              placed: Sequence[Destination | None] | None = None) -> None:
        """This rank's row counts, and its rows where they fit (Y times `scale`), but for those
        their producers wrote there already (`placed`: the destinations `offer` gave, X then Y)."""
        rank, n = self.world.rank, len(xs)
        counts = [x.shape[0] for x in xs]
        self.counts[rank] = counts
        self.own_counts = tuple(counts)
        if any(c > cap for c, cap in zip(counts, self.capacities)):
            return  # too many rows: every rank sees the counts after the barrier and the window grows
        for i, (x, y, xr, yr, c) in enumerate(zip(xs, ys, self.x_regions, self.y_regions, counts)):
            if not (placed is not None and is_placed(placed[i], x, xr[rank, :c])):
                stream_copy(xr[rank, :c].reshape(-1), x.reshape(-1))
            if placed is not None and scale is None and is_placed(placed[n + i], y, yr[rank, :c]):
                continue
            if scale is None:
                stream_copy(yr[rank, :c].reshape(-1), y.reshape(-1))
            else:
                np.multiply(y, scale, out=yr[rank, :c])

    def destinations(self, with_y: bool) -> list[Destination | None]:
        """Where this rank's producers may write its next X and Y (the rows of its last ones: a
        batch of another size is copied as before); Y's only when `with_y` (written unscaled)."""
        found = self._destinations.get(with_y)
        if found is None or found[0] != self.own_counts:
            rank = self.world.rank
            xs = [_destination(xr[rank, :c]) for xr, c in zip(self.x_regions, self.own_counts)]
            ys = [_destination(yr[rank, :c]) if with_y else None for yr, c in zip(self.y_regions, self.own_counts)]
            found = self._destinations[with_y] = (self.own_counts, xs + ys)
        return found[1]

    def concatenated(self, counts: np.ndarray, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Every rank's X and Y of pair i, one after the other (views when every rank filled its place)."""
        xr, yr, cap = self.x_regions[i], self.y_regions[i], self.capacities[i]
        rows = [int(c) for c in counts[:, i]]
        if all(c == cap for c in rows):
            p = len(rows)
            return xr.reshape(p * cap, -1), yr.reshape(p * cap, -1)
        return (np.concatenate([xr[q, :c] for q, c in enumerate(rows)]),
                np.concatenate([yr[q, :c] for q, c in enumerate(rows)]))


_SHARED: dict[tuple, NodeCopy] = {}


def shared_buffer(world: Any, key: str, size: int, dtype: Any) -> NodeCopy:
    """A flat window of the node under `key`, made on first use (collectively, in the same order
    on every rank) and kept for the life of the process, as the node copies are."""
    full = (id(world), key, size, np.dtype(dtype).str)
    found = _SHARED.get(full)
    if found is None:
        found = _SHARED[full] = NodeCopy(world, size, dtype, shared=True)
    return found


def barrier(copy: NodeCopy, what: str) -> None:
    """Every rank's writes into the node's shared memory are in, and visible here."""
    copy.win.Sync()
    copy.world.wait(copy.node.Ibarrier(), what)
    copy.win.Sync()


def _destination(view: np.ndarray) -> Destination:
    return Destination(view, None, view.__array_interface__["data"][0])


def offered(world: Any, key: str, with_y: bool) -> list[Destination | None] | None:
    """Placement (executor/placement.py): where the producers of the op `key`'s next X (and Y,
    `with_y`) may write them, in this rank's rows of the shared activations; None before the op's
    first run (no window yet) or when ACTIVATIONS_IN_PLACE is off. Asks no other rank."""
    found = _EXCHANGES.get((id(world), key))
    if found is None or not ACTIVATIONS_IN_PLACE or not found.own_counts:
        return None
    return found.destinations(with_y)


def exchange(world: Any, key: str, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], scale: Any,
             what: str, placed: Sequence[Destination | None] | None = None) -> tuple[SharedActivations, np.ndarray]:
    """Publish this rank's X and Y (Y times `scale`; those `placed` lie in its rows already), wait
    for every rank's: the shared activations and every rank's row counts (p x pairs)."""
    found = _EXCHANGES.get((id(world), key))
    widths = [(x.shape[1], y.shape[1]) for x, y in zip(xs, ys)]
    if found is None or found.widths != widths:
        counts = np.array([x.shape[0] for x in xs], np.int64)
        capacities = world.all_reduce(counts, "max", what=what)  # collective: the op's first step on every rank
        found = _EXCHANGES[(id(world), key)] = SharedActivations(world, key, widths, capacities, xs[0].dtype)
    found.write(xs, ys, scale, placed)
    barrier(found.copy, what)
    counts = found.counts.astype(np.int64)
    if (counts > np.array(found.capacities)[None, :]).any():  # every rank sees it: all grow together
        capacities = np.maximum(counts.max(axis=0), found.capacities)
        found = _EXCHANGES[(id(world), key)] = SharedActivations(world, key, widths, capacities, xs[0].dtype)
        found.write(xs, ys, scale)
        barrier(found.copy, what)
        counts = found.counts.astype(np.int64)
    return found, counts


_EXCHANGES: dict[tuple[int, str], SharedActivations] = {}


def compute_own_rows(shared: SharedActivations, counts: np.ndarray, biases: Sequence[int], layout: Layout,
                     rank: int, nranks: int, weight_out: Callable[[int, int, int], np.ndarray],
                     bias_out: Callable[[int, int, int], np.ndarray]) -> None:
    """Rank `rank`'s rows of every weight gradient and entries of every bias gradient, over the
    whole concatenated batch, into `weight_out(i, lo, hi)` / `bias_out(j, lo, hi)`."""
    cats = [shared.concatenated(counts, i) for i in range(len(shared.widths))]
    for i, (x, y) in enumerate(cats):
        lo, hi = own_rows(x.shape[1], rank, nranks)
        np.matmul(x[:, lo:hi].T, y, out=weight_out(i, lo, hi))
    for j, k in enumerate(biases):
        y = cats[k][1]
        lo, hi = own_rows(y.shape[1], rank, nranks)
        np.sum(y[:, lo:hi], axis=0, out=bias_out(j, lo, hi))


def split_average(world: Any, key: str, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], biases: Sequence[int],
                  scale: Any, what: str, placed: Sequence[Destination | None] | None = None) -> list[np.ndarray]:
    """The weight and bias gradients summed over ranks (times `scale`), on every rank: read-only
    views of one shared buffer that the op's next run overwrites (on one node), else arrays of
    the run's own. `placed`: the X its producers wrote into this rank's rows already (`offered`;
    Y are copied, times `scale`)."""
    layout = Layout.of(gradient_shapes(xs, ys, biases), world.size)
    if world.size == 1 or not world.shares_memory():
        flat = local_gradients(xs, ys, biases, layout, scale)
        if world.size > 1:
            world.wait(world.comm.Iallreduce(world.mpi.IN_PLACE, flat, op=world.mpi.SUM), what)
        return _views(flat, layout)
    shared, counts = exchange(world, key, xs, ys, scale, what, placed)
    result = shared_buffer(world, f"{key}#grads", layout.padded, xs[0].dtype)
    views = _views(result.flat, layout)
    n = len(xs)
    compute_own_rows(shared, counts, biases, layout, world.rank, world.size,
                     lambda i, lo, hi: views[i][lo:hi], lambda j, lo, hi: views[n + j][lo:hi])
    barrier(result, what)
    return result.views(layout)


def split_update(world: Any, key: str, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], biases: Sequence[int],
                 scale: Any, states: Sequence[tuple[str, Sequence[np.ndarray]]], update: Callable[..., None],
                 what: str, placed: Sequence[Destination | None] | None = None) -> list[list[np.ndarray]]:
    """Each rank's rows of the averaged gradients, and at once the update of those rows of each
    state (the parameters first, then e.g. the velocities; `states`: node-copy keys and the
    scope's arrays) in the node's copies, published by one barrier. `update(grad, scale, *parts,
    stream=False)` updates flat parts in place from the gradient times `scale` (with `stream`, the
    parameters through streaming stores, `grad` overwritten; the average's 1/p, applied inside
    the update's pass: X and Y are published unscaled, so that their producers may write them in
    place, `placed`; for a power-of-two world size the same bits as scaling Y). Returns each
    state's tensors (views of its copy). Across nodes or in a world of one: every rank sums the
    whole gradients and updates every row."""
    shapes = gradient_shapes(xs, ys, biases)
    layout = Layout.of(shapes, world.size)
    dtype = xs[0].dtype
    if world.size == 1:  # no copies: the whole gradient updates new arrays
        grads = local_gradients(xs, ys, biases, layout, None)
        flats = [_gathered(arrays, layout, dtype) for _, arrays in states]
        update(grads, scale, *flats)
        return [_views(f, layout) for f in flats]
    copies = [world.node_copy(copy_key, layout.padded, dtype) for copy_key, _ in states]
    if not copies[0].shared:  # one copy per process (across nodes): every rank updates every row of its own
        grads = local_gradients(xs, ys, biases, layout, None)
        world.wait(world.comm.Iallreduce(world.mpi.IN_PLACE, grads, op=world.mpi.SUM), what)
        for copy, (_, arrays) in zip(copies, states):
            if not copy.holds(arrays, layout):
                np.copyto(copy.flat, _gathered(arrays, layout, dtype))
        update(grads[:layout.size], scale, *[c.flat[:layout.size] for c in copies])
        return [c.views(layout) for c in copies]
    rank, n = world.rank, len(xs)
    for copy, (_, arrays) in zip(copies, states):
        if not copy.holds(arrays, layout):  # the scope got other arrays (a load): this rank's rows go back in
            _write_own_rows(copy.flat, arrays, layout, rank, world.size, n)
    shared, counts = exchange(world, key, xs, ys, None, what, placed)
    scratch = _scratch(key, layout, rank, world.size, n, dtype)

    def run(t: int, lo: int, hi: int) -> np.ndarray:
        return scratch[t]
    compute_own_rows(shared, counts, biases, layout, rank, world.size, run, lambda j, lo, hi: scratch[n + j])
    for t, grad in enumerate(scratch):
        first, last = _flat_rows(layout, t, rank, world.size)
        update(grad.reshape(-1), scale, *[c.flat[first:last] for c in copies], stream=STREAM_PARAMS)
    barrier(copies[0], what)
    return [c.views(layout) for c in copies]


def _flat_rows(layout: Layout, t: int, rank: int, nranks: int) -> tuple[int, int]:
    """Where rank's rows of tensor t lie in the flat buffer."""
    shape = layout.shapes[t]
    lo, hi = own_rows(shape[0], rank, nranks)
    width = prod(shape[1:])
    return layout.offsets[t] + lo * width, layout.offsets[t] + hi * width


def _write_own_rows(flat: np.ndarray, arrays: Sequence[np.ndarray], layout: Layout, rank: int, nranks: int,
                    n: int) -> None:
    for t, array in enumerate(arrays):
        first, last = _flat_rows(layout, t, rank, nranks)
        lo, hi = own_rows(layout.shapes[t][0], rank, nranks)
        np.copyto(flat[first:last], np.asarray(array)[lo:hi].reshape(-1))


def _gathered(arrays: Sequence[np.ndarray], layout: Layout, dtype: Any) -> np.ndarray:
    flat = np.zeros(layout.padded, dtype)
    for o, s, array in zip(layout.offsets, layout.sizes, arrays):
        flat[o:o + s] = np.asarray(array).reshape(-1)
    return flat


_SCRATCH: dict[tuple, list[np.ndarray]] = {}


def _scratch(key: str, layout: Layout, rank: int, nranks: int, n: int, dtype: Any) -> list[np.ndarray]:
    """This rank's rows of each gradient, arrays kept from step to step."""
    full = (key, layout.key, rank, nranks, np.dtype(dtype).str)
    found = _SCRATCH.get(full)
    if found is None:
        found = _SCRATCH[full] = []
        for shape in layout.shapes:
            lo, hi = own_rows(shape[0], rank, nranks)
            found.append(np.empty((hi - lo,) + tuple(shape[1:]), dtype))
    return found
