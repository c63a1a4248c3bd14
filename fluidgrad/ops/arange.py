"""arange: start, start + step, ... below end, with start, end and step given as 0-d tensors
computed at run time (paddle.arange with Tensor arguments, ONNX Range fed by other nodes).
The `range` op takes them as attributes, fixed when the program is built; here the length
is known only at run time (-1). No gradient, as torch.arange has none."""
from __future__ import annotations

import math

import numpy as np

from .registry import NO_GRADIENT, register_op


def _arange_kernel(start, end, step):
    start, end, step = (np.asarray(v).reshape(()) for v in (start, end, step))
    if step == 0:
        raise ValueError("arange: step must not be 0")
    count = max(0, math.ceil((float(end) - float(start)) / float(step)))
    wide = np.int64 if start.dtype.kind in "iub" else np.float64  # bfloat16 is kind "V"
    return (start.astype(wide) + np.arange(count, dtype=wide) * step.astype(wide)).astype(start.dtype)


def _arange_infer(ctx):
    dtype = ctx.dtype("Start")
    for slot in ("Start", "End", "Step"):
        if ctx.dtype(slot) != dtype or int(np.prod(ctx.shape(slot))) not in (1, -1):
            raise ctx.shape_error(f"Start, End and Step must be single values of one dtype, got "
                                  f"{ctx.describe('Start')}, {ctx.describe('End')}, {ctx.describe('Step')}")
    if dtype == "bool":
        raise ctx.dtype_error(f"counts in integers or floats, got {ctx.describe('Start')}")
    ctx.set_output("Out", [-1], dtype)


register_op("arange", inputs="Start End Step", outputs="Out", kernel=_arange_kernel, infer=_arange_infer,
            grad=NO_GRADIENT, doc="start, start + step, ... below end, all three given as tensors at run time.")
