"""Every public function and class has a docstring (the API reference is built from them), and
`help(fluidgrad)` lists the functions."""
from __future__ import annotations

import importlib
import inspect
import pydoc

import pytest

import fluidgrad

PUBLIC_MODULES = ["fluidgrad", "fluidgrad.nn", "fluidgrad.nn.functional", "fluidgrad.static", "fluidgrad.static.nn",
                  "fluidgrad.optimizer", "fluidgrad.io", "fluidgrad.viz", "fluidgrad.jit", "fluidgrad.autograd",
                  "fluidgrad.lr", "fluidgrad.regularizer", "fluidgrad.initializer", "fluidgrad.executor",
                  "fluidgrad.testing", "fluidgrad.onnx", "fluidgrad.distributed"]


def _public(module_name: str) -> list[tuple[str, object]]:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # an optional feature whose dependency is not installed
        pytest.skip(f"{module_name}: {exc}")
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    found = []
    for name in names:
        value = getattr(module, name, None)
        if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__.startswith("fluidgrad"):
            found.append((f"{module_name}.{name}", value))
    return found


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_function_and_class_has_a_docstring(module_name):
    missing = [name for name, value in _public(module_name) if not (value.__doc__ or "").strip()]
    assert not missing, f"public names without a docstring: {missing}"


def test_help_lists_the_functions():
    text = pydoc.render_doc(fluidgrad, renderer=pydoc.plaintext)
    assert "FUNCTIONS" in text
    for name in ("matmul", "append_backward", "to_tensor", "save", "recompute"):
        assert f"\n    {name}(" in text, name

