"""The README's Python examples run as written, each on its own (a new user copies one block)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import fluidgrad as fg

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_its_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_readme_block_runs_on_its_own(index, capsys):
    namespace: dict = {}
    with fg.scope_guard(fg.Scope()), fg.program_guard(fg.Program(), fg.Program()):
        exec(compile(BLOCKS[index], f"README.md python block {index + 1}", "exec"), namespace)
    if "loss_value" in namespace:
        assert namespace["loss_value"].shape == ()
        assert len(namespace["grads"]) == 4
    if "dz_dx" in namespace:
        assert namespace["dz_dx"].name.endswith("@GRAD")
