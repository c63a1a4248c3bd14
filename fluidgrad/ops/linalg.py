"""Linear-algebra ops: einsum (bmm, outer and linear are matmul and broadcasting).

The einsum op takes an explicit equation ("ij,jk->ik": no ellipsis, an output after "->");
`fluidgrad.einsum` rewrites Paddle's and NumPy's shorthand into that form, so the op's shape
rule and gradient deal with one spelling only. An index of size 1 in one operand broadcasts
against its size in the others (PyTorch's einsum, NumPy's for '...'), whether it came from an
ellipsis or not. The gradient of each operand is itself an einsum (of the output gradient with
the other operands), summed over the indices the operand broadcast and expanded over those
the others did, so grad of grad comes free.
"""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import float_only


def parse_equation(equation: str) -> tuple[list[str], str]:
    """'ij,jk->ik' -> (['ij', 'jk'], 'ik')."""
    inputs, _, output = equation.partition("->")
    return inputs.split(","), output


def _broadcast_size(a: int, b: int) -> int | None:
    """The size of an index seen with sizes a and b: equal, or 1 against any size (broadcast);
    -1 is unknown (against 1 it stays unknown). None when they cannot broadcast."""
    if a == b or b == 1:
        return a
    if a == 1 or a == -1:
        return b
    return a if b == -1 else None


def index_sizes(subscripts: list[str], shapes: list[tuple[int, ...]]) -> dict[str, int]:
    """Each index's size over the operands, broadcast (KeyError-free: every index of subscripts)."""
    sizes: dict[str, int] = {}
    for subs, shape in zip(subscripts, shapes):
        for letter, size in zip(subs, shape):
            sizes[letter] = size if letter not in sizes else _broadcast_size(sizes[letter], size)
    return sizes


def _einsum_kernel(operands, equation):
    # NumPy's optimised path hands contractions to BLAS (batched ones too): 40x faster at the
    # attention shapes than the plain C loop, whose ~30 µs of planning only small inputs avoid
    optimize = len(operands) > 2 or max(o.size for o in operands) > 4096
    dtype = operands[0].dtype
    if dtype.kind == "V":  # bfloat16 (ml_dtypes): NumPy's einsum has no loop for it; float32 and round
        operands = [o.astype(np.float32) for o in operands]
    out = np.einsum(equation, *operands, optimize=optimize)
    return np.asarray(out, dtype=dtype)


def _einsum_infer(ctx):
    equation = ctx.attr("equation")
    if "->" not in equation or "." in equation:
        raise ctx.shape_error(f"equation {equation!r} must be explicit (an output after '->', no '...'); "
                              f"fluidgrad.einsum writes it so")
    float_only(ctx, "Operands")
    subscripts, output = parse_equation(equation)
    shapes, dtypes = ctx.shapes("Operands"), ctx.dtypes("Operands")
    if len(subscripts) != len(shapes):
        raise ctx.shape_error(f"equation {equation!r} names {len(subscripts)} operands, got {len(shapes)}")
    sizes: dict[str, int] = {}
    for i, (subs, shape) in enumerate(zip(subscripts, shapes)):
        if dtypes[i] != dtypes[0]:
            raise ctx.dtype_error(f"operands must share a dtype: {ctx.describe('Operands', 0)} vs "
                                  f"{ctx.describe('Operands', i)}")
        if len(subs) != len(shape):
            raise ctx.shape_error(f"equation {equation!r}: operand {i} has subscripts {subs!r} but "
                                  f"{ctx.describe('Operands', i)}")
        for letter, size in zip(subs, shape):
            both = size if letter not in sizes else _broadcast_size(sizes[letter], size)
            if both is None:
                raise ctx.shape_error(f"equation {equation!r}: index {letter!r} is {sizes[letter]} in one operand "
                                      f"and {size} in {ctx.describe('Operands', i)} (sizes must match or be 1)")
            sizes[letter] = both
    missing = [c for c in output if c not in sizes]
    if missing or len(set(output)) != len(output):
        raise ctx.shape_error(f"equation {equation!r}: output indices must be distinct and appear in an input")
    ctx.set_output("Out", [sizes[c] for c in output], dtypes[0])


def _einsum_grad(g: GradBuilder):
    operands, equation = g.input("Operands"), g.attr("equation")
    subscripts, output = parse_equation(equation)
    shapes = [tuple(g.shape(o)) for o in operands]
    grads = []
    for i, subs in enumerate(subscripts):
        if not g.needs_input_grad("Operands", i):
            grads.append(None)
            continue
        if len(set(subs)) != len(subs):
            raise NotImplementedError(f"grad of op einsum: operand {i} of {equation!r} repeats an index "
                                      f"(a diagonal); its gradient is not supported")
        others = [s for j, s in enumerate(subscripts) if j != i]
        present = set(output).union(*others)
        kept = "".join(c for c in subs if c in present)
        grad = g.op("einsum", {"Operands": [g.output_grad("Out")] + [o for j, o in enumerate(operands) if j != i]},
                    equation=",".join([output] + others) + "->" + kept)
        grads.append(_fit_to_operand(g, grad, operands[i], subs, kept, _grad_sizes(subscripts, shapes, output, i)))
    g.set_input_grad("Operands", grads)


def _grad_sizes(subscripts: list[str], shapes: list[tuple[int, ...]], output: str, i: int) -> dict[str, int]:
    """The size of each index in operand i's gradient einsum: the output's (every operand
    broadcast) for output indices, the other operands' for the rest."""
    everyone = index_sizes(subscripts, shapes)
    others = index_sizes([s for j, s in enumerate(subscripts) if j != i], [s for j, s in enumerate(shapes) if j != i])
    return {c: everyone[c] if c in output else others[c] for c in set(output).union(others)}


def _fit_to_operand(g: GradBuilder, grad, operand, subs: str, kept: str, sizes: dict[str, int]):
    """The gradient einsum (indices `kept`) brought to the operand's shape: summed over the
    indices the operand broadcast (size 1 there, more in the gradient), then broadcast back over
    those it has alone or larger than the gradient's (the others' size 1)."""
    own = dict(zip(subs, g.shape(operand)))
    summed = [k for k, c in enumerate(kept) if own[c] == 1 and sizes[c] != 1]
    if summed:
        grad = g.op("reduce_sum", {"X": grad}, axis=summed, keepdim=True)
    if kept != subs:  # indices summed within this operand alone: broadcast back over them
        grad = g.op("unsqueeze", {"X": grad}, axes=[k for k, c in enumerate(subs) if c not in kept])
    if kept != subs or any(own[c] != 1 and sizes[c] == 1 for c in kept):
        grad = g.op("expand_as", {"X": grad, "Target": operand})
    return grad


register_op("einsum", inputs="Operands*", outputs="Out", attrs={"equation": ""}, kernel=_einsum_kernel,
            infer=_einsum_infer, grad=_einsum_grad, doc="Einstein summation with an explicit equation.")
