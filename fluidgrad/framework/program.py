"""Program, Block and Operator: the IR that builders write and the executor runs."""
from __future__ import annotations

import contextlib
from itertools import chain
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .name_scope import OP_NAMESCOPE, current_name_scope
from .names import unique_name
from .op_def import prepare
from .variable import Parameter, Variable, names_of

# Op roles: what wrote an op. The picture colours them; clone(for_test) drops two of them.
FORWARD, BACKWARD, OPTIMIZE, LOSS = "forward", "backward", "optimize", "loss"

_SlotArgs = Mapping[str, "Variable | str | Sequence[Variable | str] | None"]


def _arg_names(args: _SlotArgs | None) -> dict[str, list[str]]:
    """Normalise `{slot: var | name | [vars]}` into `{slot: [names]}`."""
    result: dict[str, list[str]] = {}
    if not args:
        return result
    for slot, value in args.items():
        if value is None:
            continue
        if isinstance(value, Variable):  # the common case, one variable per slot
            result[slot] = [value.name]
            continue
        items = value if isinstance(value, (list, tuple)) else [value]
        names = []
        for item in items:  # names_of, without formatting its message for every op built
            if isinstance(item, Variable):
                names.append(item.name)
            elif isinstance(item, str):
                names.append(item)
            else:
                names_of([item], f"slot {slot}")  # raises the TypeError naming the slot
        result[slot] = names
    return result


class Operator:
    """One op: a type, named input and output slots (lists of variable names) and attributes."""

    __slots__ = ("block", "type", "inputs", "outputs", "attrs", "__dict__")

    def __init__(self, block: "Block", type: str, inputs: dict[str, list[str]],
                 outputs: dict[str, list[str]], attrs: dict[str, Any]) -> None:
        self.block = block
        self.type = type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs

    def input(self, slot: str) -> list[str]:
        return self.inputs.get(slot, [])

    def output(self, slot: str) -> list[str]:
        return self.outputs.get(slot, [])

    @property
    def input_names(self) -> list[str]:
        return list(self.inputs)

    @property
    def output_names(self) -> list[str]:
        return list(self.outputs)

    @property
    def input_arg_names(self) -> list[str]:
        return [*chain.from_iterable(self.inputs.values())]

    @property
    def output_arg_names(self) -> list[str]:
        return [*chain.from_iterable(self.outputs.values())]

    def attr(self, name: str) -> Any:
        if name not in self.attrs:
            raise KeyError(f"op {self.type} has no attribute {name!r}; it has {sorted(self.attrs)}")
        return self.attrs[name]

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def _set_attr(self, name: str, value: Any) -> None:
        self.attrs[name] = value
        self.block.program._bump()

    def rename_input(self, old: str, new: str) -> None:
        for names in self.inputs.values():
            names[:] = [new if n == old else n for n in names]
        self.block.program._bump()

    def rename_output(self, old: str, new: str) -> None:
        for names in self.outputs.values():
            names[:] = [new if n == old else n for n in names]
        self.block.program._bump()

    @property
    def role(self) -> str:
        return self.attrs.get("op_role", FORWARD)

    def __repr__(self) -> str:
        return _format_op(self)


def _format_attr(value: Any) -> str:
    if isinstance(value, Block):
        return f"block[{value.idx}]"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


def _format_op(op: Operator) -> str:
    def slots(args: dict[str, list[str]]) -> str:
        return ", ".join(f"{slot}=[{', '.join(names)}]" for slot, names in args.items())
    attrs = {k: v for k, v in op.attrs.items() if k != "op_role"}
    attr_text = ", ".join(f"{k}={_format_attr(v)}" for k, v in attrs.items())
    role = "" if op.role == FORWARD else f"  # {op.role}"
    return f"{{{slots(op.outputs)}}} = {op.type}({slots(op.inputs)}){{{attr_text}}}{role}"


class Block:
    """A list of ops and the variables they declare; `parent_idx` links nested blocks."""

    __slots__ = ("program", "idx", "parent_idx", "ops", "vars", "forward_block_idx", "__dict__")

    def __init__(self, program: "Program", idx: int, parent_idx: int) -> None:
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.ops: list[Operator] = []
        self.vars: dict[str, Variable] = {}
        # the op holding this block as `sub_block`, and for a grad block the forward block
        self.forward_block_idx = -1

    @property
    def parent(self) -> "Block | None":
        return self.program.blocks[self.parent_idx] if self.parent_idx >= 0 else None

    def var(self, name: str) -> Variable:
        try:
            return self.vars[name]
        except KeyError:
            raise KeyError(f"variable {name!r} is not in block {self.idx}") from None

    def has_var(self, name: str) -> bool:
        return name in self.vars

    def _find_var_recursive(self, name: str) -> Variable | None:
        block = self
        while True:
            var = block.vars.get(name)
            if var is not None or block.parent_idx < 0:
                return var
            block = block.program.blocks[block.parent_idx]

    def has_var_recursive(self, name: str) -> bool:
        return self._find_var_recursive(name) is not None

    def var_recursive(self, name: str) -> Variable:
        var = self._find_var_recursive(name)
        if var is None:
            raise KeyError(f"variable {name!r} is not in block {self.idx} nor in any of its ancestors")
        return var

    def create_var(self, name: str | None = None, shape: Sequence[int] = (), dtype: Any = "float32",
                   **kwargs: Any) -> Variable:
        name = name or unique_name("tmp")
        if name in self.vars:
            return self.vars[name]
        var = Variable(self, name, shape, dtype, **kwargs)
        self.vars[name] = var
        self.program._version += 1
        return var

    def create_parameter(self, name: str, shape: Sequence[int], dtype: Any = "float32",
                         trainable: bool = True) -> Parameter:
        existing = self.vars.get(name)
        if isinstance(existing, Parameter):
            if tuple(existing.shape) != tuple(shape):
                raise ValueError(f"parameter {name!r} already exists with shape {existing.shape}, "
                                 f"cannot reuse it with shape {tuple(shape)}")
            return existing
        param = Parameter(self, name, shape, dtype, trainable=trainable)
        self.vars[name] = param
        self.program._bump()
        return param

    def append_op(self, type: str, inputs: _SlotArgs | None = None, outputs: _SlotArgs | None = None,
                  attrs: dict[str, Any] | None = None, infer: bool = True) -> Operator:
        """Append an op; the registry fills default attrs and infers output shapes now."""
        return self._insert_op(len(self.ops), type, inputs, outputs, attrs, infer)

    def _insert_op(self, index: int, type: str, inputs: _SlotArgs | None, outputs: _SlotArgs | None,
                   attrs: dict[str, Any] | None, infer: bool = True) -> Operator:
        op = Operator(self, type, _arg_names(inputs), _arg_names(outputs), dict(attrs or {}))
        scope = current_name_scope()
        if scope is not None:
            op.attrs.setdefault(OP_NAMESCOPE, scope)
        prepare(op, infer=infer)
        if index == len(self.ops):
            self.ops.append(op)
        else:
            self.ops.insert(index, op)
        self.program._version += 1
        return op

    def _append_trusted(self, type: str, inputs: dict[str, list[str]], outputs: dict[str, list[str]],
                        attrs: dict[str, Any]) -> Operator:
        """Append an op description that the registry itself produced (slots checked, attrs
        complete): the backward builder's fast path, with no validation or inference."""
        op = Operator(self, type, inputs, outputs, attrs)
        self.ops.append(op)
        self.program._version += 1
        return op

    def all_parameters(self) -> list[Parameter]:
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def to_string(self, indent: int = 0) -> str:
        pad = "  " * indent
        lines = [f"{pad}block {self.idx} (parent {self.parent_idx}) {{"]
        lines += [f"{pad}  {var!r}" for var in self.vars.values()]
        for op in self.ops:
            lines.append(f"{pad}  {_format_op(op)}")
            sub = op.attrs.get("sub_block")
            if isinstance(sub, Block):
                lines.append(sub.to_string(indent + 2))
        lines.append(f"{pad}}}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.to_string()


class Program:
    """Nested Blocks; block 0 is the global block. Mutations bump `_version` to void cached plans."""

    __slots__ = ("blocks", "_current_block_idx", "_version", "random_seed", "__dict__", "__weakref__")

    def __init__(self) -> None:
        self.blocks: list[Block] = [Block(self, 0, -1)]
        self._current_block_idx = 0
        self._version = 0
        self.random_seed = 0

    def _bump(self) -> None:
        self._version += 1

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    def global_block(self) -> Block:
        return self.blocks[0]

    def block(self, index: int) -> Block:
        return self.blocks[index]

    def current_block(self) -> Block:
        return self.blocks[self._current_block_idx]

    def _create_block(self, parent_idx: int | None = None) -> Block:
        parent = self._current_block_idx if parent_idx is None else parent_idx
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        self._current_block_idx = block.idx
        self._bump()
        return block

    @contextlib.contextmanager
    def _sub_block_guard(self) -> Iterator[Block]:
        """Open a child of the current block; ops appended inside land there."""
        saved = self._current_block_idx
        block = self._create_block()
        try:
            yield block
        finally:
            self._current_block_idx = saved

    def all_parameters(self) -> list[Parameter]:
        return [p for block in self.blocks for p in block.all_parameters()]

    def list_vars(self) -> Iterable[Variable]:
        for block in self.blocks:
            yield from block.vars.values()

    def clone(self, for_test: bool = False) -> "Program":
        """A deep copy. `for_test` drops backward and optimizer ops and sets `is_test` on ops."""
        copy = Program()
        copy.random_seed = self.random_seed
        copy.blocks = [Block(copy, b.idx, b.parent_idx) for b in self.blocks]
        for source, block in zip(self.blocks, copy.blocks):
            block.forward_block_idx = source.forward_block_idx
            block.vars = {name: _copy_var(var, block) for name, var in source.vars.items()}
            block.ops = [Operator(block, op.type, {k: list(v) for k, v in op.inputs.items()},
                                  {k: list(v) for k, v in op.outputs.items()},
                                  {k: _copy_attr(v, copy) for k, v in op.attrs.items()}) for op in source.ops]
        if for_test:
            for block in copy.blocks:
                block.ops = [op for op in block.ops if op.role not in (BACKWARD, OPTIMIZE)]
                for op in block.ops:
                    if "is_test" in op.attrs:
                        op.attrs["is_test"] = True
            copy._bump()
        return copy

    def __str__(self) -> str:
        """Block 0 with each sub-block indented under the op holding it; others after it."""
        held = {op.attrs["sub_block"].idx for b in self.blocks for op in b.ops
                if isinstance(op.attrs.get("sub_block"), Block)}
        return "\n".join(block.to_string() for block in self.blocks if block.idx not in held)

    __repr__ = __str__


def _copy_var(var: Variable, block: Block) -> Variable:
    """What a saved program keeps of a variable, in `block` of the copy."""
    if isinstance(var, Parameter):
        copy: Variable = Parameter(block, var.name, var.shape, var.dtype, trainable=var.trainable,
                                   type=var.type, is_data=var.is_data)
        copy.optimize_attr, copy.regularizer, copy.need_clip = dict(var.optimize_attr), var.regularizer, var.need_clip
    else:
        copy = Variable(block, var.name, var.shape, var.dtype, persistable=var.persistable, type=var.type,
                        is_data=var.is_data)
    copy.stop_gradient = var.stop_gradient
    return copy


def _copy_attr(value: Any, program: Program) -> Any:
    """An attribute for the copy: a sub-block becomes the copy's block of the same index; lists
    are new lists (as a save and load would give)."""
    if isinstance(value, Block):
        return program.blocks[value.idx]
    if isinstance(value, (list, tuple)):
        return [_copy_attr(v, program) for v in value]
    if isinstance(value, dict):
        return {k: _copy_attr(v, program) for k, v in value.items()}
    return value


_main_program = Program()
_startup_program = Program()
_guard_depth = 0       # program_guard blocks currently open
_static_mode = False   # set by enable_static()


def enable_static() -> None:
    """Make input-less functions (full, zeros, ones) append ops even outside program_guard."""
    global _static_mode
    _static_mode = True


def disable_static() -> None:
    """Leave static mode: functions without inputs (`full`, `zeros`) return Tensors again."""
    global _static_mode
    _static_mode = False


def in_dynamic_mode() -> bool:
    """True unless inside `program_guard` or after `enable_static()`. Functions with inputs
    follow their inputs (Variables or Tensors); only functions without inputs ask this."""
    return not (_static_mode or _guard_depth)


def default_main_program() -> Program:
    """The Program builders append to outside `program_guard` (or the one it names inside)."""
    return _main_program


def default_startup_program() -> Program:
    """The Program that parameter initialisers are appended to (run it once, first)."""
    return _startup_program


def startup_program_of(program: Program) -> Program:
    """The startup program that goes with `program`: the default one while `program` is the
    default main program, else the one the last program_guard over `program` named (so
    `minimize(loss)` after leaving the guard still initialises its state there), else the default."""
    if program is _main_program:
        return _startup_program
    return program.__dict__.get("_paired_startup", _startup_program)


@contextlib.contextmanager
def program_guard(main_program: Program, startup_program: Program | None = None) -> Iterator[None]:
    """Make builders write into `main_program` (and `startup_program`) inside the block."""
    if not isinstance(main_program, Program):
        raise TypeError(f"program_guard expects a Program, got {type(main_program).__name__}")
    global _main_program, _startup_program, _guard_depth
    saved = _main_program, _startup_program
    _main_program = main_program
    if startup_program is not None:
        if not isinstance(startup_program, Program):
            raise TypeError(f"program_guard expects a Program as startup, got {type(startup_program).__name__}")
        _startup_program = startup_program
    main_program._paired_startup = _startup_program
    _guard_depth += 1
    try:
        yield
    finally:
        _guard_depth -= 1
        _main_program, _startup_program = saved

