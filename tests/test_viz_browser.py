"""The pictures in a real headless browser (Chromium): the HTML view runs its script, a click
(through `#op=N`, which dispatches a click on that op) fills in the details with shapes, and
screenshots of the HTML view and of the training picture come out as images.

Set FLUIDGRAD_SCREENSHOTS=DIR to keep the screenshots (they go to a temporary folder otherwise).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import fluidgrad as fg
from fluidgrad import viz

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (apt-get install chromium)")


def _browser(*args: str, profile: Path) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", f"--user-data-dir={profile}", "--virtual-time-budget=3000"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120)


def _program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        x = fg.static.data("x", [None, 8])
        label = fg.static.data("label", [None, 1], "int64")
        h = fg.static.nn.fc(x, 16, activation="relu")
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(fg.static.nn.fc(h, 3), label))
        fg.optimizer.Adam(0.01).minimize(loss)
    return main


def _out_dir(tmp_path: Path) -> Path:
    out = Path(os.environ.get("FLUIDGRAD_SCREENSHOTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_clicking_an_op_shows_its_shapes(tmp_path):
    main = _program()
    page = viz.draw(main, tmp_path / "program.html")
    index = next(i for i, op in enumerate(main.global_block().ops) if op.type == "matmul")
    proc = _browser("--dump-dom", f"{page.resolve().as_uri()}#op={index}", profile=tmp_path / "profile")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert re.search(rf"id=\"selected-op\">op {index}: matmul<", dom), dom[-3000:]
    assert "fc_0.w_0" in dom and "[8, 16] float32 (parameter)" in dom  # the weight's shape and kind
    assert "[-1, 8] float32 (data)" in dom
    assert 'class="op selected"' in dom


def test_screenshots_of_the_html_view_and_the_training_picture(tmp_path):
    out = _out_dir(tmp_path)
    main = _program()
    page = viz.draw(main, out / "program.html")
    shot = out / "html_view.png"
    index = next(i for i, op in enumerate(main.global_block().ops) if op.type == "adam")
    proc = _browser(f"--screenshot={shot}", "--window-size=1400,900", f"{page.resolve().as_uri()}#op={index}",
                    profile=tmp_path / "profile")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed: no SVG training picture to screenshot")
    svg = viz.draw(main, out / "training.svg")
    frame = out / "training_fit.html"  # the whole picture fitted to the window, as a screen shows it
    frame.write_text(f'<html><body style="margin:0"><img src="{svg.name}" '
                     f'style="width:100vw;height:100vh;object-fit:contain"></body></html>')
    picture = out / "training_picture.png"
    proc = _browser(f"--screenshot={picture}", "--window-size=1600,1000", frame.resolve().as_uri(),
                    profile=tmp_path / "profile2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert picture.read_bytes().startswith(b"\x89PNG") and picture.stat().st_size > 10_000
