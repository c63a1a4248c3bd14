"""Running one op now on Tensors: check it with its shape rule, run its kernel, record a Node.

`eager_apply` checks the inputs with the op's registered shape rule, as static mode does
when it appends the op (cached, see infer.py), runs the kernel at once and, only when some
input needs a gradient and grad mode is on, records a `Node`. `apply_binary` and
`apply_unary` are the same path without building dicts (Tensor's operators); all three end
in `_run`, the one step that runs the kernel and finishes. `output_check` is the hook the NaN/Inf check installs (`set_output_check`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..framework import Variable
from ..framework.dtypes import carries_gradient
from ..framework.errors import FluidgradError, IndexRangeError, InvalidValueError
from .infer import attr_key, cache_key, key_or_none, run_rule
from .mode import all_default, state
from .node import _CALLS, CustomOp, OpCall, new_node, op_call, record_node
from .tensor import DataView, Tensor, op_output

_ndarray = np.ndarray
_asarray = np.asarray

# called as output_check(call, args, out) after every kernel, forward and backward, when set
output_check: Callable[[OpCall, Sequence[Any], Any], None] | None = None


def set_output_check(check: Callable[[OpCall, Sequence[Any], Any], None] | None) -> None:
    """Install (or with None remove) the check run on every kernel's outputs."""
    global output_check
    output_check = check


def _as_tensor(value: Any, op_type: str, slot: str) -> Tensor:
    if isinstance(value, Tensor):
        # x.data: the node keeps the value read now (unless it is a leaf wanting its own gradient)
        return value.snapshot() if isinstance(value, DataView) and (value.stop_gradient or value._node) else value
    if isinstance(value, np.ndarray):
        return Tensor(value)
    if isinstance(value, Variable):
        raise TypeError(f"{op_type}: input {slot} is the static Variable {value.name}, mixed with eager "
                        f"Tensors; use one mode per computation (or jit.to_static)")
    raise TypeError(f"{op_type}: input {slot} must be a Tensor, got {type(value).__name__}")


def _kernel_error(call: OpCall, args: list, attrs: dict, exc: Exception) -> Exception:
    """Name the op, its inputs' shapes and dtypes, and the attributes (the shape rule passed,
    so this is something only the values show, e.g. an index out of range)."""
    parts = []
    for (slot, _), value in zip(call.in_slots, args):
        if isinstance(value, list):
            parts.append(f"{slot}=[{', '.join(f'{list(v.shape)} {v.dtype}' for v in value)}]")
        elif value is not None:
            parts.append(f"{slot}={list(value.shape)} {value.dtype}")
    shown = {k: v for k, v in attrs.items() if not k.startswith("_")}
    message = f"op {call.type} failed in eager mode on inputs {', '.join(parts)} attrs {shown}: " \
              f"{type(exc).__name__}: {exc}"
    kind = exc.__class__ if isinstance(exc, FluidgradError) else IndexRangeError if isinstance(exc, IndexError) \
        else InvalidValueError if isinstance(exc, ValueError) else FluidgradError
    try:
        return kind(message)
    except TypeError:
        return FluidgradError(message)


def _dtype_error(call: OpCall, got: Any, expected: Any) -> FluidgradError:
    return FluidgradError(f"op {call.type}: the kernel computed {got} where the shape rule declares "
                          f"{expected} in eager mode; the op's kernel and rule disagree (a registration bug)")


def eager_apply(op_type: str, inputs: dict, attrs: dict, n_out: int | None = None) -> Any:
    """Run `op_type` now on Tensors; return Tensors shaped like `dispatch.apply_op`'s result."""
    default = all_default.on
    if not default and state.tracer is not None:
        return state.tracer.apply(op_type, inputs, attrs, n_out)
    call = _CALLS.get(op_type) or op_call(op_type)
    if call.needs_runtime:
        raise FluidgradError(f"op {op_type} runs sub-blocks and exists in static mode only; "
                             f"in eager mode write the Python loop or branch directly")
    args: list = []
    tensors = list(map(inputs.get, call.in_names))
    requires = _gather_inputs(call, tensors, args) if call.has_dup_in else _gather_single(call, tensors, args)
    kw = {**call.defaults, **attrs} if attrs else call.defaults
    try:
        expected = call.infer_cache[cache_key(call, args, kw, n_out)]
    except (KeyError, TypeError):  # not seen yet (or an unhashable attribute): run the rule
        expected = run_rule(call, key_or_none(call, args, kw, n_out), args, tensors, kw, n_out)
    return _run(call, args, tuple(tensors), kw, requires and (default or state.grad_enabled), expected)


def _gather_single(call: OpCall, tensors: list, args: list) -> bool:
    """One Tensor (or None) per slot, the common case: fill `args` with their arrays (lifting
    arrays to Tensors in `tensors`); return whether one of them needs a gradient."""
    requires = False
    for i, value in enumerate(tensors):
        if value is None:
            args.append(None)
            continue
        if type(value) is not Tensor:
            value = tensors[i] = _as_tensor(value, call.type, call.in_names[i])
        args.append(value._array)
        if not value.stop_gradient:
            requires = True
    return requires


def _gather_inputs(call: OpCall, tensors: list, args: list) -> bool:
    """`_gather_single` for an op with a duplicable input slot (a list of Tensors)."""
    requires = False
    for i, (slot, dup) in enumerate(call.in_slots):
        value = tensors[i]
        if value is None:
            args.append(None)
        elif dup:
            items = tensors[i] = [v if type(v) is Tensor else _as_tensor(v, call.type, slot) for v in value]
            args.append([t._array for t in items])
            if not requires:
                requires = any(not t.stop_gradient for t in items)
        else:
            if type(value) is not Tensor:
                value = tensors[i] = _as_tensor(value, call.type, slot)
            args.append(value._array)
            if not value.stop_gradient:
                requires = True
    return requires


def _run(call: OpCall, args: Sequence[Any], tensors: tuple, kw: dict, record: bool, expected: Any) -> Any:
    """The one step every path ends in: run the kernel on `args` (the shape rule passed,
    declaring `expected` dtypes), check its outputs (dtype as declared; NaN/Inf when that check
    is on), wrap them in Tensors, and record a node when `record` (some input needs a gradient
    and grad mode is on). A one-output op whose output is small keeps all its
    inputs and builds its Node here (`node.record_node` decides what larger ones keep): this
    runs for every op, and a call more costs a chain of small tensors ~5% per op."""
    try:
        out = call.kernel(*args, **kw) if kw else call.kernel(*args)
    except Exception as exc:
        if call.dtype_keyed:  # the cached verdict saw only the dtypes: the rule names bad shapes
            run_rule(call, None, list(args), tensors, kw, None)
        raise _kernel_error(call, args, kw, exc) from exc
    if output_check is not None:
        output_check(call, args, out)
    if not call.single_out:
        return _wrap_outputs(call, out, kw, tensors, record, expected)
    if type(out) is not _ndarray:
        out = _asarray(out)
    dtype = out.dtype
    # `!=` first: `dtype.name` is a Python-level property in NumPy 2 (~4 us), and arrays made
    # by numba kernels carry an equal dtype that is not NumPy's canonical instance
    if dtype is not expected and expected is not None and dtype != expected and dtype.name != expected.name:
        raise _dtype_error(call, dtype, expected)
    if record and carries_gradient(dtype):
        if out.nbytes < call.keep_all_below:
            return op_output(out, False, new_node(call, kw, tensors, (out,)))
        return op_output(out, False, record_node(call, kw, tensors, (out,)))
    return op_output(out)


def apply_binary(op_type: str, x: Tensor, y: Tensor) -> Tensor:
    """`eager_apply` for an attribute-less binary op (X, Y -> Out) on two Tensors, without
    building dicts: the path of `a * b`, `a + b`... (Tensor's operators). Its rule-cache key is
    `infer.cache_key`'s for two inputs and the default attributes, built inline."""
    default = all_default.on
    if not default and state.tracer is not None:
        return state.tracer.apply(op_type, {"X": x, "Y": y}, {}, None)
    call = _CALLS.get(op_type) or op_call(op_type)
    xd = x._array
    yd = y._array
    try:
        expected = call.infer_cache[(xd.dtype, yd.dtype, call.default_attr_key) if call.dtype_keyed else
                                    (xd.shape, xd.dtype, yd.shape, yd.dtype, call.default_attr_key)]
    except KeyError:  # not seen yet: run the rule
        expected = run_rule(call, key_or_none(call, [xd, yd], call.defaults, None), [xd, yd], (x, y),
                            call.defaults, None)
    return _run(call, (xd, yd), (x, y), call.defaults,
                (not x.stop_gradient or not y.stop_gradient) and (default or state.grad_enabled), expected)


def apply_unary(op_type: str, x: Tensor, attrs: dict) -> Tensor:
    """`eager_apply` for a one-input, one-output op given all its attributes (e.g. `scale`)."""
    default = all_default.on
    if not default and state.tracer is not None:
        return state.tracer.apply(op_type, {"X": x}, attrs, None)
    call = _CALLS.get(op_type) or op_call(op_type)
    xd = x._array
    try:
        expected = call.infer_cache[(xd.shape, xd.dtype, attr_key(call, attrs, None) if call.infer_attrs else ())]
    except (KeyError, TypeError):
        expected = run_rule(call, key_or_none(call, [xd], attrs, None), [xd], (x,), attrs, None)
    return _run(call, (xd,), (x,), attrs, not x.stop_gradient and (default or state.grad_enabled), expected)


def _wrap_outputs(call: OpCall, out: Any, kw: dict, tensors: list, record: bool, expected: Any) -> Any:
    flat, ranges = _flatten_outputs(call, out)
    if expected is not None:
        for array, dtype in zip(flat, expected):
            if dtype is not None and array.dtype != dtype and array.dtype.name != dtype.name:
                raise _dtype_error(call, array.dtype, dtype)
    record = record and any(carries_gradient(a.dtype) for a in flat)
    node = record_node(call, kw, tensors, tuple(flat), ranges) if record else None
    outs = [Tensor(a, not (record and carries_gradient(a.dtype)), node if carries_gradient(a.dtype) else None, i)
            for i, a in enumerate(flat)]
    values = []
    pos = 0
    for slot, dup in call.out_slots:
        if dup:
            stop = ranges[slot][1]
            values.append(outs[pos:stop])
            pos = stop
        else:
            values.append(outs[pos])
            pos += 1
    return values[0] if len(values) == 1 else tuple(values)


def _flatten_outputs(call: OpCall, out: Any) -> tuple[list[np.ndarray], dict | None]:
    """The kernel's outputs as one list of arrays, and each duplicable slot's (start, stop) in it."""
    per_slot = out if len(call.out_slots) > 1 else (out,)
    if len(per_slot) != len(call.out_slots):
        raise FluidgradError(f"op {call.type}: kernel returned {len(per_slot)} outputs for slots "
                             f"{[s for s, _ in call.out_slots]}")
    flat: list[np.ndarray] = []
    ranges: dict[str, tuple[int, int]] | None = {} if call.has_dup_out else None
    for (slot, dup), value in zip(call.out_slots, per_slot):
        start = len(flat)
        if dup:
            flat.extend(_asarray(v) for v in value)
        else:
            flat.append(value if type(value) is _ndarray else _asarray(value))
        if ranges is not None:
            ranges[slot] = (start, len(flat))
    return flat, ranges


def record_custom(op: CustomOp | OpCall, inputs: Sequence[Tensor], outputs: Sequence[np.ndarray],
                  attrs: dict) -> list[Tensor]:
    """Record a node whose backward is `op.grad` (inputs X*, outputs Out*); return output Tensors.

    Nothing is recorded (plain Tensors come back) when grad mode is off or no input needs a
    gradient, as for registered ops.
    """
    call = op if isinstance(op, OpCall) else op.call
    inputs = list(inputs)
    outs = tuple(_asarray(a) for a in outputs)
    if not (state.grad_enabled and any(not t.stop_gradient for t in inputs)):
        return [Tensor(a) for a in outs]
    node = new_node(call, attrs, (inputs,), outs, {"Out": (0, len(outs))})
    return [Tensor(a, not carries_gradient(a.dtype), node if carries_gradient(a.dtype) else None, i)
            for i, a in enumerate(outs)]
