"""Fuzzer kinds for the selection, indexing and shape-building ops (joined to `fuzz_programs.KINDS`).

Kept in their own module so that the op families grow without editing one long file; imported
at the end of fuzz_programs.py. Index arrays are constant inputs (`ctx.int_input`).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from fuzz_programs import MAX_RANK, Node, kind

_Mode = ("constant", "reflect", "replicate", "circular")


def _axis(gen, shape):
    return gen.draw(st.integers(0, len(shape) - 1))


def _index_array(gen, high, shape):
    flat = gen.draw(st.lists(st.integers(0, high - 1), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.array(flat, dtype=np.int64).reshape(shape)


def _nested(array):
    """A hashable copy of an array (Node params are hashable): nested tuples."""
    def walk(v):
        return tuple(walk(u) for u in v) if isinstance(v, list) else v
    return walk(np.asarray(array).tolist())


def _arr(n, key, dtype=np.int64):
    return np.array(n.p(key), dtype=dtype)


# ---------------------------------------------------------------- where
@kind("where", ("where",), lambda F, ctx, n, x, y: F.where(ctx.int_input(_arr(n, "mask", bool)), x, y),
      lambda T, n, x, y: T.where(T.tensor(_arr(n, "mask", bool)), x, y))
def _gen_where(gen):
    x = gen.pick()
    shape = gen.pool[x]
    y = gen.pick(lambda s: s == shape, fresh=lambda: shape)
    mask = np.array(gen.draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))),
                    dtype=bool).reshape(shape)
    return Node("where", (x, y), (("mask", _nested(mask)),), (shape,))


# ---------------------------------------------------------------- take / put along an axis
def _along(gen, shape):
    axis = _axis(gen, shape)
    index_shape = list(shape)
    index_shape[axis] = gen.draw(st.integers(1, 4))
    return axis, _index_array(gen, shape[axis], tuple(index_shape))


@kind("take_along_axis", ("take_along_axis",),
      lambda F, ctx, n, x: F.take_along_axis(x, ctx.int_input(_arr(n, "index")), n.p("axis")),
      lambda T, n, x: T.gather(x, n.p("axis"), T.tensor(_arr(n, "index"))))
def _gen_take_along_axis(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    axis, index = _along(gen, gen.pool[x])
    return Node("take_along_axis", (x,), (("index", _nested(index)), ("axis", axis)), (index.shape,))


@kind("put_along_axis", ("put_along_axis",),
      lambda F, ctx, n, x, v: F.put_along_axis(x, ctx.int_input(_arr(n, "index")), v, n.p("axis"), reduce="add"),
      lambda T, n, x, v: x.scatter_add(n.p("axis"), T.tensor(_arr(n, "index")), v))
def _gen_put_along_axis(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    axis, index = _along(gen, gen.pool[x])
    v = gen.pick(lambda s: s == index.shape, fresh=lambda: index.shape)
    return Node("put_along_axis", (x, v), (("index", _nested(index)), ("axis", axis)), (gen.pool[x],))


# sum and mean: smooth in both inputs (prod, amax and amin: op cases in tests/op_cases/scatter_reduce.py
# check them where they are smooth, and at prod's zeros)
@kind("scatter_reduce", ("scatter_reduce",),
      lambda F, ctx, n, x, v: F.scatter_reduce(x, n.p("axis"), ctx.int_input(_arr(n, "index")), v, n.p("reduce"),
                                               include_self=n.p("include_self")),
      lambda T, n, x, v: x.scatter_reduce(n.p("axis"), T.tensor(_arr(n, "index")), v, n.p("reduce"),
                                          include_self=n.p("include_self")))
def _gen_scatter_reduce(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    axis, index = _along(gen, gen.pool[x])
    v = gen.pick(lambda s: s == index.shape, fresh=lambda: index.shape)
    reduce, include_self = gen.draw(st.sampled_from(("sum", "mean"))), gen.draw(st.booleans())
    return Node("scatter_reduce", (x, v), (("index", _nested(index)), ("axis", axis), ("reduce", reduce),
                                            ("include_self", include_self)), (gen.pool[x],))


# ---------------------------------------------------------------- gather_nd / scatter_nd / scatter
def _nd_index(gen, shape):
    k = gen.draw(st.integers(1, len(shape)))
    count = gen.draw(st.integers(1, 4))
    cols = [_index_array(gen, shape[j], (count,)) for j in range(k)]
    return np.stack(cols, axis=-1)


def _cols(T, n):
    index = _arr(n, "index")
    return tuple(T.tensor(index[:, j]) for j in range(index.shape[1]))


@kind("gather_nd", ("gather_nd",), lambda F, ctx, n, x: F.gather_nd(x, ctx.int_input(_arr(n, "index"))),
      lambda T, n, x: x[_cols(T, n)])
def _gen_gather_nd(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    index = _nd_index(gen, shape)
    return Node("gather_nd", (x,), (("index", _nested(index)),), ((index.shape[0],) + shape[index.shape[1]:],))


@kind("scatter_nd_add", ("scatter_nd",),
      lambda F, ctx, n, x, u: F.scatter_nd_add(x, ctx.int_input(_arr(n, "index")), u),
      lambda T, n, x, u: x.index_put(_cols(T, n), u, accumulate=True))
def _gen_scatter_nd(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    index = _nd_index(gen, shape)
    updates = (index.shape[0],) + shape[index.shape[1]:]
    u = gen.pick(lambda s: s == updates, fresh=lambda: updates)
    return Node("scatter_nd_add", (x, u), (("index", _nested(index)),), (shape,))


@kind("scatter", ("scatter",), lambda F, ctx, n, x, u: F.scatter(x, ctx.int_input(_arr(n, "ids")), u),
      lambda T, n, x, u: x.index_copy(0, T.tensor(_arr(n, "ids")), u))
def _gen_scatter(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    ids = gen.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=shape[0], unique=True))
    updates = (len(ids),) + shape[1:]
    u = gen.pick(lambda s: s == updates, fresh=lambda: updates)
    return Node("scatter", (x, u), (("ids", tuple(ids)),), (shape,))


# ---------------------------------------------------------------- sorting (kinks where values tie)
@kind("topk", ("top_k",), lambda F, ctx, n, x: F.topk(x, n.p("k"), n.p("axis"), n.p("largest"))[0],
      lambda T, n, x: T.topk(x, n.p("k"), n.p("axis"), n.p("largest"))[0], smooth=False)
def _gen_topk(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axis = _axis(gen, shape)
    k = gen.draw(st.integers(1, shape[axis]))
    out = list(shape)
    out[axis] = k
    return Node("topk", (x,), (("k", k), ("axis", axis), ("largest", gen.draw(st.booleans()))), (tuple(out),))


@kind("sort", ("argsort",), lambda F, ctx, n, x: F.sort(x, n.p("axis"), n.p("descending")),
      lambda T, n, x: T.sort(x, n.p("axis"), n.p("descending"))[0], smooth=False)
def _gen_sort(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    return Node("sort", (x,), (("axis", _axis(gen, shape)), ("descending", gen.draw(st.booleans()))), (shape,))


# ---------------------------------------------------------------- rearranging
@kind("tril_triu", ("tril_triu",),
      lambda F, ctx, n, x: (F.tril if n.p("lower") else F.triu)(x, n.p("diagonal")),
      lambda T, n, x: (T.tril if n.p("lower") else T.triu)(x, n.p("diagonal")))
def _gen_tril_triu(gen):
    x = gen.pick(lambda s: len(s) >= 2)
    return Node("tril_triu", (x,), (("diagonal", gen.draw(st.integers(-2, 2))), ("lower", gen.draw(st.booleans()))),
                (gen.pool[x],))


@kind("flip", ("flip",), lambda F, ctx, n, x: F.flip(x, list(n.p("axes"))),
      lambda T, n, x: T.flip(x, list(n.p("axes"))))
def _gen_flip(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axes = sorted(gen.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    return Node("flip", (x,), (("axes", tuple(axes)),), (shape,))


@kind("roll", ("roll",), lambda F, ctx, n, x: F.roll(x, list(n.p("shifts")), list(n.p("axes")) or None),
      lambda T, n, x: T.roll(x, list(n.p("shifts")), list(n.p("axes"))) if n.p("axes") else T.roll(x, n.p("shifts")[0]))
def _gen_roll(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axes = sorted(gen.draw(st.sets(st.integers(0, len(shape) - 1), max_size=len(shape))))
    shifts = tuple(gen.draw(st.integers(-5, 5)) for _ in (axes or [0]))
    return Node("roll", (x,), (("shifts", shifts), ("axes", tuple(axes))), (shape,))


@kind("tile", ("tile", "tile_grad"), lambda F, ctx, n, x: F.tile(x, list(n.p("repeats"))),
      lambda T, n, x: T.tile(x, n.p("repeats")))
def _gen_tile(gen):
    x = gen.pick()
    shape = gen.pool[x]
    repeats = tuple(gen.draw(st.lists(st.integers(1, 2), min_size=len(shape), max_size=max(MAX_RANK, len(shape)))) or [2])
    padded = (1,) * (len(repeats) - len(shape)) + shape
    return Node("tile", (x,), (("repeats", repeats),), (tuple(d * r for d, r in zip(padded, repeats)),))


@kind("expand", ("expand",), lambda F, ctx, n, x: F.expand(x, list(n.p("shape"))),
      lambda T, n, x: x.expand(*n.p("shape")))
def _gen_expand(gen):
    x = gen.pick(lambda s: len(s) < MAX_RANK)
    shape = gen.pool[x]
    target = [gen.draw(st.integers(2, 3)) if d == 1 else d for d in shape]
    target = [gen.draw(st.integers(1, 3))] + target
    return Node("expand", (x,), (("shape", tuple(target)),), (tuple(target),))


@kind("flatten", ("flatten",), lambda F, ctx, n, x: F.flatten(x, n.p("start"), n.p("stop")),
      lambda T, n, x: T.flatten(x, n.p("start"), n.p("stop")))
def _gen_flatten(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    start = _axis(gen, shape)
    stop = gen.draw(st.integers(start, len(shape) - 1))
    out = shape[:start] + (int(np.prod(shape[start:stop + 1])),) + shape[stop + 1:]
    return Node("flatten", (x,), (("start", start), ("stop", stop)), (out,))


def _pad_fluid(F, ctx, n, x):
    return F.nn.functional.pad(x, list(n.p("pad")), mode=n.p("mode"), value=0.25)


def _pad_torch(T, n, x):
    pad = tuple(n.p("pad"))
    if n.p("mode") == "constant":  # fluidgrad's full-length constant pad goes first axis first
        pairs = [pad[i:i + 2] for i in range(0, len(pad), 2)]
        return T.nn.functional.pad(x, tuple(p for pair in reversed(pairs) for p in pair), value=0.25)
    return T.nn.functional.pad(x, pad, mode=n.p("mode"))


@kind("pad", ("pad", "pad_grad"), _pad_fluid, _pad_torch)
def _gen_pad(gen):
    mode = gen.draw(st.sampled_from(_Mode))
    if mode == "constant":
        x = gen.pick()
        shape = gen.pool[x]
        pad = tuple(gen.draw(st.integers(0, 2)) for _ in range(2 * len(shape)))
        out = tuple(d + pad[2 * i] + pad[2 * i + 1] for i, d in enumerate(shape))
    else:  # PyTorch pads the last axis of 2-D and 3-D inputs in these modes
        limit = {"reflect": -1, "circular": 0, "replicate": 3}[mode]
        x = gen.pick(lambda s: len(s) in (2, 3) and s[-1] + limit >= 1)
        shape = gen.pool[x]
        most = min(3, shape[-1] + limit)
        pad = (gen.draw(st.integers(0, most)), gen.draw(st.integers(0, most)))
        out = shape[:-1] + (shape[-1] + sum(pad),)
    return Node("pad", (x,), (("pad", pad), ("mode", mode)), (out,))


def _setitem_fluid(F, ctx, n, x, v):
    y = F.scale(x, 1.0)
    y[_region(n)] = v
    return y


def _setitem_torch(T, n, x, v):
    y = x.clone()
    y[_region(n)] = v
    return y


def _region(n):
    index = [slice(None)] * n.p("rank")
    index[n.p("axis")] = slice(n.p("start"), n.p("stop"), n.p("step"))
    return tuple(index)


@kind("setitem", ("set_value",), _setitem_fluid, _setitem_torch)
def _gen_setitem(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axis = _axis(gen, shape)
    start = gen.draw(st.integers(0, shape[axis] - 1))
    stop = gen.draw(st.integers(start + 1, shape[axis]))
    step = gen.draw(st.integers(1, 2))
    region = list(shape)
    region[axis] = len(range(start, stop, step))
    v = gen.pick(lambda s: s == tuple(region), fresh=lambda: tuple(region))
    return Node("setitem", (x, v), (("rank", len(shape)), ("axis", axis), ("start", start), ("stop", stop),
                                    ("step", step)), (shape,))
