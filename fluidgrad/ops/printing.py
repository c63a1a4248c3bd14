"""`print`: Paddle's debugging op (paddle.static.Print). It writes its input's name, shape, dtype
and first values to stdout each time the program runs it, and passes the input through; its
gradient passes through too, printed again when print_phase is "backward" or "both".

The op has a side effect, so it is never an identity to fold away: the executor runs every op of
a block in order, and this one's kernel prints before returning its input unchanged."""
from __future__ import annotations

import sys
from collections import Counter

import numpy as np

from .grad_builder import GradBuilder
from .registry import register_op
from .shape_rules import same_as

PHASES = ("forward", "backward", "both")
_printed: Counter = Counter()   # print_id -> times printed (first_n)


def format_value(x: np.ndarray, message: str, name: str, summarize: int, show_name: bool, show_type: bool,
                 show_shape: bool) -> str:
    """Paddle's layout: the message, then the variable's name, shape, dtype and (up to `summarize`,
    -1 all) values, one per line."""
    lines = [message] if message else []
    if show_name:
        lines.append(f"Variable: {name}")
    if show_shape:
        lines.append(f"  - shape: {list(x.shape)}")
    if show_type:
        lines.append(f"  - dtype: {x.dtype}")
    flat = np.asarray(x).reshape(-1)
    shown = flat if summarize < 0 else flat[:summarize]
    lines.append(f"  - data: [{' '.join(str(v) for v in shown)}{' ...' if len(shown) < len(flat) else ''}]")
    return "\n".join(lines)


def _print_kernel(x: np.ndarray, first_n: int = -1, message: str = "", summarize: int = 20,
                  print_tensor_name: bool = True, print_tensor_type: bool = True, print_tensor_shape: bool = True,
                  print_phase: str = "both", is_forward: bool = True, var_name: str = "", print_id: int = 0
                  ) -> np.ndarray:
    wanted = print_phase in ("both", "forward" if is_forward else "backward")
    if wanted and (first_n < 0 or _printed[print_id, is_forward] < first_n):
        _printed[print_id, is_forward] += 1
        name = var_name if is_forward else f"{var_name}@GRAD"
        sys.stdout.write(format_value(x, message, name, int(summarize), print_tensor_name, print_tensor_type,
                                      print_tensor_shape) + "\n")
        sys.stdout.flush()
    return x


def _print_infer(ctx) -> None:
    if ctx.attr("print_phase") not in PHASES:
        raise ValueError(f"op print: print_phase must be one of {list(PHASES)}, got {ctx.attr('print_phase')!r}")
    same_as("In", "Out")(ctx)


def _print_grad(g: GradBuilder) -> None:
    """The output gradient passes through, printed by a print op of its own in the backward phase."""
    attrs = {name: g.attr(name) for name in _ATTRS}
    g.set_input_grad("In", g.op("print", {"In": g.output_grad("Out")}, **{**attrs, "is_forward": False}))


_ATTRS = {"first_n": -1, "message": "", "summarize": 20, "print_tensor_name": True, "print_tensor_type": True,
          "print_tensor_shape": True, "print_phase": "both", "is_forward": True, "var_name": "", "print_id": 0}

register_op("print", inputs="In", outputs="Out", attrs=dict(_ATTRS), kernel=_print_kernel, infer=_print_infer,
            grad=_print_grad, doc="Prints In (name, shape, dtype, values) at run time and passes it through.")
