"""Programs as pictures: `to_dot(program)` gives Graphviz DOT source, `draw` renders it.

Variables are ellipses, ops are boxes; an edge runs from each input variable to its op and
from the op to each output. Ops are coloured by who wrote them (`op.role`): forward,
backward (append_backward) and optimizer (minimize) ops in three colours, so the picture of
a training program shows at a glance where each part came from. Parameters are bold and
filled; other persistables (optimizer state) are bold. A sub-block (a loop body, a branch,
a gradient block) is a cluster nested inside its parent block's cluster, and its op points
to it with a dashed edge.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from .framework import BACKWARD, FORWARD, LOSS, OPTIMIZE, Block, Operator, Parameter, Program, Variable
from .framework.names import EMPTY_VAR_NAME
from .io import atomic_write

ROLE_COLORS = {FORWARD: "#cfe2ff", LOSS: "#e0c8ff", BACKWARD: "#ffd8a8", OPTIMIZE: "#c3f0ca"}
PARAMETER_COLOR = "#fff3a0"
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": None, ".gv": None}

__all__ = ["ROLE_COLORS", "draw", "to_dot", "to_graph"]


class _Ids:
    """Stable DOT node ids: one per variable (in the block declaring it), one per op."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, str], str] = {}

    def var(self, block_idx: int, name: str) -> str:
        return self.ids.setdefault((block_idx, name), f"v{len(self.ids)}")

    @staticmethod
    def op(block: Block, index: int) -> str:
        return f"b{block.idx}_op{index}"


def _var_owner(block: Block, name: str) -> Block:
    """The block declaring `name` (searching up from `block`), or `block` if none does."""
    scan: Block | None = block
    while scan is not None:
        if name in scan.vars:
            return scan
        scan = scan.parent
    return block


def _var_attrs(var: Variable | None) -> dict[str, str]:
    if var is None:
        return {"shape": "ellipse", "style": "dashed"}
    if isinstance(var, Parameter):
        return {"shape": "ellipse", "style": "filled,bold", "fillcolor": PARAMETER_COLOR, "penwidth": "2"}
    if var.persistable:
        return {"shape": "ellipse", "style": "bold", "penwidth": "2"}
    if var.is_data:
        return {"shape": "ellipse", "peripheries": "2"}
    return {"shape": "ellipse"}


def _var_label(name: str, var: Variable | None) -> str:
    if var is None:
        return name
    if var.type != Variable.DENSE:
        return f"{name}\\n({var.type})"
    return f"{name}\\n{var.dtype}{list(var.shape)}"


def _op_sub_blocks(op: Operator) -> list[Block]:
    return [v for v in op.attrs.values() if isinstance(v, Block)]


class _DotBuilder:
    def __init__(self, program: Program) -> None:
        import graphviz  # optional dependency: only pictures need it
        self.program = program
        self.ids = _Ids()
        self.graph = graphviz.Digraph("program", graph_attr={"rankdir": "TB", "compound": "true",
                                                             "fontname": "Helvetica"},
                                      node_attr={"fontname": "Helvetica", "fontsize": "10"},
                                      edge_attr={"arrowsize": "0.6"})
        self.edges: list[tuple[str, str, dict[str, str]]] = []
        self.declared: set[str] = set()
        self.children: dict[int, list[Block]] = {}
        for block in program.blocks:
            self.children.setdefault(block.parent_idx, []).append(block)
        self.anchor: dict[int, str] = {}  # a node inside each block's cluster, for dashed edges

    def build(self) -> Any:
        for root in self.children.get(-1, []):
            self._block(self.graph, root)
        for tail, head, attrs in self.edges:
            if head.startswith("@anchor"):  # a sub-block's first node is known only now
                head = self.anchor[int(head[len("@anchor"):])]
            self.graph.edge(tail, head, **attrs)
        return self.graph

    def _block(self, graph: Any, block: Block) -> None:
        for name, var in block.vars.items():
            self._var_node(graph, block, name, var)
        for index, op in enumerate(block.ops):
            self._op(graph, block, index, op)
        if block.idx not in self.anchor:  # an empty block still needs a node to point at
            node = f"b{block.idx}_empty"
            graph.node(node, label="(empty)", shape="plaintext")
            self.anchor[block.idx] = node
        for child in self.children.get(block.idx, []):
            kind = "grad block" if child.forward_block_idx >= 0 else "block"
            with graph.subgraph(name=f"cluster_{child.idx}") as cluster:
                cluster.attr(label=f"{kind} {child.idx}", style="rounded", color="#888888", fontsize="10")
                self._block(cluster, child)

    def _var_node(self, graph: Any, block: Block, name: str, var: Variable | None) -> str:
        node = self.ids.var(block.idx, name)
        if node not in self.declared:
            self.declared.add(node)
            graph.node(node, label=_var_label(name, var), **_var_attrs(var))
            self.anchor.setdefault(block.idx, node)
        return node

    def _var_ref(self, graph: Any, block: Block, name: str) -> str:
        owner = _var_owner(block, name)
        node = self.ids.var(owner.idx, name)
        if node in self.declared:
            return node
        # undeclared (e.g. a grad var never created): draw it in the op's block, dashed
        return self._var_node(graph, block, name, owner.vars.get(name))

    def _op(self, graph: Any, block: Block, index: int, op: Operator) -> None:
        node = self.ids.op(block, index)
        color = ROLE_COLORS.get(op.role, ROLE_COLORS[FORWARD])
        graph.node(node, label=op.type, shape="box", style="filled,rounded", fillcolor=color,
                   tooltip=f"{op.role} op #{index}: {op!r}")
        self.anchor.setdefault(block.idx, node)
        for slot, names in op.inputs.items():
            for name in names:
                if name != EMPTY_VAR_NAME:
                    self.edges.append((self._var_ref(graph, block, name), node, {"tooltip": slot}))
        for slot, names in op.outputs.items():
            for name in names:
                if name != EMPTY_VAR_NAME:
                    self.edges.append((node, self._var_ref(graph, block, name), {"tooltip": slot}))
        for sub in _op_sub_blocks(op):
            self.edges.append((node, f"@anchor{sub.idx}", {"style": "dashed", "lhead": f"cluster_{sub.idx}",
                                                           "color": "#888888"}))


def to_graph(program: Program, legend: bool = True) -> Any:
    """The program as a `graphviz.Digraph` (for notebooks, which display it inline)."""
    if not isinstance(program, Program):
        raise TypeError(f"to_graph expects a Program, got {type(program).__name__}")
    graph = _DotBuilder(program).build()
    if legend:
        _legend(graph)
    return graph


def _legend(graph: Any) -> None:
    with graph.subgraph(name="cluster_legend") as key:
        key.attr(label="legend", style="dashed", color="#bbbbbb", fontsize="9")
        for role, color in ROLE_COLORS.items():
            key.node(f"legend_{role}", label=f"{role} op", shape="box", style="filled,rounded",
                     fillcolor=color, fontsize="9")
        key.node("legend_param", label="parameter", shape="ellipse", style="filled,bold",
                 fillcolor=PARAMETER_COLOR, penwidth="2", fontsize="9")


def to_dot(program: Program, legend: bool = True) -> str:
    """DOT source of `program`: variables as ellipses, ops as boxes coloured by role."""
    return to_graph(program, legend).source


def draw(program: Program, path: str | os.PathLike, legend: bool = True) -> Path:
    """Render `program` to `path`: SVG, PNG or PDF by the suffix (.dot/.gv write the source).

    Needs Graphviz's `dot` program (e.g. `apt-get install graphviz`) for the image formats.
    The file is written atomically. Returns the path.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"draw: cannot tell the format of {path}; use one of {', '.join(FORMATS)}")
    graph = to_graph(program, legend)
    fmt = FORMATS[suffix]
    if fmt is None:
        atomic_write(path, graph.source.encode("utf-8"))
        return path
    if shutil.which("dot") is None:
        raise RuntimeError(f"draw: Graphviz's `dot` program is not installed, so {path} cannot be rendered "
                           f"(install it, e.g. `apt-get install graphviz` or `brew install graphviz`, or "
                           f"write DOT source with a .dot suffix)")
    import graphviz
    try:
        data = graph.pipe(format=fmt)
    except graphviz.ExecutableNotFound as exc:
        raise RuntimeError(f"draw: Graphviz's `dot` program could not be run to render {path}: {exc}") from None
    except graphviz.CalledProcessError as exc:
        raise RuntimeError(f"draw: Graphviz failed to render {path}: {exc.stderr!r}") from None
    atomic_write(path, data)
    return path
