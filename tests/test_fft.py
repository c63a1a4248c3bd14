"""fluidgrad.fft and complex tensors: values against torch.fft (float64), gradients against
central differences and torch through real losses, grad of grad, eager equal to static, the
complex ops' own gradients, and refusals (bad arguments, complex values in ops without complex
support)."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 8))
Z = RNG.standard_normal((3, 8)) + 1j * RNG.standard_normal((3, 8))
X3 = RNG.standard_normal((2, 5, 6))
Z3 = RNG.standard_normal((2, 5, 6)) + 1j * RNG.standard_normal((2, 5, 6))


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


# name -> (function of (module, x), input); module is fg.fft or torch.fft
CASES = {
    "fft": (lambda m, x: m.fft(x), Z),
    "fft real input": (lambda m, x: m.fft(x), X),
    "fft n=5 ortho": (lambda m, x: m.fft(x, n=5, norm="ortho"), Z),
    "fft n=11 axis 0": (lambda m, x: m.fft(x, 11, 0), Z),
    "ifft forward": (lambda m, x: m.ifft(x, norm="forward"), Z),
    "ifft real input n=6": (lambda m, x: m.ifft(x, 6), X),
    "rfft": (lambda m, x: m.rfft(x), X),
    "rfft n=7 ortho": (lambda m, x: m.rfft(x, 7, norm="ortho"), X),
    "rfft n=10 forward": (lambda m, x: m.rfft(x, 10, norm="forward"), X),
    "irfft": (lambda m, x: m.irfft(x), Z),
    "irfft n=7": (lambda m, x: m.irfft(x, 7), Z),
    "irfft n=16 ortho": (lambda m, x: m.irfft(x, 16, norm="ortho"), Z),
    "irfft real input": (lambda m, x: m.irfft(x, 9), X),
    "hfft": (lambda m, x: m.hfft(x), Z),
    "hfft n=9 forward": (lambda m, x: m.hfft(x, 9, norm="forward"), Z),
    "ihfft": (lambda m, x: m.ihfft(x), X),
    "ihfft n=5 ortho": (lambda m, x: m.ihfft(x, 5, norm="ortho"), X),
    "fft2": (lambda m, x: m.fft2(x), Z3),
    "ifft2 s": (lambda m, x: m.ifft2(x, s=(4, 7)), Z3),
    "rfft2": (lambda m, x: m.rfft2(x), X3),
    "irfft2": (lambda m, x: m.irfft2(x), Z3),
    "irfft2 s ortho": (lambda m, x: m.irfft2(x, s=(6, 9), norm="ortho"), Z3),
    "fftn": (lambda m, x: m.fftn(x), Z3),
    "fftn real": (lambda m, x: m.fftn(x, norm="forward"), X3),
    "ifftn s": (lambda m, x: m.ifftn(x, s=(3, 4), norm="ortho"), Z3),
    "rfftn": (lambda m, x: m.rfftn(x), X3),
    "rfftn s": (lambda m, x: m.rfftn(x, s=(4, 5)), X3),
    "irfftn": (lambda m, x: m.irfftn(x), Z3),
    "irfftn s": (lambda m, x: m.irfftn(x, s=(5, 7)), Z3),
    "hfftn": (lambda m, x: m.hfftn(x), Z3),
    "ihfftn": (lambda m, x: m.ihfftn(x), X3),
    "fftshift": (lambda m, x: m.fftshift(x), Z3),
    "ifftshift axes": (lambda m, x: m.ifftshift(x, (0, 2)) if m is not torch.fft else m.ifftshift(x, (0, 2)), Z3),
}


def _torch(name, x, requires_grad=False):
    return CASES[name][0](torch.fft, torch.tensor(x, requires_grad=requires_grad)).resolve_conj()


def _ours(name, x, stop_gradient=True):
    return CASES[name][0](fg.fft, fg.to_tensor(x, stop_gradient=stop_gradient))


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(name):
    expected = _torch(name, CASES[name][1]).numpy()
    got = _ours(name, CASES[name][1]).numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def _real_loss(module, y, weights):
    """sum(w_re Re y + w_im Im y + w_sq |y|^2): linear and quadratic parts, so that first and
    second derivatives are both exercised."""
    w_re, w_im, w_sq = weights
    if module is torch:
        y = y.resolve_conj()
        y = torch.view_as_real(y) if y.is_complex() else torch.stack([y, torch.zeros_like(y)], -1)
        re, im = y[..., 0], y[..., 1]
    else:
        re, im = fg.real(y), (fg.imag(y) if fg.is_complex(y) else fg.zeros_like(y))
    t = (lambda a: torch.tensor(a)) if module is torch else fg.to_tensor
    return module.sum(t(w_re) * re + t(w_im) * im + t(w_sq) * (re * re + im * im))


def _weights(name):
    shape = _torch(name, CASES[name][1]).shape
    rng = np.random.default_rng(1)
    return tuple(rng.standard_normal(tuple(shape)) for _ in range(3))


def _numeric_grad(name, x, weights, eps=1e-6):
    def loss(value):
        return float(_real_loss(torch, _torch(name, value), weights))
    grad = np.zeros(x.shape, x.dtype)
    for parts in ((1.0,) if not np.iscomplexobj(x) else (1.0, 1j)):
        for index in np.ndindex(x.shape):
            step = np.zeros(x.shape, x.dtype)
            step[index] = eps * parts
            grad[index] += parts * (loss(x + step) - loss(x - step)) / (2 * eps)
    return grad


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_central_differences_and_torch(name):
    x0, weights = CASES[name][1], _weights(name)
    x = fg.to_tensor(x0, stop_gradient=False)
    _real_loss(fg, CASES[name][0](fg.fft, x), weights).backward()
    expected = torch.tensor(x0, requires_grad=True)
    _real_loss(torch, CASES[name][0](torch.fft, expected), weights).backward()
    np.testing.assert_allclose(x.grad.numpy(), expected.grad.resolve_conj().numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(name, x0, weights), rtol=1e-6, atol=1e-7)


def _inner(module, g, d):
    """sum(Re g Re d + Im g Im d): the real inner product of a gradient with a direction."""
    if module is torch:
        g = g.resolve_conj()
        return (g.real * torch.tensor(d.real) + (g.imag * torch.tensor(d.imag) if g.is_complex() else 0)).sum()
    out = fg.real(g) * fg.to_tensor(np.ascontiguousarray(d.real))
    return fg.sum(out + fg.imag(g) * fg.to_tensor(np.ascontiguousarray(d.imag)) if fg.is_complex(g) else out)


@pytest.mark.parametrize("name", ["fft", "rfft n=7 ortho", "irfft n=7", "hfft", "ihfft", "rfft2", "irfftn s",
                                  "fftshift"])
def test_grad_of_grad_matches_torch(name):
    x0, weights = CASES[name][1], _weights(name)
    rng = np.random.default_rng(2)
    direction = rng.standard_normal(x0.shape) + (1j * rng.standard_normal(x0.shape) if np.iscomplexobj(x0) else 0)
    x = fg.to_tensor(x0, stop_gradient=False)
    dx, = fg.grad([_real_loss(fg, CASES[name][0](fg.fft, x), weights)], [x], create_graph=True)
    ours, = fg.grad([_inner(fg, dx, direction)], [x])
    expected = torch.tensor(x0, requires_grad=True)
    dt, = torch.autograd.grad(_real_loss(torch, CASES[name][0](torch.fft, expected), weights), [expected],
                              create_graph=True)
    theirs, = torch.autograd.grad(_inner(torch, dt, direction), [expected])
    np.testing.assert_allclose(ours.numpy(), theirs.resolve_conj().numpy(), rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------- the complex ops: real, imag, complex, conj, abs
PARTS = {
    "real": (lambda m, z: m.real(z), Z),
    "imag": (lambda m, z: m.imag(z), Z),
    "conj": (lambda m, z: m.conj(z), Z),
    "abs": (lambda m, z: m.abs(z), Z),
    "complex": (lambda m, x: m.complex(x, x * x), X),
    "as_real": (lambda m, z: m.view_as_real(z) if m is torch else m.as_real(z), Z),
    "as_complex": (lambda m, x: (m.view_as_complex(x.reshape(3, 4, 2).contiguous()) if m is torch
                                 else m.as_complex(m.reshape(x, [3, 4, 2]))), X),
    "fft then abs": (lambda m, x: m.abs(m.fft.fft(x)), X),
    "z + z - 2z": (lambda m, z: z + z - (z * 2 if m is torch else fg.scale(z, 2.0)), Z),
}


@pytest.mark.parametrize("name", sorted(PARTS))
def test_complex_ops_values_and_gradients_match_torch(name):
    function, x0 = PARTS[name]
    x = fg.to_tensor(x0, stop_gradient=False)
    expected = torch.tensor(x0, requires_grad=True)
    ours, theirs = function(fg, x), function(torch, expected).resolve_conj()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    weights = tuple(np.random.default_rng(3).standard_normal(tuple(theirs.shape)) for _ in range(3))
    _real_loss(fg, ours, weights).backward()
    _real_loss(torch, theirs, weights).backward()
    np.testing.assert_allclose(x.grad.numpy(), expected.grad.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)


def test_abs_gradient_at_zero_is_zero_as_torch():
    z = fg.to_tensor(np.array([0j, 3 + 4j]), stop_gradient=False)
    fg.sum(fg.abs(z)).backward()
    np.testing.assert_allclose(z.grad.numpy(), [0, 0.6 + 0.8j])


@pytest.mark.parametrize("op_type, attrs, x", [
    ("fft_resize", {"axis": 1, "size": 5}, X),
    ("fft_resize", {"axis": 0, "size": 6}, X),
    ("fft_hermitian_weight", {"axis": 1, "size": 14}, X),
    ("fft_hermitian_weight", {"axis": 1, "size": 15}, X),
])
def test_resize_and_hermitian_weight_gradients(monkeypatch, op_type, attrs, x):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 1)
    from fluidgrad.testing import check_grad
    check_grad(op_type, {"X": x}, attrs)


def test_static_program_equals_eager(monkeypatch):
    """fft_c2c, fft_r2c and fft_c2r (and real, imag, complex, conj) in a Program: values and
    gradients equal eager mode's."""
    import fluidgrad.framework.program as program_module

    def build(module_x, module_z):
        spectrum = fg.fft.fft(module_z, n=6) + fg.fft.rfft2(module_x, s=(3, 10))[:, :6]
        back = fg.fft.irfft(fg.conj(spectrum), n=9, norm="ortho")
        return fg.sum(back * back) + fg.sum(fg.imag(spectrum)) + fg.sum(fg.abs(fg.complex(back, back)))

    monkeypatch.setattr(program_module, "_guard_depth", 1)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [3, 8], "float64")
        z = fg.static.data("z", [3, 8], "complex128")
        x.stop_gradient = z.stop_gradient = False
        loss = build(x, z)
        grads = fg.gradients([loss], [x, z])
    types = {op.type for op in main.global_block().ops}
    assert {"fft_c2c", "fft_r2c", "fft_c2r", "real", "imag", "complex", "conj"} <= types
    got = fg.Executor().run(main, feed={"x": X, "z": Z}, fetch_list=[loss] + grads)
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    xe, ze = fg.to_tensor(X, stop_gradient=False), fg.to_tensor(Z, stop_gradient=False)
    eager_loss = build(xe, ze)
    eager_loss.backward()
    for g, e in zip(got, [eager_loss.numpy(), xe.grad.numpy(), ze.grad.numpy()]):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_frequencies_and_dtypes_match_torch():
    np.testing.assert_allclose(fg.fft.fftfreq(8, 0.5, dtype="float64").numpy(), torch.fft.fftfreq(8, 0.5).numpy())
    np.testing.assert_allclose(fg.fft.rfftfreq(9).numpy(), torch.fft.rfftfreq(9).numpy(), rtol=1e-7)
    assert fg.fft.rfft(fg.to_tensor(X.astype("float32"))).dtype == "complex64"
    assert fg.fft.fft(fg.to_tensor(np.arange(8))).dtype == "complex64"          # integers: the default float
    assert fg.fft.irfft(fg.to_tensor(Z.astype("complex64"))).dtype == "float32"
    np.testing.assert_allclose(fg.fft.fft(fg.to_tensor(X), dim=0).numpy(), torch.fft.fft(torch.tensor(X), dim=0))


@pytest.mark.parametrize("call, error, message", [
    (lambda: fg.exp(fg.to_tensor(Z)), TypeError, "op exp: complex values are not supported"),
    (lambda: fg.to_tensor(Z) * fg.to_tensor(Z), TypeError, "op elementwise_mul: complex values"),
    (lambda: fg.fft.rfft(fg.to_tensor(Z)), TypeError, "rfft: expects a real input, got complex128"),
    (lambda: fg.fft.fft(fg.to_tensor(X), norm="unitary"), ValueError, "norm must be 'backward', 'ortho'"),
    (lambda: fg.fft.fft(fg.to_tensor(X), axis=2), ValueError, r"axes \[2\] out of range for x of shape \[3, 8\]"),
    (lambda: fg.fft.fft2(fg.to_tensor(X), axes=(1, 1)), ValueError, "distinct"),
    (lambda: fg.fft.irfft(fg.to_tensor(Z), n=0), ValueError, "must be >= 1"),
    (lambda: fg.fft.fftn(fg.to_tensor(X), s=(4,), axes=(0, 1)), ValueError, "one size per axis"),
    (lambda: fg.fft.fft(fg.to_tensor(X.astype("float16"))), TypeError, "float32 or float64, got float16"),
    (lambda: fg.as_complex(fg.to_tensor(X)), ValueError, "last axis of size 2"),
    (lambda: fg.complex(fg.to_tensor(X), fg.to_tensor(X.astype("float32"))), TypeError, "one dtype"),
])
def test_bad_input_is_refused_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()
