"""Gradients through bfloat16 tensors, eager and static, beside PyTorch's bfloat16 autograd.

bfloat16 is what mixed precision on CPUs runs in (`amp.auto_cast(dtype="bfloat16")`): a float32
parameter cast to bfloat16, the ops in bfloat16, the gradient cast back to float32. NumPy knows
bfloat16 through ml_dtypes, whose dtype kind is 'V' (as the float8 storage formats' is), so
which dtypes carry gradients is decided by name (framework/dtypes.py), not by kind.
"""
import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.nn.functional as F

RNG = np.random.default_rng(3)
X = RNG.standard_normal((6, 8)).astype("float32")
W = (RNG.standard_normal((8, 5)) * 0.4).astype("float32")
COS = np.cos(np.arange(30.0)).reshape(6, 5).astype("float32")
LABELS = RNG.integers(0, 5, 6)

# name -> (fluidgrad function, torch function) of h = x @ w in bfloat16
OPS = {
    "relu": (F.relu, torch.relu),
    "gelu": (F.gelu, torch.nn.functional.gelu),
    "tanh": (fg.tanh, torch.tanh),
    "sigmoid": (F.sigmoid, torch.sigmoid),
    "exp": (fg.exp, torch.exp),
    "h * h": (lambda h: h * h, lambda h: h * h),
    "h / (h * h + 1)": (lambda h: h / (h * h + 1), lambda h: h / (h * h + 1)),
    "softmax": (lambda h: F.softmax(h, -1), lambda h: torch.softmax(h, -1)),
    "log_softmax": (lambda h: F.log_softmax(h, -1), lambda h: torch.log_softmax(h, -1)),
    "layer_norm": (lambda h: F.layer_norm(h, [5]), lambda h: torch.nn.functional.layer_norm(h, [5])),
    "mean over rows": (lambda h: h.mean(axis=0, keepdim=True) + h, lambda h: h.mean(0, keepdim=True) + h),
}


def _fluidgrad_grad(fn, eager):
    if eager:
        w = fg.to_tensor(W, stop_gradient=False)
        out = fn(fg.matmul(fg.to_tensor(X).astype("bfloat16"), w.astype("bfloat16")))
        fg.sum(out.astype("float32") * fg.to_tensor(COS)).backward()
        return w.grad.numpy()
    x = fg.static.data("x", [6, 8], "float32")
    w = fg.static.create_parameter([8, 5], "float32", default_initializer=fg.nn.initializer.Assign(W))
    out = fn(fg.matmul(fg.cast(x, "bfloat16"), fg.cast(w, "bfloat16")))
    loss = fg.sum(fg.cast(out, "float32") * fg.to_tensor(COS))
    (_, grad), = fg.static.append_backward(loss, parameter_list=[w])
    exe = fg.static.Executor()
    exe.run(fg.static.default_startup_program())
    return exe.run(feed={"x": X}, fetch_list=[grad])[0]


def _torch_grad(fn):
    w = torch.tensor(W, requires_grad=True)
    out = fn(torch.tensor(X).bfloat16() @ w.bfloat16())
    (out.float() * torch.tensor(COS)).sum().backward()
    return w.grad.numpy()


def _float32_grad(fn):
    w = torch.tensor(W, requires_grad=True)
    (fn(torch.tensor(X) @ w) * torch.tensor(COS)).sum().backward()
    return w.grad.numpy()


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradient_through_bfloat16_matches_pytorch_bfloat16(name, monkeypatch):
    ours, theirs = OPS[name]
    static = _fluidgrad_grad(ours, eager=False)
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    eager = _fluidgrad_grad(ours, eager=True)
    assert eager.dtype == np.float32
    np.testing.assert_array_equal(eager, static)      # one kernel set, the same rounding
    scale = np.abs(_float32_grad(theirs)).max()
    # both round each op's result to bfloat16 (8 bits of mantissa), in different places
    np.testing.assert_allclose(eager, _torch_grad(theirs), rtol=0, atol=0.03 * scale)
    np.testing.assert_allclose(eager, _float32_grad(theirs), rtol=0, atol=0.03 * scale)


def test_cross_entropy_on_bfloat16_logits(monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    w = fg.to_tensor(W, stop_gradient=False)
    logits = fg.matmul(fg.to_tensor(X).astype("bfloat16"), w.astype("bfloat16"))
    F.cross_entropy(logits.astype("float32"), fg.to_tensor(LABELS)).backward()
    reference = torch.tensor(W, requires_grad=True)
    torch.nn.functional.cross_entropy((torch.tensor(X).bfloat16() @ reference.bfloat16()).float(),
                                      torch.tensor(LABELS)).backward()
    np.testing.assert_allclose(w.grad.numpy(), reference.grad.numpy(), rtol=0, atol=0.03 * np.abs(W).max())


def test_bfloat16_tensors_may_need_gradients_but_storage_formats_may_not(monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    leaf = fg.to_tensor(X).astype("bfloat16")
    leaf.stop_gradient = False
    (leaf * leaf).astype("float32").sum().backward()
    np.testing.assert_allclose(np.asarray(leaf.grad.numpy(), "float32"), 2 * X, rtol=1e-2)
    assert str(leaf.grad.dtype).endswith("bfloat16")
    with pytest.raises(TypeError, match="cannot have a gradient"):
        fg.to_tensor(np.zeros(3, "float32"), stop_gradient=False, dtype="float8_e4m3fn")
