"""Gradient fuzzing: random programs, four independent answers that must agree.

For each random program (tests/fuzz_programs.py) with loss = sum_i sum(out_i * c_i):
  * static: `append_backward` or `gradients`, run by the Executor;
  * numeric: for a random direction u, <u, grad> must equal the central difference of the
    loss along u, in float64 (HIPS autograd's check); a stop_gradient value is held constant;
  * PyTorch, float64 (every kind has a PyTorch twin);
  * eager mode (Tensors), when fluidgrad has it.
At a kink (relu at 0, ties of max, a branch flip) one-sided differences disagree, or the central
difference changes with the step; there only static and eager are compared, since conventions
for subgradients legitimately differ.
Second order (grad of grad, as HIPS autograd checks one order higher): for random w, the
gradient of <grad, w> (gradients() applied twice) is a Hessian-vector product, checked the same
way against the central difference of <grad, w> and against PyTorch's double backward.

The programs mix in Python scalars (`x / 2`, `3 ** x`: weak, the float dtype kept), integer
and bool tensors on the way (counts, truncating casts, integer arithmetic, true division),
indexing (`x[-1]`, `x[a:b]`), loops and branches; the second-order run includes them too
(through a loop: the documented no-gradient error). Focused properties below fuzz loops and
branches whose outputs do not all reach the loss, and grad of grad through loops.

CI runs a fixed, derandomized budget; `pytest --fuzz-long[=N]` runs N programs with fresh
randomness. The number of programs run is printed in the terminal summary.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.dispatch import apply_op
from fluidgrad.executor import Executor, Scope
from fluidgrad.framework import Program, program_guard, unique_name_guard
from fluidgrad.framework.validate import validate_program
from fluidgrad.static import create_parameter, data
from fluidgrad.static import nn as static_nn

from fuzz_conftest_plugin import FUZZ_PROPERTY
from fuzz_programs import (BODY_UNARY, COND_THRESHOLD, KINDS, FluidContext, Spec, _run_body, _torch_body,
                           cotangents, input_values, programs, realize, torch_ops_available)

CI_EXAMPLES = 500
CI_SECOND_ORDER_EXAMPLES = 200
EPS = 1e-6


# ---------------------------------------------------------------- the four answers

class StaticRun:
    """The spec as a Program: loss, input gradients, and the values of stop_gradient nodes."""

    def __init__(self, spec: Spec, frozen: dict[int, np.ndarray] | None = None, backward: bool = True,
                 order: int = 1, dtype: str = "float64") -> None:
        self.spec = spec
        self.dtype = dtype
        self.main, startup = Program(), Program()
        self.scope, self.feeds = Scope(), {}
        self.inputs: dict[int, tuple[str, str]] = {}  # value -> (name, role)
        values = {v: a.astype(dtype) for v, a in input_values(spec).items()}
        int_count = [0]

        def leaf(v: int, frozen_value: np.ndarray | None):
            shape = spec.shape(v)
            if frozen_value is not None:
                name = f"frozen_{v}"
                self.feeds[name] = frozen_value
                return data(name, shape, dtype)
            role = spec.nodes[spec.value_nodes[v][0]].p("role")
            name = f"in_{v}"
            self.inputs[v] = (name, role)
            if role == "param":
                self.scope[name] = values[v]
                return create_parameter(shape, dtype, name=name)
            var = data(name, shape, dtype)
            var.stop_gradient = role == "const"
            self.feeds[name] = values[v]
            return var

        def make_int(array: np.ndarray):  # a constant input: indices, labels, running statistics
            name = f"const_{int_count[0]}"
            int_count[0] += 1
            array = array.astype(dtype) if array.dtype.kind == "f" else array
            self.feeds[name] = array
            return data(name, array.shape, array.dtype.name)

        def stop(var):
            # detach: a stopped copy. Marking `var` itself also stops second-order flow through
            # the grad ops that read it (a Paddle-style variable property, not detach); for
            # first order both mean the same, so half the programs mark the variable itself.
            if order == 1 and spec.seed % 2 == 0:
                var.stop_gradient = True
                return var
            copy = apply_op("assign", {"X": var})
            copy.stop_gradient = True
            return copy

        ctx = FluidContext(fg, True, make_int)
        with program_guard(self.main, startup), unique_name_guard():
            self.values = realize(spec, leaf, lambda k, n, xs: k.fluid(fg, ctx, n, *xs), stop, frozen)
            self.loss = self.objective = _fluid_loss(spec, self.values, lambda v, c: self._cotangent(v, c))
            self.grads: dict[int, object] = {}
            if order == 2:
                self._second_order_objective()
            if backward:
                self._append_backward()

    def _cotangent(self, v: int, c: np.ndarray):
        name = f"cotangent_{v}"
        self.feeds[name] = c.astype(self.dtype)
        return data(name, c.shape, self.dtype)

    def _wrt(self) -> dict[int, object]:
        return {v: self.main.global_block().var(name) for v, (name, role) in self.inputs.items() if role != "const"}

    def _second_order_objective(self) -> None:
        """objective = <d loss / d inputs, w> for random w: its gradient is a Hessian-vector product."""
        self._append_backward()
        first = {v: g for v, g in self.grads.items() if g is not None}
        if not first:
            raise NoSecondOrder("no input gets a first-order gradient")
        weights = second_order_weights(self.spec)
        terms = []
        for v, grad in sorted(first.items()):
            name = f"w_{v}"
            self.feeds[name] = weights[v]
            terms.append(fg.sum(fg.multiply(grad, data(name, weights[v].shape, "float64"))))
        self.objective = terms[0] if len(terms) == 1 else fg.add_n(terms)
        self.grads = {}

    def _append_backward(self) -> None:
        wrt = self._wrt()
        if self.objective is not self.loss:  # second order: always through gradients()
            order = sorted(wrt)
            self.grads = dict(zip(order, fg.gradients([self.objective], [wrt[v] for v in order])))
        elif self.spec.use_append_backward:
            pairs = dict((p.name, g) for p, g in fg.append_backward(self.loss))
            block = self.main.global_block()
            for v, var in wrt.items():
                grad = pairs.get(var.name) if self.inputs[v][1] == "param" else \
                    (block.var(var.name + "@GRAD") if block.has_var(var.name + "@GRAD") else None)
                self.grads[v] = grad
        else:
            order = sorted(wrt)
            for v, grad in zip(order, fg.gradients([self.loss], [wrt[v] for v in order])):
                self.grads[v] = grad

    def run(self, exe: Executor, feeds: dict | None = None, params: dict | None = None,
            extra: tuple = ()) -> tuple[float, dict[int, np.ndarray], list[np.ndarray]]:
        for name, value in (params or {}).items():
            self.scope[name] = value
        fetched_grads = [v for v, g in self.grads.items() if g is not None]
        fetch = [self.objective] + [self.grads[v] for v in fetched_grads] + list(extra)
        out = exe.run(self.main, feed=dict(self.feeds, **(feeds or {})), fetch_list=fetch, scope=self.scope)
        grads = {v: np.zeros(self.spec.shape(v), self.dtype) for v in self.grads}
        grads.update(zip(fetched_grads, out[1:1 + len(fetched_grads)]))
        return float(out[0]), grads, out[1 + len(fetched_grads):]


class NoSecondOrder(Exception):
    """The program has no first-order gradient to differentiate again."""


def second_order_weights(spec: Spec) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(spec.seed + 3)
    return {v: rng.uniform(-1.0, 1.0, size=spec.shape(v)) for v in range(len(spec.value_nodes))
            if spec.nodes[spec.value_nodes[v][0]].kind == "input"}


def _fluid_loss(spec: Spec, values: list, cotangent) -> object:
    cots = cotangents(spec)
    terms = [fg.sum(fg.multiply(values[v], cotangent(v, cots[v]))) for v in spec.loss_terms]
    return terms[0] if len(terms) == 1 else fg.add_n(terms)


def _torch_loss(spec: Spec) -> tuple[object, list[int], dict[int, torch.Tensor]]:
    """The program's loss in PyTorch, its differentiable leaves, and their order."""
    values = input_values(spec)
    leaves: dict[int, torch.Tensor] = {}

    def leaf(v, frozen_value):
        role = spec.nodes[spec.value_nodes[v][0]].p("role")
        t = torch.tensor(values[v], dtype=torch.float64, requires_grad=role != "const")
        if role != "const":
            leaves[v] = t
        return t

    outs = realize(spec, leaf, lambda k, n, xs: k.torch(torch, n, *xs), lambda t: t.detach())
    cots = cotangents(spec)
    loss = sum((outs[v] * torch.tensor(cots[v])).sum() for v in spec.loss_terms)
    return loss, sorted(leaves), leaves


def torch_answer(spec: Spec) -> tuple[float, dict[int, np.ndarray]]:
    loss, order, leaves = _torch_loss(spec)
    grads = torch.autograd.grad(loss, [leaves[v] for v in order], allow_unused=True) if loss.requires_grad \
        else [None] * len(order)
    return float(loss.detach()), {v: (g.numpy() if g is not None else np.zeros(spec.shape(v))) for v, g in zip(order, grads)}


def torch_second_order(spec: Spec) -> tuple[float, dict[int, np.ndarray]]:
    """<grad, w> and its gradient (a Hessian-vector product) by PyTorch's double backward."""
    loss, order, leaves = _torch_loss(spec)
    firsts = torch.autograd.grad(loss, [leaves[v] for v in order], create_graph=True, allow_unused=True)
    weights = second_order_weights(spec)
    objective = sum((g * torch.tensor(weights[v])).sum() for v, g in zip(order, firsts) if g is not None)
    if not isinstance(objective, torch.Tensor) or not objective.requires_grad:
        return float(objective), {v: np.zeros(spec.shape(v)) for v in order}
    seconds = torch.autograd.grad(objective, [leaves[v] for v in order], allow_unused=True)
    return float(objective.detach()), {v: (g.numpy(force=True) if g is not None else np.zeros(spec.shape(v)))
                                       for v, g in zip(order, seconds)}


def eager_available() -> bool:
    return hasattr(fg, "to_tensor")


def _eager_loss(spec: Spec) -> tuple[object, dict[int, object]]:
    """The program run eagerly: its loss and its differentiable leaf Tensors."""
    values = input_values(spec)
    leaves = {}

    def leaf(v, frozen_value):
        role = spec.nodes[spec.value_nodes[v][0]].p("role")
        t = fg.to_tensor(values[v], dtype="float64", stop_gradient=role == "const")
        if role != "const":
            leaves[v] = t
        return t

    ctx = FluidContext(fg, False, lambda array: fg.to_tensor(array))
    outs = realize(spec, leaf, lambda k, n, xs: k.fluid(fg, ctx, n, *xs), lambda t: t.detach())
    return _fluid_loss(spec, outs, lambda v, c: fg.to_tensor(c)), leaves


def eager_answer(spec: Spec) -> tuple[float, dict[int, np.ndarray]]:
    loss, leaves = _eager_loss(spec)
    if not loss.stop_gradient:
        loss.backward()
    grads = {v: (t.grad.numpy() if t.grad is not None else np.zeros(spec.shape(v))) for v, t in leaves.items()}
    return float(loss.numpy()), grads


def jit_available() -> bool:
    return hasattr(fg, "jit") and hasattr(fg.jit, "to_static")


def jit_answer(spec: Spec) -> tuple[float, dict[int, np.ndarray]]:
    """The program written as eager code, traced by `jit.to_static`, run and differentiated."""
    values = input_values(spec)
    order = [v for v in range(len(spec.value_nodes)) if spec.nodes[spec.value_nodes[v][0]].kind == "input"]
    roles = {v: spec.nodes[spec.value_nodes[v][0]].p("role") for v in order}

    def stop(var):
        copy = apply_op("assign", {"X": var})
        copy.stop_gradient = True
        return copy

    def fn(*args):
        by_value = dict(zip(order, args))
        ctx = FluidContext(fg, True, lambda array: fg.to_tensor(array))
        outs = realize(spec, lambda v, frozen: by_value[v], lambda k, n, xs: k.fluid(fg, ctx, n, *xs), stop)
        return _fluid_loss(spec, outs, lambda v, c: fg.to_tensor(c))

    tensors = [fg.to_tensor(values[v], dtype="float64", stop_gradient=roles[v] == "const") for v in order]
    loss = fg.jit.to_static(fn)(*tensors)
    if not loss.stop_gradient:
        loss.backward()
    grads = {v: (t.grad.numpy() if t.grad is not None else np.zeros(spec.shape(v)))
             for v, t in zip(order, tensors) if roles[v] != "const"}
    return float(loss.numpy()), grads


def eager_second_order(spec: Spec) -> dict[int, np.ndarray] | None:
    """The Hessian-vector product by eager mode: grad(create_graph=True), then grad again."""
    loss, leaves = _eager_loss(spec)
    order = sorted(leaves)
    if loss.stop_gradient or not order:
        return None
    firsts = fg.grad([loss], [leaves[v] for v in order], create_graph=True, allow_unused=True)
    weights = second_order_weights(spec)
    terms = [fg.sum(fg.multiply(g, fg.to_tensor(weights[v]))) for v, g in zip(order, firsts) if g is not None]
    objective = terms[0] if len(terms) == 1 else fg.add_n(terms) if terms else None
    if objective is None or objective.stop_gradient:
        return {v: np.zeros(spec.shape(v)) for v in order}
    seconds = fg.grad([objective], [leaves[v] for v in order], allow_unused=True)
    return {v: (g.numpy() if g is not None else np.zeros(spec.shape(v))) for v, g in zip(order, seconds)}


class Directional:
    """f along a random direction u through the inputs, with stop_gradient values frozen."""

    def __init__(self, spec: Spec, static: StaticRun, exe: Executor, frozen: dict[int, np.ndarray],
                 order: int = 1) -> None:
        self.forward = StaticRun(spec, frozen=frozen, backward=False, order=order)
        self.exe = exe
        rng = np.random.default_rng(spec.seed + 2)
        self.base = input_values(spec)
        self.u = {v: rng.standard_normal(spec.shape(v)) for v in static.grads}

    def f(self, t: float) -> float:
        feeds, params = {}, {}
        for v, (name, role) in self.forward.inputs.items():
            value = self.base[v] + t * self.u[v] if v in self.u else self.base[v]
            (params if role == "param" else feeds)[name] = value
        return self.forward.run(self.exe, feeds, params)[0]

    def probe(self) -> tuple[float, float, bool]:
        """f(0), the central difference, and whether f is not smooth here (a kink or a jump):
        one-sided differences disagree, or the central difference changes with the step."""
        f0, fp, fm, fp2, fm2 = (self.f(t) for t in (0.0, EPS, -EPS, EPS / 2, -EPS / 2))
        central, half = (fp - fm) / (2 * EPS), (fp2 - fm2) / EPS
        one_sided = abs((fp - f0) / EPS - (f0 - fm) / EPS)
        noise = 1e-8 * abs(f0)
        kink = one_sided > 1e-4 * (1 + abs(central)) + noise or \
            abs(central - half) > 1e-5 * (1 + abs(central)) + 2 * noise
        return f0, central, kink

    def along(self, grads: dict[int, np.ndarray]) -> float:
        return float(sum(np.sum(self.u[v] * grads[v]) for v in self.u))


def _close(a: np.ndarray, b: np.ndarray, rtol: float) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=rtol * 1e-3 * scale))


def check_program(spec: Spec, stats: dict[str, float]) -> None:
    exe = Executor()
    static = StaticRun(spec)
    assert validate_program(static.main, static.feeds) == [], f"build-time validation flags a valid program\n{spec}"
    stop_vals = sorted(spec.stop)
    loss, grads, stopped = static.run(exe, extra=tuple(static.values[v] for v in stop_vals))
    if not np.isfinite(loss) or abs(loss) > 1e12:
        # repeated squaring in a loop can overflow float64: not a gradient question, unless
        # PyTorch computes a finite value for the same program
        t_loss = torch_answer(spec)[0] if torch_ops_available(spec) else float("inf")
        assert not np.isfinite(t_loss) or abs(t_loss) > 1e12, f"loss is {loss}, PyTorch's {t_loss}\n{spec}"
        stats["overflow"] += 1
        assume(False)
    for v, g in grads.items():
        assert g.shape == spec.shape(v), f"gradient of input {v} has shape {g.shape}, expected {spec.shape(v)}"

    # numeric: <u, grad> against the central difference, unless the point is a kink
    line = Directional(spec, static, exe, dict(zip(stop_vals, stopped)))
    f0, central, kink = line.probe()
    assert abs(f0 - loss) <= 1e-9 * (1 + abs(loss)), f"forward-only program gives {f0}, with backward {loss}"
    if kink:
        stats["kinks"] += 1
    else:
        analytic = line.along(grads)
        tol = 1e-5 * (1 + abs(central)) + 1e-8 * abs(f0)
        assert abs(analytic - central) <= tol, (
            f"<u, static grad> = {analytic!r} but the central difference is {central!r}\n{spec}\n"
            f"{static.main}")
        stats["numeric"] += 1

    if torch_ops_available(spec):
        t_loss, t_grads = torch_answer(spec)
        assert abs(t_loss - loss) <= 1e-8 * (1 + abs(loss)), f"loss {loss} but PyTorch gives {t_loss}\n{spec}"
        if not kink:
            for v, g in grads.items():
                assert _close(g, t_grads[v], 1e-6), (
                    f"gradient of input {v} differs from PyTorch:\nstatic {g}\ntorch  {t_grads[v]}\n{spec}\n"
                    f"{static.main}")
            stats["torch"] += 1

    if eager_available():
        e_loss, e_grads = eager_answer(spec)
        assert abs(e_loss - loss) <= 1e-9 * (1 + abs(loss)), f"loss {loss} but eager gives {e_loss}\n{spec}"
        for v, g in grads.items():
            assert _close(g, e_grads[v], 1e-8), (
                f"gradient of input {v} differs from eager:\nstatic {g}\neager  {e_grads[v]}\n{spec}")
        stats["eager"] += 1
    if not kink and spec.seed % 3 == 0:
        check_float32(spec, grads, stats)
    if jit_available():
        j_loss, j_grads = jit_answer(spec)
        assert abs(j_loss - loss) <= 1e-9 * (1 + abs(loss)), f"loss {loss} but jit.to_static gives {j_loss}\n{spec}"
        for v, g in grads.items():
            assert _close(g, j_grads[v], 1e-8), (
                f"gradient of input {v} differs from jit.to_static:\nstatic {g}\njit    {j_grads[v]}\n{spec}")
        stats["jit"] += 1
    if spec.kinds & {"while", "cond"}:
        stats["control_flow"] += 1


def check_second_order(spec: Spec, stats: dict[str, float]) -> None:
    """Grad of grad: d<grad, w>/dx (static, gradients() twice) vs numeric and PyTorch's double backward."""
    from fluidgrad.framework.errors import NoGradientError
    exe = Executor()
    try:
        static = StaticRun(spec, order=2)
    except NoSecondOrder:
        return
    except NoGradientError as err:  # a grad op registered without a gradient (conv2d_input_grad, while_grad)
        assert "has no gradient" in str(err) and "op " in str(err), f"unclear error: {err}\n{spec}"
        stats["no_second_order"] += 1
        return
    stop_vals = sorted(spec.stop)
    value, hvp, stopped = static.run(exe, extra=tuple(static.values[v] for v in stop_vals))
    assume(np.isfinite(value) and abs(value) < 1e12)  # float64 overflow is not a gradient question
    line = Directional(spec, static, exe, dict(zip(stop_vals, stopped)), order=2)
    f0, central, kink = line.probe()
    assert abs(f0 - value) <= 1e-9 * (1 + abs(value)), f"<grad, w> is {f0} alone but {value} with its gradient"
    if kink:
        stats["kinks"] += 1
        return
    analytic = line.along(hvp)
    assert abs(analytic - central) <= 1e-5 * (1 + abs(central)) + 1e-8 * abs(f0), (
        f"second order: <u, static Hw> = {analytic!r} but the central difference of <grad, w> is {central!r}\n"
        f"{spec}\n{static.main}")
    stats["second_order"] += 1
    if eager_available():
        e_hvp = eager_second_order(spec)
        for v, h in hvp.items():
            expected = e_hvp[v] if e_hvp is not None else np.zeros_like(h)
            assert _close(h, expected, 1e-8), (
                f"second order of input {v} differs from eager:\nstatic {h}\neager  {expected}\n{spec}")
        stats["second_order_eager"] += 1
    if torch_ops_available(spec):
        t_value, t_hvp = torch_second_order(spec)
        assert abs(t_value - value) <= 1e-8 * (1 + abs(value)), f"<grad, w> {value} but PyTorch gives {t_value}"
        for v, h in hvp.items():
            assert _close(h, t_hvp[v], 1e-6), (
                f"second order of input {v} differs from PyTorch:\nstatic {h}\ntorch  {t_hvp[v]}\n{spec}")


def check_float32(spec: Spec, grads64: dict[int, np.ndarray], stats: dict[str, float]) -> None:
    """The same program in float32: every gradient is float32 (variable and array) and near float64's."""
    static = StaticRun(spec, dtype="float32")
    for v, var in static.grads.items():
        assert var is None or var.dtype == "float32", f"gradient {var.name} is {var.dtype} in a float32 program"
    loss, grads, _ = static.run(Executor())
    # float32 rounding is relative to the largest values around, not to each (maybe cancelling) entry
    scale = max([1.0] + [float(np.max(np.abs(g), initial=0.0)) for g in grads64.values()])
    for v, g in grads.items():
        assert g.dtype == np.float32, f"gradient of input {v} is a {g.dtype} array in a float32 program\n{spec}"
        assert np.allclose(g, grads64[v], rtol=2e-2, atol=2e-3 * scale), (
            f"float32 gradient of input {v} is far from float64's:\nfloat32 {g}\nfloat64 {grads64[v]}\n{spec}")
    stats["float32"] += 1


def _fuzz_settings(request, examples: int = CI_EXAMPLES) -> settings:
    long_run = request.config.getoption("--fuzz-long", default=0)
    return settings(max_examples=long_run or examples, deadline=None, derandomize=not long_run,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow in the rare program that squares in a loop
def test_random_programs_have_right_gradients(request):
    stats = dict.fromkeys(["programs", "numeric", "torch", "eager", "jit", "float32", "control_flow", "kinks",
                           "overflow"], 0)
    start = time.perf_counter()

    @_fuzz_settings(request)
    @given(programs())
    def run(spec: Spec) -> None:
        check_program(spec, stats)
        stats["programs"] += 1

    try:
        run()
    finally:
        stats["seconds"] = time.perf_counter() - start
        request.node.user_properties.append((FUZZ_PROPERTY, dict(stats)))
    assert stats["numeric"] > stats["programs"] // 2, f"too few programs checked numerically: {stats}"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_random_programs_have_right_second_derivatives(request):
    stats = dict.fromkeys(["second_order_programs", "second_order", "second_order_eager", "no_second_order",
                           "kinks"], 0)
    start = time.perf_counter()

    @_fuzz_settings(request, CI_SECOND_ORDER_EXAMPLES)
    @given(programs(max_ops=6, control_flow=True))  # grad of grad through cond; through while: the error
    def run(spec: Spec) -> None:
        check_second_order(spec, stats)
        stats["second_order_programs"] += 1

    try:
        run()
    finally:
        stats["second_order_seconds"] = time.perf_counter() - start
        request.node.user_properties.append((FUZZ_PROPERTY, dict(stats)))
    assert stats["second_order"] > stats["second_order_programs"] // 3, f"too few second-order checks: {stats}"


def test_every_differentiable_op_is_fuzzed_or_excused():
    """New ops must join the fuzzer (tests/fuzz_programs.py KINDS) or say here why not."""
    from fluidgrad.ops.registry import registered_ops
    fuzzed = {op for k in KINDS.values() for op in k.ops}
    excused = {
        # the gradients of other ops (their own gradients are exercised as the grad ops run)
        "leaky_step", "unreduce", "reshape_as", "slice_grad", "gather_grad", "one_hot_like",
        "clip_mask", "conv2d_input_grad", "conv2d_filter_grad", "pool2d_grad", "max_pool2d_select",
        "select_input_grad", "split_as", "relu_grad", "sigmoid_grad", "tanh_grad", "softmax_grad",
        "softmax_with_cross_entropy_grad", "counted_mean_grad",
        # cross_entropy's mean over labels not ignored (integer labels, as softmax_with_cross_entropy's):
        # op cases in tests/op_cases/core_loss.py, whole losses in tests/test_ignore_index.py
        "counted_mean",
        # the losses' run-time label shape check (the label itself): op cases in tests/op_cases/core_loss.py,
        # whole losses in tests/test_review_s14_docs.py
        "check_label_shape",
        # op cases in tests/op_cases/attention.py (mask, causal, grad of grad, eager); public use in
        # tests/test_attention.py
        "attention_softmax",
        "conv1d_input_grad", "conv1d_filter_grad", "conv3d_input_grad", "conv3d_filter_grad", "pool1d_grad",
        "pool3d_grad", "max_pool_index_grad", "max_pool_index_select", "interpolate_grad", "unfold_grad",
        # the 1-D / 3-D twins of fuzzed 2-D ops (one rank-generic kernel), and resampling ops whose op cases
        # (tests/op_cases/nn.py) check gradient, grad of grad and eager for each rank and mode
        "conv1d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose", "pool1d", "pool3d",
        "max_pool1d_with_index", "max_pool3d_with_index", "interpolate", "unfold", "fold",
        # domain (0, 1), not yet among the fuzzer's input domains: their op cases (tests/op_cases/elementwise.py,
        # core_loss.py) check gradient, grad of grad, float32 and eager
        "logit", "bce_loss",
        # constants: their gradient is a symbolic zero, nothing to compare
        "fill_zeros_like", "fill_any_like",
        # random draws: a zero gradient (PyTorch's), checked by its op case (tests/op_cases/sampling.py)
        "bernoulli",
        # the gamma family's draws (seeded, positive concentrations) and P(a, x), and poisson's zero gradient:
        # their op cases (tests/op_cases/gamma_sampling.py) check gradients numerically, float32 and eager
        "standard_gamma", "gammainc", "poisson",
        # a float cast changes precision, which a float64 numeric check cannot follow
        "cast",
        # collectives: identities in a world of one; tests/test_distributed.py checks them on 2-3 ranks
        "c_allreduce_sum", "c_allreduce_avg", "c_broadcast", "c_reduce_sum", "c_allgather", "c_reducescatter",
        "c_alltoall",
        "c_bucket_allreduce", "coalesce", "uncoalesce",  # gradient-bucket packing, each the other's gradient (op cases)
        # piecewise constant or with kinks (op cases check them at chosen points), or shape-changing
        # reductions and scans (op cases in tests/op_cases/reduce.py and linalg.py, with grad of grad)
        "floor", "ceil", "round", "trunc", "elementwise_mod", "elementwise_fmod", "elementwise_floordiv",
        "elu", "elu_grad", "hardswish", "hardswish_grad", "prelu", "gelu_grad", "silu_grad", "mish_grad",
        "softplus_grad", "log_sigmoid_grad", "logsumexp", "p_norm", "reduce_prod", "cumsum", "cumprod", "cumprod_grad",
        "logcumsumexp", "logcumsumexp_grad",
        "einsum",
        # integer labels and lengths a random program cannot draw consistently: op cases (tests/op_cases/ctc.py)
        # and tests/test_ctc.py check gradient, PyTorch parity and eager
        "ctc_loss",
        "inverse", "determinant", "roi_align", "roi_align_grad",  # square matrices / boxes: op cases (matrix.py, detection.py)
        "solve", "cholesky", "log_abs_det", "pinv",  # well-conditioned or positive-definite matrices: op cases (matrix.py)
        "triangular_solve", "matrix_exp",  # well-conditioned factors: op cases (matrix_functions.py)
        "svd", "eigh", "qr",  # distinct singular values / eigenvalues, full rank: op cases (decomposition.py)
        "pylayer",  # a traced PyLayer: its gradient is the user's backward (tests/test_pylayer_static.py)
        "print",  # prints on every run (a fuzzed program would flood stdout); an identity: op cases (printing.py)
        "bincount",  # integer bins and an output length known at run time only (tests/test_bincount_static.py)
        "segment_pool",  # sorted integer ids, run-time length: op cases (segment.py) and tests/test_segment.py
        # complex values, which the fuzzer's real programs do not make: tests/test_fft.py checks gradients against
        # central differences and torch, grad of grad, and eager against static
        "fft_c2c", "fft_r2c", "fft_c2r", "fft_resize", "fft_hermitian_weight", "real", "imag", "complex", "conj",
        # integer indices a random program cannot draw consistently (edges14's op, session 14): its op cases
        # (tests/op_cases/scatter_reduce.py) check gradient, torch parity and eager; excused here by dist14 so
        # that land trains carrying it pass this check
        "scatter_reduce",
    }
    missing = sorted(name for name, op_def in registered_ops().items()
                     if op_def.has_gradient and name not in fuzzed | excused and not op_def.needs_runtime)
    assert not missing, f"differentiable ops the fuzzer never generates: {missing}"


# ---------------------------------------------------------------- control-flow corners, fuzzed
# Loops and branches whose outputs do not all reach the loss, and grad of grad through loops:
# random bodies of unary steps (nested loops and branches among them), against PyTorch.
_STEP = st.sampled_from(BODY_UNARY).map(lambda name: (name,))
_BODY = st.lists(st.one_of(_STEP, st.tuples(st.just("while"), st.integers(1, 2), st.lists(_STEP, min_size=1,
                                                                                      max_size=2).map(tuple))),
                 min_size=1, max_size=3).map(tuple)


def _corner_program(kind: str, body: tuple, else_body: tuple, trips: int, shape: tuple[int, ...]):
    """x -> (out, aux) by a while loop (trips) or a cond; only `out` reaches the loss."""
    ctx = FluidContext(fg, True, None)
    x = data("x", list(shape), "float64")
    x.stop_gradient = False
    c = data("c", list(shape), "float64")
    if kind == "while":
        i, limit = fg.full([1], 0, "int64"), fg.full([1], trips, "int64")

        def step(i, v, aux):
            return [apply_op("increment", {"X": i}, {"step": 1.0}), _run_body(fg, ctx, body, v, {}), fg.tanh(v) + aux]
        _, out, _aux = static_nn.while_loop(lambda i, v, aux: fg.less_than(i, limit), step, [i, x, fg.zeros_like(x)])
    else:
        pred = fg.greater_than(fg.sum(x), fg.full([], COND_THRESHOLD, "float64"))
        out, _aux = static_nn.cond(pred, lambda: (_run_body(fg, ctx, body, x, {}), fg.tanh(x)),
                                   lambda: (_run_body(fg, ctx, else_body, x, {}), fg.sin(x)))
    return x, c, fg.sum(fg.multiply(out, c))


def _torch_corner(kind, body, else_body, trips, x, c):
    if kind == "while":
        out = _torch_body(torch, (("while", trips, body),), x, {})
    else:
        out = _torch_body(torch, body if float(x.detach().sum()) > COND_THRESHOLD else else_body, x, {})
    return (out * c).sum()


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(["while", "cond"]), _BODY, _BODY, st.integers(1, 3),
       st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple), st.integers(0, 2**31 - 1))
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_loop_and_branch_outputs_that_do_not_reach_the_loss(kind, body, else_body, trips, shape, seed):
    rng = np.random.default_rng(seed)
    x0, c0 = rng.uniform(-1.5, 1.5, shape), rng.uniform(0.5, 1.5, shape)
    main = Program()
    with program_guard(main, Program()), unique_name_guard():
        x, c, loss = _corner_program(kind, body, else_body, trips, shape)
        (dx,) = fg.gradients([loss], [x])
    value, grad = Executor().run(main, feed={"x": x0, "c": c0}, fetch_list=[loss, dx], scope=Scope())
    tx = torch.tensor(x0, requires_grad=True)
    t_loss = _torch_corner(kind, body, else_body, trips, tx, torch.tensor(c0))
    (t_grad,) = torch.autograd.grad(t_loss, [tx])
    assert abs(float(value) - t_loss.item()) <= 1e-9 * (1 + abs(float(value)))
    assert _close(grad, t_grad.numpy(), 1e-8), f"{kind} {body} / {else_body}: {grad} vs PyTorch {t_grad.numpy()}"


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_BODY, st.integers(1, 3), st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple),
       st.integers(0, 2**31 - 1))
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_grad_of_grad_through_a_loop_is_right_or_the_documented_error(body, trips, shape, seed):
    """Either the Hessian-vector product equals PyTorch's, or the no-gradient error names the loop."""
    from fluidgrad.framework.errors import NoGradientError
    rng = np.random.default_rng(seed)
    x0, c0, w0 = rng.uniform(-1.5, 1.5, shape), rng.uniform(0.5, 1.5, shape), rng.uniform(0.5, 1.5, shape)
    main = Program()
    with program_guard(main, Program()), unique_name_guard():
        x, c, loss = _corner_program("while", body, (), trips, shape)
        w = data("w", list(shape), "float64")
        (dx,) = fg.gradients([loss], [x])
        objective = fg.sum(fg.multiply(dx, w))
        try:
            (hvp,) = fg.gradients([objective], [x])
        except NoGradientError as err:
            assert "while" in str(err), f"the no-gradient error does not name the loop: {err}"
            return
    (value,) = Executor().run(main, feed={"x": x0, "c": c0, "w": w0}, fetch_list=[hvp], scope=Scope())
    tx = torch.tensor(x0, requires_grad=True)
    (t_dx,) = torch.autograd.grad(_torch_corner("while", body, (), trips, tx, torch.tensor(c0)), [tx],
                                  create_graph=True)
    (t_hvp,) = torch.autograd.grad((t_dx * torch.tensor(w0)).sum(), [tx])
    assert _close(value, t_hvp.numpy(), 1e-6), f"{body}: {value} vs PyTorch {t_hvp.numpy()}"
