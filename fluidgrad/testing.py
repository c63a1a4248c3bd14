"""Gradient checking for ops and whole programs: analytic (append_backward) vs numeric.

    from fluidgrad.testing import check_grad
    check_grad("elementwise_mul", {"X": np.random.rand(3, 4), "Y": np.random.rand(4)})

The loss is `sum(v * out)` for a fixed random cotangent `v`, so the check covers the whole
vector-Jacobian product, not just a sum. Numeric gradients use central differences in float64.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .backward import gradients
from .executor import Executor, Scope
from .framework import Program, Variable, program_guard
from .ops.registry import get_op_def
from . import functions as F
from .static import data
from .dispatch import append_static_op


@dataclass
class OpCase:
    """One declared test of one registered op: inputs (float64 where float), attributes, a reference.

    The op-case runner (tests/test_ops.py over every `tests/op_cases/*.py`'s `CASES`) checks the
    forward values against `torch_fn(**inputs)` (PyTorch, torch tensors by slot name; attributes
    are closed over) or `numpy_fn(**inputs)`, the gradient against central differences and PyTorch, float32 kept as float32,
    eager equal to static, and grad of grad unless `second_order` is False.
    """

    op: str
    inputs: dict[str, Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    torch_fn: Callable[..., Any] | None = None   # the same op in PyTorch: forward and gradient oracle
    numpy_fn: Callable[..., Any] | None = None   # forward reference where PyTorch has no such op
    check_fn: Callable[..., Any] | None = None   # forward check for random ops: check_fn(outputs, case)
    n_out: int | None = None
    use_outputs: tuple[int, ...] | None = None   # only these outputs reach the loss (the rest unused)
    no_grad: tuple[str, ...] = ()
    rtol: float = 1e-6
    eps: float = 1e-6
    grad: bool = True   # False: no float output, nothing to differentiate (see test_backward errors)
    second_order: bool = True   # False: the first derivative jumps at these inputs (ties)
    id: str = ""

    def __post_init__(self):
        self.id = self.id or self.op


def _as_list(value: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in value] if isinstance(value, (list, tuple)) else [np.asarray(value)]


def _is_float(array: np.ndarray) -> bool:
    return array.dtype.kind == "f"


def numeric_gradient(f: Callable[[dict[str, np.ndarray]], float], feeds: Mapping[str, np.ndarray],
                     name: str, eps: float = 1e-6) -> np.ndarray:
    """d f / d feeds[name] by central differences (feeds are copied, never changed)."""
    base = {k: np.array(v, copy=True) for k, v in feeds.items()}
    x = base[name]
    grad = np.zeros(x.shape, dtype=np.float64)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        saved = flat[i]
        flat[i] = saved + eps
        plus = f(base)
        flat[i] = saved - eps
        minus = f(base)
        flat[i] = saved
        gflat[i] = (plus - minus) / (2 * eps)
    return grad


def _assert_close(name: str, analytic: np.ndarray, expected: np.ndarray, rtol: float, atol: float,
                  what: str) -> None:
    analytic = np.asarray(analytic, dtype=np.float64)
    if analytic.shape != expected.shape:
        raise AssertionError(f"gradient of {name}: shape {analytic.shape} but {what} gives {expected.shape}")
    if not np.allclose(analytic, expected, rtol=rtol, atol=atol):
        err = np.abs(analytic - expected)
        worst = np.unravel_index(np.argmax(err), err.shape) if err.shape else ()
        raise AssertionError(f"gradient of {name} differs from {what}: max abs error {err.max():.3g} at "
                             f"{worst} (analytic {analytic[worst]!r}, {what} {expected[worst]!r})")


class ProgramGradCheck:
    """A program built from feeds, with loss = sum(v * out) and its backward appended."""

    def __init__(self, build: Callable[[dict[str, Variable]], Variable | Sequence[Variable]],
                 feeds: Mapping[str, np.ndarray], wrt: Sequence[str] | None = None, seed: int = 0) -> None:
        self.feeds = {k: np.asarray(v) for k, v in feeds.items()}
        self.wrt = list(wrt) if wrt is not None else [k for k, v in self.feeds.items() if _is_float(v)]
        self.forward, self.main, self.startup = Program(), None, Program()
        rng = np.random.default_rng(seed)
        with program_guard(self.forward, self.startup):
            variables = {k: data(k, v.shape, v.dtype) for k, v in self.feeds.items()}
            for k in self.wrt:
                variables[k].stop_gradient = False
            outs = build(variables)
            outs = [outs] if isinstance(outs, Variable) else [o for o in outs if o is not None]
            self.outputs = outs
            terms = []
            for i, out in enumerate(outs):
                if not out.dtype.startswith("float"):
                    continue
                name = f"cotangent_{i}"
                shape = [d if d >= 0 else self._runtime_dim(out, j) for j, d in enumerate(out.shape)]
                self.feeds[name] = rng.uniform(0.5, 1.5, size=shape).astype(out.dtype)
                terms.append(F.sum(out * data(name, shape, out.dtype)))
            self.loss = terms[0] if len(terms) == 1 else F.add_n(terms)
        self.main = self.forward.clone()
        with program_guard(self.main, self.startup):
            loss = self.main.global_block().var(self.loss.name)
            inputs = [self.main.global_block().var(k) for k in self.wrt]
            self.grads = gradients([loss], inputs)
        self.scope = Scope()
        self.exe = Executor()
        self.exe.run(self.startup, scope=self.scope)

    def _runtime_dim(self, out: Variable, axis: int) -> int:
        raise ValueError(f"check_grad: output {out.name} has an unknown size on axis {axis}; "
                         "give the inputs fully known shapes")

    def loss_value(self, feeds: Mapping[str, np.ndarray]) -> float:
        return float(self.exe.run(self.forward, feed=dict(feeds), fetch_list=[self.loss], scope=self.scope)[0])

    def analytic(self) -> dict[str, np.ndarray]:
        fetch = [g for g in self.grads if g is not None]
        values = iter(self.exe.run(self.main, feed=self.feeds, fetch_list=fetch, scope=self.scope))
        return {k: (next(values) if g is not None else np.zeros_like(self.feeds[k]))
                for k, g in zip(self.wrt, self.grads)}

    def numeric(self, eps: float = 1e-6) -> dict[str, np.ndarray]:
        return {k: numeric_gradient(self.loss_value, self.feeds, k, eps) for k in self.wrt}


def check_program_grad(build: Callable[[dict[str, Variable]], Variable | Sequence[Variable]],
                       feeds: Mapping[str, np.ndarray], wrt: Sequence[str] | None = None,
                       rtol: float = 1e-5, atol: float = 1e-7, eps: float = 1e-6,
                       seed: int = 0) -> dict[str, np.ndarray]:
    """Check the gradients of a whole program built by `build(variables)` against numeric ones.

    Feeds should be float64 for the numeric comparison to be tight. Returns the analytic grads.
    """
    check = ProgramGradCheck(build, feeds, wrt, seed)
    analytic, numeric = check.analytic(), check.numeric(eps)
    for name in check.wrt:
        _assert_close(name, analytic[name], numeric[name], rtol, atol, "central differences")
    return analytic


def build_single_op(op_type: str, inputs: Mapping[str, Any], attrs: Mapping[str, Any] | None,
                    n_out: int | None = None) -> Callable[[dict[str, Variable]], list[Variable]]:
    """A `build` function appending one op whose slot `S` reads feeds named `S` or `S_0, S_1...`."""

    def build(variables: dict[str, Variable]) -> list[Variable]:
        slot_args = {}
        for slot, value in inputs.items():
            if isinstance(value, (list, tuple)):
                slot_args[slot] = [variables[f"{slot}_{i}"] for i in range(len(value))]
            else:
                slot_args[slot] = variables[slot]
        out = append_static_op(op_type, slot_args, dict(attrs or {}), n_out)
        flat: list[Variable] = []
        for item in (out if isinstance(out, tuple) else (out,)):
            flat.extend(item if isinstance(item, list) else [item])
        return flat
    return build


def _flat_feeds(inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    feeds = {}
    for slot, value in inputs.items():
        if isinstance(value, (list, tuple)):
            feeds.update({f"{slot}_{i}": np.asarray(v) for i, v in enumerate(value)})
        else:
            feeds[slot] = np.asarray(value)
    return feeds


def check_grad(op_type: str, inputs: Mapping[str, Any], attrs: Mapping[str, Any] | None = None,
               no_grad: Sequence[str] = (), n_out: int | None = None, rtol: float = 1e-5,
               atol: float = 1e-7, eps: float = 1e-6, seed: int = 0,
               torch_fn: Callable[..., Any] | None = None) -> dict[str, np.ndarray]:
    """Check one registered op's gradient: a one-op program, append_backward vs central
    differences in float64 (and PyTorch when `torch_fn` is given).

    inputs: slot -> array (a list of arrays for a duplicable slot); integer arrays are fed
        but not differentiated. Gradients are keyed by slot (`X`, or `X_0`, `X_1`...).
    torch_fn(**slot_tensors) -> tensor or tuple: the same op in PyTorch.
    """
    get_op_def(op_type)  # fail early, naming an unknown op
    feeds = _flat_feeds(inputs)
    wrt = [k for k, v in feeds.items() if _is_float(v) and k.split("_")[0] not in no_grad and k not in no_grad]
    check = ProgramGradCheck(build_single_op(op_type, inputs, attrs, n_out), feeds, wrt, seed)
    analytic, numeric = check.analytic(), check.numeric(eps)
    for name in wrt:
        _assert_close(f"{op_type}.{name}", analytic[name], numeric[name], rtol, atol, "central differences")
    if torch_fn is not None:
        expected = torch_gradients(torch_fn, inputs, check, wrt)
        for name in wrt:
            _assert_close(f"{op_type}.{name}", analytic[name], expected[name], rtol, atol, "PyTorch")
    return analytic


def torch_gradients(torch_fn: Callable[..., Any], inputs: Mapping[str, Any], check: ProgramGradCheck,
                    wrt: Sequence[str]) -> dict[str, np.ndarray]:
    """The same VJP computed by PyTorch's autograd: the independent oracle."""
    import torch
    tensors: dict[str, Any] = {}
    args: dict[str, Any] = {}
    for slot, value in inputs.items():
        if isinstance(value, (list, tuple)):
            items = [torch.tensor(np.asarray(v), requires_grad=f"{slot}_{i}" in wrt) for i, v in enumerate(value)]
            tensors.update({f"{slot}_{i}": t for i, t in enumerate(items)})
            args[slot] = items
        else:
            t = torch.tensor(np.asarray(value), requires_grad=slot in wrt)
            tensors[slot] = args[slot] = t
    outs = torch_fn(**args)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    float_outs = [o for o in outs if o.dtype.is_floating_point]
    loss = sum((o * torch.tensor(check.feeds[f"cotangent_{i}"])).sum()
               for i, o in enumerate(float_outs))
    leaves = [tensors[k] for k in wrt]
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return {k: (g.detach().numpy() if g is not None else np.zeros(tensors[k].shape)) for k, g in zip(wrt, grads)}
