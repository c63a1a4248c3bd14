"""Small compositions the converters share (casts, integer fallbacks, axes)."""
from __future__ import annotations

from typing import Any, Sequence

from ..framework import Variable
from .errors import ValueRequiredError

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")


def cast(ctx: Any, var: Variable, dtype: str) -> Variable:
    return var if var.dtype == dtype else ctx.op("cast", {"X": var}, dtype=dtype)


def via_float(ctx: Any, var: Variable, build: Any) -> Variable:
    """Run a float-only op on integer input through float64 (exact below 2**53), casting back."""
    if var.dtype.startswith("float"):
        return build(var)
    return cast(ctx, build(cast(ctx, var, "float64")), var.dtype)


def normalize_axes(axes: Sequence[int], rank: int) -> list[int]:
    return [int(a) + rank if int(a) < 0 else int(a) for a in axes]


def binary(ctx: Any, op_type: str, x: Variable, y: Variable) -> Variable:
    return ctx.op(op_type, {"X": x, "Y": y})


def full(ctx: Any, shape: Sequence[int], value: float, dtype: str) -> Variable:
    return ctx.op("fill_constant", {}, shape=[int(d) for d in shape], value=float(value), dtype=dtype)


def mul_scalar(ctx: Any, var: Variable, value: float) -> Variable:
    return binary(ctx, "elementwise_mul", var, ctx.scalar(value, var.dtype))


def add_scalar(ctx: Any, var: Variable, value: float) -> Variable:
    return binary(ctx, "elementwise_add", var, ctx.scalar(value, var.dtype))


def axes_input(ctx: Any, attr_until: int, index: int = 1) -> list[int] | None:
    """Axes given as an attribute before opset `attr_until`, as an input from then on."""
    if ctx.opset < attr_until:
        axes = ctx.attr("axes")
        return None if axes is None else list(axes)
    if not ctx.has_input(index):
        return None
    return [int(a) for a in ctx.const(index, "axes").reshape(-1)]


def required_const(ctx: Any, index: int, what: str) -> Any:
    """`ctx.const(index, what)`; when the value is computed from graph inputs fed at run time
    (CenterCropPad's pads from its `shape` input), the error names the first such graph input,
    so that the backend can bind it and fold the computation."""
    try:
        return ctx.const(index, what)
    except ValueRequiredError as exc:
        source = _upstream_graph_input(ctx, ctx.node.input[index])
        if source is None or source == exc.input_name:
            raise
        raise ValueRequiredError(f"{exc} (it is computed from graph input {source!r})", source,
                                 exc.graph_inputs or [source], exc.structure) from None


def _upstream_graph_input(ctx: Any, name: str) -> str | None:
    """The first graph input, fed at run time, that the main graph computes `name` from."""
    graph = ctx.graph
    if graph.parent is not None:
        return None
    producers = {out: node for node in graph.graph.node for out in node.output}
    fed = {value.name for value in graph.graph.input} - set(graph.consts) - {t.name for t in graph.graph.initializer}
    seen, stack = set(), [name]
    while stack:
        current = stack.pop()
        if current in seen or not current:
            continue
        seen.add(current)
        if current in fed:
            return current
        node = producers.get(current)
        if node is not None:
            stack.extend(reversed(list(node.input)))
    return None
