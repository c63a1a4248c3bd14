"""fluidgrad.autograd.functional against torch.autograd.functional (torch 2.13): jacobian, hessian,
vjp, jvp, hvp and vhp of several functions (single and tuple inputs and outputs, non-scalar
outputs, an input the output ignores), the results' nesting and shapes exactly torch's,
create_graph giving differentiable results, strict mode, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.autograd import functional

R = np.random.default_rng(7)
X3 = R.standard_normal(3)
Y23 = R.standard_normal((2, 3))
A22 = R.standard_normal((2, 2))


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _cubic(x):
    return (x ** 3).sum() * x


def _wavy(x):
    return (x.sin() * x).sum()


def _square(a):
    return a @ a


def _pair(x, y):
    return x * y.sin(), (x ** 2).sum() + y.exp().sum()


def _mixed(x, y):
    return (x.exp() * y[0]).sum() + (y ** 3).sum() * x[1]


def _ignores_y(x, y):
    return x * 2.0 + x ** 2


def _linear(x):
    return (x * 3.0).sum()


# name -> (function, inputs as arrays, is a tuple of inputs, which derivatives apply)
FUNCTIONS = {
    "cubic": (_cubic, (X3,), False),
    "wavy": (_wavy, (X3,), False),
    "matrix square": (_square, (A22,), False),
    "tuple in and out": (_pair, (X3, Y23), True),
    "mixed scalar of two": (_mixed, (X3, Y23), True),
    "ignores y": (_ignores_y, (X3, Y23), True),
    "linear scalar": (_linear, (X3,), False),
    "cubic as a 1-tuple": (_cubic, (X3,), True),
}
SCALAR = ("wavy", "mixed scalar of two", "linear scalar")


def _inputs(module, name):
    _, arrays, as_tuple = FUNCTIONS[name]
    make = torch.tensor if module is torch else fg.to_tensor
    tensors = tuple(make(a.copy()) for a in arrays)
    return tensors if as_tuple else tensors[0]


def _like_inputs(module, name, seed):
    rng = np.random.default_rng(seed)
    _, arrays, as_tuple = FUNCTIONS[name]
    make = torch.tensor if module is torch else fg.to_tensor
    tensors = tuple(make(rng.standard_normal(a.shape)) for a in arrays)
    return tensors if as_tuple else tensors[0]


def _like_outputs(module, name, seed):
    func = FUNCTIONS[name][0]
    out = func(*(_inputs(torch, name) if FUNCTIONS[name][2] else (_inputs(torch, name),)))
    rng = np.random.default_rng(seed)
    make = torch.tensor if module is torch else fg.to_tensor
    if isinstance(out, tuple):
        return tuple(make(rng.standard_normal(tuple(o.shape))) for o in out)
    return make(rng.standard_normal(tuple(out.shape)))


def _call(module, what, name, create_graph=False):
    space = torch.autograd.functional if module is torch else functional
    func, inputs = FUNCTIONS[name][0], _inputs(module, name)
    kw = {"create_graph": create_graph}
    if what == "jacobian":
        return space.jacobian(func, inputs, **kw)
    if what == "hessian":
        return space.hessian(func, inputs, **kw)
    if what == "vjp":
        return space.vjp(func, inputs, _like_outputs(module, name, 1), **kw)
    if what == "jvp":
        return space.jvp(func, inputs, _like_inputs(module, name, 2), **kw)
    return getattr(space, what)(func, inputs, _like_inputs(module, name, 3), **kw)


def assert_same_structure(got, expected, where="result"):
    """Tuples where torch has tuples (of the same length), Tensors of torch's shapes and values."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), f"{where}: {type(got)} for a tuple of " \
                                                                     f"{len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same_structure(g, e, f"{where}[{i}]")
        return
    assert isinstance(got, fg.Tensor), f"{where}: {type(got).__name__}, torch gives a Tensor"
    assert tuple(got.shape) == tuple(expected.shape), f"{where}: shape {list(got.shape)}, torch {list(expected.shape)}"
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=where)


CALLS = [(what, name) for name in FUNCTIONS for what in ("jacobian", "vjp", "jvp")] + \
        [(what, name) for name in SCALAR for what in ("hessian", "hvp", "vhp")]


@pytest.mark.parametrize("what, name", CALLS, ids=[f"{w}-{n}" for w, n in CALLS])
def test_matches_torch(what, name):
    assert_same_structure(_call(fg, what, name), _call(torch, what, name))


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@pytest.mark.parametrize("what, name", [("jacobian", "cubic"), ("jacobian", "tuple in and out"),
                                        ("hessian", "mixed scalar of two"), ("vjp", "tuple in and out"),
                                        ("jvp", "tuple in and out"), ("hvp", "wavy"), ("vhp", "mixed scalar of two")])
def test_create_graph_gives_results_differentiable_as_torchs(what, name):
    """The results with create_graph=True, weighted and summed, differentiated with respect to the
    original inputs: torch's gradient."""
    def run(module):
        inputs = _inputs(module, name)
        for t in (inputs if isinstance(inputs, tuple) else (inputs,)):
            t.requires_grad_(True) if module is torch else setattr(t, "stop_gradient", False)
        space = torch.autograd.functional if module is torch else functional
        func = FUNCTIONS[name][0]
        if what in ("jacobian", "hessian"):
            result = getattr(space, what)(func, inputs, create_graph=True)
        elif what == "vjp":
            result = space.vjp(func, inputs, _like_outputs(module, name, 1), create_graph=True)[1]
        else:
            result = getattr(space, what)(func, inputs, _like_inputs(module, name, 2), create_graph=True)[1]
        leaves = [leaf for leaf in _leaves(result)]
        rng = np.random.default_rng(5)
        if module is torch:
            loss = sum((leaf * torch.tensor(rng.standard_normal(tuple(leaf.shape)))).sum() for leaf in leaves)
            xs = inputs if isinstance(inputs, tuple) else (inputs,)
            return [g.numpy() for g in torch.autograd.grad(loss, xs, allow_unused=True, materialize_grads=True)]
        loss = fg.add_n([fg.sum(leaf * fg.to_tensor(rng.standard_normal(tuple(leaf.shape)))) for leaf in leaves])
        xs = inputs if isinstance(inputs, tuple) else (inputs,)
        return [np.zeros(x.shape) if g is None else g.numpy() for g, x in
                zip(fg.grad([loss], list(xs), allow_unused=True), xs)]
    for got, expected in zip(run(fg), run(torch)):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_without_create_graph_the_results_are_constants():
    x = fg.to_tensor(X3, stop_gradient=False)
    value, product = functional.vjp(_cubic, x, fg.to_tensor(np.ones(3)))
    assert value.stop_gradient and product.stop_gradient
    assert functional.jacobian(_cubic, x).stop_gradient
    _, product = functional.jvp(_cubic, x, fg.to_tensor(np.ones(3)), create_graph=True)
    assert not product.stop_gradient


def test_runs_inside_no_grad_as_torch():
    with fg.no_grad():
        got = functional.hvp(_wavy, fg.to_tensor(X3), fg.to_tensor(X3))
    with torch.no_grad():
        expected = torch.autograd.functional.hvp(_wavy, torch.tensor(X3), torch.tensor(X3))
    assert_same_structure(got, expected)


def test_vectorize_and_strategy_are_accepted():
    expected = torch.autograd.functional.jacobian(_cubic, torch.tensor(X3), vectorize=True, strategy="forward-mode")
    got = functional.jacobian(_cubic, fg.to_tensor(X3), vectorize=True, strategy="forward-mode")
    assert_same_structure(got, expected)
    got = functional.hessian(_wavy, fg.to_tensor(X3), vectorize=True, outer_jacobian_strategy="reverse-mode")
    assert_same_structure(got, torch.autograd.functional.hessian(_wavy, torch.tensor(X3)))


def test_strict_refuses_an_output_independent_of_an_input():
    inputs = (fg.to_tensor(X3), fg.to_tensor(Y23))
    with pytest.raises(RuntimeError, match="jacobian: output 0 of the user-provided function is independent of "
                                           "input 1. This is not allowed in strict mode"):
        functional.jacobian(_ignores_y, inputs, strict=True)
    with pytest.raises(RuntimeError, match="vjp: the output of the user-provided function is independent of input 1"):
        functional.vjp(_ignores_y, inputs, fg.to_tensor(np.ones(3)), strict=True)
    with pytest.raises(RuntimeError, match="jacobian: output 0 of the user-provided function does not require"):
        functional.jacobian(lambda x: fg.to_tensor(np.ones(2)), fg.to_tensor(X3), strict=True)
    np.testing.assert_array_equal(functional.jacobian(lambda x: fg.to_tensor(np.ones(2)), fg.to_tensor(X3)).numpy(),
                                  np.zeros((2, 3)))


def test_paddles_jacobian_of_computed_ys_keeps_its_meaning():
    x = fg.to_tensor(X3, stop_gradient=False)
    np.testing.assert_allclose(fg.autograd.jacobian(_cubic(x), x).numpy(), functional.jacobian(_cubic, x).numpy(),
                               rtol=1e-12)
    assert fg.autograd.functional is functional


REFUSALS = [
    (lambda: functional.vjp(_cubic, fg.to_tensor(X3)), RuntimeError,
     "vjp: v can be None only when the output of the user-provided function is a single Tensor with a single"),
    (lambda: functional.vjp(_cubic, fg.to_tensor(X3), fg.to_tensor(np.ones(2))), RuntimeError,
     r"vjp: v has invalid size: should be \[3\] but got \[2\]"),
    (lambda: functional.jvp(_pair, (fg.to_tensor(X3), fg.to_tensor(Y23)), (fg.to_tensor(X3),)), RuntimeError,
     "jvp: v is a tuple of invalid length: should be 2 but got 1"),
    (lambda: functional.jvp(_pair, (fg.to_tensor(X3), fg.to_tensor(Y23)), (fg.to_tensor(X3), fg.to_tensor(X3))),
     RuntimeError, r"jvp: entry 1 in v has invalid size: should be \[2, 3\] but got \[3\]"),
    (lambda: functional.jacobian(_cubic, [X3]), TypeError,
     "jacobian: inputs must be a Tensor or a tuple of Tensors, but the value at index 0 has type ndarray"),
    (lambda: functional.jacobian(lambda x: x.numpy(), fg.to_tensor(X3)), TypeError,
     "jacobian: the outputs of the user-provided function must be a Tensor or a tuple of Tensors"),
    (lambda: functional.hessian(_cubic, fg.to_tensor(X3)), RuntimeError,
     r"hessian: the Tensor returned by the function given to hessian should contain a single element, got shape \[3\]"),
    (lambda: functional.hvp(_pair, (fg.to_tensor(X3), fg.to_tensor(Y23)), (fg.to_tensor(X3), fg.to_tensor(Y23))),
     RuntimeError, "hvp: the function given to hvp should return a single Tensor, got tuple"),
    (lambda: functional.jacobian(_cubic, fg.to_tensor(X3), strategy="sideways"), ValueError,
     "jacobian: strategy must be 'reverse-mode' or 'forward-mode', got 'sideways'"),
]


@pytest.mark.parametrize("call, error, pattern", REFUSALS, ids=[str(i) for i in range(len(REFUSALS))])
def test_bad_calls_are_refused_naming_the_function(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()
