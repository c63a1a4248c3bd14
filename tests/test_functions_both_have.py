"""The functions torch and Paddle 2 both have that session 13 added (tensor/quantiles.py, runs.py,
assembled.py, integrals.py, max_norm.py, covariance.py), against torch 2.13: values and gradients
in eager and static mode, gradients against central differences (float64), grad of grad, the
Tensor methods, Paddle's spellings, an ONNX export, and the refusals naming the function."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.onnx  # noqa: F401  (fg.onnx.export)
from both_modes import compare_with_torch
from fluidgrad.testing import check_program_grad

R = np.random.default_rng(13)
X = R.standard_normal((3, 4))
ROWS = R.standard_normal((4, 6))
V = R.standard_normal(5)
W = R.standard_normal(3)
SPACING = np.cumsum(R.uniform(0.2, 1.0, 4))
NAN_ROWS = np.where(R.uniform(size=(3, 5)) < 0.3, np.nan, R.standard_normal((3, 5)))
NAN_ROWS[0, 0] = 0.7                        # each row keeps a value that is not NaN
FREQ = np.array([1, 3, 2, 1, 4, 2])
WEIGHTS = R.uniform(0.2, 2.0, 6)
T = torch.tensor


def _powers(x, n, increasing):
    columns = [x ** j if j else torch.ones_like(x) for j in range(n)]
    return torch.stack(columns if increasing else columns[::-1], 1)


def _quantile_cases():
    cases = {}
    for mode in ("linear", "lower", "higher", "nearest", "midpoint"):
        cases[f"quantile {mode} axis=1"] = (
            lambda x, mode=mode: fg.quantile(x, [0.25, 0.5, 0.9], axis=1, interpolation=mode),
            lambda x, mode=mode: torch.quantile(x, T([0.25, 0.5, 0.9], dtype=x.dtype), dim=1, interpolation=mode),
            {"x": X})
        cases[f"nanquantile {mode}"] = (
            lambda x, mode=mode: fg.nanquantile(x, 0.4, axis=1, keepdim=True, interpolation=mode),
            lambda x, mode=mode: torch.nanquantile(x, 0.4, dim=1, keepdim=True, interpolation=mode),
            {"x": NAN_ROWS})
    return cases


CASES = {
    **_quantile_cases(),
    "quantile flat q=0.4": (lambda x: fg.quantile(x, 0.4), lambda x: torch.quantile(x, 0.4), {"x": X}),
    "quantile dim= keepdim 0-D tensor q": (lambda x: fg.quantile(x, fg.to_tensor(np.array(0.3)), dim=0, keepdim=True),
                                           lambda x: torch.quantile(x, T(0.3, dtype=x.dtype), dim=0, keepdim=True),
                                           {"x": X}),
    "quantile Paddle's axis list": (lambda x: fg.quantile(x, 0.6, axis=[0, 2], interpolation="midpoint"),
                                    lambda x: torch.quantile(x.permute(1, 0, 2).reshape(2, -1), 0.6, dim=1,
                                                             interpolation="midpoint"),
                                    {"x": R.standard_normal((3, 2, 4))}),
    "nanquantile flat several q": (lambda x: fg.nanquantile(x, [0.1, 0.75]),
                                   lambda x: torch.nanquantile(x, T([0.1, 0.75], dtype=x.dtype)), {"x": NAN_ROWS}),
    "trapezoid dx": (lambda y: fg.trapezoid(y, dx=0.5), lambda y: torch.trapezoid(y, dx=0.5), {"y": X}),
    "trapezoid x 1-D dim=0": (lambda y, x: fg.trapezoid(y, x[:3], dim=0),
                              lambda y, x: torch.trapezoid(y, x[:3], dim=0), {"y": X, "x": SPACING}),
    "trapezoid x of y's shape, Paddle's axis=": (lambda y, x: fg.trapezoid(y, x=x, axis=1),
                                                 lambda y, x: torch.trapezoid(y, x, dim=1),
                                                 {"y": X, "x": np.sort(ROWS[:3, :4], axis=1)}),
    "cumulative_trapezoid": (lambda y: fg.cumulative_trapezoid(y), lambda y: torch.cumulative_trapezoid(y),
                             {"y": X}),
    "cumulative_trapezoid x dim=0": (lambda y, x: fg.cumulative_trapezoid(y, x[:3], dim=0),
                                     lambda y, x: torch.cumulative_trapezoid(y, x[:3], dim=0),
                                     {"y": X, "x": SPACING}),
    "cumulative_trapezoid dx axis=0": (lambda y: fg.cumulative_trapezoid(y, dx=2.0, axis=0),
                                       lambda y: torch.cumulative_trapezoid(y, dx=2.0, dim=0), {"y": X}),
    "renorm p=2 dim=0": (lambda x: fg.renorm(x, 2, 0, 1.5), lambda x: torch.renorm(x, 2, 0, 1.5), {"x": X}),
    "renorm p=1 dim=1": (lambda x: fg.renorm(x, 1, 1, 2.0), lambda x: torch.renorm(x, 1, 1, 2.0), {"x": X}),
    "renorm p=3 Paddle's max_norm=": (lambda x: fg.renorm(x, 3.0, axis=-1, max_norm=1.2),
                                      lambda x: torch.renorm(x, 3.0, -1, 1.2), {"x": X}),
    "renorm p=inf 3-D": (lambda x: fg.renorm(x, float("inf"), 1, 1.0), lambda x: torch.renorm(x, float("inf"), 1, 1.0),
                         {"x": R.standard_normal((2, 3, 2))}),
    # torch.vander's own backward fails (an in-place cumprod): powers stand in for the gradients, and
    # test_vander_values_are_torchs compares the values with torch.vander itself
    "vander": (lambda x: fg.vander(x), lambda x: _powers(x, 6, False), {"x": np.append(V, 0.0)}),
    "vander N=3 increasing": (lambda x: fg.vander(x, N=3, increasing=True), lambda x: _powers(x, 3, True), {"x": V}),
    "vander Paddle's n=": (lambda x: fg.vander(x, n=7), lambda x: _powers(x, 7, False), {"x": V}),
    "cartesian_prod": (lambda a, b: fg.cartesian_prod(a, b), lambda a, b: torch.cartesian_prod(a, b),
                       {"a": V[:3], "b": W}),
    "cartesian_prod of three, Paddle's list": (lambda a, b: fg.cartesian_prod([a, b, a * 2.0]),
                                               lambda a, b: torch.cartesian_prod(a, b, a * 2.0),
                                               {"a": V[:2], "b": W}),
    "block_diag 2-D 1-D 0-D": (lambda a, b: fg.block_diag(a, b[0], b[1, 2]),
                               lambda a, b: torch.block_diag(a, b[0], b[1, 2]), {"a": X[:2, :3], "b": ROWS}),
    "block_diag Paddle's list": (lambda a, b: fg.block_diag([a, b]), lambda a, b: torch.block_diag(a, b),
                                 {"a": X, "b": ROWS[:2, :2]}),
    "cov": (lambda x: fg.cov(x), lambda x: torch.cov(x), {"x": ROWS}),
    "cov correction=0": (lambda x: fg.linalg.cov(x, correction=0), lambda x: torch.cov(x, correction=0),
                         {"x": ROWS}),
    "cov correction=2 1-D": (lambda x: fg.cov(x[0], correction=2), lambda x: torch.cov(x[0], correction=2),
                             {"x": ROWS}),
    "cov fweights": (lambda x, f: fg.cov(x, fweights=f), lambda x, f: torch.cov(x, fweights=f),
                     {"x": ROWS, "f": FREQ}),
    "cov aweights": (lambda x, a: fg.cov(x, aweights=a), lambda x, a: torch.cov(x, aweights=a),
                     {"x": ROWS, "a": WEIGHTS}),
    "cov both weights correction=0": (lambda x, f, a: fg.cov(x, fweights=f, aweights=a, correction=0),
                                      lambda x, f, a: torch.cov(x, fweights=f, aweights=a, correction=0),
                                      {"x": ROWS, "f": FREQ, "a": WEIGHTS}),
    "cov both weights": (lambda x, f, a: fg.cov(x, fweights=f, aweights=a),
                         lambda x, f, a: torch.cov(x, fweights=f, aweights=a),
                         {"x": ROWS, "f": FREQ, "a": WEIGHTS}),
    "linalg.cov Paddle's rowvar=False ddof=False": (lambda x: fg.linalg.cov(x, rowvar=False, ddof=False),
                                                    lambda x: torch.cov(x.T, correction=0), {"x": ROWS}),
    "corrcoef": (lambda x: fg.corrcoef(x), lambda x: torch.corrcoef(x), {"x": ROWS}),
    "linalg.corrcoef rowvar=False": (lambda x: fg.linalg.corrcoef(x, rowvar=False), lambda x: torch.corrcoef(x.T),
                                     {"x": ROWS}),
    "x.renorm(2, 1, 0.8)": (lambda x: x.renorm(2, 1, 0.8), lambda x: x.renorm(2, 1, 0.8), {"x": X}),
    "x.nanquantile(0.5, dim=0)": (lambda x: x.nanquantile(0.5, dim=0), lambda x: x.nanquantile(0.5, dim=0),
                                  {"x": NAN_ROWS}),
    "x.quantile(q, interpolation=)": (lambda x: x.quantile(0.3, dim=1, interpolation="higher"),
                                      lambda x: x.quantile(0.3, dim=1, interpolation="higher"), {"x": X}),
    "x.cov(aweights=)": (lambda x, a: x.cov(aweights=a), lambda x, a: x.cov(aweights=a), {"x": ROWS, "a": WEIGHTS}),
    "x.corrcoef()": (lambda x: x.corrcoef(), lambda x: x.corrcoef(), {"x": ROWS}),
}
_INTEGER_INPUTS = {"f"}


def _wrt(inputs):
    return [k for k in inputs if k not in _INTEGER_INPUTS]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch_in_both_modes(name):
    ours, theirs, inputs = CASES[name]
    compare_with_torch(ours, theirs, inputs, wrt=_wrt(inputs), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_central_differences(name):
    ours, _, inputs = CASES[name]
    feeds = {k: (v if k in _INTEGER_INPUTS else np.asarray(v, np.float64)) for k, v in inputs.items()}
    check_program_grad(lambda v: ours(**v), feeds, wrt=_wrt(inputs), rtol=1e-6, atol=1e-8)


def _second_order(module, fn, inputs, wrt, direction_seed=1):
    """The gradient of <d/dx sum(out * weights), direction> with respect to the inputs: grad of grad."""
    rng = np.random.default_rng(direction_seed)
    if module is torch:
        tensors = {k: T(v, requires_grad=k in wrt) for k, v in inputs.items()}
        out = fn(**tensors)
        weights = T(rng.uniform(0.5, 1.5, tuple(out.shape)))
        firsts = torch.autograd.grad((out * weights).sum(), [tensors[k] for k in wrt], create_graph=True)
        inner = sum((g * T(rng.standard_normal(tuple(g.shape)))).sum() for g in firsts)
        if not inner.requires_grad:
            return [np.zeros(inputs[k].shape) for k in wrt]
        return [g.numpy() for g in torch.autograd.grad(inner, [tensors[k] for k in wrt], allow_unused=True,
                                                        materialize_grads=True)]
    tensors = {k: fg.to_tensor(v, stop_gradient=k not in wrt) for k, v in inputs.items()}
    out = fn(**tensors)
    weights = fg.to_tensor(rng.uniform(0.5, 1.5, tuple(out.shape)))
    firsts = fg.grad([fg.sum(out * weights)], [tensors[k] for k in wrt], create_graph=True)
    inner = fg.add_n([fg.sum(g * fg.to_tensor(rng.standard_normal(tuple(g.shape)))) for g in firsts])
    if inner.stop_gradient:     # linear in the inputs (a pick, a sum): the first gradient is a constant
        return [np.zeros(inputs[k].shape) for k in wrt]
    seconds = fg.grad([inner], [tensors[k] for k in wrt], allow_unused=True)
    return [np.zeros(inputs[k].shape) if g is None else g.numpy() for g, k in zip(seconds, wrt)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_of_grad_matches_torch(name, monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    ours, theirs, inputs = CASES[name]
    wrt = _wrt(inputs)
    got = _second_order(fg, ours, inputs, wrt)
    expected = _second_order(torch, theirs, inputs, wrt)
    for k, g, e in zip(wrt, got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-11, err_msg=f"grad of grad of {k}")


@pytest.mark.parametrize("n, increasing", [(None, False), (3, True), (7, False), (0, False)])
def test_vander_values_are_torchs(monkeypatch, n, increasing):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    x = np.append(V, 0.0)
    got = fg.vander(fg.to_tensor(x), n, increasing)
    expected = torch.vander(T(x), n, increasing)
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-13)


# ---------------------------------------------------------------- unique_consecutive (sizes known at run time)
RUNS = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 1.0, 1.0, np.nan, np.nan, 2.0])
SLICES = np.array([[1, 1, 2, 2, 2, 5], [0, 0, 1, 1, 1, 0], [0, 0, 3, 3, 3, 0]])


def _both_modes(fn, x):
    """fn's outputs on x as an eager Tensor and in a static program."""
    eager = fn(fg.to_tensor(x))
    program = fg.Program()
    with fg.program_guard(program, fg.Program()):
        outs = fn(fg.static.data("x", list(x.shape), str(x.dtype)))
    fetched = fg.Executor().run(program, feed={"x": x}, fetch_list=list(outs) if isinstance(outs, tuple) else [outs])
    eager = list(eager) if isinstance(eager, tuple) else [eager]
    return [e.numpy() for e in eager], fetched


@pytest.mark.parametrize("x, kwargs", [(RUNS, {}), (RUNS.reshape(2, 5), {}), (SLICES, {"dim": 1}),
                                       (SLICES.T.copy(), {"dim": 0}), (SLICES, {"axis": -2}), (np.zeros(0), {}),
                                       (np.array([4]), {})],
                         ids=["flat", "2-D flat", "dim=1", "dim=0", "axis=-2", "empty", "one"])
def test_unique_consecutive_matches_torch_in_both_modes(monkeypatch, x, kwargs):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    torch_kwargs = {"dim": kwargs["axis"]} if "axis" in kwargs else kwargs
    expected = torch.unique_consecutive(T(x), return_inverse=True, return_counts=True, **torch_kwargs)
    eager, static = _both_modes(lambda t: fg.unique_consecutive(t, True, True, **kwargs), x)
    for got in (eager, static):
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype
            np.testing.assert_array_equal(g, e.numpy())
    only_values = fg.unique_consecutive(fg.to_tensor(x), **kwargs)
    np.testing.assert_array_equal(only_values.numpy(), expected[0].numpy())


def test_unique_consecutive_paddle_form_method_and_gradient(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    x = fg.to_tensor(RUNS[:7], stop_gradient=False)
    values, counts = fg.unique_consecutive(x, return_counts=True, axis=0, dtype="int32")
    assert counts.dtype == "int32" and counts.numpy().tolist() == [2, 2, 1, 2]
    method_values, inverse = x.unique_consecutive(return_inverse=True)
    np.testing.assert_array_equal(method_values.numpy(), [1.0, 2.0, 3.0, 1.0])
    np.testing.assert_array_equal(inverse.numpy(), [0, 0, 1, 1, 2, 3, 3])
    (values * fg.to_tensor(np.array([1.0, 2.0, 3.0, 4.0]))).sum().backward()   # each run's first element gets it
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0, 2.0, 0, 3.0, 4.0, 0])


def test_renorm_in_place_writes_into_x(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    x = fg.to_tensor(X.copy())
    returned = x.renorm_(2, 0, 1.0)
    assert returned is x
    np.testing.assert_allclose(x.numpy(), torch.tensor(X).renorm_(2, 0, 1.0).numpy(), rtol=1e-12)


# ---------------------------------------------------------------- ONNX: compositions of exported ops
@pytest.mark.parametrize("name", ["nanquantile linear", "cumulative_trapezoid x dim=0", "renorm p=2 dim=0",
                                  "cov both weights", "corrcoef", "vander N=3 increasing", "block_diag 2-D 1-D 0-D"])
def test_exports_to_onnx(tmp_path, monkeypatch, name):
    ort = pytest.importorskip("onnxruntime")
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    ours, theirs, inputs = CASES[name]
    names = list(inputs)
    path = tmp_path / "model.onnx"
    fg.onnx.export(lambda *args: ours(**dict(zip(names, args))), path, [fg.to_tensor(inputs[k]) for k in names])
    session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(inputs[k]) for i, k in zip(session.get_inputs(), names)}
    got = session.run(None, feeds)[0]
    np.testing.assert_allclose(got, theirs(**{k: T(v) for k, v in inputs.items()}).numpy(), rtol=1e-10, atol=1e-12)


def test_unique_consecutive_exports_to_onnx(tmp_path, monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    path = tmp_path / "model.onnx"
    fg.onnx.export(lambda t: fg.unique_consecutive(t, True, True), path, [fg.to_tensor(RUNS)])
    session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
    other = np.array([5.0, 5.0, 5.0, -1.0, 2.0, 2.0, 0.0, 0.0, 0.0, 7.0])
    for x in (RUNS, other):
        got = session.run(None, {session.get_inputs()[0].name: x})
        for g, e in zip(got, torch.unique_consecutive(T(x), return_inverse=True, return_counts=True)):
            np.testing.assert_array_equal(g, e.numpy())


# ---------------------------------------------------------------- refusals
REFUSALS = [
    (lambda: fg.quantile(fg.to_tensor(X), 1.5), ValueError, r"quantile: q must be in \[0, 1\], got 1.5"),
    (lambda: fg.nanquantile(fg.to_tensor(X), [0.2, -0.1]), ValueError, r"nanquantile: q must be in \[0, 1\]"),
    (lambda: fg.quantile(fg.to_tensor(X), 0.5, interpolation="cubic"), ValueError,
     r"quantile: interpolation must be one of 'linear', 'lower', 'higher', 'nearest', 'midpoint', got 'cubic'"),
    (lambda: fg.quantile(fg.to_tensor(X), 0.5, dim=2), ValueError, r"quantile: axis 2 is out of range .*\[3, 4\]"),
    (lambda: fg.quantile(fg.to_tensor(X), [[0.5]]), ValueError, r"quantile: q must be a number or 1-D"),
    (lambda: fg.quantile(fg.to_tensor(np.zeros((3, 0))), 0.5, axis=1), ValueError, "quantile: needs a non-empty"),
    (lambda: fg.trapezoid(fg.to_tensor(X), fg.to_tensor(SPACING[:3])), ValueError,
     r"trapezoid: a 1-D x must have y's size 4 along axis 1, got x of shape \[3\] and y of shape \[3, 4\]"),
    (lambda: fg.cumulative_trapezoid(fg.to_tensor(X), fg.to_tensor(SPACING), dx=1.0), TypeError,
     "cumulative_trapezoid: give x or dx, not both"),
    (lambda: fg.trapezoid(fg.to_tensor(X), fg.to_tensor(ROWS)), ValueError, r"trapezoid: .*x of shape \[4, 6\]"),
    (lambda: fg.trapezoid(fg.to_tensor(1.0)), ValueError, r"trapezoid: y is 0-D"),
    (lambda: fg.renorm(fg.to_tensor(X), 0, 0, 1.0), ValueError, "renorm: p must be positive, got 0.0"),
    (lambda: fg.renorm(fg.to_tensor(X), 2, 2, 1.0), ValueError, r"renorm: axis 2 is out of range .*\[3, 4\]"),
    (lambda: fg.renorm(fg.to_tensor(X), 2, 0, -1.0), ValueError, "renorm: max_norm must not be negative"),
    (lambda: fg.vander(fg.to_tensor(X)), ValueError, r"vander: x must be 1-D, got shape \[3, 4\]"),
    (lambda: fg.vander(fg.to_tensor(V), -1), ValueError, "vander: the number of columns must not be negative"),
    (lambda: fg.cartesian_prod(fg.to_tensor(V), fg.to_tensor(X)), ValueError,
     r"cartesian_prod: every tensor must be 1-D, got shapes \[\[5\], \[3, 4\]\]"),
    (lambda: fg.cartesian_prod(fg.to_tensor(V), fg.to_tensor(V.astype("float32"))), TypeError,
     "cartesian_prod: the tensors must have one dtype, got float32, float64"),
    (lambda: fg.block_diag(fg.to_tensor(np.zeros((2, 2, 2)))), ValueError,
     r"block_diag: each tensor must be 0-D, 1-D or 2-D, got shape \[2, 2, 2\]"),
    (lambda: fg.block_diag(), ValueError, "block_diag: needs at least one tensor"),
    (lambda: fg.cov(fg.to_tensor(np.zeros((2, 2, 2)))), ValueError, r"cov: x must be 1-D or 2-D .*\[2, 2, 2\]"),
    (lambda: fg.cov(fg.to_tensor(ROWS), fweights=fg.to_tensor(WEIGHTS)), TypeError, "cov: fweights must be integers"),
    (lambda: fg.cov(fg.to_tensor(ROWS), aweights=fg.to_tensor(WEIGHTS[:4])), ValueError,
     r"cov: aweights must be 1-D with one weight per observation \(6\), got shape \[4\]"),
    (lambda: fg.cov(fg.to_tensor(ROWS), fweights=fg.to_tensor(-FREQ)), ValueError, "cov: fweights must not be negative"),
    (lambda: fg.cov(fg.to_tensor(ROWS), ddof=False, correction=1), TypeError, "cov: give ddof= .* or correction="),
    (lambda: fg.corrcoef(fg.to_tensor(np.zeros(()))), ValueError, r"cov: x must be 1-D or 2-D"),
    (lambda: fg.unique_consecutive(fg.to_tensor(SLICES), axis=2), ValueError,
     r"unique_consecutive: axis 2 is out of range .*\[3, 6\]"),
    (lambda: fg.unique_consecutive(fg.to_tensor(RUNS), dtype="float32"), TypeError,
     "unique_consecutive: dtype must be 'int64' or 'int32'"),
]


@pytest.mark.parametrize("call, error, pattern", REFUSALS, ids=[p.split(":")[0] + str(i) for i, (_, _, p) in
                                                                 enumerate(REFUSALS)])
def test_bad_input_is_refused_naming_the_function(monkeypatch, call, error, pattern):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    with pytest.raises(error, match=pattern):
        call()


def test_quantile_q_as_a_variable_is_refused_at_build_time():
    x = fg.static.data("x", [3, 4], "float64")
    with pytest.raises(TypeError, match="quantile: q must be known when the program is built"):
        fg.quantile(x, fg.static.data("q", [1], "float64"))
