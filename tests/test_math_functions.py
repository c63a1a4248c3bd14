"""The public functions of fluidgrad.tensor (math, logic, stat, linalg) and nn.functional
activations, including those written as compositions of registered ops: values and gradients
against PyTorch in eager mode, values in static mode, and the errors bad input gets."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.static import data

_RNG = np.random.default_rng(7)


def _r(*shape, lo=-2.0, hi=2.0):
    return _RNG.uniform(lo, hi, size=shape)


_X, _Y = _r(2, 3, 4), _r(2, 3, 4)
_Z = np.where(np.abs(_X) < 0.1, 0.5, _X)   # away from the kinks at 0
_P = _r(2, 3, 4, lo=0.5, hi=1.5)

# name -> (fluidgrad function of the inputs, PyTorch function of the inputs, inputs)
FUNCTIONS = {
    "selu": (F.selu, TF.selu, [_Z]),
    "celu": (lambda x: F.celu(x, 0.5), lambda x: TF.celu(x, 0.5), [_Z]),  # 1/alpha exact: PyTorch rounds it to float32
    "softsign": (F.softsign, TF.softsign, [_X]),
    "hardsigmoid": (lambda x: F.hardsigmoid(x, 1 / 6, 0.5), TF.hardsigmoid, [_X]),
    "hardtanh": (F.hardtanh, TF.hardtanh, [np.where(np.abs(np.abs(_X) - 1) < 0.1, 0.5, _X)]),
    "relu6": (F.relu6, TF.relu6, [_Z * 4]),
    "glu": (lambda x: F.glu(x, 1), lambda x: TF.glu(x, 1), [_r(2, 4, 3)]),
    "swish": (F.swish, TF.silu, [_X]),
    "log_softmax": (lambda x: F.log_softmax(x, 1), lambda x: TF.log_softmax(x, 1), [_X]),
    "std": (lambda x: fg.std(x, axis=1), lambda x: torch.std(x, 1), [_X]),
    "var-biased": (lambda x: fg.var(x, axis=[0, 2], unbiased=False, keepdim=True),
                   lambda x: torch.var(x, (0, 2), unbiased=False, keepdim=True), [_X]),
    "var-all": (fg.var, torch.var, [_X]),
    "norm-fro": (fg.norm, lambda x: torch.linalg.vector_norm(x), [_X]),
    "norm-1": (lambda x: fg.norm(x, 1, axis=-1), lambda x: torch.linalg.vector_norm(x, 1, -1), [_Z]),
    "norm-inf": (lambda x: fg.norm(x, math.inf, axis=[1, 2]),
                 lambda x: torch.linalg.vector_norm(x, math.inf, (1, 2)), [_r(2, 3, 4)]),
    "prod-axes": (lambda x: fg.prod(x, axis=[0, 2]), lambda x: x.prod(2).prod(0), [_P]),
    "prod-all-keepdim": (lambda x: fg.prod(x, keepdim=True), lambda x: x.prod().reshape(1, 1, 1), [_P]),
    "cumsum-flat": (fg.cumsum, lambda x: torch.cumsum(x.reshape(-1), 0), [_X]),
    "cumprod-dim": (lambda x: fg.cumprod(x, dim=1), lambda x: torch.cumprod(x, 1), [_P]),
    "amax": (lambda x: fg.amax(x, axis=[0, 1]), lambda x: torch.amax(x, (0, 1)), [_X]),
    "amin": (lambda x: fg.amin(x, axis=-1, keepdim=True), lambda x: torch.amin(x, -1, keepdim=True), [_X]),
    "logsumexp": (lambda x: fg.logsumexp(x, axis=1), lambda x: torch.logsumexp(x, 1), [_X * 300]),
    "clip": (lambda x: fg.clip(x, -0.5, 0.7), lambda x: torch.clip(x, -0.5, 0.7),
             [np.where(np.abs(np.abs(_X) - 0.6) < 0.15, 0.0, _X)]),
    "clip-min-only": (lambda x: fg.clip(x, min=0.25), lambda x: torch.clip(x, min=0.25),
                      [np.where(np.abs(_X - 0.25) < 0.1, 1.0, _X)]),
    "clip-tensor-bounds": (lambda x, y: fg.clip(x, y, None), lambda x, y: torch.clip(x, y), [_X, _Y]),
    "mod-scalar": (lambda x: fg.mod(x, 0.75), lambda x: torch.remainder(x, 0.75),
                   [np.floor(_X / 0.75) * 0.75 + 0.3]),
    "floor_divide": (lambda x, y: fg.floor_divide(x, y), lambda x, y: torch.floor(x / y), [_X, _P]),
    "einsum-implicit": (lambda x, y: fg.einsum("bij,bkj", x, y), lambda x, y: torch.einsum("bij,bkj", x, y),
                        [_X, _Y]),
    "einsum-ellipsis": (lambda x, y: fg.einsum("...ij,jk->...ik", x, y),
                        lambda x, y: torch.einsum("...ij,jk->...ik", x, y), [_X, _r(4, 2)]),
    "einsum-trace-free": (lambda x: fg.einsum("bij->j", x), lambda x: torch.einsum("bij->j", x), [_X]),
    "bmm": (fg.bmm, torch.bmm, [_X, _r(2, 4, 5)]),
    "outer": (fg.outer, torch.outer, [_r(3), _r(4)]),
    "linear-3d": (lambda x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w + b, [_X, _r(4, 5), _r(5)]),
    "matmul-outer-k1": (fg.matmul, torch.matmul, [_r(5, 1), _r(1, 6)]),
    "matmul-batched-k1": (fg.matmul, torch.matmul, [_r(2, 5, 1), _r(1, 6)]),
    "matmul-k1-transposed": (lambda x, y: fg.matmul(x, y, transpose_x=True),
                             lambda x, y: x.mT @ y, [_r(1, 5), _r(1, 6)]),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_eager_value_and_gradient_match_pytorch(name):
    fluid_fn, torch_fn, inputs = FUNCTIONS[name]
    xs = [fg.to_tensor(x, stop_gradient=False) for x in inputs]
    ts = [torch.tensor(x, requires_grad=True) for x in inputs]
    out, expected = fluid_fn(*xs), torch_fn(*ts)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    cotangent = _RNG.uniform(-1, 1, size=expected.shape)
    fg.sum(out * fg.to_tensor(cotangent)).backward()
    (expected * torch.tensor(cotangent)).sum().backward()
    for x, t in zip(xs, ts):
        grad = np.zeros(x.shape) if x.grad is None else x.grad.numpy()   # None: a symbolic zero
        np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-6, atol=1e-10, err_msg=name)  # PyTorch rounds some constants to float32


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_static_value_matches_eager(name):
    fluid_fn, _, inputs = FUNCTIONS[name]
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        variables = [data(f"x{i}", x.shape, "float64") for i, x in enumerate(inputs)]
        out = fluid_fn(*variables)
    (got,) = fg.Executor().run(main, feed={f"x{i}": x for i, x in enumerate(inputs)}, fetch_list=[out],
                               scope=fg.Scope())
    np.testing.assert_allclose(got, fluid_fn(*[fg.to_tensor(x) for x in inputs]).numpy(), rtol=1e-12)


def test_bool_and_integer_functions_match_pytorch():
    a, b = _RNG.integers(-8, 8, (3, 4)), _RNG.integers(1, 8, (3, 4))
    ta, tb = torch.tensor(a), torch.tensor(b)
    A, B = fg.to_tensor(a), fg.to_tensor(b)
    pairs = [(fg.bitwise_and(A, B), ta & tb), (fg.bitwise_or(A, B), ta | tb), (fg.bitwise_xor(A, B), ta ^ tb),
             (fg.bitwise_not(A), ~ta), (fg.mod(A, B), torch.remainder(ta, tb)), (fg.fmod(A, B), torch.fmod(ta, tb)),
             (fg.floor_divide(A, B), torch.div(ta, tb, rounding_mode="floor")),
             (fg.all(A > 0, axis=1), torch.all(ta > 0, 1)), (fg.any(A > 5), torch.any(ta > 5)),
             (fg.logical_xor(A > 0, B > 3), torch.logical_xor(ta > 0, tb > 3)),
             (fg.cumsum(A, axis=0), torch.cumsum(ta, 0)), (fg.prod(B, axis=1), torch.prod(tb, 1)),
             (fg.clip(A, -2, 3), torch.clip(ta, -2, 3))]
    for got, want in pairs:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.numpy().dtype == want.numpy().dtype
    x = fg.to_tensor(np.array([1.0, np.nan, np.inf, -np.inf]))
    assert fg.isnan(x).numpy().tolist() == [False, True, False, False]
    assert fg.isinf(x).numpy().tolist() == [False, False, True, True]
    assert fg.isfinite(x).numpy().tolist() == [True, False, False, False]


def test_activation_layers_match_pytorch():
    from fluidgrad import nn
    x = _r(2, 4, 3)
    layers = [(nn.GELU(), torch.nn.GELU()), (nn.GELU(approximate=True), torch.nn.GELU("tanh")),
              (nn.SiLU(), torch.nn.SiLU()), (nn.Mish(), torch.nn.Mish()), (nn.ELU(0.5), torch.nn.ELU(0.5)),
              (nn.SELU(), torch.nn.SELU()), (nn.CELU(2.0), torch.nn.CELU(2.0)),
              (nn.Softplus(2.0, 5.0), torch.nn.Softplus(2.0, 5.0)), (nn.Softsign(), torch.nn.Softsign()),
              (nn.Hardswish(), torch.nn.Hardswish()), (nn.Hardtanh(-0.5, 0.5), torch.nn.Hardtanh(-0.5, 0.5)),
              (nn.ReLU6(), torch.nn.ReLU6()), (nn.LogSigmoid(), torch.nn.LogSigmoid()),
              (nn.LogSoftmax(1), torch.nn.LogSoftmax(1)), (nn.GLU(1), torch.nn.GLU(1))]
    for ours, theirs in layers:
        np.testing.assert_allclose(ours(fg.to_tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=type(ours).__name__)


@pytest.mark.parametrize("approximate", ["none", "tanh", False, True])
def test_gelu_layer_takes_pytorchs_strings_and_paddles_bools(approximate):
    from fluidgrad import nn
    x = _r(3, 5)
    torch_spelling = {False: "none", True: "tanh"}.get(approximate, approximate)
    np.testing.assert_allclose(nn.GELU(approximate=approximate)(fg.to_tensor(x)).numpy(),
                               torch.nn.GELU(torch_spelling)(torch.tensor(x)).numpy(), rtol=1e-10, atol=1e-12)


def test_gelu_layer_refuses_an_unknown_approximation_when_built():
    from fluidgrad import nn
    with pytest.raises(ValueError, match="gelu: approximate"):
        nn.GELU(approximate="erf")


def test_prelu_layer_learns_one_slope_per_channel():
    from fluidgrad import nn
    layer = nn.PReLU(4, init=0.1)
    layer.weight.data[:] = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)
    x = _r(2, 4, 3).astype(np.float32)
    out = layer(fg.to_tensor(x))
    ref = torch.nn.PReLU(4)
    ref.weight.data = torch.tensor([0.1, 0.2, 0.3, 0.4])
    t = torch.tensor(x)
    expected = ref(t)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-6)
    fg.sum(out).backward()
    expected.sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-5)


def test_bad_input_gets_a_clear_error():
    x = fg.to_tensor(_X)
    with pytest.raises(Exception, match="elementwise_floordiv.*integer division by zero"):
        fg.floor_divide(fg.to_tensor(np.array([1, 2])), fg.to_tensor(np.array([1, 0])))
    with pytest.raises(Exception, match="bitwise_and.*float64"):
        fg.bitwise_and(x, x)
    with pytest.raises(Exception, match="einsum.*index 'j'"):
        fg.einsum("ij,jk->ik", fg.to_tensor(_r(3, 4)), fg.to_tensor(_r(5, 2)))
    with pytest.raises(ValueError, match="bmm"):
        fg.bmm(fg.to_tensor(_r(3, 4)), fg.to_tensor(_r(4, 2)))
    with pytest.raises(ValueError, match="glu"):
        F.glu(fg.to_tensor(_r(2, 3)))
    with pytest.raises(ValueError, match="norm"):
        fg.norm(x, "nuc")
    with pytest.raises(Exception, match="erf.*int64"):
        fg.erf(fg.to_tensor(np.array([1, 2])))
