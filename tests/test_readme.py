"""The README's Python examples run as written (they are what a new user copies first)."""
from __future__ import annotations

import re
from pathlib import Path

import fluidgrad as fg

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    with fg.scope_guard(fg.Scope()):
        exec(compile("\n".join(blocks), str(README), "exec"), namespace)
    assert namespace["loss_value"].shape == ()
    assert len(namespace["grads"]) == 4
    assert namespace["dz_dx"].name.endswith("@GRAD")
