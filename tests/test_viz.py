"""fluidgrad.viz: DOT source names ops and colours roles; draw renders SVG/PNG through `dot`."""
from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

import fluidgrad as fg
from fluidgrad import viz
from fluidgrad.framework import BACKWARD, FORWARD, OPTIMIZE

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


def _training_program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        x = fg.static.data("x", [None, 4])
        y = fg.static.nn.fc(x, 3, activation="tanh")
        loss = fg.mean(y * y)
        params_grads = fg.append_backward(loss)
        block = main.global_block()
        for param, grad in params_grads:  # an SGD step written out, tagged as optimizer ops
            step = block.create_var(f"{param.name}.step", param.shape, param.dtype)
            block.append_op("scale", {"X": grad}, {"Out": step}, {"scale": -0.1, "op_role": OPTIMIZE})
            block.append_op("elementwise_add", {"X": param, "Y": step}, {"Out": param}, {"op_role": OPTIMIZE})
    return main


def _node_lines(dot: str, word: str) -> list[str]:
    return [line for line in dot.splitlines() if f'label={word}' in line or f'label="{word}' in line]


def test_to_dot_names_ops_and_colours_roles():
    main = _training_program()
    dot = viz.to_dot(main)
    assert dot.startswith("digraph")
    for op in main.global_block().ops:
        assert f"label={op.type} " in dot
    colours = {role: viz.ROLE_COLORS[role] for role in (FORWARD, BACKWARD, OPTIMIZE)}
    assert len(set(colours.values())) == 3
    op_lines = [line for line in dot.splitlines() if "shape=box" in line and "legend" not in line]
    for role, colour in colours.items():
        n_ops = sum(op.role == role for op in main.global_block().ops)
        assert n_ops > 0
        assert sum(f'fillcolor="{colour}"' in line for line in op_lines) == n_ops, role
    assert "tanh" in "".join(_node_lines(dot, "tanh"))


def test_to_dot_marks_parameters_and_draws_every_edge():
    main = _training_program()
    dot = viz.to_dot(main, legend=False)
    for param in main.all_parameters():
        line = next(line for line in dot.splitlines() if f'label="{param.name}\\n' in line)
        assert "bold" in line and viz.PARAMETER_COLOR in line
    n_edges = sum(len([n for n in op.input_arg_names + op.output_arg_names])
                  for op in main.global_block().ops)
    assert len(re.findall(r" -> ", dot)) == n_edges


def test_sub_blocks_become_nested_clusters():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [2])
        block = main.global_block()
        with main._sub_block_guard() as outer:
            inner_out = outer.create_var("inner_out", [2])
            outer.append_op("scale", {"X": x}, {"Out": inner_out}, {"scale": 2.0})
            with main._sub_block_guard() as nested:
                nested.append_op("relu", {"X": inner_out}, {"Out": nested.create_var("deep", [2])})
            outer.ops[0].attrs["sub_block"] = nested  # a stand-in for a loop op holding a body
        out = block.create_var("out", [2])
        block.append_op("assign", {"X": x}, {"Out": out}, {"sub_block": outer}, infer=False)
    dot = viz.to_dot(main)
    assert "subgraph cluster_1" in dot and "subgraph cluster_2" in dot
    # cluster 2 is nested inside cluster 1: it opens before cluster 1 closes
    body1 = dot[dot.index("subgraph cluster_1"):]
    assert body1.index("subgraph cluster_2") < body1.index("\n\t}")
    assert "lhead=cluster_1" in dot and "lhead=cluster_2" in dot
    # the relu in block 2 reads inner_out from block 1: one node for it, not two
    assert dot.count('label="inner_out') == 1


def test_to_dot_rejects_non_programs():
    with pytest.raises(TypeError, match="Program"):
        viz.to_dot("not a program")


@needs_dot
def test_draw_svg_parses_and_names_the_ops(tmp_path):
    main = _training_program()
    path = viz.draw(main, tmp_path / "train.svg")
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    texts = {t.text for t in root.iter() if t.tag.endswith("text")}
    for op in main.global_block().ops:
        assert op.type in texts
    assert {p.name for p in main.all_parameters()} <= texts


@needs_dot
def test_draw_png_and_dot_source(tmp_path):
    main = _training_program()
    assert viz.draw(main, tmp_path / "p.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert viz.draw(main, tmp_path / "p.dot").read_text() == viz.to_dot(main)


def test_draw_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"\.svg"):
        viz.draw(_training_program(), tmp_path / "p.jpeg")


def test_draw_without_dot_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="Graphviz's `dot` program is not installed"):
        viz.draw(_training_program(), tmp_path / "p.svg")
    assert not (tmp_path / "p.svg").exists()


def test_reachable_from_the_package():
    assert fg.viz.to_dot is viz.to_dot and fg.viz.draw is viz.draw


def _mlp_training_program(depth):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        x = fg.static.data("x", [None, 8])
        label = fg.static.data("label", [None, 1], "int64")
        h = x
        for _ in range(depth):
            h = fg.static.nn.fc(h, 8, activation="relu")
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(fg.static.nn.fc(h, 3), label))
        fg.optimizer.SGD(0.1).minimize(loss)
    return main


def test_phases_are_three_labelled_clusters_and_full_view_has_none():
    main = _mlp_training_program(2)
    dot = viz.to_dot(main)
    for label in ("forward", "backward (append_backward)", "optimizer (minimize)"):
        assert f'label="{label}"' in dot or f"label={label}" in dot
    assert "cluster_phase_" not in viz.to_dot(main, view="full")
    with pytest.raises(ValueError, match="view must be one of"):
        viz.to_dot(main, view="sideways")


def test_a_deep_network_is_summarised_so_it_fits_a_screen():
    main = _mlp_training_program(100)
    n_ops = len(main.global_block().ops)
    dot = viz.to_dot(main)
    drawn_ops = [line for line in dot.splitlines() if "shape=box" in line and "legend" not in line]
    assert n_ops > 600 and len(drawn_ops) < 60, (n_ops, len(drawn_ops))
    assert "x98 more" in dot and "matmul -> elementwise_add -> relu" in dot
    assert "repeats not drawn" in dot  # the legend explains the summary node
    full = viz.to_dot(main, view="full")
    assert sum("shape=box" in line and "legend" not in line for line in full.splitlines()) == n_ops


def test_legend_lists_only_what_the_picture_contains():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        fg.exp(fg.static.data("x", [3]))
    dot = viz.to_dot(main)
    assert "forward op" in dot
    for absent in ("backward op", "optimize op", "loss op", "parameter", "repeats not drawn"):
        assert absent not in dot
    full = viz.to_dot(_mlp_training_program(1))
    assert all(word in full for word in ("forward op", "backward op", "optimize op", "parameter"))
    assert "loss op" not in full


def test_html_view_is_self_contained_and_needs_no_graphviz(tmp_path, monkeypatch):
    import json
    monkeypatch.setattr(shutil, "which", lambda name: None)
    main = _mlp_training_program(2)
    path = viz.draw(main, tmp_path / "program.html")
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.split("<script")[0].replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    data = json.loads(re.search(r'<script id="program-data" type="application/json">(.*?)</script>', page, re.S)
                      .group(1))
    assert len(data["ops"]) == len(main.global_block().ops)
    assert page.count('class="op"') == len(main.global_block().ops)
    first_fc = data["ops"][0]
    assert first_fc["type"] == "matmul" and first_fc["inputs"]["Y"][0]["kind"] == "parameter"
    assert first_fc["inputs"]["Y"][0]["shape"] == [8, 8]
