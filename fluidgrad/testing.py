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

from . import functions as F
from .backward import gradients
from .dispatch import append_static_op
from .eager import Tensor, backward, eager_apply, keep_only_what_is_read, to_tensor
from .executor import Executor, Scope
from .framework import Program, Variable, program_guard
from .ops.registry import get_op_def
from .static import data


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
    base = {k: np.array(v, copy=True, order="C") for k, v in feeds.items()}  # C order: reshape(-1) is a view
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


# ---------------------------------------------------------------- one op case, every check
# Each check takes an OpCase and either passes, raises AssertionError, or returns the reason
# it does not apply to that case (a string). `check_op` runs them all; tests/test_ops.py and
# tests/test_eager.py are parametrisations of these functions over every case.
def _cast_floats(value: Any, dtype: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_cast_floats(v, dtype) for v in value]
    value = np.asarray(value)
    return value.astype(dtype) if value.dtype.kind == "f" else value


def run_case(case: OpCase, float_dtype: Any = np.float64) -> tuple[list[np.ndarray], list[Variable]]:
    """Run the case's op once in a one-op program; its outputs and their Variables."""
    inputs = {k: _cast_floats(v, float_dtype) for k, v in case.inputs.items()}
    feeds = _flat_feeds(inputs)
    main = Program()
    with program_guard(main, Program()):
        variables = {k: data(k, v.shape, v.dtype) for k, v in feeds.items()}
        outs = build_single_op(case.op, inputs, dict(case.attrs), case.n_out)(variables)
    return Executor().run(main, feed=feeds, fetch_list=outs, scope=Scope()), outs


def _used(case: OpCase, values: list) -> list:
    return values if case.use_outputs is None else [values[i] for i in case.use_outputs]


def _reference(case: OpCase) -> list[np.ndarray]:
    if case.torch_fn is None:
        outs = case.numpy_fn(**case.inputs)
        return list(outs) if isinstance(outs, (list, tuple)) else [outs]
    import torch  # the oracle: an optional (test) dependency
    args = {slot: [torch.tensor(np.asarray(v)) for v in value] if isinstance(value, (list, tuple))
            else torch.tensor(np.asarray(value)) for slot, value in case.inputs.items()}
    outs = case.torch_fn(**args)
    return [o.numpy() for o in (list(outs) if isinstance(outs, (list, tuple)) else [outs])]


def _wrt(case: OpCase, feeds: Mapping[str, np.ndarray]) -> list[str]:
    return [k for k, v in feeds.items() if _is_float(v) and k.split("_")[0] not in case.no_grad
            and k not in case.no_grad]


def _has_gradient(case: OpCase) -> bool:
    return case.grad and get_op_def(case.op).has_gradient


def check_forward(case: OpCase) -> str | None:
    """Forward values (dtype, shape, value) equal the reference's, or `check_fn` accepts them."""
    values, _ = run_case(case)
    if case.check_fn is not None:
        case.check_fn(values, case)
        return None
    if case.torch_fn is None and case.numpy_fn is None:
        return "no forward reference"
    expected, values = _reference(case), _used(case, values)
    assert len(values) == len(expected), f"{case.id}: {len(values)} outputs, reference has {len(expected)}"
    for i, (got, want) in enumerate(zip(values, expected)):
        assert got.shape == want.shape, f"{case.id} output {i}: shape {got.shape}, reference {want.shape}"
        assert got.dtype == want.dtype, f"{case.id} output {i}: dtype {got.dtype}, reference {want.dtype}"
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{case.id} output {i}")
    return None


def check_float32_forward(case: OpCase) -> str | None:
    """The op on float32 inputs computes and declares float32 (values close to float64's)."""
    if not any(_is_float(v) for v in _flat_feeds(case.inputs).values()):
        return "no float inputs: the op's dtype comes from its attributes"
    ref, _ = run_case(case, np.float64)
    got, variables = run_case(case, np.float32)
    for i, (a, b, var) in enumerate(zip(got, ref, variables)):
        want = b.dtype if case.op == "cast" or b.dtype != np.float64 else np.dtype(np.float32)
        assert a.dtype == want, f"{case.id} output {i}: float32 run gives {a.dtype}, expected {want}"
        assert var.dtype == want.name, f"{case.id} output {i}: declared {var.dtype}, computed {want}"
        assert a.shape == b.shape
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"{case.id} output {i}")
    return None


def check_declared_shapes(case: OpCase) -> str | None:
    """What the shape rule declared at build time is what the kernel computed."""
    values, variables = run_case(case)
    for value, var in zip(values, variables):
        assert value.shape == var.shape and value.dtype.name == var.dtype, \
            f"{case.id}: declared {var.dtype}{list(var.shape)}, computed {value.dtype}{list(value.shape)}"
    return None


def check_inputs_unmodified(case: OpCase) -> str | None:
    """The kernel never writes into its inputs (the executor shares arrays between ops)."""
    op_def = get_op_def(case.op)
    args = []
    for slot in op_def.inputs:
        value = case.inputs.get(slot.name)
        args.append(None if value is None else [np.array(v) for v in value] if isinstance(value, list)
                    else np.array(value))
    saved = [None if a is None else [x.copy() for x in a] if isinstance(a, list) else a.copy() for a in args]
    for arg in args:  # writing into a read-only input raises
        for a in (arg if isinstance(arg, list) else [arg]):
            if a is not None:
                a.flags.writeable = False
    op_def.kernel(*args, **{**op_def.attrs, **case.attrs})
    for arg, before in zip(args, saved):
        for a, b in zip(arg if isinstance(arg, list) else [arg], before if isinstance(before, list) else [before]):
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=f"{case.id}: the kernel modified an input")
    return None


def check_gradient(case: OpCase) -> str | None:
    """append_backward's gradient equals central differences and PyTorch's (float64)."""
    if not _has_gradient(case):
        return "no gradient"
    feeds = _flat_feeds(case.inputs)
    wrt = _wrt(case, feeds)
    build_all = build_single_op(case.op, case.inputs, case.attrs, case.n_out)
    check = ProgramGradCheck(lambda variables: _used(case, build_all(variables)), feeds, wrt)
    analytic, numeric = check.analytic(), check.numeric(case.eps)
    for name in wrt:
        _assert_close(f"{case.id}.{name}", analytic[name], numeric[name], case.rtol, 1e-7, "central differences")
    if case.torch_fn is not None:
        expected = torch_gradients(case.torch_fn, case.inputs, check, wrt)
        for name in wrt:
            _assert_close(f"{case.id}.{name}", analytic[name], expected[name], case.rtol, 1e-9, "PyTorch")
    return None


def check_float32_gradient(case: OpCase) -> str | None:
    """The backward ops of a float32 op compute in float32, close to the float64 gradient."""
    if not _has_gradient(case):
        return "no gradient"

    def analytic(dtype: Any) -> dict[str, np.ndarray]:
        inputs = {k: _cast_floats(v, dtype) for k, v in case.inputs.items()}
        feeds = _flat_feeds(inputs)
        build_all = build_single_op(case.op, inputs, case.attrs, case.n_out)
        return ProgramGradCheck(lambda variables: _used(case, build_all(variables)), feeds,
                                [k for k, v in feeds.items() if _is_float(v)]).analytic()
    low, high = analytic(np.float32), analytic(np.float64)
    for name, value in low.items():
        assert value.dtype == np.float32, f"{case.id}: gradient of float32 {name} is {value.dtype}"
        np.testing.assert_allclose(value, high[name], rtol=2e-3, atol=1e-4, err_msg=f"{case.id}: {name}")
    return None


def check_second_order(case: OpCase) -> str | None:
    """Grad of grad: the first-order VJP program, differentiated again (Hessian-vector products),
    against central differences and PyTorch's double backward."""
    if not _has_gradient(case) or not case.second_order:
        return "not twice differentiable at these inputs" if _has_gradient(case) else "no gradient"
    feeds = _flat_feeds(case.inputs)
    wrt = _wrt(case, feeds)
    values, _ = run_case(case)
    rng = np.random.default_rng(7)
    cots = {f"cot{i}": rng.uniform(0.5, 1.5, size=v.shape).astype(v.dtype)
            for i, v in enumerate(v for v in _used(case, values) if _is_float(v))}
    feeds.update(cots)
    build_op = build_single_op(case.op, case.inputs, case.attrs, case.n_out)
    differentiated: list[str] = []  # the inputs whose first-order gradient is not a symbolic zero

    def first_order(variables: dict[str, Variable]) -> list[Variable]:
        outs = [o for o in _used(case, build_op(variables)) if o.dtype.startswith("float")]
        loss = F.add_n([F.sum(o * variables[f"cot{i}"]) for i, o in enumerate(outs)])
        grads = gradients([loss], [variables[k] for k in wrt])
        differentiated[:] = [k for k, g in zip(wrt, grads) if g is not None]
        return [g for g in grads if g is not None]
    with program_guard(Program(), Program()):
        if not first_order({k: data(k, v.shape, v.dtype) for k, v in feeds.items()}):
            return "the first-order gradient is a symbolic zero"
    second_wrt = wrt + list(cots)
    check = ProgramGradCheck(first_order, feeds, second_wrt)
    analytic, numeric = check.analytic(), check.numeric(case.eps)
    rtol = max(case.rtol, 1e-5)
    for name in second_wrt:
        _assert_close(f"{case.id} (grad of grad).{name}", analytic[name], numeric[name], rtol, 1e-7,
                      "central differences")
    if case.torch_fn is not None:
        expected = _torch_second_order(case, feeds, list(differentiated), check, second_wrt)
        for name in second_wrt if expected is not None else ():
            # where PyTorch's double-backward formula overflows (NaN, Inf) the differences decided
            want = np.where(np.isfinite(expected[name]), expected[name], analytic[name])
            _assert_close(f"{case.id} (grad of grad).{name}", analytic[name], want, rtol, 1e-9,
                          "PyTorch's double backward")
    return None


def _torch_second_order(case: OpCase, feeds: Mapping[str, np.ndarray], differentiated: Sequence[str],
                        check: ProgramGradCheck, wrt: Sequence[str]) -> dict[str, np.ndarray] | None:
    """The same Hessian-vector products by PyTorch (None where PyTorch has no double backward)."""
    import torch
    tensors = {k: torch.tensor(np.asarray(v), requires_grad=k in wrt) for k, v in feeds.items()}
    args = {slot: [tensors[f"{slot}_{i}"] for i in range(len(value))] if isinstance(value, (list, tuple))
            else tensors[slot] for slot, value in case.inputs.items()}
    outs = case.torch_fn(**args)
    outs = [o for o in (list(outs) if isinstance(outs, (list, tuple)) else [outs]) if o.dtype.is_floating_point]
    loss = sum((o * tensors[f"cot{i}"]).sum() for i, o in enumerate(outs))
    try:
        firsts = torch.autograd.grad(loss, [tensors[k] for k in differentiated], create_graph=True, allow_unused=True)
        objective = sum((g * torch.tensor(check.feeds[f"cotangent_{j}"])).sum()
                        for j, g in enumerate(firsts) if g is not None)
        if not isinstance(objective, torch.Tensor) or not objective.requires_grad:
            return {k: np.zeros(tensors[k].shape) for k in wrt}
        seconds = torch.autograd.grad(objective, [tensors[k] for k in wrt], allow_unused=True)
    except (RuntimeError, NotImplementedError) as exc:
        if "not implemented" in str(exc).lower():
            return None
        raise
    return {k: (g.detach().numpy(force=True) if g is not None else np.zeros(tensors[k].shape)) for k, g in zip(wrt, seconds)}


def check_eager_equals_static(case: OpCase) -> str | None:
    """The op run eagerly gives the static values and, through `backward`, the static gradients
    (of the same shapes and dtypes), keeping for the backward only what its grad maker reads."""
    with keep_only_what_is_read():
        return _check_eager_equals_static(case)


def _check_eager_equals_static(case: OpCase) -> str | None:
    op_def = get_op_def(case.op)
    if op_def.needs_runtime:
        return "static only (runs sub-blocks)"
    feeds = _flat_feeds(case.inputs)
    wrt = _wrt(case, feeds) if _has_gradient(case) else []
    tensors: dict[str, Tensor] = {}
    inputs: dict[str, Any] = {}
    for slot, value in case.inputs.items():
        names = [f"{slot}_{i}" for i in range(len(value))] if isinstance(value, (list, tuple)) else [slot]
        made = [to_tensor(feeds[n], stop_gradient=n not in wrt) for n in names]
        tensors.update(zip(names, made))
        inputs[slot] = made if isinstance(value, (list, tuple)) else made[0]
    out = eager_apply(case.op, inputs, dict(case.attrs), case.n_out)
    outs = _used(case, [t for item in (out if isinstance(out, tuple) else (out,))
                        for t in (item if isinstance(item, list) else [item])])
    if case.check_fn is None:  # a random op draws differently in each mode
        static_values = _used(case, run_case(case)[0])
        for i, (got, want) in enumerate(zip(outs, static_values)):
            assert got.dtype == want.dtype.name, f"{case.id} output {i}: eager {got.dtype}, static {want.dtype}"
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=f"{case.id} output {i}")
    if not wrt:
        return None
    build_all = build_single_op(case.op, case.inputs, case.attrs, case.n_out)
    static = ProgramGradCheck(lambda variables: _used(case, build_all(variables)), feeds, wrt)
    expected = static.analytic()
    roots = [(o, static.feeds[f"cotangent_{i}"]) for i, o in enumerate(outs)
             if o.dtype.startswith("float") and not o.stop_gradient]
    if roots:
        backward([r for r, _ in roots], [s for _, s in roots])
    for name in wrt:
        got = tensors[name].grad
        got = np.zeros_like(feeds[name]) if got is None else got.numpy()
        assert got.shape == expected[name].shape and got.dtype == expected[name].dtype, \
            f"{case.id}: d/d{name} is {got.dtype}{list(got.shape)} in eager mode, " \
            f"{expected[name].dtype}{list(expected[name].shape)} in static mode"
        np.testing.assert_allclose(got, expected[name], rtol=1e-10, atol=1e-12, err_msg=f"{case.id}: d/d{name}")
    return None


CHECKS: tuple[Callable[[OpCase], str | None], ...] = (
    check_forward, check_float32_forward, check_declared_shapes, check_inputs_unmodified, check_gradient,
    check_float32_gradient, check_second_order, check_eager_equals_static)


def check_op(case: OpCase, checks: Sequence[Callable[[OpCase], str | None]] = CHECKS) -> dict[str, str]:
    """Run every check on one op case: forward against the reference, float32 kept, declared
    shapes, inputs untouched, gradient against central differences and PyTorch, float32
    gradient, grad of grad, eager equal to static. Returns {check: "ok" or why it does not
    apply}; a failing check raises AssertionError naming the case. Users declare their own
    ops' cases the same way: `check_op(OpCase("my_op", {"X": x}, torch_fn=...))`."""
    return {check.__name__: check(case) or "ok" for check in checks}
