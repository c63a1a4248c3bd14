"""Control-flow ops: `while`, `conditional_block`, their gradients, and what loops need.

A control-flow op holds a sub-block (attr `sub_block`); its kernel hands the op to the
executor's runtime (`executor/control_flow.py`), which owns scopes. The sub-block plan reads through the scope chain and, at
its end, keeps every local and a snapshot of every outer value it read in the scope it ran
in, and writes outer variables with `scope.parent.assign`. So:

* `while` runs each iteration in a fresh step scope whose parent is a loop scope holding
  the op's inputs; outer writes land in the loop scope, and the list of step scopes is the
  op's `StepScopes` output: exactly what the gradient needs, step by step.
* `while_grad` runs the grad block once per step in reverse, in a scope whose parent is
  that step's scope. A loop-carried variable's gradient passes from step to step; the
  gradient of a variable only read in the loop is summed over the steps.
* `conditional_block` runs its sub-block when `Cond` holds and keeps the scope it ran in;
  `conditional_block_grad` runs the grad block there, or gives zeros if the branch did not run.

The loop scope has no parent: `X` lists every outer variable the body reads (nested
sub-blocks included), so a loop is self-contained and its step scopes never see stale
values. A `while` whose condition never turns false runs forever, like the Python loop it
stands for; that is the caller's business.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..framework.dtypes import is_float
from .grad_builder import GradBuilder
from .registry import NO_GRADIENT, register_op

# Variables of type Variable.STEP_SCOPES hold Python objects; their dtype is only a placeholder.
SCOPE_VAR_DTYPE = "uint8"


def _set_like_inputs(ctx: Any, in_slot: str, out_slot: str) -> None:
    for i, (shape, dtype) in enumerate(zip(ctx.shapes(in_slot), ctx.dtypes(in_slot))):
        ctx.set_output(out_slot, shape, dtype, index=i)


def _set_scope_output(ctx: Any, slot: str) -> None:
    ctx.set_output(slot, [], SCOPE_VAR_DTYPE)


# ---------------------------------------------------------------- shared
# The kernels hand the work to the executor's runtime (`rt`, executor/control_flow.py): how a
# sub-block runs, in which scopes, and where its plan leaves the values is the executor's.
def _while_kernel(rt: Any, xs: Sequence[Any], condition: Any, scan_inits: Sequence[Any], scan_ins: Sequence[Any],
                  op: Any, sub_block: Any, scan_vars: Sequence[str], scan_in_vars: Sequence[str]) -> tuple:
    return rt.run_while(xs, condition, scan_inits, scan_ins, op, sub_block, scan_vars, scan_in_vars)


def _while_grad_kernel(rt: Any, xs: Sequence[Any], out_grads: Sequence[Any], step_scopes: list,
                       scan_inits: Sequence[Any], scan_out_grads: Sequence[Any], scan_ins: Sequence[Any], op: Any,
                       sub_block: Any, carried: Sequence[str], x_grad_names: Sequence[str],
                       scan_grad_names: Sequence[str], scan_in_grad_names: Sequence[str]) -> list:
    return rt.run_while_grad(xs, out_grads, step_scopes, scan_inits, scan_out_grads, scan_ins, op, sub_block,
                             carried, x_grad_names, scan_grad_names, scan_in_grad_names)


def _conditional_block_kernel(rt: Any, cond: Any, inputs: Sequence[Any], op: Any, sub_block: Any) -> tuple:
    return rt.run_conditional_block(cond, inputs, op, sub_block)


def _conditional_block_grad_kernel(rt: Any, inputs: Sequence[Any], out_grads: Sequence[Any], branch: Any,
                                   op: Any, sub_block: Any, out_names: Sequence[str],
                                   out_grad_names: Sequence[str], input_grad_names: Sequence[str]) -> list:
    return rt.run_conditional_block_grad(inputs, out_grads, branch, op, sub_block, out_names, out_grad_names,
                                         input_grad_names)


# ---------------------------------------------------------------- while
def _while_infer(ctx: Any) -> None:
    if ctx.dtype("Condition") != "bool":
        raise ctx.dtype_error(f"Condition must be bool, got {ctx.describe('Condition')}")
    shape = ctx.shape("Condition")
    if any(d != 1 for d in shape):
        raise ctx.shape_error(f"Condition must hold one element, got {ctx.describe('Condition')}")
    if ctx.attr("sub_block") is None:
        raise ctx.shape_error("needs a sub_block")
    _set_scope_output(ctx, "StepScopes")
    _infer_scan_outputs(ctx)


def _infer_scan_outputs(ctx: Any) -> None:
    """ScanOut k: ScanInit k's rows, then one row per step of the sub-block variable scan_vars[k]."""
    names, inits = list(ctx.attr("scan_vars") or []), ctx.shapes("ScanInit") if ctx.has_input("ScanInit") else []
    if len(inits) != len(names) or ctx.num_outputs("ScanOut") != len(names):
        raise ctx.shape_error(f"scan_vars {names} needs one ScanInit and one ScanOut each, got "
                              f"{len(inits)} and {ctx.num_outputs('ScanOut')}")
    sub = ctx.attr("sub_block")
    for k, (name, init) in enumerate(zip(names, inits)):
        if not sub.has_var(name):
            raise ctx.shape_error(f"scan_vars[{k}] {name!r} is not a variable of the loop's sub-block {sub.idx}")
        row = sub.var(name)
        if ctx.dtypes("ScanInit")[k] != row.dtype or len(init) != len(row.shape) + 1 or any(
                a != b and -1 not in (a, b) for a, b in zip(init[1:], row.shape)):
            raise ctx.shape_error(f"ScanInit {ctx.describe('ScanInit', k)} must be rows of the scanned {name} "
                                  f"(shape {list(row.shape)}, {row.dtype})")
        ctx.set_output("ScanOut", [-1] + list(row.shape), row.dtype, index=k)
    _check_scan_inputs(ctx, sub)


def _check_scan_inputs(ctx: Any, sub: Any) -> None:
    """ScanIn k: step i finds its row i in the sub-block variable scan_in_vars[k]."""
    names, shapes = list(ctx.attr("scan_in_vars") or []), ctx.shapes("ScanIn") if ctx.has_input("ScanIn") else []
    if len(shapes) != len(names):
        raise ctx.shape_error(f"scan_in_vars {names} needs one ScanIn each, got {len(shapes)}")
    for k, (name, shape) in enumerate(zip(names, shapes)):
        row = sub.var(name) if sub.has_var(name) else None
        if row is None or ctx.dtypes("ScanIn")[k] != row.dtype or len(shape) != len(row.shape) + 1 or any(
                a != b and -1 not in (a, b) for a, b in zip(shape[1:], row.shape)):
            found = f"shape {list(row.shape)}, {row.dtype}" if row is not None else "not in the sub-block"
            raise ctx.shape_error(f"scan_in_vars[{k}] {name!r} ({found}) must be a row of "
                                  f"{ctx.describe('ScanIn', k)}, a variable of the loop's sub-block {sub.idx}")


def _carried(g: Any, out_slot: str, in_slot: str) -> list[str]:
    """Float outputs that are also inputs: their gradient enters and leaves the sub-block."""
    inputs = set(g.input(in_slot))
    return [n for n in g.output(out_slot) if n in inputs and is_float(g.dtype(n))]


def _while_grad_maker(g: GradBuilder) -> None:
    xs, scan_inits = g.input("X"), g.input("ScanInit") or []
    carried = _carried(g, "Out", "X")
    scan_ins = g.input("ScanIn") or []
    scanned, scanned_in = list(g.attr("scan_vars") or []), list(g.attr("scan_in_vars") or [])
    grads = g.op("while_grad", {"X": xs, "Out@GRAD": [g.grad_name(n) for n in carried],
                                "StepScopes": g.output("StepScopes"), "ScanInit": scan_inits or None,
                                "ScanOut@GRAD": g.output_grad("ScanOut") or None, "ScanIn": scan_ins or None},
                 n_out=len(xs) + len(scan_inits) + len(scan_ins), sub_block=g.grad_sub_block, carried=carried,
                 x_grad_names=[g.grad_name(n) for n in xs], scan_grad_names=[g.grad_name(n) for n in scanned],
                 scan_in_grad_names=[g.grad_name(n) for n in scanned_in])
    # the builder records Out@GRAD -> Out for zero-filling; output_grad does that bookkeeping
    g.output_grad("Out")
    g.set_input_grad("X", grads[:len(xs)])
    if scan_inits:
        g.set_input_grad("ScanInit", grads[len(xs):len(xs) + len(scan_inits)])
    if scan_ins:
        g.set_input_grad("ScanIn", grads[len(xs) + len(scan_inits):])


def _while_grad_infer(ctx: Any) -> None:
    _set_like_inputs(ctx, "X", "X@GRAD")
    n = len(ctx.shapes("X"))
    for slot in ("ScanInit", "ScanIn"):
        for shape, dtype in zip(ctx.shapes(slot), ctx.dtypes(slot)):
            ctx.set_output("X@GRAD", shape, dtype, index=n)
            n += 1


register_op("while", inputs="X* Condition ScanInit*? ScanIn*?", outputs="Out* StepScopes ScanOut*?",
            attrs={"sub_block": None, "scan_vars": [], "scan_in_vars": []},
            kernel=_while_kernel, infer=_while_infer, grad=_while_grad_maker, needs_runtime=True, broadcasts=False,
            doc="Runs sub_block while Condition holds; X: every outer variable the body reads or "
                "writes, Out: those it writes (Condition among them), StepScopes: one scope per step. "
                "Scan outputs (ONNX Loop's): ScanOut k is ScanInit k's rows followed by the value of "
                "the sub-block variable scan_vars[k] at the end of each step, one row per step; "
                "scan inputs (ONNX Scan's): step i finds row i of ScanIn k in scan_in_vars[k].")
register_op("while_grad", inputs="X* Out@GRAD* StepScopes ScanInit*? ScanOut@GRAD*? ScanIn*?",
            outputs="X@GRAD*",
            attrs={"sub_block": None, "carried": [], "x_grad_names": [], "scan_grad_names": [],
                   "scan_in_grad_names": []},
            kernel=_while_grad_kernel, infer=_while_grad_infer, grad=NO_GRADIENT, needs_runtime=True,
            doc="Runs the grad block over the step scopes in reverse. `carried`: the outputs that are "
                "also inputs, in Out@GRAD order; their gradient passes from step to step, the "
                "gradients of the other float inputs are summed over steps. Step i's grad block finds "
                "its row of ScanOut@GRAD k in scan_grad_names[k], and leaves row i of ScanIn k's "
                "gradient in scan_in_grad_names[k]. X@GRAD: the gradients of X, then of ScanInit (the "
                "first rows of ScanOut@GRAD), then of ScanIn. Releases the step scopes.")


# ---------------------------------------------------------------- conditional_block
def _conditional_block_infer(ctx: Any) -> None:
    if ctx.dtype("Cond") != "bool" or any(d != 1 for d in ctx.shape("Cond")):
        raise ctx.dtype_error(f"Cond must be a one-element bool, got {ctx.describe('Cond')}")
    if ctx.attr("sub_block") is None:
        raise ctx.shape_error("needs a sub_block")
    _set_scope_output(ctx, "Scope")


def _conditional_block_grad_maker(g: GradBuilder) -> None:
    inputs = g.input("Input")
    out_names = [n for n in g.output("Out") if is_float(g.dtype(n))]
    grads = g.op("conditional_block_grad",
                 {"Input": inputs, "Out@GRAD": [g.grad_name(n) for n in out_names], "Scope": g.output("Scope")},
                 n_out=len(inputs), sub_block=g.grad_sub_block, out_names=out_names,
                 out_grad_names=[g.grad_name(n) for n in out_names],
                 input_grad_names=[g.grad_name(n) for n in inputs])
    g.output_grad("Out")
    g.set_input_grad("Input", grads)


def _conditional_block_grad_infer(ctx: Any) -> None:
    _set_like_inputs(ctx, "Input", "Input@GRAD")


register_op("conditional_block", inputs="Cond Input*?", outputs="Out* Scope", attrs={"sub_block": None},
            kernel=_conditional_block_kernel, infer=_conditional_block_infer,
            grad=_conditional_block_grad_maker, needs_runtime=True,
            doc="Runs sub_block when Cond holds. Input: every outer variable it reads (and the outputs "
                "that have a value before), Out: the outer variables it writes, Scope: the scope it "
                "ran in (None when it did not run).")
register_op("conditional_block_grad", inputs="Input* Out@GRAD* Scope", outputs="Input@GRAD*",
            attrs={"sub_block": None, "out_names": [], "out_grad_names": [], "input_grad_names": []},
            kernel=_conditional_block_grad_kernel, infer=_conditional_block_grad_infer, grad=NO_GRADIENT,
            needs_runtime=True,
            doc="Runs the grad block in the scope conditional_block ran in; zero gradients (or the "
                "output's gradient, for an output that is also an input) when it did not run.")


# ---------------------------------------------------------------- select_input: merging branches
def _mask_index(mask: Any, n: int, op_type: str) -> int:
    array = np.asarray(mask)
    if array.size != 1:
        raise ValueError(f"{op_type}: Mask must hold one element, got shape {list(array.shape)}")
    index = int(array.reshape(-1)[0])
    if not 0 <= index < n:
        raise IndexError(f"{op_type}: Mask {index} is out of range for {n} inputs")
    return index


def _select_input_kernel(xs: Sequence[Any], mask: Any) -> Any:
    return xs[_mask_index(mask, len(xs), "select_input")]


def _check_mask(ctx: Any) -> None:
    dtype = ctx.dtype("Mask")
    if not (dtype == "bool" or dtype.startswith(("int", "uint"))) or any(d != 1 for d in ctx.shape("Mask")):
        raise ctx.dtype_error(f"Mask must be a one-element bool or integer, got {ctx.describe('Mask')}")


def _select_input_infer(ctx: Any) -> None:
    _check_mask(ctx)
    shapes, dtypes = ctx.shapes("X"), ctx.dtypes("X")
    for i in range(1, len(shapes)):
        same_shape = len(shapes[i]) == len(shapes[0]) and all(
            a == b or -1 in (a, b) for a, b in zip(shapes[i], shapes[0]))
        if dtypes[i] != dtypes[0] or not same_shape:
            raise ctx.shape_error(f"inputs must share shape and dtype: {ctx.describe('X', 0)} vs "
                                  f"{ctx.describe('X', i)}")
    merged = [a if a == b else -1 for a, b in zip(*shapes)] if len(shapes) > 1 else list(shapes[0])
    ctx.set_output("Out", merged, dtypes[0])


def _select_input_grad(g: GradBuilder) -> None:
    xs = g.input("X")
    g.set_input_grad("X", g.op("select_input_grad", {"X": g.output_grad("Out"), "Mask": g.input("Mask")},
                               n_out=len(xs), n=len(xs)))


def _select_input_grad_kernel(dout: Any, mask: Any, n: int) -> list:
    index = _mask_index(mask, n, "select_input_grad")
    zeros = np.zeros_like(dout)
    return [dout if i == index else zeros for i in range(n)]


def _select_input_grad_infer(ctx: Any) -> None:
    _check_mask(ctx)
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _select_input_grad_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.op("select_input", {"X": g.output_grad("Out"), "Mask": g.input("Mask")}))


register_op("select_input", inputs="X* Mask", outputs="Out", kernel=_select_input_kernel,
            infer=_select_input_infer, grad=_select_input_grad, broadcasts=False,
            doc="Out = X[Mask]: merges the outputs of the branches of a cond (Mask: bool or int).")
register_op("select_input_grad", inputs="X Mask", outputs="Out*", attrs={"n": 2},
            kernel=_select_input_grad_kernel, infer=_select_input_grad_infer, grad=_select_input_grad_grad,
            doc="Out[Mask] = X, the other n-1 outputs are zeros (the transpose of select_input).")


# ---------------------------------------------------------------- increment
def _increment_kernel(x: Any, step: float) -> Any:
    return x + x.dtype.type(step)


def _increment_infer(ctx: Any) -> None:
    if ctx.dtype("X") == "bool":
        raise ctx.dtype_error(f"cannot increment a bool, got {ctx.describe('X')}")
    ctx.set_output("Out", ctx.shape("X"), ctx.dtype("X"))


def _increment_grad(g: GradBuilder) -> None:
    g.set_input_grad("X", g.output_grad("Out"))


register_op("increment", inputs="X", outputs="Out", attrs={"step": 1.0}, kernel=_increment_kernel,
            infer=_increment_infer, grad=_increment_grad,
            doc="Out = X + step in X's dtype: a loop counter (a new array; X is left alone).")
