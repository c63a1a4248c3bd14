"""lookup_table_v2: the embedding lookup, Paddle's op (slots W, Ids).

Why not a plain `gather`: gather reads a negative index as a row from the end, so a tokenizer's
-1 padding would silently read the last embedding row. The lookup refuses ids outside
[0, rows), as PyTorch's and Paddle's embeddings do. Its gradient is gather's (scatter-add).
"""
from __future__ import annotations

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op


def _lookup_kernel(w, ids):
    rows = w.shape[0]
    if ids.size:
        bad = (ids < 0) | (ids >= rows)
        if bad.any():
            raise IndexError(f"lookup_table_v2 (embedding): Ids holds {int(ids[bad].flat[0])}, outside [0, {rows}) "
                             f"for W of shape {list(w.shape)}; ids must be non-negative row numbers")
    return np.take(w, ids, axis=0)


def _lookup_infer(ctx):
    if not ctx.dtype("Ids").startswith(("int", "uint")):
        raise ctx.dtype_error(f"Ids must be an integer tensor, got {ctx.describe('Ids')}")
    w = ctx.shape("W")
    if not w:
        raise ctx.shape_error(f"W must have at least one axis (the rows), got {ctx.describe('W')}")
    ctx.set_output("Out", list(ctx.shape("Ids")) + list(w[1:]), ctx.dtype("W"))


def _lookup_grad(g: GradBuilder):
    g.set_input_grad("W", g.op("gather_grad", {"X": g.output_grad("Out"), "Index": g.input("Ids"),
                                               "Target": g.input_like("W")}, axis=0))


register_op("lookup_table_v2", inputs="W Ids", outputs="Out", kernel=_lookup_kernel, infer=_lookup_infer,
            grad=_lookup_grad,
            doc="Out = W[Ids] (rows of the table W), refusing ids outside [0, rows): nn.Embedding's lookup.")
