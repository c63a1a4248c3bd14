"""Collective ops: communication as ordinary ops, so a Program carries it and the Executor runs it.

Each kernel talks to the process group of `comm.get_world()` (a world of one without a
launcher: every collective is then the identity). The gradients treat the training loss as
the sum of the per-rank losses, so each collective's gradient is its adjoint collective:

    c_allreduce_sum  <->  c_allreduce_sum        c_allgather      <->  c_reducescatter
    c_allreduce_avg  <->  c_allreduce_avg        c_broadcast(root) <->  c_reduce_sum(root)
    c_alltoall       <->  c_alltoall

`ring_id` names the process group (0: every rank; ops/comm_groups.py); `root` is a group rank.

Sharded buckets (ZeRO stage 1, `DistributedOptimizer(..., sharding=True)`, see comm_shards.py):
`c_bucket_reducescatter` gives each rank its part of a bucket's averaged gradient,
`c_bucket_shard` its part of the parameters or optimizer state, the ordinary update ops run on
those parts, `c_bucket_allgather` writes them into the node's one copy and publishes it, and
`c_bucket_broadcast` (startup) fills that copy with rank 0's values. `c_bucket_sgd`,
`c_bucket_momentum` and `c_bucket_adam` do a bucket's reduce-scatter, update and all-gather in one op, the sum and
the update in one pass written straight into the node's copy (no clipping: it needs the whole
gradient first); with `shard=False` the same ops sum the whole bucket and update every parameter
on every rank, in its own arrays: the default data-parallel update of those optimizers.

`c_bucket_allreduce` reduces a bucket of tensors with one collective: it packs them into a
flat buffer kept from run to run (`World.bucket`: shared memory when every rank is on one
node, see comm_buckets.py), reduces it and returns the summed tensors: arrays of the run's own
when the sum makes them anyway (two ranks on one node), else read-only views of the result (so
a fetch copies them). `coalesce` / `uncoalesce` pack
several tensors into one flat buffer and back (each the other's gradient), for programs that
want the packing as ops of their own.
"""
from __future__ import annotations

import sys
from math import prod

import numpy as np

from . import comm_shards, comm_stream, fused_shards, placement
from .comm import get_world
from .comm_groups import ring
from .comm_shards import Layout
from .grad_builder import GradBuilder
from .registry import NO_GRADIENT, register_op
from .shape_rules import same_as


def _numeric_same_as(ctx) -> None:
    dtype = ctx.dtype("X")
    if dtype == "bool":
        raise ctx.dtype_error(f"collectives reduce numbers, got {ctx.describe('X')}")
    same_as()(ctx)


def _floating_same_as(ctx) -> None:
    """An average of integers is not an integer: c_allreduce_avg takes floating-point values."""
    if ctx.dtype("X") not in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
        raise ctx.dtype_error(f"an average needs floating-point values, got {ctx.describe('X')}")
    same_as()(ctx)


def _world_of(op: str, nranks: int, ring_id: int = 0):
    world = ring(ring_id, f"op {op}")
    if nranks != world.size:
        where = "this job has" if ring_id == 0 else f"group {ring_id} has"
        raise ValueError(f"op {op}: built for nranks={nranks}, but {where} {world.size} rank(s)")
    return world


# ------------------------------------------------------------------ all-reduce
def _allreduce_kernel(op: str):
    def kernel(x, ring_id=0):
        return ring(ring_id, f"op c_allreduce_{op}").all_reduce(np.asarray(x), op, what=f"op c_allreduce_{op}")
    return kernel


def _self_adjoint_grad(op_type: str):
    def grad(g: GradBuilder) -> None:
        g.set_input_grad("X", g.op(op_type, {"X": g.output_grad("Out")}, ring_id=g.attr("ring_id")))
    return grad


for _op in ("sum", "avg", "max", "min", "prod"):
    _type = f"c_allreduce_{_op}"
    register_op(_type, inputs="X", outputs="Out", attrs={"ring_id": 0}, kernel=_allreduce_kernel(_op),
                infer=_floating_same_as if _op == "avg" else _numeric_same_as,
                grad=_self_adjoint_grad(_type) if _op in ("sum", "avg") else NO_GRADIENT,
                doc=f"Out = the {_op} of X over every rank (the same on each).")


# ------------------------------------------------------------------ broadcast and reduce
def _broadcast_kernel(x, root=0, ring_id=0):
    return ring(ring_id, "op c_broadcast").broadcast(np.asarray(x), root, what="op c_broadcast")


def _reduce_sum_kernel(x, root=0, ring_id=0):
    world = ring(ring_id, "op c_reduce_sum")
    total = world.all_reduce(np.asarray(x), "sum", what="op c_reduce_sum")
    return total if world.rank == root else np.zeros_like(total)


def _broadcast_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("c_reduce_sum", {"X": g.output_grad("Out")}, root=g.attr("root"),
                               ring_id=g.attr("ring_id")))


def _reduce_sum_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("c_broadcast", {"X": g.output_grad("Out")}, root=g.attr("root"),
                               ring_id=g.attr("ring_id")))


register_op("c_broadcast", inputs="X", outputs="Out", attrs={"root": 0, "ring_id": 0}, kernel=_broadcast_kernel,
            infer=_numeric_same_as, grad=_broadcast_grad, doc="Out = X of rank `root`, on every rank.")
register_op("c_reduce_sum", inputs="X", outputs="Out", attrs={"root": 0, "ring_id": 0},
            kernel=_reduce_sum_kernel, infer=_numeric_same_as, grad=_reduce_sum_grad,
            doc="Out = the sum of X over ranks on rank `root`, zeros elsewhere.")


# ------------------------------------------------------------------ gather and scatter
def _allgather_kernel(x, nranks=1, ring_id=0):
    x = np.asarray(x)
    gathered = _world_of("c_allgather", nranks, ring_id).all_gather(x, what="op c_allgather")
    return gathered.reshape((nranks * x.shape[0],) + x.shape[1:]) if x.ndim else gathered


def _reducescatter_kernel(x, nranks=1, ring_id=0):
    return _world_of("c_reducescatter", nranks, ring_id).reduce_scatter(np.asarray(x), "sum", what="op c_reducescatter")


def _allgather_infer(ctx) -> None:
    _numeric_same_as(ctx)
    shape, nranks = ctx.shape("X"), ctx.attr("nranks")
    out = (nranks,) if not shape else ((shape[0] * nranks if shape[0] >= 0 else -1),) + tuple(shape[1:])
    ctx.set_output("Out", out, ctx.dtype("X"))


def _reducescatter_infer(ctx) -> None:
    _numeric_same_as(ctx)
    shape, nranks = ctx.shape("X"), ctx.attr("nranks")
    if not shape or (shape[0] >= 0 and shape[0] % nranks):
        raise ctx.shape_error(f"the first axis of {ctx.describe('X')} must divide into nranks={nranks} parts")
    ctx.set_output("Out", ((shape[0] // nranks if shape[0] >= 0 else -1),) + tuple(shape[1:]), ctx.dtype("X"))


def _allgather_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("c_reducescatter", {"X": g.output_grad("Out")}, nranks=g.attr("nranks"),
                               ring_id=g.attr("ring_id")))


def _reducescatter_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("c_allgather", {"X": g.output_grad("Out")}, nranks=g.attr("nranks"),
                               ring_id=g.attr("ring_id")))


register_op("c_allgather", inputs="X", outputs="Out", attrs={"nranks": 1, "ring_id": 0}, kernel=_allgather_kernel,
            infer=_allgather_infer, grad=_allgather_grad,
            doc="Out = every rank's X concatenated along axis 0, in rank order.")
register_op("c_reducescatter", inputs="X", outputs="Out", attrs={"nranks": 1, "ring_id": 0},
            kernel=_reducescatter_kernel, infer=_reducescatter_infer, grad=_reducescatter_grad,
            doc="X summed over ranks, split into nranks parts along axis 0; rank r keeps part r.")


# ------------------------------------------------------------------ all-to-all
def _alltoall_kernel(x, ring_id=0):
    return ring(ring_id, "op c_alltoall").all_to_all(np.asarray(x), what="op c_alltoall")


def _alltoall_infer(ctx) -> None:
    _numeric_same_as(ctx)
    if not ctx.shape("X"):
        raise ctx.shape_error(f"all-to-all splits the first axis of X among the ranks; {ctx.describe('X')} has none")


register_op("c_alltoall", inputs="X", outputs="Out", attrs={"ring_id": 0}, kernel=_alltoall_kernel,
            infer=_alltoall_infer, grad=_self_adjoint_grad("c_alltoall"),
            doc="X split along axis 0 into one part per rank, part r sent to rank r; Out = the parts received, "
                "in rank order. Its own adjoint.")


# ------------------------------------------------------------------ buckets
def _references(arrays: list, i: int) -> int:
    return sys.getrefcount(arrays[i])


def _plan_local_references() -> int:
    """What `_references` reports for an array that only one local of its caller holds and
    passes in a list, as the executor's plan passes a bucket's gradients: measured, not
    assumed (interpreters count references on the stack differently)."""
    value = np.empty(2)
    return _references([value], 0)


_PLAN_ONLY = _plan_local_references()


def _bucket_allreduce_offer(shapes, dtypes, reduce="avg", bucket="", **_):
    """Placement: this rank's piece of the bucket's next row for each input (ops/placement.py),
    unscaled (the average's 1/p is applied as the rows are summed); once the bucket exists, and
    only on several ranks."""
    world = get_world()
    if world.size == 1 or reduce not in ("sum", "avg"):
        return None
    dtype, shapes = np.dtype(dtypes[0]), [tuple(int(d) for d in s) for s in shapes]
    key, size = (bucket, tuple(shapes)), sum(prod(s) for s in shapes)
    pieces = placement.KeptPieces(shapes, None)

    def offer():
        found = world.kept_bucket(key, size, dtype)
        return None if found is None else pieces.of(found)
    return (key, size, dtype.str), offer


def _streams(bucket) -> bool:
    """The fused replicated update (shard=False) writes a two-rank shared bucket's rows with streaming
    stores (ops/comm_stream.py) on the steps its probe finds the peer's cache holding them
    (SharedBucket.streams_rows), which the producers' own stores are not: then they are not
    offered. (c_bucket_allreduce keeps ordinary stores and placement: it reads the rank's own row
    back; the sharded buckets stream only when asked, comm_shards.streams_peer_part; streaming
    measured no better there, docs/distributed.md.)"""
    return bucket.shared and bucket.pair and comm_stream.enabled() and bucket.streams_rows()


def _bucket_allreduce_kernel(xs, reduce="avg", bucket="", ring_id=0, overwrite=False, placed=None):
    world = get_world()
    # which inputs nobody else can see (the plan's fresh gradients): the sum may go into them
    counts = [_references(xs, i) for i in range(len(xs))]
    arrays = [np.asarray(x) for x in xs]
    if world.size == 1:
        return arrays
    dtype = arrays[0].dtype
    flat = world.bucket((bucket, tuple(a.shape for a in arrays)), sum(a.size for a in arrays), dtype)
    scale = dtype.type(1 / world.size) if reduce == "avg" else None
    start, pieces = 0, []
    for k, array in enumerate(arrays):  # pack; the average's 1/p is applied as the rows are summed
        part = flat.input[start:start + array.size]
        if not (placed is not None and placement.is_placed(placed[k], array, part)):  # else its producer wrote it here
            np.copyto(part, array.reshape(-1))
        pieces.append((start, array.shape))
        start += array.size
    into = [a if overwrite and count <= _PLAN_ONLY and type(a) is np.ndarray and a.base is None and a.flags.writeable
            and a.flags.c_contiguous else None for a, count in zip(arrays, counts)]
    # arrays of this run (two ranks on one node: with `overwrite`, the inputs nobody else sees,
    # written over, else new ones), or read-only views of the bucket, which the next run reuses: nobody may keep
    # writing into it
    return flat.start(f"op c_bucket_allreduce ({bucket})", scale).wait_arrays(pieces, into=into)


def _bucket_allreduce_infer(ctx) -> None:
    dtypes, shapes = ctx.dtypes("X"), ctx.shapes("X")
    if len(set(dtypes)) != 1 or not dtypes[0].startswith("float"):
        raise ctx.dtype_error(f"a bucket holds floating tensors of one dtype, got {dict(zip(ctx.input_names('X'), dtypes))}")
    if not ctx.attr("bucket"):  # the key names the kept buffer: two ops sharing one would overwrite each other's views
        raise ctx.shape_error("bucket must name the op's buffer, a key no other c_bucket_allreduce uses "
                              "(e.g. fluidgrad.framework.unique_name('grad_bucket')); got an empty key")
    if ctx.attr("reduce") not in ("sum", "avg"):
        raise ctx.shape_error(f"reduce must be 'sum' or 'avg', got {ctx.attr('reduce')!r}")
    if ctx.attr("overwrite") and list(ctx.output_names("Out")) != list(ctx.input_names("X")):
        raise ctx.shape_error("overwrite=True writes the sums into the inputs: the outputs must be the "
                              f"inputs themselves, got X {ctx.input_names('X')} and Out {list(ctx.output_names('Out'))}")
    if ctx.num_outputs("Out") != len(shapes):
        raise ctx.shape_error(f"{ctx.num_outputs('Out')} outputs for {len(shapes)} inputs")
    for i, shape in enumerate(shapes):
        ctx.set_output("Out", shape, dtypes[0], index=i)


def _bucket_allreduce_grad(g: GradBuilder) -> None:
    grads = g.op("c_bucket_allreduce", {"X": g.output_grad("Out")}, n_out=len(g.input("X")),
                 reduce=g.attr("reduce"), bucket=g.attr("bucket") + "@GRAD")
    g.set_input_grad("X", grads)


register_op("c_bucket_allreduce", inputs="X*", outputs="Out*",
            attrs={"reduce": "avg", "bucket": "", "ring_id": 0, "overwrite": False},
            kernel=_bucket_allreduce_kernel, infer=_bucket_allreduce_infer, grad=_bucket_allreduce_grad,
            offer=_bucket_allreduce_offer,
            doc="Out[i] = the sum or average of X[i] over every rank, one collective for the whole bucket "
                "(overwrite: Out is X, and the sums may go into X's arrays when the run alone holds them).")

def _coalesce_kernel(xs):
    return np.concatenate([np.asarray(x).reshape(-1) for x in xs])


def _uncoalesce_kernel(x, shapes=()):
    sizes = [prod(s) for s in shapes]
    if sum(sizes) != x.size:
        raise ValueError(f"op uncoalesce: X has {x.size} elements, the shapes {list(shapes)} need {sum(sizes)}")
    bounds = np.cumsum([0] + sizes)
    return [x[bounds[i]:bounds[i + 1]].reshape(s).copy() for i, s in enumerate(shapes)]


def _coalesce_infer(ctx) -> None:
    dtypes, shapes = ctx.dtypes("X"), ctx.shapes("X")
    if len(set(dtypes)) != 1:
        raise ctx.dtype_error(f"a bucket holds one dtype, got {dict(zip(ctx.input_names('X'), dtypes))}")
    if any(d < 0 for s in shapes for d in s):
        raise ctx.shape_error(f"coalesced tensors need known shapes, got {dict(zip(ctx.input_names('X'), shapes))}")
    ctx.set_output("Out", (sum(prod(s) for s in shapes),), dtypes[0])


def _uncoalesce_infer(ctx) -> None:
    shapes = [tuple(s) for s in ctx.attr("shapes")]
    if len(ctx.shape("X")) != 1 or ctx.shape("X")[0] not in (-1, sum(prod(s) for s in shapes)):
        raise ctx.shape_error(f"{ctx.describe('X')} must be 1-D with {sum(prod(s) for s in shapes)} elements "
                              f"for the shapes {[list(s) for s in shapes]}")
    if ctx.num_outputs("Out") != len(shapes):
        raise ctx.shape_error(f"{ctx.num_outputs('Out')} outputs for {len(shapes)} shapes")
    for i, shape in enumerate(shapes):
        ctx.set_output("Out", shape, ctx.dtype("X"), index=i)


def _coalesce_grad(g: GradBuilder) -> None:
    shapes = [list(g.shape(x)) for x in g.input("X")]
    g.set_input_grad("X", g.op("uncoalesce", {"X": g.output_grad("Out")}, n_out=len(shapes), shapes=shapes))


def _uncoalesce_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("coalesce", {"X": g.output_grad("Out")}))


register_op("coalesce", inputs="X*", outputs="Out", kernel=_coalesce_kernel, infer=_coalesce_infer,
            grad=_coalesce_grad, doc="Out = the X flattened and concatenated (one buffer for a bucket).")
register_op("uncoalesce", inputs="X", outputs="Out*", attrs={"shapes": []}, kernel=_uncoalesce_kernel,
            infer=_uncoalesce_infer, grad=_uncoalesce_grad,
            doc="Split a flat buffer back into tensors of the given shapes (coalesce's inverse).")


# ------------------------------------------------------------------ sharded buckets (comm_shards.py)
def _float_bucket(ctx, slot: str = "X") -> tuple[list[tuple[int, ...]], str]:
    """The shapes and the one floating dtype of a bucket's tensors (known shapes)."""
    dtypes, shapes = ctx.dtypes(slot), ctx.shapes(slot)
    if not shapes:
        raise ctx.shape_error(f"a bucket holds at least one tensor, {slot} is empty")
    if len(set(dtypes)) != 1 or not dtypes[0].startswith("float"):
        raise ctx.dtype_error(f"a bucket holds floating tensors of one dtype, got "
                              f"{dict(zip(ctx.input_names(slot), dtypes))}")
    if any(d < 0 for s in shapes for d in s):
        raise ctx.shape_error(f"a sharded bucket needs known shapes, got {dict(zip(ctx.input_names(slot), shapes))}")
    return shapes, dtypes[0]


def _check_nranks(ctx) -> int:
    nranks = ctx.attr("nranks")
    if not isinstance(nranks, int) or nranks < 1:
        raise ctx.shape_error(f"nranks must be a positive number of ranks, got {nranks!r}")
    return nranks


def _check_key(ctx, what: str) -> None:
    if not ctx.attr("bucket"):
        raise ctx.shape_error(f"bucket must name {what}, a key no other op of its kind uses "
                              f"(e.g. fluidgrad.framework.unique_name('grad_bucket')); got an empty key")


def _shard_key(bucket: str, layout: Layout) -> tuple:
    """The key of a sharded bucket's gradient rows (World.bucket)."""
    return ("shard", bucket, layout.key)


def _shard_offer(shapes, dtypes, reduce="avg", bucket="", nranks=1, shard=True, **_):
    """Placement (executor/placement.py): each gradient's place in this rank's next row of the
    sharded bucket, unscaled (the average's 1/p is applied in the sum), so its producer writes it
    there and nothing else touches it; the kernel then packs nothing for it and reads its own
    part there. Once the bucket exists, on several ranks."""
    world = get_world()
    if world.size == 1 or nranks != world.size or reduce not in ("sum", "avg"):
        return None
    dtype = np.dtype(dtypes[0])
    layout = Layout(shapes, nranks)
    key, pieces = _shard_key(bucket, layout), placement.KeptPieces(layout.shapes, None)

    def offer():
        found = world.kept_bucket(key, layout.padded, dtype)
        if found is None or (comm_shards.streams_peer_part(found, layout) if shard else _streams(found)):
            return None  # rows written with streaming stores: the producers' ordinary stores are not wanted there
        return pieces.of(found)
    return (key, layout.padded, dtype.str), offer


def _part_of(shapes, nranks: int) -> int:
    return Layout(shapes, nranks).part


def _bucket_reducescatter_kernel(xs, reduce="avg", bucket="", nranks=1, ring_id=0, placed=None):
    world = _world_of("c_bucket_reducescatter", nranks)
    arrays = [np.asarray(x) for x in xs]
    layout = Layout.of(tuple(a.shape for a in arrays), nranks)
    if world.size == 1:
        return comm_shards.gather_part(arrays, layout, 0, arrays[0].dtype)
    dtype = arrays[0].dtype
    scale = dtype.type(1 / world.size) if reduce == "avg" else None
    return comm_shards.reduce_scatter(world, _shard_key(bucket, layout), arrays, layout, scale,
                                      f"op c_bucket_reducescatter ({bucket})", placed)


def _bucket_reducescatter_infer(ctx) -> None:
    shapes, dtype = _float_bucket(ctx)
    _check_key(ctx, "the op's gradient buffer")
    if ctx.attr("reduce") not in ("sum", "avg"):
        raise ctx.shape_error(f"reduce must be 'sum' or 'avg', got {ctx.attr('reduce')!r}")
    ctx.set_output("Out", (_part_of(shapes, _check_nranks(ctx)),), dtype)


register_op("c_bucket_reducescatter", inputs="X*", outputs="Out",
            attrs={"reduce": "avg", "bucket": "", "nranks": 1, "ring_id": 0},
            offer=_shard_offer, kernel=_bucket_reducescatter_kernel, infer=_bucket_reducescatter_infer, grad=NO_GRADIENT,
            doc="Out = this rank's part (rank r of nranks equal parts, zero-padded) of the X flattened one after "
                "the other, summed or averaged over every rank: a bucket's reduce-scatter (ZeRO stage 1). "
                "No gradient: it reduces gradients, after the backward pass.")


def _bucket_shard_kernel(xs, nranks=1):
    world = _world_of("c_bucket_shard", nranks)
    arrays = [np.asarray(x) for x in xs]
    layout = Layout.of(tuple(a.shape for a in arrays), nranks)
    copy = comm_shards.find_copy(world.node_copies(), arrays, layout) if world.size > 1 else None
    if copy is not None:
        return copy.part(layout)  # the parameters are the node copy's views: its part, no copy
    return comm_shards.gather_part(arrays, layout, world.rank, arrays[0].dtype)


def _bucket_shard_infer(ctx) -> None:
    shapes, dtype = _float_bucket(ctx)
    ctx.set_output("Out", (_part_of(shapes, _check_nranks(ctx)),), dtype)


register_op("c_bucket_shard", inputs="X*", outputs="Out", attrs={"nranks": 1},
            kernel=_bucket_shard_kernel, infer=_bucket_shard_infer, grad=NO_GRADIENT,
            doc="Out = this rank's part (rank r of nranks equal parts, zero-padded) of the X flattened one after "
                "the other: the parameters or optimizer state a rank updates (a read-only view when X are the node "
                "copy's views). No communication, no gradient (optimizer state).")


def _bucket_allgather_kernel(x, bucket="", shapes=(), nranks=1, sync=True, ring_id=0):
    world = _world_of("c_bucket_allgather", nranks)
    layout = Layout.of(tuple(tuple(s) for s in shapes), nranks)
    part = np.asarray(x)
    if part.shape != (layout.part,):
        raise ValueError(f"op c_bucket_allgather: X has shape {list(part.shape)}, the shapes {list(map(list, shapes))} "
                         f"on {nranks} ranks need [{layout.part}]")
    if world.size == 1:
        return [part[start:start + size].reshape(shape).copy()
                for start, size, shape in zip(layout.offsets, layout.sizes, layout.shapes)]
    copy = world.node_copy(bucket, layout.padded, part.dtype)
    return copy.gather(part, layout, f"op c_bucket_allgather ({bucket})", sync=sync)


def _bucket_allgather_infer(ctx) -> None:
    _check_key(ctx, "the node copy it completes")
    nranks = _check_nranks(ctx)
    shapes = [tuple(s) for s in ctx.attr("shapes")]
    if not shapes or any(d < 0 for s in shapes for d in s):
        raise ctx.shape_error(f"shapes must list the known shapes of the bucket's tensors, got {[list(s) for s in shapes]}")
    dtype = ctx.dtype("X")
    if not dtype.startswith("float"):
        raise ctx.dtype_error(f"a bucket holds floating tensors, got {ctx.describe('X')}")
    part = _part_of(shapes, nranks)
    if tuple(ctx.shape("X")) not in ((part,), (-1,)):
        raise ctx.shape_error(f"{ctx.describe('X')} must be 1-D with {part} elements: one rank's part of the shapes "
                              f"{[list(s) for s in shapes]} on {nranks} ranks")
    if ctx.num_outputs("Out") != len(shapes):
        raise ctx.shape_error(f"{ctx.num_outputs('Out')} outputs for {len(shapes)} shapes")
    for i, shape in enumerate(shapes):
        ctx.set_output("Out", shape, dtype, index=i)


register_op("c_bucket_allgather", inputs="X", outputs="Out*",
            attrs={"bucket": "", "shapes": [], "nranks": 1, "sync": True, "ring_id": 0},
            kernel=_bucket_allgather_kernel, infer=_bucket_allgather_infer, grad=NO_GRADIENT,
            doc="Every rank's part X (as c_bucket_shard cuts it) put together and split into tensors of `shapes`: "
                "one copy per node kept under `bucket` (Out are read-only views of it) that each rank writes its "
                "part into. sync=False leaves the publishing barrier to a later c_bucket_allgather with sync=True "
                "(optimizer state before its parameters). No gradient (optimizer state).")


def _bucket_broadcast_kernel(xs, bucket="", root=0, ring_id=0):
    world = get_world()
    arrays = [np.ascontiguousarray(x) for x in xs]
    if world.size == 1:
        return [a.copy() for a in arrays]
    world._check_rank(root, "op c_bucket_broadcast")
    layout = Layout([a.shape for a in arrays], world.size)
    what = f"op c_bucket_broadcast ({bucket})"
    world.check_same_layout(np.empty(layout.padded, arrays[0].dtype), what, root)
    copy = world.node_copy(bucket, layout.padded, arrays[0].dtype)
    return copy.fill_from(arrays, layout, root, what)


def _bucket_broadcast_infer(ctx) -> None:
    shapes, dtype = _float_bucket(ctx)
    _check_key(ctx, "the node copy it fills")
    if ctx.num_outputs("Out") != len(shapes):
        raise ctx.shape_error(f"{ctx.num_outputs('Out')} outputs for {len(shapes)} inputs")
    for i, shape in enumerate(shapes):
        ctx.set_output("Out", shape, dtype, index=i)


register_op("c_bucket_broadcast", inputs="X*", outputs="Out*", attrs={"bucket": "", "root": 0, "ring_id": 0},
            kernel=_bucket_broadcast_kernel, infer=_bucket_broadcast_infer, grad=NO_GRADIENT,
            doc="Out = rank `root`'s X on every rank, held once per node under `bucket` (read-only views of the "
                "copy c_bucket_allgather later completes): how a sharded program's startup shares its parameters "
                "and optimizer state. No gradient (startup state).")


# ------------------------------------------------------------------ fused sharded updates (fused_shards.py)
def _learning_rate(lr) -> float:
    return float(np.asarray(lr).reshape(-1)[0])


def _fused_update(op_type, xs, reduce, bucket, copy, nranks, states, update, placed, shard=True):
    """The common part of the fused updates: the gradients X summed over ranks and handed to
    `update` with the arrays of each state (suffix, arrays), updated in place. `shard`: this
    rank's part only, in the node copies `copy` + suffix (returns the copies' views, one list
    per state); else the whole bucket, on every rank, in the state arrays themselves when the
    plan and the scope alone hold them (else in copies of them), which are returned."""
    counts = [[_references(arrays, i) for i in range(len(arrays))] for _, arrays in states]  # before any new reference
    world = _world_of(op_type, nranks)
    grads = [np.asarray(x) for x in xs]
    layout = Layout.of(tuple(g.shape for g in grads), nranks)
    scale = grads[0].dtype.type(1 / world.size) if reduce == "avg" else None
    key, what = _shard_key(bucket, layout), f"op {op_type} ({bucket})"
    if not shard:
        targets = [[_updatable(a, n) for a, n in zip(arrays, ns)] for (_, arrays), ns in zip(states, counts)]
        return comm_shards.update_replicated(world, key, grads, layout, scale, targets, update, what, placed)
    copies = [(copy + suffix, [np.asarray(a) for a in arrays]) for suffix, arrays in states]
    return comm_shards.update_in_place(world, key, grads, layout, scale, copies, update, what, placed)


def _updatable(array, references: int) -> np.ndarray:
    """`array` itself when only the plan and the scope hold it (a persistable the plan loaded):
    updated in place, nobody else sees it change; else a copy of it."""
    if (type(array) is np.ndarray and references <= _PLAN_ONLY + 1 and array.base is None
            and array.flags.writeable and array.flags.c_contiguous):
        return array
    return np.array(array, order="C")


def _bucket_sgd_kernel(xs, params, learning_rate, reduce="avg", bucket="", copy="", nranks=1, decay=0.0,
                       shard=True, ring_id=0, placed=None):
    lr = _learning_rate(learning_rate)

    def update(own, own_scale, rows, skip, start, param):
        fused_shards.sgd(own, own_scale, rows, skip, start, param, lr, decay)
    (out,) = _fused_update("c_bucket_sgd", xs, reduce, bucket, copy, nranks, [("", params)], update, placed, shard)
    return out


def _bucket_momentum_kernel(xs, params, velocities, learning_rate, reduce="avg", bucket="", copy="", nranks=1,
                            decay=0.0, mu=0.9, use_nesterov=False, shard=True, ring_id=0, placed=None):
    lr = _learning_rate(learning_rate)

    def update(own, own_scale, rows, skip, start, param, velocity):
        fused_shards.momentum(own, own_scale, rows, skip, start, param, velocity, lr, mu, decay, use_nesterov)
    out, velocity_out = _fused_update("c_bucket_momentum", xs, reduce, bucket, copy, nranks,
                                      [("", params), (".velocity", velocities)], update, placed, shard)
    return out, velocity_out


def _fused_update_infer(states: tuple[str, ...]):
    def infer(ctx) -> None:
        shapes, dtype = _float_bucket(ctx)
        _check_nranks(ctx)
        _check_key(ctx, "the op's gradient buffer")
        if not ctx.attr("copy"):
            raise ctx.shape_error("copy must name the node copy of the bucket's parameters (a key no other op uses)")
        if ctx.attr("reduce") not in ("sum", "avg"):
            raise ctx.shape_error(f"reduce must be 'sum' or 'avg', got {ctx.attr('reduce')!r}")
        if tuple(ctx.shape("LearningRate")) not in ((1,), ()):
            raise ctx.shape_error(f"{ctx.describe('LearningRate')} must hold exactly one element")
        for slot in states:
            if list(ctx.shapes(slot)) != list(shapes) or set(ctx.dtypes(slot)) != {dtype}:
                raise ctx.shape_error(f"{slot} must match the gradients X one to one: X are "
                                      f"{[list(s) for s in shapes]} ({dtype}), {slot} are "
                                      f"{[list(s) for s in ctx.shapes(slot)]} ({sorted(set(ctx.dtypes(slot)))})")
            for i, shape in enumerate(shapes):
                ctx.set_output(slot + "Out", shape, dtype, index=i)
    return infer


register_op("c_bucket_sgd", inputs="X* Param* LearningRate", outputs="ParamOut*",
            attrs={"reduce": "avg", "bucket": "", "copy": "", "nranks": 1, "decay": 0.0, "shard": True, "ring_id": 0},
            offer=_shard_offer, offer_keeps_state=True, kernel=_bucket_sgd_kernel, infer=_fused_update_infer(("Param",)), grad=NO_GRADIENT,
            doc="Sharded SGD of a bucket (ZeRO stage 1) in one op: X (the gradients) summed or averaged over "
                "ranks, this rank's part only, then Param -= LearningRate * (X + decay * Param) on that part, "
                "in one pass, written into the node's one copy of the parameters (`copy`), published to every "
                "rank; ParamOut (= Param) are read-only views of it. shard=False: every rank sums the whole "
                "bucket and updates every parameter, in its own arrays (the default data-parallel update "
                "of SGD, Momentum and Adam without clipping). No gradient (an update).")
register_op("c_bucket_momentum", inputs="X* Param* Velocity* LearningRate", outputs="ParamOut* VelocityOut*",
            attrs={"reduce": "avg", "bucket": "", "copy": "", "nranks": 1, "decay": 0.0, "mu": 0.9,
                   "use_nesterov": False, "shard": True, "ring_id": 0},
            offer=_shard_offer, offer_keeps_state=True, kernel=_bucket_momentum_kernel, infer=_fused_update_infer(("Param", "Velocity")), grad=NO_GRADIENT,
            doc="Sharded momentum of a bucket (ZeRO stage 1) in one op, as c_bucket_sgd, with the momentum op's "
                "update (v = mu * v + g; Param -= lr * v, or Nesterov) and the velocities kept in the node copy "
                "`copy`.velocity. No gradient (an update).")


def _bucket_adam_kernel(xs, params, moment1, moment2, beta1_pow, beta2_pow, learning_rate, reduce="avg", bucket="",
                        copy="", nranks=1, decay=0.0, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=0.0,
                        shard=True, ring_id=0, placed=None):
    lr = _learning_rate(learning_rate)
    b1_pow, b2_pow = _learning_rate(beta1_pow[0]), _learning_rate(beta2_pow[0])  # equal for every parameter

    def update(own, own_scale, rows, skip, start, param, m1, m2):
        fused_shards.adam(own, own_scale, rows, skip, start, param, m1, m2, lr, beta1, beta2, b1_pow, b2_pow,
                          epsilon, decay, weight_decay)
    out, m1_out, m2_out = _fused_update("c_bucket_adam", xs, reduce, bucket, copy, nranks,
                                        [("", params), (".moment1", moment1), (".moment2", moment2)], update, placed,
                                        shard)
    pows = [[np.asarray(b) * np.asarray(b).dtype.type(beta) for b in bs] for bs, beta in
            ((beta1_pow, beta1), (beta2_pow, beta2))]
    return out, m1_out, m2_out, pows[0], pows[1]


def _bucket_adam_infer(ctx) -> None:
    _fused_update_infer(("Param", "Moment1", "Moment2"))(ctx)
    count = len(ctx.shapes("X"))
    for slot in ("Beta1Pow", "Beta2Pow"):
        shapes = ctx.shapes(slot)
        if len(shapes) != count or any(tuple(s) not in ((1,), ()) for s in shapes):
            raise ctx.shape_error(f"{slot} must hold one 1-element power per gradient X ({count}), got "
                                  f"{[list(s) for s in shapes]}")
        for i, (shape, dtype) in enumerate(zip(shapes, ctx.dtypes(slot))):
            ctx.set_output(slot + "Out", shape, dtype, index=i)


register_op("c_bucket_adam", inputs="X* Param* Moment1* Moment2* Beta1Pow* Beta2Pow* LearningRate",
            outputs="ParamOut* Moment1Out* Moment2Out* Beta1PowOut* Beta2PowOut*",
            attrs={"reduce": "avg", "bucket": "", "copy": "", "nranks": 1, "decay": 0.0, "beta1": 0.9,
                   "beta2": 0.999, "epsilon": 1e-8, "weight_decay": 0.0, "shard": True, "ring_id": 0},
            offer=_shard_offer, offer_keeps_state=True, kernel=_bucket_adam_kernel, infer=_bucket_adam_infer, grad=NO_GRADIENT,
            doc="Sharded Adam of a bucket (ZeRO stage 1) in one op, as c_bucket_sgd, with the adam op's update "
                "(weight_decay: AdamW's decoupled decay) and both moments kept in the node copies `copy`.moment1 "
                "and .moment2; the beta powers (equal for every parameter) advance on every rank. No gradient.")
