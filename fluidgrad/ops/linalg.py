"""Linear-algebra ops: einsum (bmm, outer and linear are matmul and broadcasting).

The einsum op takes an explicit equation ("ij,jk->ik": no ellipsis, an output after "->");
`fluidgrad.einsum` rewrites Paddle's and NumPy's shorthand into that form, so the op's shape
rule and gradient deal with one spelling only. The gradient of each operand is itself an
einsum (of the output gradient with the other operands), so grad of grad comes free.
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
            known = sizes.get(letter, -1)
            if known != -1 and size != -1 and known != size:
                raise ctx.shape_error(f"equation {equation!r}: index {letter!r} is {known} in one operand and "
                                      f"{size} in {ctx.describe('Operands', i)}")
            if known == -1:
                sizes[letter] = size
    missing = [c for c in output if c not in sizes]
    if missing or len(set(output)) != len(output):
        raise ctx.shape_error(f"equation {equation!r}: output indices must be distinct and appear in an input")
    ctx.set_output("Out", [sizes[c] for c in output], dtypes[0])


def _einsum_grad(g: GradBuilder):
    operands, equation = g.input("Operands"), g.attr("equation")
    subscripts, output = parse_equation(equation)
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
        if kept != subs:  # indices summed within this operand alone: broadcast back over them
            axes = [k for k, c in enumerate(subs) if c not in present]
            grad = g.op("expand_as", {"X": g.op("unsqueeze", {"X": grad}, axes=axes), "Target": operands[i]})
        grads.append(grad)
    g.set_input_grad("Operands", grads)


register_op("einsum", inputs="Operands*", outputs="Out", attrs={"equation": ""}, kernel=_einsum_kernel,
            infer=_einsum_infer, grad=_einsum_grad, doc="Einstein summation with an explicit equation.")
