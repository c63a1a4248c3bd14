"""The registry's shape and dtype rules (`op_def.infer`) in eager mode, cached.

Static mode runs an op's rule when the op is appended, so bad input (shapes that would
silently broadcast, float32 mixed with float64) is a ShapeError / DTypeError naming the op.
Eager mode runs the same rule before the kernel: the same error type and text, followed by
" (in eager mode)"; a tensor's `name`, if set, stands where static mode names the variable.
A rule depends only on the input shapes and dtypes, the attributes it reads and, for an
op with a duplicable output slot, the number of outputs; its verdict is cached per op on
exactly that, so running an op again costs one dict lookup (`OpCall.infer_cache`).

A rule marked `numpy_broadcast` (`shape_rules.binary_broadcast`: elementwise add, mul,
comparisons...) accepts exactly the shapes NumPy broadcasts, so its verdict is cached on the
dtypes alone (`OpCall.dtype_keyed`): shapes NumPy refuses make the kernel fail, and then
`apply._run` runs the rule, which raises its ShapeError naming the op and both shapes.
Reading two shapes and hashing them cost about as much as the rest of the lookup.

Which attributes a rule reads is learnt, not declared: the rule sees the attributes
through `ReadAttrs`, which notes the names it reads. `OpCall.infer_attrs` is the union
of the names read so far; when a rule reads a new one, the op's cache is emptied and its
keys include that attribute from then on. A cached verdict is therefore always keyed on
every attribute the rule read to reach it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..framework.errors import DTypeError, ShapeError
from ..framework.op_def import ReadAttrs, freeze_attr
from ..ops.registry import InferContext

# An op called with ever new attribute values that its rule reads (say a `scale` in a
# loop) must not grow its cache without bound: past this many entries it starts again.
CACHE_LIMIT = 1024

_ABSENT = object()


def attr_key(call: Any, kw: dict, n_out: int | None) -> tuple:
    """The part of the cache key that comes from the attributes (and the output count)."""
    names = call.infer_attrs
    values = tuple([freeze_attr(kw.get(name, _ABSENT)) for name in names]) if names else ()
    return (values, n_out) if call.has_dup_out else values


def cache_key(call: Any, args: list, kw: dict, n_out: int | None) -> tuple:
    """(shape, dtype) of each input in slot order (only the dtype when `call.dtype_keyed`),
    then `attr_key`. The eager fast paths (`apply_binary`, `apply_unary`) build the same tuple
    inline."""
    if call.dtype_keyed:
        return (*[None if value is None else value.dtype for value in args],
                attr_key(call, kw, n_out) if call.infer_attrs else ())
    key: list = []
    for value in args:
        if value is None:
            key += (None, None)
        elif type(value) is list:
            key += (tuple([v.shape for v in value]), tuple([v.dtype for v in value]))
        else:
            key += (value.shape, value.dtype)
    key.append(attr_key(call, kw, n_out) if call.infer_attrs or call.has_dup_out else ())
    return tuple(key)


def run_rule(call: Any, key: tuple | None, args: list, tensors: list, kw: dict, n_out: int | None) -> Any:
    """A cache miss: run the rule on the inputs (raising its ShapeError / DTypeError), cache
    and return the declared output dtypes (one np.dtype or None for a single output, else a
    tuple over the flattened outputs)."""
    _check_required_inputs(call, args)
    if call.infer is None:  # a CustomOp: no rule, nothing to check
        return None
    names, values = _input_names(call, args, tensors)
    outputs = {slot: [f"{slot}@out{i}" for i in range((n_out or 1) if dup else 1)] for slot, dup in call.out_slots}
    attrs = ReadAttrs(kw)
    declared: dict[str, str] = {}
    try:
        call.infer(InferContext(call.op_def, names, outputs, attrs, values.__getitem__,
                                lambda name, shape, dtype: declared.__setitem__(name, dtype)))
    except (ShapeError, DTypeError) as err:  # the static text, and where it was raised
        raise type(err)(f"{err} (in eager mode)") from None
    dtypes = tuple(_as_dtype(declared.get(name)) for slot, _ in call.out_slots for name in outputs[slot])
    expected = dtypes[0] if call.single_out else dtypes
    if not attrs.read.issubset(call.infer_attrs):
        _learn_attrs(call, attrs.read)
        key = key_or_none(call, args, kw, n_out)
    if key is not None:
        cache = call.infer_cache
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[key] = expected
    return expected


def _learn_attrs(call: Any, read: set[str]) -> None:
    """The rule read attributes not yet in the key: key on them from now on."""
    call.infer_attrs = tuple(sorted(set(call.infer_attrs) | read))
    call.infer_cache.clear()
    call.default_attr_key = attr_key(call, call.defaults, None)


def key_or_none(call: Any, args: list, kw: dict, n_out: int | None) -> tuple | None:
    key = cache_key(call, args, kw, n_out)
    try:
        hash(key)
    except TypeError:  # an unhashable attribute value (say an array): no caching for this call
        return None
    return key


def _as_dtype(name: str | None) -> np.dtype | None:
    return None if name is None else np.dtype(name)


def _check_required_inputs(call: Any, args: list) -> None:
    """As `registry.prepare` does at build time: a missing input is named, not a None crash."""
    for slot, value in zip(call.op_def.inputs, args):
        if not slot.optional and (value is None or (type(value) is list and not value)):
            raise ValueError(f"op {call.type} needs input slot {slot.name!r}")


def _input_names(call: Any, args: list, tensors: list) -> tuple[dict[str, list[str]], dict[str, tuple]]:
    """Names for the rule's messages: a tensor's own name where it has one (so an eager error
    reads like the static one), else `<slot>` / `<slot0>`, `<slot1>`..."""
    names: dict[str, list[str]] = {}
    values: dict[str, tuple] = {}
    for (slot, dup), value, tensor in zip(call.in_slots, args, tensors):
        if value is None:
            continue
        items = list(zip(value, tensor)) if type(value) is list else [(value, tensor)]
        names[slot] = []
        for i, (array, item) in enumerate(items):
            entry = (tuple(array.shape), array.dtype.name)
            name = getattr(item, "name", None)
            if not name or values.get(name, entry) != entry:
                name = f"<{slot.lower()}{i if type(value) is list else ''}>"
            values[name] = entry
            names[slot].append(name)
    return names, values
