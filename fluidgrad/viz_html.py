"""The program as one self-contained HTML page: pan, zoom, click an op for its details.

No Graphviz and no network: the layout is computed here (one column per phase, forward,
backward and optimizer, ops top to bottom in program order), the page carries its own SVG,
CSS and script. Drag to pan, scroll to zoom, click an op to see its inputs and outputs with
shapes and dtypes, its attributes and the ops of its sub-blocks; type in the search box to
highlight ops by type or variable name. `#op=N` in the address selects op N on load.

    fluidgrad.viz.draw(program, "program.html")      # or: fluidgrad draw MODEL -o model.html
"""
from __future__ import annotations

import html
import json
from typing import Any

from .framework import Block, Operator, Program
from .framework.names import EMPTY_VAR_NAME
from .viz_layout import PARAMETER_COLOR, PHASE_LABELS, PHASES, ROLE_COLORS, phase_of

COLUMN_WIDTH, BOX_WIDTH, ROW_HEIGHT, BOX_HEIGHT, TOP = 320, 240, 36, 26, 50

__all__ = ["to_html"]


def to_html(program: Program, title: str = "fluidgrad program") -> str:
    """The page for `program`'s global block (sub-blocks are listed in their op's details)."""
    if not isinstance(program, Program):
        raise TypeError(f"to_html expects a Program, got {type(program).__name__}")
    block = program.global_block()
    ops = [_op_record(block, index, op) for index, op in enumerate(block.ops)]
    columns = [phase for phase in PHASES if any(o["phase"] == phase for o in ops)] or [PHASES[0]]
    rows = {phase: 0 for phase in columns}
    for record in ops:
        column = columns.index(record["phase"])
        record["x"] = 20 + column * COLUMN_WIDTH
        record["y"] = TOP + rows[record["phase"]] * ROW_HEIGHT
        rows[record["phase"]] += 1
    width = 40 + len(columns) * COLUMN_WIDTH
    height = TOP + max(rows.values(), default=0) * ROW_HEIGHT + 20
    svg = _svg(ops, columns, _edges(block), width, height)
    data = json.dumps({"ops": ops, "title": title}).replace("</", "<\\/")
    return _PAGE.format(title=html.escape(title), svg=svg, data=data, legend=_legend(columns),
                        param_color=PARAMETER_COLOR)


def _var_text(block: Block, name: str) -> dict[str, Any]:
    var = block._find_var_recursive(name)
    if var is None:
        return {"name": name, "shape": None, "dtype": None, "kind": "undeclared"}
    kind = "parameter" if type(var).__name__ == "Parameter" else ("data" if var.is_data else
                                                                  "persistable" if var.persistable else "")
    return {"name": name, "shape": list(var.shape), "dtype": var.dtype, "kind": kind}


def _attr_text(value: Any) -> str:
    if isinstance(value, Block):
        return f"block {value.idx} ({len(value.ops)} ops)"
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _op_record(block: Block, index: int, op: Operator) -> dict[str, Any]:
    slots = lambda args: {slot: [_var_text(block, n) for n in names if n != EMPTY_VAR_NAME]  # noqa: E731
                          for slot, names in args.items()}
    sub_blocks = [{"idx": v.idx, "ops": [repr(o) for o in v.ops]} for v in op.attrs.values() if isinstance(v, Block)]
    return {"index": index, "type": op.type, "role": op.role, "phase": phase_of(op),
            "inputs": slots(op.inputs), "outputs": slots(op.outputs),
            "attrs": {k: _attr_text(v) for k, v in sorted(op.attrs.items()) if k != "op_role"},
            "sub_blocks": sub_blocks}


def _edges(block: Block) -> list[tuple[int, int]]:
    """(producer op, consumer op) for every value one op writes and a later op reads."""
    writer: dict[str, int] = {}
    edges = []
    for index, op in enumerate(block.ops):
        for name in op.input_arg_names:
            if name in writer:
                edges.append((writer[name], index))
        for name in op.output_arg_names:
            if name != EMPTY_VAR_NAME:
                writer[name] = index
    return sorted(set(edges))


def _svg(ops: list[dict[str, Any]], columns: list[str], edges: list[tuple[int, int]], width: int,
         height: int) -> str:
    parts = [f'<svg id="canvas" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'data-width="{width}" data-height="{height}">']
    for column, phase in enumerate(columns):
        x = 10 + column * COLUMN_WIDTH
        parts.append(f'<rect class="phase" x="{x}" y="8" width="{COLUMN_WIDTH - 20}" height="{height - 16}" rx="10"/>'
                     f'<text class="phase-label" x="{x + 12}" y="32">{html.escape(PHASE_LABELS[phase])}</text>')
    for tail, head in edges:
        a, b = ops[tail], ops[head]
        x1, y1 = a["x"] + BOX_WIDTH, a["y"] + BOX_HEIGHT / 2
        x2, y2 = b["x"] + BOX_WIDTH, b["y"] + BOX_HEIGHT / 2
        cls = "edge" if a["phase"] == b["phase"] else "edge cross"
        bend = 30 + min(abs(y2 - y1) / 8, 60)
        if a["phase"] != b["phase"]:
            x2 = b["x"]
            path = f"M{x1},{y1} C{x1 + 40},{y1} {x2 - 40},{y2} {x2},{y2}"
        else:
            path = f"M{x1},{y1} C{x1 + bend},{y1} {x2 + bend},{y2} {x2},{y2}"
        parts.append(f'<path class="{cls}" data-from="{tail}" data-to="{head}" d="{path}"/>')
    for record in ops:
        color = ROLE_COLORS.get(record["role"], ROLE_COLORS[PHASES[0]])
        label = html.escape(f'{record["index"]}: {record["type"]}')
        parts.append(f'<g class="op" data-op="{record["index"]}" tabindex="0">'
                     f'<rect x="{record["x"]}" y="{record["y"]}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}" '
                     f'rx="6" fill="{color}"/><text x="{record["x"] + 10}" y="{record["y"] + 17}">{label}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def _legend(columns: list[str]) -> str:
    items = [f'<span class="key" style="background:{ROLE_COLORS[p]}">{html.escape(PHASE_LABELS[p])}</span>'
             for p in columns]
    items.append(f'<span class="key" style="background:{PARAMETER_COLOR}">parameter (in details)</span>')
    return " ".join(items)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
 body {{ margin: 0; font: 13px -apple-system, Helvetica, Arial, sans-serif; display: flex; height: 100vh; }}
 #view {{ flex: 1; overflow: hidden; position: relative; background: #fdfdfd; cursor: grab; }}
 #view.dragging {{ cursor: grabbing; }}
 #canvas {{ width: 100%; height: 100%; }}
 #bar {{ position: absolute; top: 8px; left: 8px; background: #fff; border: 1px solid #ccc; border-radius: 6px;
        padding: 6px 8px; z-index: 2; }}
 #details {{ width: 380px; overflow: auto; border-left: 1px solid #ddd; padding: 12px; background: #fff; }}
 .phase {{ fill: #f6f6f6; stroke: #cfcfcf; }}
 .phase-label {{ font-weight: 600; fill: #555; }}
 .op rect {{ stroke: #777; stroke-width: 1; cursor: pointer; }}
 .op text {{ pointer-events: none; font-size: 12px; }}
 .op.selected rect {{ stroke: #d62728; stroke-width: 3; }}
 .op.match rect {{ stroke: #1f77b4; stroke-width: 3; }}
 .edge {{ fill: none; stroke: #9a9a9a; stroke-width: 1; }}
 .edge.cross {{ stroke: #dddddd; }}
 .edge.lit {{ stroke: #d62728; stroke-width: 2; }}
 .key {{ display: inline-block; padding: 2px 6px; border-radius: 4px; margin-right: 4px; border: 1px solid #aaa; }}
 table {{ border-collapse: collapse; width: 100%; }} td {{ border-top: 1px solid #eee; padding: 3px 4px;
   vertical-align: top; word-break: break-all; }}
 h2 {{ margin: 0 0 6px 0; font-size: 16px; }} h3 {{ margin: 12px 0 4px 0; font-size: 13px; color: #444; }}
 .param {{ background: {param_color}; }}
 pre {{ white-space: pre-wrap; font-size: 11px; }}
</style></head>
<body>
<div id="view">
 <div id="bar"><input id="search" placeholder="search op type or variable" size="28">
  <button id="fit">fit</button> <span id="count"></span><div style="margin-top:4px">{legend}</div></div>
 {svg}
</div>
<div id="details"><h2>{title}</h2><p>Click an op to see its inputs, outputs, shapes and attributes.
 Drag to pan, scroll to zoom.</p></div>
<script id="program-data" type="application/json">{data}</script>
<script>
(function () {{
  const data = JSON.parse(document.getElementById("program-data").textContent);
  const svg = document.getElementById("canvas"), view = document.getElementById("view");
  const full = [0, 0, +svg.dataset.width, +svg.dataset.height];
  let box = full.slice();
  function apply() {{ svg.setAttribute("viewBox", box.join(" ")); }}
  function fit() {{
    const r = view.getBoundingClientRect();
    const w = Math.max(full[2], full[3] * r.width / Math.max(r.height, 1) / 4);
    box = [0, 0, w, w * r.height / Math.max(r.width, 1)]; apply();
  }}
  view.addEventListener("wheel", function (e) {{
    e.preventDefault();
    const r = svg.getBoundingClientRect(), k = e.deltaY > 0 ? 1.2 : 1 / 1.2;
    const px = box[0] + (e.clientX - r.left) / r.width * box[2], py = box[1] + (e.clientY - r.top) / r.height * box[3];
    box = [px - (px - box[0]) * k, py - (py - box[1]) * k, box[2] * k, box[3] * k]; apply();
  }}, {{ passive: false }});
  let drag = null;
  view.addEventListener("mousedown", function (e) {{
    if (e.target.closest(".op") || e.target.closest("#bar")) return;
    drag = [e.clientX, e.clientY, box[0], box[1]]; view.classList.add("dragging");
  }});
  window.addEventListener("mousemove", function (e) {{
    if (!drag) return;
    const r = svg.getBoundingClientRect();
    box[0] = drag[2] - (e.clientX - drag[0]) / r.width * box[2];
    box[1] = drag[3] - (e.clientY - drag[1]) / r.height * box[3]; apply();
  }});
  window.addEventListener("mouseup", function () {{ drag = null; view.classList.remove("dragging"); }});
  function esc(s) {{ return String(s).replace(/[&<>"]/g, c => ({{"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}})[c]); }}
  function vars(slots) {{
    let rows = "";
    for (const slot in slots) for (const v of slots[slot]) {{
      const shape = v.shape === null ? "?" : "[" + v.shape.join(", ") + "]";
      rows += "<tr" + (v.kind === "parameter" ? " class='param'" : "") + "><td>" + esc(slot) + "</td><td>" +
        esc(v.name) + "</td><td>" + esc(shape) + " " + esc(v.dtype || "") + (v.kind ? " (" + esc(v.kind) + ")" : "") +
        "</td></tr>";
    }}
    return rows ? "<table>" + rows + "</table>" : "<p>none</p>";
  }}
  function select(index) {{
    const op = data.ops[index];
    if (!op) return;
    document.querySelectorAll(".op.selected").forEach(g => g.classList.remove("selected"));
    document.querySelectorAll(".edge.lit").forEach(p => p.classList.remove("lit"));
    const g = document.querySelector('.op[data-op="' + index + '"]');
    g.classList.add("selected");
    document.querySelectorAll('.edge[data-from="' + index + '"], .edge[data-to="' + index + '"]')
      .forEach(p => p.classList.add("lit"));
    let attrs = "";
    for (const k in op.attrs) attrs += "<tr><td>" + esc(k) + "</td><td>" + esc(op.attrs[k]) + "</td></tr>";
    let subs = "";
    for (const b of op.sub_blocks) subs += "<h3>block " + b.idx + "</h3><pre>" + esc(b.ops.join("\\n")) + "</pre>";
    document.getElementById("details").innerHTML = "<h2 id='selected-op'>op " + op.index + ": " + esc(op.type) +
      "</h2><p>" + esc(op.role) + " op</p><h3>inputs</h3>" + vars(op.inputs) + "<h3>outputs</h3>" +
      vars(op.outputs) + "<h3>attributes</h3>" + (attrs ? "<table>" + attrs + "</table>" : "<p>none</p>") + subs;
  }}
  document.querySelectorAll(".op").forEach(function (g) {{
    g.addEventListener("click", function () {{ select(+g.dataset.op); }});
  }});
  document.getElementById("fit").addEventListener("click", fit);
  document.getElementById("search").addEventListener("input", function (e) {{
    const q = e.target.value.trim().toLowerCase();
    let n = 0;
    for (const op of data.ops) {{
      const text = [op.type].concat(...Object.values(op.inputs).concat(Object.values(op.outputs))
        .map(vs => vs.map(v => v.name))).join(" ").toLowerCase();
      const hit = q && text.includes(q);
      document.querySelector('.op[data-op="' + op.index + '"]').classList.toggle("match", !!hit);
      n += hit ? 1 : 0;
    }}
    document.getElementById("count").textContent = q ? n + " ops" : "";
  }});
  fit();
  const m = /op=(\\d+)/.exec(location.hash);
  if (m) {{
    const g = document.querySelector('.op[data-op="' + m[1] + '"]');
    if (g) g.dispatchEvent(new MouseEvent("click", {{ bubbles: true }}));
  }}
}})();
</script></body></html>
"""
