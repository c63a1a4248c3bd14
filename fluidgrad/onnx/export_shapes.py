"""Shape reads of dynamic axes when `onnx.export` traces eager code.

Tracing runs the function on the example, so `t.shape[0]` is the example's size; written into
an op's attribute it would fix an axis declared dynamic. So `export` traces once more with
every dynamic input axis one longer (`probe_inputs`; twice as long when the function cannot
run one longer, e.g. `split(x, 2)` of an even batch) and compares the two programs
(`find_shape_reads`). An attribute that changed with the size is a shape read:
- a `fill_constant` whose value is that size in both traces (`x / t.shape[0]`) and an entry of
  a `reshape` or `expand` shape that is (`x.reshape([t.shape[0], -1])`, `expand_as(y, t)`) are
  written as the size read from the input at run time (Shape, Gather), as PyTorch's tracer
  records them;
- a `slice` bound that is the sliced axis's size less a constant in both traces (`x[-1]`, which
  indexing writes as starts=[n - 1], ends=[n]) is written counted from the end (-1, to the end);
- a `split` into `chunks` pieces (`chunk(x, 2)`), cut at ceil(n / chunks) in both traces, is
  ONNX's Split into that many outputs, which cuts the same way at run time;
- a `scale` by a count of a dynamic axis k * n + m, or by its reciprocal (var / std's
  1 / (n - 1)), is that count computed at run time; a third trace (the axes two longer) checks
  the rule, so that a count like n * n (a mean over a batch-by-batch matrix) is refused;
- any other change (a loop run `t.shape[0]` times, a constant Tensor of that length) is refused,
  naming the op, rather than exported with the example's size baked in.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..eager import Tensor
from ..framework import Block, Operator, Program
from .errors import OnnxExportError


SHAPE_OPS = {"reshape": "Reshape", "expand": "Expand"}  # ops whose `shape` attribute may hold size reads


@dataclass(frozen=True)
class DimRead:
    """The run-time size of `axis` of the ONNX input `feed`."""

    feed: str
    axis: int


@dataclass(frozen=True)
class CountRead:
    """k * size + m of a dynamic axis at run time, or its reciprocal; `index` is the op's place in
    the global block (where the third trace checks it)."""

    dim: DimRead
    k: int
    m: int
    reciprocal: bool
    index: int

    def value(self, size: int) -> float:
        count = self.k * size + self.m
        return (1.0 / count if count else float("inf")) if self.reciprocal else float(count)


@dataclass
class ShapeReads:
    """What the exporter writes as run-time sizes, keyed by the op's first output name."""

    fill: dict[str, DimRead] = field(default_factory=dict)               # fill_constant -> its value
    shape: dict[str, dict[int, DimRead]] = field(default_factory=dict)    # reshape / expand -> shape entries
    slice: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)  # (attr, entry) -> from the end
    scale: dict[str, CountRead] = field(default_factory=dict)              # scale -> its factor, counted
    chunks: dict[str, int] = field(default_factory=dict)                   # chunk of a split -> its cut axis
    outputs: dict[int, list[int]] = field(default_factory=dict)           # output index -> axes that follow
    variables: dict[str, list[int]] = field(default_factory=dict)         # variable -> axes that follow


def probe_inputs(tensors: Sequence[Tensor], dynamic: dict[int, list[int]], longer: int = 1,
                 times: int = 1) -> list[Tensor]:
    """The example inputs with every dynamic axis `times` as long and then `longer` longer (its
    values repeated cyclically)."""
    probes = []
    for index, tensor in enumerate(tensors):
        data = tensor._array
        for axis in dynamic.get(index, ()):
            size = data.shape[axis]
            if size:
                data = np.take(data, np.arange(size * times + longer) % size, axis=axis)
            else:
                data = np.zeros(data.shape[:axis] + (longer,) + data.shape[axis + 1:], data.dtype)
        probes.append(Tensor(np.ascontiguousarray(data), stop_gradient=tensor.stop_gradient))
    return probes


def find_shape_reads(first: Any, second: Any, feeds: list[str], dynamic: dict[int, list[int]],
                     sizes: tuple[list[tuple[int, ...]], list[tuple[int, ...]]]) -> ShapeReads:
    """Compare two traces (`_TracedProgram`s of the example and of `probe_inputs`): the shape
    reads the exporter can write, or an OnnxExportError naming the first it cannot."""
    dims = [(DimRead(feeds[i], axis), sizes[0][i][axis], sizes[1][i][axis])
            for i, axes in dynamic.items() for axis in axes]
    reads = ShapeReads()
    _compare_blocks(first.program, second.program, dims, reads)
    _compare_captured(first.captured, second.captured)
    reads.variables = _following_axes(first, second)
    for name, axis in reads.chunks.items():  # every chunk's size follows, also where it did not change
        reads.variables[name] = sorted(set(reads.variables.get(name, [])) | {axis})
    for index, (out_a, out_b) in enumerate(zip(first.outputs, second.outputs)):
        axes = [axis for axis, (a, b) in enumerate(zip(out_a.shape, out_b.shape))
                if a != b or axis == reads.chunks.get(out_a.name)]
        if axes:  # an output axis that follows a dynamic input axis is dynamic too
            reads.outputs[index] = axes
    return reads


def _compare_blocks(first: Program, second: Program, dims: list, reads: ShapeReads) -> None:
    names = (_var_names(first), _var_names(second))
    if len(first.blocks) != len(second.blocks):
        raise _refusal("the traced program has a different number of blocks at another size of a dynamic axis")
    for block_a, block_b in zip(first.blocks, second.blocks):
        if [op.type for op in block_a.ops] != [op.type for op in block_b.ops]:
            raise _refusal(f"the traced program's ops change with the size of a dynamic axis (block "
                           f"{block_a.idx}: {_op_types(block_a)} vs {_op_types(block_b)}), e.g. a Python "
                           f"loop over t.shape[i]")
        for index, (op_a, op_b) in enumerate(zip(block_a.ops, block_b.ops)):
            sizes = [_input_shape(block, op) for block, op in ((block_a, op_a), (block_b, op_b))]
            _compare_op(op_a, op_b, (block_a.idx, index), dims, reads, names, sizes)


def _input_shape(block: Block, op: Operator) -> tuple[int, ...]:
    """The shape of the op's X (the tensor a slice or split cuts), () when it has none."""
    names = op.inputs.get("X") or []
    var = block._find_var_recursive(names[0]) if names else None
    return tuple(var.shape) if var is not None else ()


def _compare_op(op_a: Operator, op_b: Operator, place: tuple[int, int], dims: list, reads: ShapeReads,
                names: tuple[set[str], set[str]], sizes: list[tuple[int, ...]]) -> None:
    block = place[0]
    for name in sorted(set(op_a.attrs) | set(op_b.attrs)):
        a, b = op_a.attrs.get(name), op_b.attrs.get(name)
        if _same(a, b, names):
            continue
        out = op_a.output_arg_names[0] if op_a.output_arg_names else ""
        if block == 0 and _read_of_a_cut(op_a, op_b, name, sizes, reads):
            continue
        if block == 0 and op_a.type == "scale" and name == "scale":
            count = _count_of(a, b, dims, place[1])
            if count is not None:
                reads.scale[out] = count
                continue
        if block == 0 and op_a.type == "fill_constant" and name == "value":
            read = _dim_of(a, b, dims)
            if read is not None and int(np.prod(op_a.attrs["shape"])) == 1:
                reads.fill[out] = read
                continue
        if block == 0 and op_a.type in SHAPE_OPS and name == "shape" and len(a) == len(b):
            entries = {i: _dim_of(x, y, dims) for i, (x, y) in enumerate(zip(a, b)) if x != y}
            if all(read is not None for read in entries.values()):
                reads.shape[out] = entries
                continue
        raise _refusal(f"op {op_a.type} (output {out}) has {name}={a!r} at the example's size and {b!r} "
                       f"with the dynamic axes one longer: it is computed from t.shape[i] (or len(t)), and "
                       f"a size read enters the model only as a whole value (x / t.shape[0]) or as a "
                       f"reshape or expand entry; compute it with tensor ops instead (e.g. fluidgrad.mean over the axis)")


def _following_axes(first: Any, second: Any) -> dict[str, list[int]]:
    """Each variable of the first trace whose size changed with the dynamic axes -> those axes.
    The traces have the same ops (checked by `_compare_blocks`), so variables pair up by the
    inputs fed and the ops' outputs in order. The exporter writes these axes as unknown (-1),
    so that an op reading its input's shape (Resize to a size, ConstantOfShape) reads it at run
    time instead of baking in the example's size."""
    pairs = list(zip(first.input_vars, second.input_vars))
    for block_a, block_b in zip(first.program.blocks, second.program.blocks):
        for op_a, op_b in zip(block_a.ops, block_b.ops):
            pairs += [(block_a._find_var_recursive(a), block_b._find_var_recursive(b))
                      for a, b in zip(op_a.output_arg_names, op_b.output_arg_names)]
    following = {}
    for var_a, var_b in pairs:
        if var_a is None or var_b is None or len(var_a.shape) != len(var_b.shape):
            continue
        axes = [axis for axis, (a, b) in enumerate(zip(var_a.shape, var_b.shape)) if a != b]
        if axes:
            following[var_a.name] = axes
    return following


def mark_unknown_axes(program: Program, variables: dict[str, list[int]]) -> None:
    """Write the axes that follow a dynamic input axis as unknown (-1) in `program` (a copy)."""
    for block in program.blocks:
        for name, var in block.vars.items():
            axes = variables.get(name)
            if axes and len(var.shape) > max(axes):
                var.shape = tuple(-1 if axis in axes else d for axis, d in enumerate(var.shape))


def _compare_captured(first: list, second: list) -> None:
    if len(first) != len(second):
        raise _refusal("the traced function captures a different number of Tensors at another size of a "
                       "dynamic axis")
    for (name, a), (_, b) in zip(first, second):
        if a is not b and (a.shape != b.shape or not np.array_equal(a._array, b._array, equal_nan=True)):
            raise _refusal(f"the constant Tensor {name} (shape {list(a.shape)}) differs with the size of a "
                           f"dynamic axis: it was made from t.shape[i]; build it with tensor ops instead")


def _read_of_a_cut(op_a: Operator, op_b: Operator, name: str, sizes: list[tuple[int, ...]],
                    reads: ShapeReads) -> bool:
    """A slice bound counted from the end of the sliced axis, or a split into even chunks (see
    the module's docstring), recorded in `reads`; False for any other change."""
    a, b = op_a.attrs.get(name), op_b.attrs.get(name)
    out = op_a.output_arg_names[0] if op_a.output_arg_names else ""
    if op_a.type == "slice" and name in ("starts", "ends") and len(a) == len(b):
        axes = op_a.attrs["axes"]
        entries = {}
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y:
                continue
            from_end = [bound - shape[axes[i]] for bound, shape in zip((x, y), sizes)]
            if from_end[0] != from_end[1] or from_end[0] > 0:
                return False
            entries[(name, i)] = from_end[0]
        reads.slice.setdefault(out, {}).update(entries)
        return True
    if op_a.type == "split" and name == "num_or_sections":
        axis, values = op_a.attrs["axis"], (a, b)
        chunks = [v for v in values if isinstance(v, (int, np.integer))]
        if len(op_a.output_arg_names) != len(op_b.output_arg_names) or len(chunks) != 1:
            return False
        if not all(isinstance(v, (int, np.integer)) or list(v) == _chunk_sizes(shape[axis], int(chunks[0]))
                   for v, shape in zip(values, sizes)):
            return False
        reads.chunks.update({name: axis % len(sizes[0]) for name in op_a.output_arg_names})
        return True
    return False


def _chunk_sizes(size: int, chunks: int) -> list[int]:
    """ONNX Split's (and torch.chunk's) cut into `chunks` outputs: ceil(size / chunks) each, the last smaller."""
    step = -(-size // chunks)
    return [min(step, size - i * step) for i in range(chunks)]


def _count_of(a: Any, b: Any, dims: list, index: int) -> CountRead | None:
    """k * size + m (integers) of a dynamic axis that is `a` in the example's trace and `b` in
    the probe's, or whose reciprocal is; the third trace checks it (check_counts)."""
    if not (_is_number(a) and _is_number(b)):
        return None
    for read, size_a, size_b in dims:
        for reciprocal in (False, True):
            if reciprocal and (a == 0 or b == 0):
                continue
            va, vb = (1.0 / a, 1.0 / b) if reciprocal else (float(a), float(b))
            k = (vb - va) / (size_b - size_a)
            m = va - k * size_a
            if round(k) != 0 and _near_int(k) and _near_int(m):
                return CountRead(read, int(round(k)), int(round(m)), reciprocal, index)
    return None


def _near_int(value: float) -> bool:
    return abs(value - round(value)) <= 1e-6 * max(1.0, abs(value))


def check_counts(reads: ShapeReads, third: Any, sizes: dict[DimRead, int]) -> None:
    """Each count read must predict the third trace's value (the dynamic axes two longer): a
    count that is not k * size + m (a mean over a batch-by-batch matrix) is refused."""
    ops = third.program.global_block().ops
    for out, count in reads.scale.items():
        op = ops[count.index] if count.index < len(ops) else None
        got = op.attrs.get("scale") if op is not None and op.type == "scale" else None
        want = count.value(sizes[count.dim])
        if got is None or not np.isclose(float(got), want, rtol=1e-9, atol=0.0):
            raise _refusal(f"op scale (output {out}) scales by {got!r} with the dynamic axes two longer, not "
                           f"{want!r} as a count {count.k} * n + {count.m} of {count.dim.feed} axis "
                           f"{count.dim.axis} would: it is computed from t.shape[i] in another way; compute "
                           f"it with tensor ops instead")


def _dim_of(a: Any, b: Any, dims: list) -> DimRead | None:
    """The dynamic axis whose size is `a` in the example's trace and `b` in the probe's."""
    for read, size_a, size_b in dims:
        if _is_number(a) and _is_number(b) and a == size_a and b == size_b:
            return read
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _same(a: Any, b: Any, names: tuple[set[str], set[str]]) -> bool:
    """Equal attributes; variable names (fresh in each trace) count as equal."""
    if isinstance(a, Block) or isinstance(b, Block):
        return isinstance(a, Block) and isinstance(b, Block) and a.idx == b.idx
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, names) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b, equal_nan=True))
    if isinstance(a, str) and isinstance(b, str):
        return a == b or (a in names[0] and b in names[1])
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _var_names(program: Program) -> set[str]:
    return {name for block in program.blocks for name in block.vars}


def _op_types(block: Block) -> str:
    types = [op.type for op in block.ops]
    return ", ".join(types[:6]) + (", ..." if len(types) > 6 else "")


def _refusal(reason: str) -> OnnxExportError:
    return OnnxExportError(f"onnx.export: cannot keep the dynamic axes dynamic, the model's shape reads "
                           f"depend on the example: {reason}")


# ---------------------------------------------------------------- writing the reads (c: exporter.OpContext)
def _size(c: Any, read: DimRead) -> str:
    """A [1] int64 ONNX value: the run-time size of `read.axis` of the input `read.feed`."""
    shape = c.node("Shape", [c.exporter.read(c.env, c.block, read.feed)])
    return c.node("Gather", [shape, c.const(np.asarray([read.axis], "int64"))])


def export_fill_read(c: Any, read: DimRead) -> None:
    """fill_constant(value=t.shape[axis]) -> the size, cast to the dtype, in the op's shape."""
    size = c.node("Cast", [_size(c, read)], to=c.onnx_dtype(c.attr("dtype")))
    c.node("Reshape", [size, c.const(np.asarray(c.attr("shape"), "int64"))], [c.out("Out")])


def export_shape_reads(c: Any, entries: dict[int, DimRead]) -> None:
    """reshape / expand(shape=[..., t.shape[axis], ...]) -> Reshape / Expand to a shape assembled
    at run time (expand's -1, keep X's size, is a 1 to Expand's broadcasting)."""
    kept = -1 if c.op.type == "reshape" else 1
    pieces = [_size(c, entries[i]) if i in entries else c.const(np.asarray([kept if d == -1 else d], "int64"))
              for i, d in enumerate(c.attr("shape"))]
    c.node(SHAPE_OPS[c.op.type], [c.x("X"), c.node("Concat", pieces, axis=0)], [c.out("Out")])


def export_slice_reads(c: Any, entries: dict[tuple[str, int], int]) -> None:
    """slice with bounds counted from the end of the axis (`x[-1]` traced as starts=[n - 1],
    ends=[n]): -1 for n - 1, the largest int64 (to the end) for n, as ONNX Slice reads them."""
    bounds = {name: [int(v) for v in c.attr(name)] for name in ("starts", "ends")}
    for (name, i), from_end in entries.items():
        bounds[name][i] = from_end if from_end < 0 else np.iinfo(np.int64).max
    inputs = [c.x("X")] + [c.const(np.asarray(v, "int64")) for v in (bounds["starts"], bounds["ends"],
                                                                       c.attr("axes"))]
    strides = c.attr("strides") if c.op.has_attr("strides") else None
    if strides:
        inputs.append(c.const(np.asarray(strides, "int64")))
    c.node("Slice", inputs, [c.out("Out")])


def export_count_read(c: Any, count: CountRead) -> None:
    """scale by k * n + m (or its reciprocal) of a dynamic axis n, computed at run time."""
    dtype = c.dtype_in("X")
    size = c.node("Reshape", [c.node("Cast", [_size(c, count.dim)], to=c.onnx_dtype(dtype)),
                              c.const(np.zeros([0], "int64"))])  # 0-d: a 0-d X stays 0-d
    factor = c.node("Add", [c.node("Mul", [size, c.const(np.asarray(count.k, dtype))]),
                            c.const(np.asarray(count.m, dtype))])
    if count.reciprocal:
        factor = c.node("Reciprocal", [factor])
    bias = c.const(np.asarray(c.attr("bias"), dtype))
    if c.attr("bias_after_scale"):
        c.node("Add", [c.node("Mul", [c.x("X"), factor]), bias], [c.out("Out")])
    else:
        c.node("Mul", [c.node("Add", [c.x("X"), bias]), factor], [c.out("Out")])
