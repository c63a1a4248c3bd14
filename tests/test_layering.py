"""Imports point down the layers, with no cycles, function-level imports included.

The layers are those of the project's checker (`python ../shared/tools/layering.py .`):
framework (IR and op definitions, no NumPy) <- ops <- backward / executor <- eager, functions,
static, nn, optimizer, io... <- jit, testing, onnx, distributed <- cli. This test walks every
`import` in the package (at any depth of the syntax tree) the way the checker does, and
differs from it in one point: an import is resolved to the module it names even when that
module imports nothing of fluidgrad (the checker then falls back to the package, which turns
`executor.plan -> executor.scope` into `executor.plan -> executor`, a cycle that is not one).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = [
    ("framework",),
    ("ops",),
    ("backward", "executor", "initializer", "lr"),
    ("dispatch", "functions", "eager", "autograd", "flags", "clip", "regularizer", "static", "optimizer",
     "io", "viz", "nn", "tensor", "metric"),
    ("jit", "testing", "onnx", "distributed", "recompute", "hapi"),
    ("cli", "demo", "__main__"),
]
# optional dependencies may be imported where the feature needs them; fluidgrad modules never lazily
FUNCTION_LEVEL_ALLOWED: set[tuple[str, str]] = set()


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "fluidgrad" or len(parts) < 2:
        return None
    return next((i for i, names in enumerate(LAYERS) if parts[1] in names), None)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at function level) for every import of a fluidgrad module."""
    module = _module_name(path)
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    tree = ast.parse(path.read_text())
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f) if n is not f}
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = ".".join(base[: len(base) - node.level + 1])
                head = f"{package}.{node.module}" if node.module else package
                targets = [head] if node.module else [f"{head}.{a.name}" for a in node.names]
            else:
                targets = [node.module or ""]
                targets += [f"{node.module}.{a.name}" for a in node.names]  # `from pkg import submodule`
        for target in targets:
            if target.startswith("fluidgrad"):
                found.append((target, node.lineno, id(node) in nested))
    return found


def _graph() -> tuple[dict[str, set[str]], list[str], list[str]]:
    paths = sorted((ROOT / "fluidgrad").rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    edges: dict[str, set[str]] = {}
    upward, lazy = [], []
    for path in paths:
        source = _module_name(path)
        for target, line, nested in _imports(path):
            while target not in modules:  # `from pkg import name` where name is not a module
                target = target.rpartition(".")[0]
            if target and target != source:
                edges.setdefault(source, set()).add(target)
            src_layer, dst_layer = _layer(source), _layer(target)
            where = f"{path.relative_to(ROOT)}:{line} {source} -> {target}"
            if src_layer is not None and dst_layer is not None and dst_layer > src_layer:
                upward.append(where)
            if nested and (source, target) not in FUNCTION_LEVEL_ALLOWED:
                lazy.append(where)
    return edges, upward, lazy


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
    return result


def _package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Edges between modules, leaving out `package -> its own submodule` (an __init__ re-exporting
    what its modules define): importing a submodule runs the package first, but the package
    only gathers names, it does not depend on its modules' users."""
    return {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in edges.items()}


def test_no_import_points_up_a_layer():
    _, upward, _ = _graph()
    assert upward == []


def test_no_import_cycles():
    edges, _, _ = _graph()
    assert _cycles(_package_edges(edges)) == []


def test_no_function_level_imports_of_fluidgrad_modules():
    _, _, lazy = _graph()
    assert lazy == []


def test_the_checker_finds_no_upward_import_either():
    checker = ROOT.parent.parent / "shared" / "tools" / "layering.py"
    if not checker.exists():
        checker = ROOT.parent / "shared" / "tools" / "layering.py"
    if not checker.exists():
        pytest.skip("the shared layering checker is not next to this checkout")
    out = subprocess.run([sys.executable, str(checker), str(ROOT)], capture_output=True, text=True).stdout
    assert " 0 upward imports" in out or out.splitlines()[-1].startswith("0 upward imports"), out
    assert "upward:" not in out, out


def test_importing_fluidgrad_imports_no_optional_dependency():
    code = ("import sys, fluidgrad; heavy = [m for m in ('torch', 'graphviz', 'sklearn', 'onnx', 'mpi4py', "
            "'matplotlib', 'tqdm', 'ml_dtypes', 'numba', 'scipy') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
