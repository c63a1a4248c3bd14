"""The one op registry: what each op is (slots, attributes, kernel, shape rule, gradient).

An `OpDef` is declared once and serves static mode, eager mode and the tests. It lives in
the IR layer, free of NumPy, so that `Block.append_op` can validate an op and run its shape
rule without importing anything above the IR: the op families (`fluidgrad.ops`) register
into this table, the IR only reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .errors import DTypeError, NoGradientError, ShapeError
from .names import EMPTY_VAR_NAME


@dataclass(frozen=True)
class Slot:
    name: str
    duplicable: bool = False  # a list of variables ("X*" in a spec)
    optional: bool = False    # may be absent ("Bias?" in a spec; "Input*?": a list, maybe empty)


def _parse_slots(spec: str | Sequence[str]) -> tuple[Slot, ...]:
    words = spec.split() if isinstance(spec, str) else list(spec)
    return tuple(Slot(w.rstrip("*?"), duplicable="*" in w, optional=w.endswith("?")) for w in words)


class _NoGradient:
    """Marks an op that has no gradient, so that asking for one is a clear error."""

    def __repr__(self) -> str:
        return "NO_GRADIENT"


NO_GRADIENT = _NoGradient()


class _ZeroGradient:
    """Marks an op whose gradient is zero everywhere (piecewise constant, or constant in its
    inputs): nothing flows back through it, and asking for it is not an error."""

    def __call__(self, builder: Any) -> None:
        zero_inputs = getattr(builder, "zero_input_grads", None)  # eager: zeros reach the leaves
        if zero_inputs is not None:
            zero_inputs()

    def __repr__(self) -> str:
        return "ZERO_GRADIENT"


ZERO_GRADIENT = _ZeroGradient()


@dataclass
class OpDef:
    """Everything fluidgrad knows about one op type.

    kernel(*inputs, **attrs): inputs in slot order (a list for a duplicable slot, None for
        an absent optional one); returns one array, or a tuple with one entry per output slot.
    infer(ctx): sets output shapes and dtypes, raising ShapeError / DTypeError on bad input.
    grad(builder): emits the input gradients through the builder (see grad_builder.py),
        ZERO_GRADIENT (nothing flows back) or NO_GRADIENT (asking for it is an error).
    inline: optional Python expression the executor may paste instead of a kernel call,
        e.g. "{X} + {Y}"; it must compute exactly what the kernel computes.
    needs_runtime: the kernel takes the executor runtime first (control flow runs sub-blocks).
    offer: optional, for an op that copies the tensors of its first input slot into a buffer of
        its own (a gradient bucket): `offer(shapes, dtypes, **attrs)`, asked when a plan is
        compiled, returns None or `(buffer key, function)`: the function, called at run time
        before the producers of those inputs run, gives per input None or `(array, scale, ...)`:
        where the producer may write its value (times `scale`, None for 1) instead of a new
        array. The kernel then gets that list as `placed=` and skips copying an input that `is`
        its array. The function must do no communication (ranks may place differently) and may
        always answer Nones; ops offering equal buffer keys may share the buffer.
        See executor/placement.py.
    offer_keeps_state: the op's outputs are persistable state it writes somewhere of its own
        (the node copies of a sharded update), never into the buffer it offers: placement may
        apply although they are persistable (for other ops a persistable output refuses it).
    offer_reads: input slots whose values the offered buffer keeps readable, unchanged and
        unscaled, until the op runs (activations published in the node's shared memory): their
        producers may write there although other ops read the values too. The offer then covers
        these slots (one destination per input, in slot order) instead of the first, and is
        asked even when a shape has an unknown (-1) dimension.
    broadcasts: False for an op none of whose inputs is ever broadcast, so that each gradient its
        maker gives has its input's shape: the static builder then adds no `reduce_as`, which it
        otherwise must where a -1 dimension may hide a broadcast (`select_input`: the untaken
        branch's output has no value at run time to reduce to).
    """

    type: str
    inputs: tuple[Slot, ...]
    outputs: tuple[Slot, ...]
    attrs: dict[str, Any]
    kernel: Callable[..., Any]
    infer: Callable[["InferContext"], None]
    grad: Any
    inline: str | None = None
    needs_runtime: bool = False
    doc: str = ""
    offer: Callable[..., Any] | None = None
    offer_keeps_state: bool = False
    offer_reads: tuple[str, ...] = ()
    broadcasts: bool = True
    input_index: dict[str, int] = field(default_factory=dict)
    # the shape rule's verdicts at build time, and what they are keyed on (see `run_infer`)
    infer_cache: dict = field(default_factory=dict, repr=False, compare=False)
    infer_attrs: tuple[str, ...] = field(default=(), repr=False, compare=False)
    infer_cached_rule: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.input_index = {s.name: i for i, s in enumerate(self.inputs)}

    @property
    def has_gradient(self) -> bool:
        return self.grad is not NO_GRADIENT

    def input_slot(self, name: str) -> Slot:
        return self.inputs[self.input_index[name]]

    def output_slot(self, name: str) -> Slot:
        for slot in self.outputs:
            if slot.name == name:
                return slot
        raise KeyError(f"op {self.type} has no output slot {name!r}")


_REGISTRY: dict[str, OpDef] = {}

# op type -> input slots whose kernel reads only the value's shape and dtype (the executor keeps a
# memory-free stand-in for them; recompute does not count them as values the backward needs)
SHAPE_ONLY_SLOTS: dict[str, tuple[str, ...]] = {
    "reduce_as": ("Target",), "unreduce": ("Target",), "expand_as": ("Target",),
    "fill_zeros_like": ("X",), "fill_any_like": ("X",), "shape": ("X",)}


def register_op(type: str, *, inputs: str | Sequence[str], outputs: str | Sequence[str],
                kernel: Callable[..., Any], infer: Callable[["InferContext"], None], grad: Any,
                attrs: dict[str, Any] | None = None, inline: str | None = None,
                needs_runtime: bool = False, doc: str = "", offer: Callable[..., Any] | None = None,
                offer_keeps_state: bool = False, offer_reads: Sequence[str] = (),
                broadcasts: bool = True) -> OpDef:
    if type in _REGISTRY:
        raise ValueError(f"op {type!r} is registered twice")
    if grad is None:
        raise ValueError(f"op {type!r}: pass a grad maker or NO_GRADIENT, never None")
    op_def = OpDef(type, _parse_slots(inputs), _parse_slots(outputs), dict(attrs or {}), kernel,
                   infer, grad, inline, needs_runtime, doc, offer=offer,
                   offer_keeps_state=offer_keeps_state, offer_reads=tuple(offer_reads), broadcasts=broadcasts)
    _REGISTRY[type] = op_def
    return op_def


def get_op_def(type: str) -> OpDef:
    """The registered definition of an op type (KeyError naming it if none)."""
    try:
        return _REGISTRY[type]
    except KeyError:
        raise KeyError(f"op type {type!r} is not registered") from None


def registered_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


def require_gradient(op_def: OpDef) -> None:
    if not op_def.has_gradient:
        raise NoGradientError(f"op {op_def.type} has no gradient, but one was asked for "
                              f"(mark its inputs stop_gradient or put them in no_grad_set)")


class InferContext:
    """What a shape rule sees: input shapes and dtypes, attributes, and where outputs go.

    `lookup(name) -> (shape, dtype)` and `store(name, shape, dtype)` decouple the rule from
    where shapes live (Block variables at build time, a dict for temporaries).
    """

    __slots__ = ("op_def", "inputs", "outputs", "attrs", "_lookup", "_store", "_record", "names_read")

    def __init__(self, op_def: OpDef, inputs: dict[str, list[str]], outputs: dict[str, list[str]],
                 attrs: dict[str, Any], lookup: Callable[[str], tuple[tuple[int, ...], str]],
                 store: Callable[[str, tuple[int, ...], str], None]) -> None:
        self.op_def = op_def
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self._lookup = lookup
        self._store = store
        self._record: list | None = None  # set_output calls, while `run_infer` records a verdict
        self.names_read = False  # the rule looked at variable names: its verdict is not cached

    # -- inputs
    def has_input(self, slot: str) -> bool:
        return bool(self.inputs.get(slot))

    def input_names(self, slot: str) -> list[str]:
        self.names_read = True
        return self.inputs.get(slot, [])

    def output_names(self, slot: str) -> list[str]:
        self.names_read = True
        return self.outputs.get(slot, [])

    def shape(self, slot: str, index: int = 0) -> tuple[int, ...]:
        return self._lookup(self.inputs[slot][index])[0]

    def dtype(self, slot: str, index: int = 0) -> str:
        return self._lookup(self.inputs[slot][index])[1]

    def shapes(self, slot: str) -> list[tuple[int, ...]]:
        return [self._lookup(n)[0] for n in self.inputs.get(slot, [])]

    def dtypes(self, slot: str) -> list[str]:
        return [self._lookup(n)[1] for n in self.inputs.get(slot, [])]

    def attr(self, name: str) -> Any:
        return self.attrs[name]

    # -- outputs
    def num_outputs(self, slot: str) -> int:
        return len(self.outputs.get(slot, []))

    def set_output(self, slot: str, shape: Sequence[int], dtype: str, index: int | None = None) -> None:
        names = self.outputs.get(slot, ())
        targets = names if index is None else names[index:index + 1]
        shape = tuple(map(int, shape))
        if self._record is not None:
            self._record.append((slot, index, shape, dtype))
        for name in targets:
            if name != EMPTY_VAR_NAME:
                self._store(name, shape, dtype)

    # -- errors
    def describe(self, slot: str, index: int = 0) -> str:
        name = self.inputs[slot][index]
        shape, dtype = self._lookup(name)
        return f"{slot}={name} (shape {list(shape)}, {dtype})"

    def shape_error(self, message: str) -> ShapeError:
        return ShapeError(f"op {self.op_def.type}: {message}")

    def dtype_error(self, message: str) -> DTypeError:
        return DTypeError(f"op {self.op_def.type}: {message}")


def prepare(op: Any, infer: bool = True) -> None:
    """Validate an Operator against its OpDef, fill default attrs, and infer output shapes."""
    op_def = get_op_def(op.type)
    inputs = op.inputs
    for slot in inputs:
        if slot not in op_def.input_index:
            raise ValueError(f"op {op.type} has no input slot {slot!r}; its slots are "
                             f"{[s.name for s in op_def.inputs]}")
    for slot in op_def.inputs:
        names = inputs.get(slot.name)
        if not names:
            if not slot.optional:
                raise ValueError(f"op {op.type} needs input slot {slot.name!r}")
        elif len(names) > 1 and not slot.duplicable:
            raise ValueError(f"op {op.type}: slot {slot.name} takes one variable, got {names}")
    defaults = op_def.attrs
    if defaults:
        attrs = op.attrs
        for name, default in defaults.items():
            if name not in attrs:
                attrs[name] = default
    if infer:
        run_infer(op_def, _BlockInferContext(op_def, op))


def infer_op(op: Any) -> None:
    """Run the shape rule against the op's block, creating output variables as needed."""
    op_def = get_op_def(op.type)
    run_infer(op_def, _BlockInferContext(op_def, op))


# ---- shape rules at build time, cached
# A rule depends only on its inputs' shapes and dtypes (slot by slot), the number of outputs in
# each slot and the attributes it reads; its verdict, the `set_output` calls it made, is
# therefore kept per op on exactly that (unless it read variable names: `input_names`,
# `output_names`) and replayed for the next op built alike (the layers of
# a deep network): building an op then costs one key and one dict lookup instead of its rule.
# Which attributes a rule reads is learnt, as in eager mode (eager/infer.py): the rule sees them
# through `ReadAttrs`; when it reads one not yet in the key, the op's cache starts again, keyed
# on that one too. Rules that fail are not cached (each op built runs them and raises), nor are
# those of control-flow ops, whose rules look into sub-blocks.
INFER_CACHE_LIMIT = 1024
_OUTPUTS = object()  # separates the inputs from the outputs in a key
_ABSENT = object()   # an attribute the rule read but the op lacks


class ReadAttrs(dict):
    """The attributes as a rule sees them; `read` collects the names it looked at."""

    __slots__ = ("read",)

    def __init__(self, attrs: dict) -> None:
        super().__init__(attrs)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return dict.__getitem__(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        return dict.get(self, name, default)

    def __contains__(self, name: object) -> bool:
        self.read.add(name)  # type: ignore[arg-type]
        return dict.__contains__(self, name)

    def _all(self) -> "ReadAttrs":  # a rule that walks every attribute depends on all of them
        self.read.update(dict.keys(self))
        return self

    def keys(self):  # type: ignore[override]
        return dict.keys(self._all())

    def items(self):  # type: ignore[override]
        return dict.items(self._all())

    def values(self):  # type: ignore[override]
        return dict.values(self._all())

    def __iter__(self):
        return dict.__iter__(self._all())


def freeze_attr(value: Any) -> Any:
    """A hashable stand-in for an attribute value, for cache keys; the type is kept (1, 1.0 and
    True hash alike but a rule may treat them differently). Unhashable leaves stay unhashable,
    so a key holding one raises TypeError and the caller runs the rule uncached."""
    kind = type(value)
    if kind is list or kind is tuple:
        return kind, tuple([freeze_attr(v) for v in value])
    return kind, value


def _infer_key(op_def: OpDef, ctx: InferContext) -> tuple:
    """What the rule's verdict depends on; KeyError if an input is not declared (yet)."""
    lookup = ctx._lookup
    key: list = []
    for slot, names in ctx.inputs.items():
        key.append(slot)
        for name in names:
            key.append(lookup(name))
    key.append(_OUTPUTS)
    for slot, names in ctx.outputs.items():
        key.append(slot)
        key.append(len(names))
    attrs = ctx.attrs
    for name in op_def.infer_attrs:
        key.append(freeze_attr(attrs.get(name, _ABSENT)))
    return tuple(key)


def run_infer(op_def: OpDef, ctx: InferContext) -> None:
    """`op_def.infer(ctx)`, or the verdict it gave for an op with the same key (see above)."""
    if op_def.needs_runtime:
        op_def.infer(ctx)
        return
    cache = op_def.infer_cache
    if op_def.infer_cached_rule is not op_def.infer:  # (a rule replaced after registration)
        cache.clear()
        op_def.infer_attrs, op_def.infer_cached_rule = (), op_def.infer
    try:
        key: tuple | None = _infer_key(op_def, ctx)
        verdict = cache.get(key)
    except (KeyError, TypeError):  # an undeclared input, an unhashable attribute: run the rule
        key = verdict = None
    if verdict is not None:
        for slot, index, shape, dtype in verdict:
            ctx.set_output(slot, shape, dtype, index)
        return
    attrs, read, record = ctx.attrs, ReadAttrs(ctx.attrs), []
    ctx.attrs, ctx._record = read, record
    try:
        op_def.infer(ctx)
    finally:
        ctx.attrs, ctx._record = attrs, None
    if ctx.names_read:  # a verdict that depends on names (which the key leaves out) is not kept
        return
    if not read.read.issubset(op_def.infer_attrs):
        op_def.infer_attrs = tuple(sorted(set(op_def.infer_attrs) | read.read))
        cache.clear()
        key = None
        try:
            key = _infer_key(op_def, ctx)
            hash(key)
        except (KeyError, TypeError):
            return
    if key is not None:
        if len(cache) >= INFER_CACHE_LIMIT:
            cache.clear()
        cache[key] = record


class _BlockInferContext(InferContext):
    """Shapes live in the op's block: inputs are looked up through its ancestors, outputs are
    declared (or updated) there. (Its `_lookup` / `_store` methods take the place of the
    callables the base class keeps: one object per op built, no closures.)"""

    __slots__ = ("block", "op_type")

    def __init__(self, op_def: OpDef, op: Any) -> None:
        self.op_def, self.inputs, self.outputs, self.attrs = op_def, op.inputs, op.outputs, op.attrs
        self.block, self.op_type, self._record, self.names_read = op.block, op.type, None, False

    def _lookup(self, name: str) -> tuple[tuple[int, ...], str]:
        var = self.block.vars.get(name)  # (the op's own block first, before any ancestor)
        if var is None:
            var = self.block._find_var_recursive(name)
            if var is None:
                raise KeyError(f"op {self.op_type} reads variable {name!r}, which block {self.block.idx} "
                               f"and its ancestors do not declare")
        return var._shape, var.dtype

    def _store(self, name: str, shape: tuple[int, ...], dtype: str) -> None:
        var = self.block.vars.get(name)
        if var is None:
            var = self.block._find_var_recursive(name)
        if var is None:
            self.block.create_var(name, shape, dtype)
        else:
            var.shape, var.dtype = shape, dtype
