"""Random programs for the gradient fuzzer: a hypothesis strategy and three ways to run one.

A `Spec` is a plain, printable description of a DAG: a list of `Node`s, each one op kind
(an entry of `KINDS`) applied to earlier values (indices into the pool of all node outputs),
with its parameters. Inputs are nodes too (kind "input"), so an op can ask for a fresh input
of the shape it needs (the second operand of a matmul, say) in the middle of a program.
Control-flow nodes ("while", "cond") carry a small body of their own.

The same spec is then *realized* several times:
  * `realize_fluid` with Variables (static mode) or Tensors (eager mode): every op goes through
    the public functions (`fluidgrad.matmul`, ...), which dispatch to the op registry;
  * `realize_torch`: the same maths in PyTorch (float64), the independent oracle;
and a `frozen` mapping replaces chosen nodes by constants, which is how the numeric check
treats `stop_gradient` (a stopped value is a constant for the derivative).

Values are kept inside the domain of every op by construction (log, sqrt and pow read
`x*x + 0.5`, a divisor is `y*y + 0.5`, exp reads `tanh(x)`-bounded values): the fuzzer looks
for wrong gradients, not for overflow.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

MAX_RANK = 3
MAX_DIM = 4


@dataclass(frozen=True)
class Node:
    kind: str
    args: tuple[int, ...]
    params: tuple = ()                     # (key, value) pairs; values hashable and printable
    shapes: tuple[tuple[int, ...], ...] = ()  # one shape per output value

    def p(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params)
        return f"Node({self.kind!r}, {self.args}, [{params}] -> {list(self.shapes)})"


@dataclass
class Spec:
    """A random program: nodes, the values marked stop_gradient, the values summed into the loss."""

    nodes: list[Node]
    stop: frozenset[int]
    loss_terms: tuple[int, ...]
    seed: int
    use_append_backward: bool = False
    value_nodes: list[tuple[int, int]] = field(default_factory=list)  # pool index -> (node, output)

    def __post_init__(self) -> None:
        self.value_nodes = [(i, k) for i, n in enumerate(self.nodes) for k in range(len(n.shapes))]

    def shape(self, value: int) -> tuple[int, ...]:
        node, k = self.value_nodes[value]
        return self.nodes[node].shapes[k]

    @property
    def kinds(self) -> set[str]:
        out = set()
        for n in self.nodes:
            out.add(n.kind)
            out |= body_kinds(n.p("body") or ()) | body_kinds(n.p("else_body") or ())
        return out

    def __repr__(self) -> str:
        lines = [f"Spec(seed={self.seed}, append_backward={self.use_append_backward}, "
                 f"stop={sorted(self.stop)}, loss_terms={list(self.loss_terms)})"]
        value = 0
        for i, n in enumerate(self.nodes):
            outs = list(range(value, value + len(n.shapes)))
            value += len(n.shapes)
            lines.append(f"  #{i} values {outs}: {n!r}")
        return "\n".join(lines)


# ---------------------------------------------------------------- generation helpers

dims = st.integers(1, MAX_DIM)


@st.composite
def shapes(draw, min_rank: int = 0, max_rank: int = MAX_RANK) -> tuple[int, ...]:
    return tuple(draw(st.lists(dims, min_size=min_rank, max_size=max_rank)))


@st.composite
def broadcast_partner(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` to exactly `shape` or to a larger shape."""
    rank = draw(st.integers(0, MAX_RANK))
    out = []
    for i in range(rank):
        j = len(shape) - rank + i
        if j < 0:
            out.append(draw(st.sampled_from([1, 2])))
        else:
            out.append(draw(st.sampled_from([shape[j], 1])))
    return tuple(out)


@st.composite
def broadcast_into(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to exactly `shape`: a suffix of it with some sizes set to 1."""
    drop = draw(st.integers(0, len(shape)))
    return tuple(draw(st.sampled_from([d, 1])) for d in shape[drop:])


def _broadcasts_to(a: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    return len(a) <= len(shape) and all(x in (1, y) for x, y in zip(a[::-1], shape[::-1]))


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(a, b))


class Gen:
    """Generation state: the nodes so far and a `draw` function."""

    def __init__(self, draw: Callable) -> None:
        self.draw = draw
        self.nodes: list[Node] = []
        self.pool: list[tuple[int, ...]] = []  # shape of each value

    def add(self, node: Node) -> list[int]:
        self.nodes.append(node)
        start = len(self.pool)
        self.pool.extend(node.shapes)
        return list(range(start, len(self.pool)))

    def new_input(self, shape: tuple[int, ...]) -> int:
        role = self.draw(st.sampled_from(["data", "param", "const", "data"]))
        return self.add(Node("input", (), (("role", role),), (tuple(shape),)))[0]

    def pick(self, accept: Callable[[tuple[int, ...]], bool] = lambda s: True,
             fresh: Callable[[], tuple[int, ...]] | None = None) -> int:
        """An earlier value whose shape is accepted (so values are shared), or a new input."""
        candidates = [i for i, s in enumerate(self.pool) if accept(s)]
        use_fresh = not candidates or (fresh is not None and self.draw(st.integers(0, 4)) == 0)
        if use_fresh:
            shape = fresh() if fresh is not None else self.draw(shapes().filter(accept))
            return self.new_input(shape)
        return self.draw(st.sampled_from(candidates))


# ---------------------------------------------------------------- op kinds

@dataclass
class Kind:
    """One fuzzable operation: how to generate it, and how to compute it in fluidgrad and PyTorch.

    ops: the registered op types it exercises (the coverage test checks the registry against them).
    generate(gen) -> Node or None (None: not applicable to the current pool).
    fluid(F, ctx, node, *xs) / torch(T, node, *xs): the outputs (a list for several).
    """

    name: str
    ops: tuple[str, ...]
    generate: Callable[[Gen], Node | None]
    fluid: Callable[..., Any]
    torch: Callable[..., Any] | None
    weight: int = 1
    smooth: bool = True


KINDS: dict[str, Kind] = {}


def kind(name: str, ops: tuple[str, ...], fluid: Callable, torch: Callable | None, weight: int = 1,
         smooth: bool = True) -> Callable:
    def register(generate: Callable[[Gen], Node | None]) -> Callable:
        KINDS[name] = Kind(name, ops, generate, fluid, torch, weight, smooth)
        return generate
    return register


def _positive(F, x):  # x*x + 0.5: keeps log, sqrt, pow and divisors well inside their domains
    return F.scale(F.square(x), 1.0, 0.5)


def _tpositive(x):
    return x * x + 0.5


# -- elementwise unary
_UNARY = {
    "exp": (lambda F, x: F.exp(F.tanh(x)), lambda T, x: T.exp(T.tanh(x)), ("exp", "tanh")),
    "log": (lambda F, x: F.log(_positive(F, x)), lambda T, x: T.log(_tpositive(x)), ("log", "square", "scale")),
    "sqrt": (lambda F, x: F.sqrt(_positive(F, x)), lambda T, x: T.sqrt(_tpositive(x)), ("sqrt",)),
    "square": (lambda F, x: F.square(x), lambda T, x: x * x, ("square",)),
    "relu": (lambda F, x: F.relu(x), lambda T, x: T.relu(x), ("relu",)),
    "sigmoid": (lambda F, x: F.sigmoid(x), lambda T, x: T.sigmoid(x), ("sigmoid",)),
    "tanh": (lambda F, x: F.tanh(x), lambda T, x: T.tanh(x), ("tanh",)),
    "abs": (lambda F, x: F.abs(x), lambda T, x: T.abs(x), ("abs",)),
    "sin": (lambda F, x: F.sin(x), lambda T, x: T.sin(x), ("sin",)),
    "cos": (lambda F, x: F.cos(x), lambda T, x: T.cos(x), ("cos",)),
    "assign": (lambda F, x: F.assign(x) if hasattr(F, "assign") else _apply(F, "assign", {"X": x}),
               lambda T, x: x.clone(), ("assign",)),
    "sign": (lambda F, x: F.sign(x), lambda T, x: T.sign(x), ("sign",)),
}


def _apply(F, op_type, inputs, attrs=None, n_out=None):
    from fluidgrad.dispatch import apply_op
    return apply_op(op_type, inputs, attrs or {}, n_out)


def _unary_generate(name):
    def generate(gen: Gen) -> Node:
        x = gen.pick()
        return Node(name, (x,), (), (gen.pool[x],))
    return generate


# -- the unary ops of ops/elementwise.py and ops/activation.py, inputs moved into their domains
_DOMAIN = {"all": (lambda F, x: x, lambda x: x), "pos": (_positive, _tpositive),
           "unit": (lambda F, x: F.scale(F.tanh(x), 0.9), lambda x: x.tanh() * 0.9),
           "above1": (lambda F, x: F.scale(_positive(F, x), 1.0, 1.0), lambda x: _tpositive(x) + 1.0)}
for _name, _domain, _torch in [
        ("erf", "all", "erf"), ("sinh", "all", "sinh"), ("cosh", "all", "cosh"), ("asinh", "all", "asinh"),
        ("atan", "all", "atan"), ("expm1", "unit", "expm1"), ("log1p", "pos", "log1p"), ("log2", "pos", "log2"),
        ("log10", "pos", "log10"), ("rsqrt", "pos", "rsqrt"), ("reciprocal", "pos", "reciprocal"),
        ("tan", "unit", "tan"), ("erfinv", "unit", "erfinv"), ("asin", "unit", "asin"), ("acos", "unit", "acos"), ("atanh", "unit", "atanh"),
        ("acosh", "above1", "acosh"), ("gelu", "all", "nn.functional.gelu"), ("silu", "all", "nn.functional.silu"),
        ("mish", "all", "nn.functional.mish"), ("softplus", "all", "nn.functional.softplus"),
        ("log_sigmoid", "all", "nn.functional.logsigmoid"), ("lgamma", "pos", "lgamma"),
        ("digamma", "above1", "digamma")]:
    _pre_f, _pre_t = _DOMAIN[_domain]
    _UNARY[_name] = (lambda F, x, n=_name, p=_pre_f: _apply(F, n, {"X": p(F, x)}),
                     lambda T, x, t=_torch, p=_pre_t: _attr_path(T, t)(p(x)), (_name,))


_pre_f, _pre_t = _DOMAIN["above1"]
_UNARY["polygamma"] = (lambda F, x, p=_pre_f: _apply(F, "polygamma", {"X": p(F, x)}, {"n": 1}),
                       lambda T, x, p=_pre_t: T.polygamma(1, p(x)), ("polygamma",))


def _attr_path(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


for _name, (_f, _t, _ops) in _UNARY.items():
    kind(_name, _ops, lambda F, ctx, n, x, _f=_f: _f(F, x), lambda T, n, x, _t=_t: _t(T, x),
         weight=1, smooth=_name not in ("relu", "abs", "sign"))(_unary_generate(_name))


@kind("pow", ("pow",), lambda F, ctx, n, x: F.pow(_positive(F, x), n.p("factor")),
      lambda T, n, x: T.pow(_tpositive(x), n.p("factor")))
def _gen_pow(gen):
    x = gen.pick()
    factor = gen.draw(st.sampled_from([-1.5, -1.0, 0.5, 2.0, 3.0]))
    return Node("pow", (x,), (("factor", factor),), (gen.pool[x],))


@kind("leaky_relu", ("leaky_relu",), lambda F, ctx, n, x: _apply(F, "leaky_relu", {"X": x}, {"alpha": n.p("alpha")}),
      lambda T, n, x: T.nn.functional.leaky_relu(x, n.p("alpha")), smooth=False)
def _gen_leaky(gen):
    x = gen.pick()
    return Node("leaky_relu", (x,), (("alpha", gen.draw(st.sampled_from([0.02, 0.3]))),), (gen.pool[x],))


@kind("scale", ("scale",), lambda F, ctx, n, x: F.scale(x, n.p("scale"), n.p("bias"), n.p("after")),
      lambda T, n, x: x * n.p("scale") + n.p("bias") if n.p("after") else (x + n.p("bias")) * n.p("scale"))
def _gen_scale(gen):
    x = gen.pick()
    return Node("scale", (x,), (("scale", gen.draw(st.sampled_from([-2.0, 0.5, 1.0, 3.0]))),
                                ("bias", gen.draw(st.sampled_from([0.0, 1.0, -0.5]))),
                                ("after", gen.draw(st.booleans()))), (gen.pool[x],))


# -- elementwise binary with broadcasting
_BINARY = {
    "add": (lambda F, x, y: F.add(x, y), lambda T, x, y: x + y, ("elementwise_add",), True),
    "sub": (lambda F, x, y: F.subtract(x, y), lambda T, x, y: x - y, ("elementwise_sub",), True),
    "mul": (lambda F, x, y: F.multiply(x, y), lambda T, x, y: x * y, ("elementwise_mul",), True),
    "div": (lambda F, x, y: F.divide(x, _positive(F, y)), lambda T, x, y: x / _tpositive(y),
            ("elementwise_div",), True),
    "elementwise_pow": (lambda F, x, y: F.pow(_positive(F, x), F.tanh(y)),
                        lambda T, x, y: T.pow(_tpositive(x), T.tanh(y)), ("elementwise_pow",), True),
    "atan2": (lambda F, x, y: F.atan2(x, _positive(F, y)), lambda T, x, y: T.atan2(x, _tpositive(y)),
              ("atan2",), True),   # the second argument kept positive: away from the cut along y < 0
    "maximum": (lambda F, x, y: F.maximum(x, y), lambda T, x, y: T.maximum(x, y), ("elementwise_max",), False),
    "minimum": (lambda F, x, y: F.minimum(x, y), lambda T, x, y: T.minimum(x, y), ("elementwise_min",), False),
}


def _binary_generate(name):
    def generate(gen: Gen) -> Node:
        x = gen.pick()
        sx = gen.pool[x]
        y = gen.pick(lambda s: _broadcastable(s, sx), fresh=lambda: gen.draw(broadcast_partner(sx)))
        if gen.draw(st.booleans()):
            x, y = y, x
        return Node(name, (x, y), (), (broadcast(gen.pool[x], gen.pool[y]),))
    return generate


def _broadcastable(a, b):
    try:
        broadcast(a, b)
        return True
    except ValueError:
        return False


for _name, (_f, _t, _ops, _smooth) in _BINARY.items():
    kind(_name, _ops, lambda F, ctx, n, x, y, _f=_f: _f(F, x, y), lambda T, n, x, y, _t=_t: _t(T, x, y),
         weight=2, smooth=_smooth)(_binary_generate(_name))


@kind("add_n", ("sum",), lambda F, ctx, n, *xs: F.add_n(list(xs)), lambda T, n, *xs: sum(xs[1:], xs[0]))
def _gen_add_n(gen):
    x = gen.pick()
    count = gen.draw(st.integers(2, 3))
    others = [gen.pick(lambda s, sx=gen.pool[x]: s == sx, fresh=lambda: gen.pool[x]) for _ in range(count - 1)]
    return Node("add_n", (x, *others), (), (gen.pool[x],))


# -- matmul
def _mm_fluid(F, ctx, n, x, y):
    return F.matmul(x, y, n.p("tx"), n.p("ty"))


def _mm_torch(T, n, x, y):
    if n.p("tx") and x.dim() > 1:
        x = x.transpose(-1, -2)
    if n.p("ty") and y.dim() > 1:
        y = y.transpose(-1, -2)
    return T.matmul(x, y)


@kind("matmul", ("matmul",), _mm_fluid, _mm_torch, weight=3)
def _gen_matmul(gen):
    x = gen.pick(lambda s: 1 <= len(s) <= 3)
    stored_x = gen.pool[x]
    tx = len(stored_x) > 1 and gen.draw(st.booleans())
    sx = stored_x[:-2] + stored_x[-2:][::-1] if tx else stored_x
    k, n_cols = sx[-1], gen.draw(dims)
    # the gradient of a vector with a batched matrix is not supported: no such pairs
    y_ranks = {1: [1, 2], 2: [1, 2, 3], 3: [2, 3]}[len(sx)]
    y_rank = gen.draw(st.sampled_from(y_ranks))
    if y_rank == 1:
        logical_y: tuple[int, ...] = (k,)
    elif y_rank == 2:
        logical_y = (k, n_cols)
    else:
        batch = gen.draw(st.sampled_from([1, sx[0]])) if len(sx) == 3 else gen.draw(dims)
        logical_y = (batch, k, n_cols)
    ty = y_rank > 1 and gen.draw(st.booleans())
    want = logical_y[:-2] + logical_y[-2:][::-1] if ty else logical_y
    y = gen.pick(lambda s: s == want, fresh=lambda: want)
    out = np.matmul(np.zeros(sx), np.zeros(logical_y)).shape
    return Node("matmul", (x, y), (("tx", tx), ("ty", ty)), (tuple(out),))


# -- reductions
_REDUCE = {
    "reduce_sum": (lambda F, x, a, k: F.sum(x, a, k), lambda T, x, a, k: T.sum(x, dim=a, keepdim=k) if a else (
        x.sum().reshape([1] * x.dim()) if k else x.sum()), True),
    "reduce_mean": (lambda F, x, a, k: F.mean(x, a, k), lambda T, x, a, k: T.mean(x, dim=a, keepdim=k) if a else (
        x.mean().reshape([1] * x.dim()) if k else x.mean()), True),
    "reduce_max": (lambda F, x, a, k: F.max(x, a, k), lambda T, x, a, k: T.amax(x, dim=a or list(range(x.dim())),
                                                                                 keepdim=k), False),
    "reduce_min": (lambda F, x, a, k: F.min(x, a, k), lambda T, x, a, k: T.amin(x, dim=a or list(range(x.dim())),
                                                                                 keepdim=k), False),
}


def _reduce_generate(name):
    def generate(gen: Gen) -> Node:
        x = gen.pick()
        shape = gen.pool[x]
        axes = tuple(sorted(gen.draw(st.sets(st.integers(0, len(shape) - 1), max_size=len(shape))))) if shape else ()
        negative = gen.draw(st.booleans())
        keep = gen.draw(st.booleans())
        out = tuple(1 if i in axes or not axes else d for i, d in enumerate(shape)) if keep else \
            tuple(d for i, d in enumerate(shape) if axes and i not in axes)
        if negative and axes:
            axes = tuple(a - len(shape) for a in axes)
        return Node(name, (x,), (("axes", axes), ("keepdim", keep)), (out,))
    return generate


for _name, (_f, _t, _smooth) in _REDUCE.items():
    kind(_name, (_name,), lambda F, ctx, n, x, _f=_f: _f(F, x, list(n.p("axes")) or None, n.p("keepdim")),
         lambda T, n, x, _t=_t: _t(T, x, list(n.p("axes")), n.p("keepdim")), smooth=_smooth)(_reduce_generate(_name))


@kind("mean", ("mean",), lambda F, ctx, n, x: F.mean(x), lambda T, n, x: x.mean())
def _gen_mean(gen):
    x = gen.pick()
    return Node("mean", (x,), (), ((),))


# -- data movement
@kind("reshape", ("reshape",), lambda F, ctx, n, x: F.reshape(x, list(n.p("shape"))),
      lambda T, n, x: x.reshape(n.p("target")))
def _gen_reshape(gen):
    x = gen.pick()
    size = int(np.prod(gen.pool[x], dtype=np.int64))
    target = []
    rest = size
    for _ in range(gen.draw(st.integers(0, MAX_RANK))):
        d = gen.draw(st.sampled_from([f for f in range(1, rest + 1) if rest % f == 0]))
        target.append(d)
        rest //= d
    if rest > 1 or not target and size > 1:
        target.append(rest)
    written = list(target)
    if written and gen.draw(st.booleans()):
        written[gen.draw(st.integers(0, len(written) - 1))] = -1
    return Node("reshape", (x,), (("shape", tuple(written)), ("target", tuple(target))), (tuple(target),))


@kind("transpose", ("transpose",), lambda F, ctx, n, x: F.transpose(x, list(n.p("perm"))),
      lambda T, n, x: x.permute(*n.p("perm")))
def _gen_transpose(gen):
    x = gen.pick(lambda s: len(s) >= 2)
    shape = gen.pool[x]
    perm = tuple(gen.draw(st.permutations(range(len(shape)))))
    return Node("transpose", (x,), (("perm", perm),), (tuple(shape[p] for p in perm),))


@kind("concat", ("concat",), lambda F, ctx, n, *xs: F.concat(list(xs), n.p("axis")),
      lambda T, n, *xs: T.cat(xs, n.p("axis")), weight=2)
def _gen_concat(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axis = gen.draw(st.integers(0, len(shape) - 1))
    args, size = [x], shape[axis]
    for _ in range(gen.draw(st.integers(1, 2))):
        def fits(s, shape=shape, axis=axis):
            return len(s) == len(shape) and all(a == b for i, (a, b) in enumerate(zip(s, shape)) if i != axis)
        fresh = shape[:axis] + (gen.draw(dims),) + shape[axis + 1:]
        y = gen.pick(fits, fresh=lambda fresh=fresh: fresh)
        args.append(y)
        size += gen.pool[y][axis]
    if gen.draw(st.booleans()):
        axis -= len(shape)
    return Node("concat", tuple(args), (("axis", axis),), (shape[:axis % len(shape)] + (size,)
                                                           + shape[axis % len(shape) + 1:],))


@kind("split", ("split",), lambda F, ctx, n, x: F.split(x, n.p("sections"), n.p("axis")),
      lambda T, n, x: T.split(x, _split_sizes(x.shape[n.p("axis")], n.p("sections")), n.p("axis")), weight=2)
def _gen_split(gen):
    x = gen.pick(lambda s: any(d >= 2 for d in s), fresh=lambda: (gen.draw(st.integers(2, MAX_DIM)),))
    shape = gen.pool[x]
    axis = gen.draw(st.sampled_from([i for i, d in enumerate(shape) if d >= 2]))
    size = shape[axis]
    if gen.draw(st.booleans()):
        sections: Any = gen.draw(st.sampled_from([k for k in range(2, size + 1) if size % k == 0]))
    else:
        cut = gen.draw(st.integers(1, size - 1))
        sections = (cut, size - cut)
    sizes = _split_sizes(size, sections)
    outs = tuple(shape[:axis] + (s,) + shape[axis + 1:] for s in sizes)
    return Node("split", (x,), (("sections", sections), ("axis", axis)), outs)


def _split_sizes(size, sections):
    if isinstance(sections, int):
        return [size // sections] * sections
    return list(sections)


@kind("slice", ("slice",), lambda F, ctx, n, x: F.slice(x, list(n.p("axes")), list(n.p("starts")),
                                                           list(n.p("ends"))),
      lambda T, n, x: x[_torch_slices(x.dim(), n)])
def _gen_slice(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axes = sorted(gen.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    starts, ends, out = [], [], list(shape)
    for a in axes:
        start = gen.draw(st.integers(0, shape[a] - 1))
        end = gen.draw(st.integers(start + 1, shape[a]))
        if gen.draw(st.integers(0, 3)) == 0:
            start -= shape[a]  # a negative start counts from the end
        starts.append(start)
        ends.append(end)
        out[a] = end - (start % shape[a])
    return Node("slice", (x,), (("axes", tuple(axes)), ("starts", tuple(starts)), ("ends", tuple(ends))),
                (tuple(out),))


def _torch_slices(ndim, n):
    index = [slice(None)] * ndim
    for a, s, e in zip(n.p("axes"), n.p("starts"), n.p("ends")):
        index[a] = slice(s, e)
    return tuple(index)


def _gather_fluid(F, ctx, n, x):
    return F.gather(x, ctx.int_input(np.array(n.p("index"), dtype=np.int64)), n.p("axis"))


def _gather_torch(T, n, x):
    index = T.tensor(np.array(n.p("index"), dtype=np.int64))
    axis = n.p("axis") % x.dim()
    picked = T.index_select(x, axis, index.reshape(-1))
    return picked.reshape(x.shape[:axis] + index.shape + x.shape[axis + 1:])


@kind("gather", ("gather",), _gather_fluid, _gather_torch)
def _gen_gather(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axis = gen.draw(st.integers(0, len(shape) - 1))
    count = gen.draw(st.integers(1, 4))
    index = tuple(gen.draw(st.lists(st.integers(0, shape[axis] - 1), min_size=count, max_size=count)))
    if gen.draw(st.booleans()) and count % 2 == 0:
        index = (index[: count // 2], index[count // 2:])  # a 2-D index
    idx_shape = np.array(index).shape
    return Node("gather", (x,), (("index", index), ("axis", axis)),
                (shape[:axis] + idx_shape + shape[axis + 1:],))


def _embedding_torch(T, n, x):
    ids = T.tensor(np.array(n.p("ids"), dtype=np.int64))
    return T.index_select(x, 0, ids.reshape(-1)).reshape(ids.shape + x.shape[1:])


@kind("embedding", ("lookup_table_v2",),
      lambda F, ctx, n, x: F.nn.functional.embedding(ctx.int_input(np.array(n.p("ids"), dtype=np.int64)), x),
      _embedding_torch)
def _gen_embedding(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    ids = tuple(gen.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=4)))
    return Node("embedding", (x,), (("ids", ids),), ((len(ids),) + tuple(shape[1:]),))


@kind("squeeze", ("squeeze",), lambda F, ctx, n, x: F.squeeze(x, list(n.p("axes"))),
      lambda T, n, x: x.reshape(n.shapes[0]))
def _gen_squeeze(gen):
    x = gen.pick(lambda s: 1 in s, fresh=lambda: (1, gen.draw(dims)))
    shape = gen.pool[x]
    axes = sorted(gen.draw(st.sets(st.sampled_from([i for i, d in enumerate(shape) if d == 1]), min_size=1)))
    return Node("squeeze", (x,), (("axes", tuple(axes)),), (tuple(d for i, d in enumerate(shape) if i not in axes),))


@kind("unsqueeze", ("unsqueeze",), lambda F, ctx, n, x: F.unsqueeze(x, n.p("axis")),
      lambda T, n, x: x.unsqueeze(n.p("axis")))
def _gen_unsqueeze(gen):
    x = gen.pick(lambda s: len(s) < MAX_RANK)
    shape = gen.pool[x]
    axis = gen.draw(st.integers(0, len(shape)))
    return Node("unsqueeze", (x,), (("axis", axis),), (shape[:axis] + (1,) + shape[axis:],))


@kind("stack", ("stack",), lambda F, ctx, n, *xs: F.stack(list(xs), n.p("axis")),
      lambda T, n, *xs: T.stack(xs, n.p("axis")))
def _gen_stack(gen):
    x = gen.pick(lambda s: len(s) < MAX_RANK)
    shape = gen.pool[x]
    y = gen.pick(lambda s: s == shape, fresh=lambda: shape)
    axis = gen.draw(st.integers(0, len(shape)))
    return Node("stack", (x, y), (("axis", axis),), (shape[:axis] + (2,) + shape[axis:],))


@kind("expand_as", ("expand_as",), lambda F, ctx, n, x, t: _apply(F, "expand_as", {"X": x, "Target": t}),
      lambda T, n, x, t: x.expand(t.shape))
def _gen_expand_as(gen):
    t = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[t]
    x = gen.pick(lambda s: _broadcasts_to(s, shape), fresh=lambda: gen.draw(broadcast_into(shape)))
    return Node("expand_as", (x, t), (), (shape,))


@kind("reduce_as", ("reduce_as",), lambda F, ctx, n, x, t: _apply(F, "reduce_as", {"X": x, "Target": t}),
      lambda T, n, x, t: x.sum_to_size(t.shape))
def _gen_reduce_as(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    want = gen.draw(broadcast_into(shape))
    t = gen.pick(lambda s: s == want, fresh=lambda: want)
    return Node("reduce_as", (x, t), (), (want,))


# -- Python scalars (weak: the tensor's float dtype is kept), through the operators themselves
_SCALAR_OPS = {
    "x + s": (lambda x, s: x + s, False), "s - x": (lambda x, s: s - x, False), "x * s": (lambda x, s: x * s, False),
    "x / s": (lambda x, s: x / s, False), "s / x": (lambda x, s: s / x, True), "x ** s": (lambda x, s: x ** s, True),
    "s ** x": (lambda x, s: abs(s) ** x, False),
}


def _scalar_apply(F, x, n, positive):
    fn, needs_positive = _SCALAR_OPS[n.p("op")]
    return fn(positive(F, x) if needs_positive else x, n.p("s"))


@kind("scalar", ("scale", "elementwise_div", "pow", "elementwise_pow", "fill_constant"),
      lambda F, ctx, n, x: _scalar_apply(F, x, n, _positive),
      lambda T, n, x: _scalar_apply(T, x, n, lambda T, x: _tpositive(x)), weight=2)
def _gen_scalar(gen):
    x = gen.pick()
    return Node("scalar", (x,), (("op", gen.draw(st.sampled_from(sorted(_SCALAR_OPS)))),
                                 ("s", gen.draw(st.sampled_from([2, -3, 0.5, 2.5, 1])))), (gen.pool[x],))


# -- integer and bool tensors on the way: counts, truncating casts, integer arithmetic with
# Python ints, true division of integers (float32), all cast back to join the float value
def _int_mix_fluid(F, ctx, n, x):
    count = F.sum(F.greater_than(x, 0.0))                    # bool -> int64 count
    k = F.cast(x * 3.0, n.p("int_dtype"))                    # truncation toward zero
    j = k * 2 - 1                                            # integer arithmetic with Python ints
    q = j / 2                                                # true division: float32
    return x * F.cast(q, x.dtype) + F.cast(count, x.dtype)


def _int_mix_torch(T, n, x):
    count = (x > 0.0).sum()
    k = (x * 3.0).to(getattr(T, n.p("int_dtype")))
    q = (k * 2 - 1) / 2
    assert q.dtype == T.float32 and count.dtype == T.int64
    return x * q.to(x.dtype) + count.to(x.dtype)


@kind("int_mix", ("greater_than", "reduce_sum", "cast", "scale", "elementwise_div"), _int_mix_fluid,
      _int_mix_torch, smooth=False)
def _gen_int_mix(gen):
    x = gen.pick()
    return Node("int_mix", (x,), (("int_dtype", gen.draw(st.sampled_from(["int32", "int64"]))),), (gen.pool[x],))


# -- indexing: x[i] (negative i counts from the end), x[a:b], x[:, i]
def _index_key(n):
    items = []
    for item in n.p("index"):
        items.append(item[1] if item[0] == "int" else slice(item[1], item[2]) if item[0] == "slice" else slice(None))
    return tuple(items)


@kind("getitem", ("slice", "squeeze"), lambda F, ctx, n, x: x[_index_key(n)], lambda T, n, x: x[_index_key(n)])
def _gen_getitem(gen):
    x = gen.pick(lambda s: len(s) >= 1 and all(d >= 1 for d in s))
    shape = gen.pool[x]
    index, out = [], []
    for axis in range(gen.draw(st.integers(1, len(shape)))):
        size = shape[axis]
        choice = gen.draw(st.sampled_from(["int", "slice", "all"]))
        if choice == "int":
            i = gen.draw(st.integers(-size, size - 1))
            index.append(("int", i))
        elif choice == "slice":
            a = gen.draw(st.integers(-size, size - 1))
            b = gen.draw(st.integers((a % size) + 1, size))
            index.append(("slice", a, b))
            out.append(b - a % size)
        else:
            index.append(("all",))
            out.append(size)
    out += list(shape[len(index):])
    return Node("getitem", (x,), (("index", tuple(index)),), (tuple(out),))


# -- softmax and losses
@kind("softmax", ("softmax",), lambda F, ctx, n, x: F.softmax(x, n.p("axis")) if hasattr(F, "softmax")
      else _apply(F, "softmax", {"X": x}, {"axis": n.p("axis")}), lambda T, n, x: T.softmax(x, n.p("axis")))
def _gen_softmax(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axis = gen.draw(st.integers(-len(shape), len(shape) - 1))
    return Node("softmax", (x,), (("axis", axis),), (shape,))


def _labels(gen, shape, axis):
    label_shape = list(shape)
    label_shape[axis] = 1
    classes = shape[axis]
    flat = gen.draw(st.lists(st.integers(0, classes - 1), min_size=int(np.prod(label_shape)),
                             max_size=int(np.prod(label_shape))))
    return _nested(np.array(flat, dtype=np.int64).reshape(label_shape))


def _nested(array):
    return tuple(_nested(a) for a in array) if array.ndim else int(array)


def _swce_fluid(F, ctx, n, x):
    label = ctx.int_input(np.array(n.p("label"), dtype=np.int64))
    softmax, loss = _apply(F, "softmax_with_cross_entropy", {"Logits": x, "Label": label}, {"axis": n.p("axis")})
    return [softmax, loss]


def _swce_torch(T, n, x):
    axis = n.p("axis")
    label = T.tensor(np.array(n.p("label"), dtype=np.int64))
    logsm = T.log_softmax(x, axis)
    return [T.softmax(x, axis), -T.gather(logsm, axis, label)]


@kind("softmax_with_cross_entropy", ("softmax_with_cross_entropy",), _swce_fluid, _swce_torch)
def _gen_swce(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    axis = gen.draw(st.integers(0, len(shape) - 1))
    loss_shape = shape[:axis] + (1,) + shape[axis + 1:]
    return Node("softmax_with_cross_entropy", (x,), (("axis", axis), ("label", _labels(gen, shape, axis))),
                (shape, loss_shape))


def _ce_fluid(F, ctx, n, x):
    label = ctx.int_input(np.array(n.p("label"), dtype=np.int64))
    probs = _apply(F, "softmax", {"X": x}, {"axis": -1})
    return _apply(F, "cross_entropy", {"X": probs, "Label": label})


def _ce_torch(T, n, x):
    label = T.tensor(np.array(n.p("label"), dtype=np.int64))
    return -T.log(T.gather(T.softmax(x, -1), -1, label))


@kind("cross_entropy", ("cross_entropy",), _ce_fluid, _ce_torch)
def _gen_ce(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    return Node("cross_entropy", (x,), (("label", _labels(gen, shape, len(shape) - 1)),),
                (shape[:-1] + (1,),))


# -- clip, log_softmax, increment, convolution and pooling
@kind("clip", ("clip",), lambda F, ctx, n, x: _apply(F, "clip", {"X": x}, {"min": n.p("lo"), "max": n.p("hi")}),
      lambda T, n, x: T.clamp(x, n.p("lo"), n.p("hi")), smooth=False)
def _gen_clip(gen):
    x = gen.pick()
    lo = gen.draw(st.sampled_from([-1.0, -0.3, 0.0]))
    return Node("clip", (x,), (("lo", lo), ("hi", lo + gen.draw(st.sampled_from([0.5, 1.0, 2.0])))), (gen.pool[x],))


@kind("log_softmax", ("log_softmax",), lambda F, ctx, n, x: _apply(F, "log_softmax", {"X": x}, {"axis": n.p("axis")}),
      lambda T, n, x: T.log_softmax(x, n.p("axis")))
def _gen_log_softmax(gen):
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    return Node("log_softmax", (x,), (("axis", gen.draw(st.integers(-len(shape), len(shape) - 1))),), (shape,))


@kind("increment", ("increment",), lambda F, ctx, n, x: _apply(F, "increment", {"X": x}, {"step": n.p("step")}),
      lambda T, n, x: x + n.p("step"))
def _gen_increment(gen):
    if not _has_op("increment"):
        return None
    x = gen.pick()
    return Node("increment", (x,), (("step", gen.draw(st.sampled_from([1.0, -0.5]))),), (gen.pool[x],))


def _image(gen):
    return (gen.draw(st.integers(1, 2)), gen.draw(st.sampled_from([1, 2, 4])), gen.draw(st.integers(3, 5)),
            gen.draw(st.integers(3, 5)))


def _conv_out(size, k, stride, pad, dilation):
    return (size + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def _conv_fluid(F, ctx, n, x, w, *bias):
    import fluidgrad.nn.functional as NF
    return NF.conv2d(x, w, bias[0] if bias else None, n.p("stride"), n.p("pad"), n.p("dilation"), n.p("groups"))


def _conv_torch(T, n, x, w, *bias):
    return T.nn.functional.conv2d(x, w, bias[0] if bias else None, n.p("stride"), n.p("pad"), n.p("dilation"),
                                  n.p("groups"))


@kind("conv2d", ("conv2d",), _conv_fluid, _conv_torch)
def _gen_conv2d(gen):
    if not _has_op("conv2d"):
        return None
    x = gen.pick(lambda s: len(s) == 4 and s[2] >= 3 and s[3] >= 3, fresh=lambda: _image(gen))
    n_img, channels, height, width = gen.pool[x]
    groups = gen.draw(st.sampled_from([g for g in (1, 2) if channels % g == 0]))
    out_channels = groups * gen.draw(st.integers(1, 2))
    k = gen.draw(st.integers(1, 3))
    stride, pad, dilation = gen.draw(st.integers(1, 2)), gen.draw(st.integers(0, 1)), gen.draw(st.integers(1, 2))
    if _conv_out(min(height, width), k, stride, pad, dilation) < 1:
        dilation = 1
    w_shape = (out_channels, channels // groups, k, k)
    w = gen.pick(lambda s: s == w_shape, fresh=lambda: w_shape)
    args = (x, w) + ((gen.pick(lambda s: s == (out_channels,), fresh=lambda: (out_channels,)),)
                     if gen.draw(st.booleans()) else ())
    out = (n_img, out_channels, _conv_out(height, k, stride, pad, dilation), _conv_out(width, k, stride, pad, dilation))
    return Node("conv2d", args, (("stride", stride), ("pad", pad), ("dilation", dilation), ("groups", groups)), (out,))


def _pool_fluid(F, ctx, n, x):
    import fluidgrad.nn.functional as NF
    if n.p("type") == "max":
        return NF.max_pool2d(x, n.p("k"), n.p("stride"), n.p("pad"))
    return NF.avg_pool2d(x, n.p("k"), n.p("stride"), n.p("pad"), exclusive=n.p("exclusive"))


def _pool_torch(T, n, x):
    if n.p("type") == "max":
        return T.nn.functional.max_pool2d(x, n.p("k"), n.p("stride"), n.p("pad"))
    return T.nn.functional.avg_pool2d(x, n.p("k"), n.p("stride"), n.p("pad"), count_include_pad=not n.p("exclusive"))


@kind("pool2d", ("pool2d", "max_pool2d_with_index"), _pool_fluid, _pool_torch, smooth=False)
def _gen_pool2d(gen):
    if not _has_op("pool2d"):
        return None
    x = gen.pick(lambda s: len(s) == 4 and s[2] >= 2 and s[3] >= 2, fresh=lambda: _image(gen))
    n_img, channels, height, width = gen.pool[x]
    k = gen.draw(st.integers(1, 2))
    stride = gen.draw(st.integers(1, 2))
    pad = gen.draw(st.integers(0, k // 2))
    out = (n_img, channels, (height + 2 * pad - k) // stride + 1, (width + 2 * pad - k) // stride + 1)
    params = (("type", gen.draw(st.sampled_from(["max", "avg"]))), ("k", k), ("stride", stride), ("pad", pad),
              ("exclusive", gen.draw(st.booleans())))
    return Node("pool2d", (x,), params, (out,))


# -- normalization and dropout
def _layer_norm_fluid(F, ctx, n, x, *affine):
    import fluidgrad.nn.functional as NF
    weight, bias = (affine + (None, None))[:2] if n.p("affine") else (None, None)
    return NF.layer_norm(x, list(n.shapes[0][-n.p("axes"):]), weight, bias)


def _layer_norm_torch(T, n, x, *affine):
    weight, bias = (affine + (None, None))[:2] if n.p("affine") else (None, None)
    return T.nn.functional.layer_norm(x, list(n.shapes[0][-n.p("axes"):]), weight, bias, 1e-5)


@kind("layer_norm", ("layer_norm", "layer_norm_grad"), _layer_norm_fluid, _layer_norm_torch)
def _gen_layer_norm(gen):
    if not _has_op("layer_norm"):
        return None
    x = gen.pick(lambda s: len(s) >= 2 and int(np.prod(s[-1:])) >= 2,
                 fresh=lambda: (gen.draw(dims), gen.draw(st.integers(2, MAX_DIM))))
    shape = gen.pool[x]
    axes = gen.draw(st.integers(1, min(2, len(shape) - 1)))
    affine = axes == 1 and gen.draw(st.booleans())
    args = (x,)
    if affine:
        args += tuple(gen.pick(lambda s: s == shape[-1:], fresh=lambda: shape[-1:]) for _ in range(2))
    return Node("layer_norm", args, (("axes", axes), ("affine", affine)), (shape,))


def _batch_norm_fluid(F, ctx, n, x, weight, bias):
    import fluidgrad.nn.functional as NF
    channels = n.shapes[0][1]
    mean = ctx.int_input(np.zeros(channels))
    var = ctx.int_input(np.ones(channels))
    return NF.batch_norm(x, mean, var, weight, bias, training=n.p("training", True))


def _batch_norm_torch(T, n, x, weight, bias):
    channels = n.shapes[0][1]
    # contiguous: PyTorch 2.13's CPU batch_norm backward in eval mode reads garbage (uninitialised
    # memory) for the input gradient of channels past the first when the weight is an expanded
    # (stride-0) view, as `expand` of a 0-D value gives
    return T.nn.functional.batch_norm(x, T.zeros(channels, dtype=x.dtype), T.ones(channels, dtype=x.dtype),
                                      weight.contiguous(), bias.contiguous(), training=n.p("training", True),
                                      eps=1e-5)


@kind("batch_norm", ("batch_norm", "batch_norm_grad"), _batch_norm_fluid, _batch_norm_torch)
def _gen_batch_norm(gen):
    if not _has_op("batch_norm"):
        return None
    x = gen.pick(lambda s: len(s) in (2, 4) and int(np.prod(s)) // s[1] >= 2,
                 fresh=lambda: (gen.draw(st.integers(2, MAX_DIM)), gen.draw(dims)))
    shape = gen.pool[x]
    weight = gen.pick(lambda s: s == shape[1:2], fresh=lambda: shape[1:2])
    bias = gen.pick(lambda s: s == shape[1:2], fresh=lambda: shape[1:2])
    return Node("batch_norm", (x, weight, bias), (("training", gen.draw(st.booleans())),), (shape,))


def _dropout_mask(n):
    from fluidgrad.ops.norm import dropout_kernel
    return dropout_kernel(np.ones(n.shapes[0]), n.p("p"), False, n.p("seed"))[1]


@kind("dropout", ("dropout",),
      lambda F, ctx, n, x: __import__("fluidgrad.nn.functional", fromlist=["dropout"]).dropout(
          x, n.p("p"), True, seed=n.p("seed")),
      lambda T, n, x: x * T.tensor(_dropout_mask(n)))
def _gen_dropout(gen):
    if not _has_op("dropout"):
        return None
    x = gen.pick()
    params = (("p", gen.draw(st.sampled_from([0.25, 0.5]))), ("seed", gen.draw(st.integers(1, 1000))))
    return Node("dropout", (x,), params, (gen.pool[x],))


# -- control flow. A body is a tuple of steps applied to one value x (shape preserved):
#   ("tanh",) ("sin",) ("sigmoid",) ("square_scaled",) ("scale",)   unary maths
#   ("mul_outer", v) ("add_outer", v)     x * tanh(outer value v) / x + v (v broadcasts into x)
#   ("matmul_outer", v)                   x @ tanh(W_v), W_v square on x's last axis
#   ("while", trips, body)                a nested loop over the body
#   ("cond", body, else_body)             a nested branch on sum(x) > COND_THRESHOLD
BODY_UNARY = ("tanh", "sin", "sigmoid", "square_scaled", "scale")
#   ("kind", name, params)                any shape-preserving one-input kind of KINDS
BODY_KINDS = ("exp", "log", "sqrt", "relu", "abs", "sigmoid", "tanh", "sin", "cos", "pow", "leaky_relu",
              "clip", "softmax", "log_softmax", "scale", "dropout", "assign")
MAX_NESTING = 2
# branch on sum(x) > COND_THRESHOLD: an odd value, so that sums that are 0 by construction
# (a layer_norm's rows, x - x) do not sit on the boundary, where rounding picks the branch
COND_THRESHOLD = 0.0123


class _NoFreshInputs(Exception):
    pass


def _draw_body_kind(gen: Gen, shape: tuple[int, ...]) -> tuple | None:
    """A one-input kind applied to the loop value: generated against a pool holding only it."""
    name = gen.draw(st.sampled_from(BODY_KINDS))
    sub = Gen(gen.draw)
    sub.pool = [shape]

    def no_fresh(_shape):
        raise _NoFreshInputs
    sub.new_input = no_fresh
    try:
        node = KINDS[name].generate(sub)
    except _NoFreshInputs:
        return None
    if node is None or node.args != (0,) or node.shapes != (shape,):
        return None
    return ("kind", name, node.params)


def _body_step(F, ctx, step, x, outer):
    """One body step in fluidgrad: static builders inside a Program, plain Python in eager mode."""
    name = step[0]
    if name == "tanh":
        return F.tanh(x)
    if name == "sin":
        return F.sin(x)
    if name == "sigmoid":
        return F.sigmoid(x)
    if name == "square_scaled":
        return F.scale(F.square(x), 0.5)
    if name == "scale":
        return F.scale(x, 0.9, 0.1)
    if name == "mul_outer":
        return F.multiply(x, F.tanh(outer[step[1]]))
    if name == "add_outer":
        return F.add(x, outer[step[1]])
    if name == "matmul_outer":
        return F.matmul(x, F.tanh(outer[step[1]]))
    if name == "kind":
        return KINDS[step[1]].fluid(F, ctx, Node(step[1], (0,), step[2], (tuple(x.shape),)), x)
    if name == "while":
        return _fluid_loop(F, ctx, step[1], step[2], x, outer)
    if name == "cond":
        return _fluid_branch(F, ctx, step[1], step[2], x, outer)
    raise ValueError(name)


def _run_body(F, ctx, body, x, outer):
    for step in body:
        x = _body_step(F, ctx, step, x, outer)
    return x


def _fluid_loop(F, ctx, trips, body, x, outer):
    if not ctx.static:
        for _ in range(trips):
            x = _run_body(F, ctx, body, x, outer)
        return x
    from fluidgrad.static import nn
    i = F.full([1], 0, "int64")
    limit = F.full([1], trips, "int64")

    def loop(i, v):
        return [_apply(F, "increment", {"X": i}, {"step": 1.0}), _run_body(F, ctx, body, v, outer)]

    return nn.while_loop(lambda i, v: F.less_than(i, limit), loop, [i, x])[1]


def _fluid_branch(F, ctx, body, else_body, x, outer):
    if not ctx.static:
        taken = float(F.sum(x).numpy()) > COND_THRESHOLD
        return _run_body(F, ctx, body if taken else else_body, x, outer)
    from fluidgrad.static import nn
    pred = F.greater_than(F.sum(x), F.full([], COND_THRESHOLD, x.dtype))
    return nn.cond(pred, lambda: _run_body(F, ctx, body, x, outer), lambda: _run_body(F, ctx, else_body, x, outer))


def _torch_body(T, body, x, outer):
    table = {"tanh": T.tanh, "sin": T.sin, "sigmoid": T.sigmoid,
             "square_scaled": lambda v: 0.5 * v * v, "scale": lambda v: v * 0.9 + 0.1}
    for step in body:
        name = step[0]
        if name in table:
            x = table[name](x)
        elif name == "mul_outer":
            x = x * T.tanh(outer[step[1]])
        elif name == "add_outer":
            x = x + outer[step[1]]
        elif name == "matmul_outer":
            x = T.matmul(x, T.tanh(outer[step[1]]))
        elif name == "kind":
            x = KINDS[step[1]].torch(T, Node(step[1], (0,), step[2], (tuple(x.shape),)), x)
        elif name == "while":
            for _ in range(step[1]):
                x = _torch_body(T, step[2], x, outer)
        elif name == "cond":
            x = _torch_body(T, step[1] if float(x.detach().sum()) > COND_THRESHOLD else step[2], x, outer)
    return x


def _draw_body(gen, shape, depth=0):
    steps = []
    for _ in range(gen.draw(st.integers(1, 3))):
        choice = gen.draw(st.integers(0, 9))
        if choice <= 1:
            outer = gen.pick(lambda s: _broadcasts_to(s, shape), fresh=lambda: gen.draw(broadcast_into(shape)))
            steps.append((gen.draw(st.sampled_from(["mul_outer", "add_outer"])), outer))
        elif choice == 2 and shape:
            square = (shape[-1], shape[-1])
            steps.append(("matmul_outer", gen.pick(lambda s: s == square, fresh=lambda: square)))
        elif choice == 3 and depth < MAX_NESTING:
            steps.append(("while", gen.draw(st.integers(1, 2)), _draw_body(gen, shape, depth + 1)))
        elif choice == 4 and depth < MAX_NESTING:
            steps.append(("cond", _draw_body(gen, shape, depth + 1), _draw_body(gen, shape, depth + 1)))
        elif choice in (5, 6) and (step := _draw_body_kind(gen, shape)) is not None:
            steps.append(step)
        else:
            steps.append((gen.draw(st.sampled_from(BODY_UNARY)),))
    return tuple(steps)


def _outer_in(body):
    found = set()
    for step in body:
        if step[0] in ("mul_outer", "add_outer", "matmul_outer"):
            found.add(step[1])
        elif step[0] == "while":
            found |= _outer_in(step[2])
        elif step[0] == "cond":
            found |= _outer_in(step[1]) | _outer_in(step[2])
    return found


def _outer_values(node):
    return sorted(_outer_in(node.p("body") or ()) | _outer_in(node.p("else_body") or ()))


def body_kinds(body) -> set[str]:
    found = set()
    for step in body:
        found.add(step[1] if step[0] == "kind" else step[0])
        for part in step[1:] if step[0] != "kind" else ():
            if isinstance(part, tuple):
                found |= body_kinds(part)
    return found


def control_flow_available() -> bool:
    try:
        from fluidgrad.static import nn
    except ImportError:
        return False
    return hasattr(nn, "while_loop") and hasattr(nn, "cond") and _has_op("increment")


def _has_op(name):
    from fluidgrad.ops.registry import registered_ops
    return name in registered_ops()


def _while_fluid(F, ctx, n, x, *outer_vals):
    outer = dict(zip(_outer_values(n), outer_vals))
    return _fluid_loop(F, ctx, n.p("trips"), n.p("body"), x, outer)


def _while_torch(T, n, x, *outer_vals):
    return _torch_body(T, (("while", n.p("trips"), n.p("body")),), x, dict(zip(_outer_values(n), outer_vals)))


@kind("while", ("while",), _while_fluid, _while_torch, weight=2)
def _gen_while(gen):
    if not control_flow_available():
        return None
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    node = Node("while", (x,), (("trips", gen.draw(st.integers(1, 3))), ("body", _draw_body(gen, shape))), (shape,))
    return Node("while", (x, *_outer_values(node)), node.params, (shape,))


def _cond_fluid(F, ctx, n, x, *outer_vals):
    outer = dict(zip(_outer_values(n), outer_vals))
    return _fluid_branch(F, ctx, n.p("body"), n.p("else_body"), x, outer)


def _cond_torch(T, n, x, *outer_vals):
    return _torch_body(T, (("cond", n.p("body"), n.p("else_body")),), x, dict(zip(_outer_values(n), outer_vals)))


@kind("cond", ("conditional_block", "select_input"), _cond_fluid, _cond_torch, weight=2)
def _gen_cond(gen):
    if not control_flow_available():
        return None
    x = gen.pick(lambda s: len(s) >= 1)
    shape = gen.pool[x]
    node = Node("cond", (x,), (("body", _draw_body(gen, shape)), ("else_body", _draw_body(gen, shape))), (shape,))
    return Node("cond", (x, *_outer_values(node)), node.params, (shape,))


# ---------------------------------------------------------------- the strategy

def kind_names(control_flow: bool = True) -> list[str]:
    names = []
    for name, k in KINDS.items():
        if name in ("while", "cond") and not (control_flow and control_flow_available()):
            continue
        names.extend([name] * k.weight)
    return names


@st.composite
def programs(draw, max_ops: int = 12, control_flow: bool = True) -> Spec:
    gen = Gen(draw)
    for _ in range(draw(st.integers(1, 2))):
        gen.new_input(draw(shapes()))
    names = kind_names(control_flow)
    for _ in range(draw(st.integers(1, max_ops))):
        node = KINDS[draw(st.sampled_from(names))].generate(gen)
        if node is not None:
            gen.add(node)
    n_values = len(gen.pool)
    computed = [v for v in range(n_values) if gen.nodes[_node_of(gen, v)].kind != "input"]
    stop = frozenset(v for v in computed if draw(st.integers(0, 7)) == 0)
    terms = {n_values - 1} | {v for v in range(n_values - 1) if draw(st.integers(0, 3)) == 0}
    return Spec(gen.nodes, stop, tuple(sorted(terms)), draw(st.integers(0, 2**31 - 1)),
                use_append_backward=draw(st.booleans()))


def _node_of(gen: Gen, value: int) -> int:
    count = 0
    for i, n in enumerate(gen.nodes):
        count += len(n.shapes)
        if value < count:
            return i
    raise IndexError(value)


# ---------------------------------------------------------------- realizing a spec

def input_values(spec: Spec) -> dict[int, np.ndarray]:
    """The float64 value of every input node (by pool index), drawn from the spec's seed."""
    rng = np.random.default_rng(spec.seed)
    values = {}
    for v, (i, _) in enumerate(spec.value_nodes):
        if spec.nodes[i].kind == "input":
            values[v] = rng.uniform(-1.5, 1.5, size=spec.nodes[i].shapes[0])
    return values


def cotangents(spec: Spec) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(spec.seed + 1)
    return {v: rng.uniform(0.5, 1.5, size=spec.shape(v)) for v in spec.loss_terms}


class FluidContext:
    """How a realization makes integer constants (indices, labels) and whether it is static."""

    def __init__(self, F, static: bool, make_int: Callable[[np.ndarray], Any]) -> None:
        self.F = F
        self.static = static
        self.int_input = make_int


def realize(spec: Spec, leaf: Callable[[int, np.ndarray | None], Any], apply_kind: Callable[[Kind, Node, list], Any],
            stop: Callable[[Any], Any], frozen: dict[int, np.ndarray] | None = None) -> list[Any]:
    """Walk the spec: `leaf(value_index, frozen_value_or_None)` makes inputs (and frozen
    values), `apply_kind` computes a node, `stop` marks a value stop_gradient."""
    frozen = frozen or {}
    values: list[Any] = []
    for node in spec.nodes:
        start = len(values)
        if node.kind == "input":
            values.append(leaf(start, None))
            continue
        out = apply_kind(KINDS[node.kind], node, [values[a] for a in node.args])
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        assert len(out) == len(node.shapes), (node, len(out))
        for k, value in enumerate(out):
            v = start + k
            if v in frozen:
                values.append(leaf(v, frozen[v]))
            else:
                values.append(stop(value) if v in spec.stop else value)
    return values


def smooth(spec: Spec) -> bool:
    return all(KINDS[n.kind].smooth for n in spec.nodes if n.kind != "input")


def torch_ops_available(spec: Spec) -> bool:
    return all(KINDS[n.kind].torch is not None for n in spec.nodes if n.kind != "input")


def fmt_float(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.6g}"


import fuzz_selection  # noqa: E402,F401  (more kinds: selection, indexing, shape building)
