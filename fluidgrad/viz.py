"""Programs as pictures: `to_dot(program)` gives Graphviz DOT source, `draw` renders it.

Variables are ellipses, ops are boxes; an edge runs from each input variable to its op and
from the op to each output. Ops are coloured by who wrote them (`op.role`): forward,
backward (append_backward) and optimizer (minimize) ops in three colours, so the picture of
a training program shows at a glance where each part came from. Parameters are bold and
filled; other persistables (optimizer state) are bold. A sub-block (a loop body, a branch,
a gradient block) is a cluster nested inside its parent block's cluster, and its op points
to it with a dashed edge.

Two views. "phases" (the default) puts the forward, backward and optimizer ops of the global
block in three labelled clusters side by side, edges between them faint and free (they do not
stretch the layout), and a run of more than a few repeats of the same op sequence (the layers of
a deep MLP) is drawn as its first and last repeat with one "x N more" node between, so a
depth-100 network fits a screen. "full" draws every op of one tall graph. Only what the picture
contains appears in its legend. `viz_html.to_html` gives an interactive view without Graphviz.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from .framework import FORWARD, Block, Operator, Parameter, Program, Variable
from .framework.names import EMPTY_VAR_NAME
from .io import atomic_write
from .viz_html import to_html
from .viz_layout import PARAMETER_COLOR, PHASE_LABELS, PHASES, ROLE_COLORS, Run, collapse_repeats, phase_of

FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": None, ".gv": None, ".html": "html"}
VIEWS = ("phases", "full")

__all__ = ["ROLE_COLORS", "draw", "to_dot", "to_graph", "to_html"]


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
    def __init__(self, program: Program, view: str = "phases") -> None:
        import graphviz  # optional dependency: only pictures need it
        if view not in VIEWS:
            raise ValueError(f"viz: view must be one of {VIEWS}, got {view!r}")
        self.program, self.view = program, view
        self.ids = _Ids()
        self.graph = graphviz.Digraph("program", graph_attr={"rankdir": "TB", "compound": "true",
                                                             "fontname": "Helvetica", "newrank": "true"},
                                      node_attr={"fontname": "Helvetica", "fontsize": "10"},
                                      edge_attr={"arrowsize": "0.6"})
        self.edges: list[tuple[str, str, dict[str, str]]] = []
        self.declared: set[str] = set()
        self.children: dict[int, list[Block]] = {}
        for block in program.blocks:
            self.children.setdefault(block.parent_idx, []).append(block)
        self.anchor: dict[int, str] = {}  # a node inside each block's cluster, for dashed edges
        self.node_phase: dict[str, str] = {}  # node -> phase, to draw cross-phase edges faintly
        self.present: set[str] = set()  # what the legend should list

    def build(self) -> Any:
        for root in self.children.get(-1, []):
            if self.view == "phases" and root.idx == 0:
                self._phases(root)
            else:
                self._block(self.graph, root)
        for tail, head, attrs in self.edges:
            if head.startswith("@anchor"):  # a sub-block's first node is known only now
                head = self.anchor[int(head[len("@anchor"):])]
            phases = {self.node_phase.get(tail), self.node_phase.get(head)}
            if len(phases - {None}) > 1:  # between clusters: faint, and no pull on the layout
                attrs = {**attrs, "color": "#c8c8c8", "constraint": "false"}
            self.graph.edge(tail, head, **attrs)
        return self.graph

    def _phases(self, block: Block) -> None:
        """The global block as one cluster per phase; long repeats collapsed."""
        by_phase: dict[str, list[int]] = {}
        for index, op in enumerate(block.ops):
            by_phase.setdefault(phase_of(op), []).append(index)
        drawn_vars = self._vars_of_drawn_ops(block, by_phase)
        home = self._var_homes(block, by_phase, drawn_vars)
        for phase in PHASES:
            if phase not in by_phase:
                continue
            with self.graph.subgraph(name=f"cluster_phase_{phase}") as cluster:
                cluster.attr(label=PHASE_LABELS[phase], style="rounded,filled", color="#999999",
                             fillcolor="#fbfbfb", fontsize="12")
                for name in [n for n in block.vars if home.get(n) == phase]:
                    self.node_phase[self._var_node(cluster, block, name, block.vars[name])] = phase
                previous = None
                for item in collapse_repeats([block.ops[i] for i in by_phase[phase]], by_phase[phase]):
                    if isinstance(item, Run):
                        node = f"b0_run{item.first_hidden}"
                        cluster.node(node, label=f"... x{item.hidden_repeats} more:\n{' -> '.join(item.types)}",
                                     shape="note", style="filled", fillcolor="#eeeeee", fontsize="10")
                        self.node_phase[node] = phase
                        if previous is not None:
                            self.edges.append((previous, node, {"style": "dotted"}))
                        previous = node
                        self.present.add("repeat")
                        continue
                    node = self._op(cluster, block, item, block.ops[item])
                    self.node_phase[node] = phase
                    if previous is not None and previous.startswith("b0_run"):
                        self.edges.append((previous, node, {"style": "dotted"}))
                    previous = node
                    for sub in _op_sub_blocks(block.ops[item]):
                        with cluster.subgraph(name=f"cluster_{sub.idx}") as inner:
                            kind = "grad block" if sub.forward_block_idx >= 0 else "block"
                            inner.attr(label=f"{kind} {sub.idx}", style="rounded", color="#888888", fontsize="10")
                            self._block(inner, sub)

    def _vars_of_drawn_ops(self, block: Block, by_phase: dict[str, list[int]]) -> set[str]:
        names: set[str] = set()
        for phase, indices in by_phase.items():
            for item in collapse_repeats([block.ops[i] for i in indices], indices):
                if not isinstance(item, Run):
                    names.update(block.ops[item].input_arg_names + block.ops[item].output_arg_names)
        return names

    @staticmethod
    def _var_homes(block: Block, by_phase: dict[str, list[int]], drawn: set[str]) -> dict[str, str]:
        """Each drawn variable sits in the cluster of its first writer (parameters and data in
        the forward cluster)."""
        home: dict[str, str] = {}
        for name, var in block.vars.items():
            if name in drawn and (isinstance(var, Parameter) or var.is_data):
                home[name] = FORWARD
        for phase in PHASES:
            for index in by_phase.get(phase, []):
                for name in block.ops[index].output_arg_names + block.ops[index].input_arg_names:
                    if name in drawn and name in block.vars:
                        home.setdefault(name, phase)
        return home

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
            if self.view == "phases" and block.idx == 0:
                continue  # drawn inside the cluster of the op holding it
            kind = "grad block" if child.forward_block_idx >= 0 else "block"
            with graph.subgraph(name=f"cluster_{child.idx}") as cluster:
                cluster.attr(label=f"{kind} {child.idx}", style="rounded", color="#888888", fontsize="10")
                self._block(cluster, child)

    def _var_node(self, graph: Any, block: Block, name: str, var: Variable | None) -> str:
        node = self.ids.var(block.idx, name)
        if node not in self.declared:
            self.declared.add(node)
            graph.node(node, label=_var_label(name, var), **_var_attrs(var))
            if isinstance(var, Parameter):
                self.present.add("parameter")
            self.anchor.setdefault(block.idx, node)
        return node

    def _var_ref(self, graph: Any, block: Block, name: str) -> str:
        owner = _var_owner(block, name)
        node = self.ids.var(owner.idx, name)
        if node in self.declared:
            return node
        # undeclared (e.g. a grad var never created): draw it in the op's block, dashed
        return self._var_node(graph, block, name, owner.vars.get(name))

    def _op(self, graph: Any, block: Block, index: int, op: Operator) -> str:
        node = self.ids.op(block, index)
        color = ROLE_COLORS.get(op.role, ROLE_COLORS[FORWARD])
        self.present.add(op.role if op.role in ROLE_COLORS else FORWARD)
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
        return node


def to_graph(program: Program, legend: bool = True, view: str = "phases") -> Any:
    """The program as a `graphviz.Digraph` (for notebooks, which display it inline)."""
    if not isinstance(program, Program):
        raise TypeError(f"to_graph expects a Program, got {type(program).__name__}")
    builder = _DotBuilder(program, view)
    graph = builder.build()
    if legend:
        _legend(graph, builder.present)
    return graph


def _legend(graph: Any, present: set[str]) -> None:
    """A key to the colours and shapes, listing only those the picture uses."""
    if not present:
        return
    with graph.subgraph(name="cluster_legend") as key:
        key.attr(label="legend", style="dashed", color="#bbbbbb", fontsize="9")
        for role, color in ROLE_COLORS.items():
            if role in present:
                key.node(f"legend_{role}", label=f"{role} op", shape="box", style="filled,rounded",
                         fillcolor=color, fontsize="9")
        if "parameter" in present:
            key.node("legend_param", label="parameter", shape="ellipse", style="filled,bold",
                     fillcolor=PARAMETER_COLOR, penwidth="2", fontsize="9")
        if "repeat" in present:
            key.node("legend_repeat", label="repeats not drawn", shape="note", style="filled",
                     fillcolor="#eeeeee", fontsize="9")


def to_dot(program: Program, legend: bool = True, view: str = "phases") -> str:
    """DOT source of `program`: variables as ellipses, ops as boxes coloured by role; `view`
    "phases" (forward, backward, optimizer side by side; long repeats collapsed) or "full"."""
    return to_graph(program, legend, view).source


def draw(program: Program, path: str | os.PathLike, legend: bool = True, view: str = "phases") -> Path:
    """Render `program` to `path`: SVG, PNG or PDF by the suffix (.dot/.gv write the source;
    .html writes the interactive view of `viz_html`, which needs no Graphviz).

    Needs Graphviz's `dot` program (e.g. `apt-get install graphviz`) for the image formats.
    The file is written atomically. Returns the path.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"draw: cannot tell the format of {path}; use one of {', '.join(FORMATS)}")
    if suffix == ".html":
        atomic_write(path, to_html(program).encode("utf-8"))
        return path
    graph = to_graph(program, legend, view)
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
