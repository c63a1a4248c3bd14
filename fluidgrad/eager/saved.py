"""What an op's backward reads, so that eager mode keeps only that alive.

A grad maker says what it reads through the builder: `g.input("X")`, `g.output("Out")`, and
`g.input_like("X")` for an input read only for its shape and dtype.
`grad_reads` finds those calls in the maker's source (and in the helpers it hands `g` to),
noting the ones made only under `if g.needs_input_grad("S"):`, which run only when input S
needs a gradient. The eager engine then records, for each op it runs, the input Tensors and
output arrays that the maker can read given which inputs need a gradient, and keeps only
the graph link, shape and dtype of the rest (`node.ShapeOnly`): the values die as soon as
the user drops them, as in PyTorch, where each backward function saves what it needs.

The analysis is conservative: a read it cannot pin down (a slot name it cannot resolve, `g`
handed to something it cannot follow, any other use of `g`, a maker without source) makes
it answer None, and then everything is kept, as before.
"""
from __future__ import annotations

import ast
import inspect
import linecache
from dataclasses import dataclass, field
from typing import Any, Callable

from ..framework.op_def import ZERO_GRADIENT

# builder methods that read no forward value themselves (their arguments are visited)
_SAFE_METHODS = frozenset({"op", "grad_op", "set_input_grad", "needs_input_grad", "output_grad", "has_output_grad",
                           "attr", "shape", "dtype", "grad_name"})


@dataclass
class GradReads:
    """The slots a grad maker reads: always, or only when a given input slot needs a gradient."""

    inputs: set[str] = field(default_factory=set)
    outputs: set[str] = field(default_factory=set)
    inputs_when: dict[str, set[str]] = field(default_factory=dict)    # guard slot -> input slots
    outputs_when: dict[str, set[str]] = field(default_factory=dict)   # guard slot -> output slots
    # inputs read only for their shape and dtype (`g.input_like`)
    shapes: set[str] = field(default_factory=set)
    shapes_when: dict[str, set[str]] = field(default_factory=dict)
    lists: set[str] = field(default_factory=set)  # the duplicable input slots

    def add(self, kind: str, slot: str, guard: str | None) -> None:
        kinds = {"input": (self.inputs, self.inputs_when), "output": (self.outputs, self.outputs_when),
                 "input_like": (self.shapes, self.shapes_when)}[kind]
        if guard is None:
            kinds[0].add(slot)
        else:
            kinds[1].setdefault(guard, set()).add(slot)

    def read_slots(self, needing: set[str]) -> tuple[set[str], set[str]]:
        """(input slots, output slots) read when exactly the input slots `needing` need a gradient."""
        ins, outs, shapes = set(self.inputs), set(self.outputs), set(self.shapes)
        for guard in needing:
            ins |= self.inputs_when.get(guard, set())
            outs |= self.outputs_when.get(guard, set())
            shapes |= self.shapes_when.get(guard, set())
        # an input that needs a gradient keeps its shape when its value goes (`node.ShapeOnly`);
        # one that needs none (or a list with such an input) may lose its shape too: keep it
        return ins | (shapes - (needing - self.lists)), outs


class _Unknown(Exception):
    """The maker reads something the analysis cannot name: keep everything."""


def grad_reads(maker: Any, lists: Any = ()) -> GradReads | None:
    """What `maker` (a registered grad maker) reads; None when that cannot be known. `lists`:
    the op's duplicable input slots."""
    reads = GradReads(lists=set(lists))
    if maker is ZERO_GRADIENT:
        return reads
    try:
        _Visitor(reads, set()).function(maker, 0, None)
    except _Unknown:
        return None
    return reads


_FUNCTIONS: dict[str, dict[int, list[ast.FunctionDef | ast.Lambda]]] = {}


def _functions_by_line(filename: str) -> dict[int, list[ast.FunctionDef | ast.Lambda]]:
    """Every function and lambda of a source file, by the line its code object starts at
    (a decorated function's first decorator); parsed once per file."""
    if filename not in _FUNCTIONS:
        found: dict[int, list] = {}
        try:
            tree = ast.parse("".join(linecache.getlines(filename)))
        except (SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, (ast.FunctionDef, ast.Lambda)):
                first = node.decorator_list[0].lineno if isinstance(node, ast.FunctionDef) and node.decorator_list \
                    else node.lineno
                found.setdefault(first, []).append(node)
        _FUNCTIONS[filename] = found
    return _FUNCTIONS[filename]


def _function_node(fn: Callable) -> ast.FunctionDef | ast.Lambda:
    """The AST of `fn`, found in its module's source by line, name and parameters."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise _Unknown
    params = list(code.co_varnames[:code.co_argcount])
    found = [node for node in _functions_by_line(code.co_filename).get(code.co_firstlineno, ())
             if (node.name if isinstance(node, ast.FunctionDef) else "<lambda>") == code.co_name
             and [a.arg for a in node.args.args] == params]
    if len(found) != 1:
        raise _Unknown
    return found[0]


def _names(fn: Callable) -> dict[str, Any]:
    """The names `fn` can see: its closure cells over its globals."""
    try:
        closure = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        raise _Unknown from None
    return {**closure.builtins, **closure.globals, **closure.nonlocals}


class _Visitor:
    def __init__(self, reads: GradReads, seen: set) -> None:
        self.reads = reads
        self.seen = seen

    def function(self, fn: Any, position: int | str, guard: str | None) -> None:
        """Visit `fn`, whose parameter at `position` (index or keyword) is the builder."""
        if not inspect.isfunction(fn):
            raise _Unknown
        key = (fn, position, guard)
        if key in self.seen:
            return
        self.seen.add(key)
        node = _function_node(fn)
        params = [a.arg for a in node.args.args]
        if isinstance(position, int):
            if position >= len(params):
                raise _Unknown
            builder = params[position]
        elif position in params:
            builder = position
        else:
            raise _Unknown
        scope = _Scope(builder, _names(fn), self)
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        for statement in body:
            scope.visit(statement, guard)


class _Scope:
    """One function's body: `builder` is the name the builder goes by in it."""

    def __init__(self, builder: str, names: dict[str, Any], visitor: _Visitor) -> None:
        self.builder = builder
        self.names = names
        self.visitor = visitor

    def visit(self, node: ast.AST, guard: str | None) -> None:
        if isinstance(node, ast.If):
            self.visit(node.test, guard)
            inner = self._guard(node.test) or guard
            for statement in node.body:
                self.visit(statement, inner)
            for statement in node.orelse:
                self.visit(statement, guard)
            return
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):  # may run anywhere: no guard holds
            for child in ast.iter_child_nodes(node):
                self.visit(child, None)
            return
        if isinstance(node, ast.Call):
            self._call(node, guard)
            return
        if isinstance(node, ast.Name) and node.id == self.builder:
            raise _Unknown  # the builder used other than by calling its methods
        if isinstance(node, ast.Attribute) and self._is_builder(node.value):
            raise _Unknown  # a builder attribute read, not called
        for child in ast.iter_child_nodes(node):
            self.visit(child, guard)

    def _is_builder(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.builder

    def _guard(self, test: ast.AST) -> str | None:
        """S when `test` is `g.needs_input_grad("S"[, i])`, alone or as one term of an `and`."""
        terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        for term in terms:
            if (isinstance(term, ast.Call) and isinstance(term.func, ast.Attribute)
                    and self._is_builder(term.func.value) and term.func.attr == "needs_input_grad"
                    and term.args and not term.keywords):
                slot = self._string(term.args[0])
                if slot is not None:
                    return slot
        return None

    def _string(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and isinstance(self.names.get(node.id), str):
            return self.names[node.id]
        return None

    def _call(self, node: ast.Call, guard: str | None) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and self._is_builder(func.value):
            if func.attr in ("input", "output", "input_like"):
                if len(node.args) != 1 or node.keywords:
                    raise _Unknown
                slot = self._string(node.args[0])
                if slot is None:
                    raise _Unknown
                self.visitor.reads.add(func.attr, slot, guard)
                return
            if func.attr not in _SAFE_METHODS:
                raise _Unknown
        else:
            self.visit(func, guard)
            handed = [i for i, arg in enumerate(node.args) if self._is_builder(arg)]
            handed_kw = [k.arg for k in node.keywords if self._is_builder(k.value)]
            if handed or handed_kw:  # a helper gets the builder: follow it
                target = self.names.get(func.id) if isinstance(func, ast.Name) else None
                if target is None or any(k is None for k in handed_kw):
                    raise _Unknown
                for position in handed + handed_kw:
                    self.visitor.function(target, position, guard)
            args = [a for a in node.args if not self._is_builder(a)]
            for arg in args:
                self.visit(arg, guard)
            for keyword in node.keywords:
                if not self._is_builder(keyword.value):
                    self.visit(keyword.value, guard)
            return
        for arg in node.args:
            self.visit(arg, guard)
        for keyword in node.keywords:
            self.visit(keyword.value, guard)
