"""The eager hot path's shortcuts (issue 14's floor) keep their checks: an output dtype compared
by equality before its name, and one weak reference per tensor updated in place, reused."""
from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.eager.node import op_call
from fluidgrad.eager.tensor import modified_tensors
from fluidgrad.framework.errors import FluidgradError


def _non_canonical(array: np.ndarray) -> np.ndarray:
    """`array` viewed with a dtype equal to its own but not NumPy's cached instance (what a numba
    kernel's outputs carry)."""
    dtype = array.dtype.newbyteorder("=")  # native order: equal, but a new instance
    view = array.view(dtype)
    assert view.dtype == array.dtype and view.dtype is not array.dtype
    return view


def test_an_output_dtype_equal_to_the_declared_one_is_accepted(monkeypatch):
    call = op_call("tanh")
    kernel = call.kernel
    monkeypatch.setattr(call, "kernel", lambda x: _non_canonical(kernel(x)))
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    t = fg.to_tensor(x, stop_gradient=False)
    y = fg.tanh(t)
    assert y.dtype == "float32"
    fg.sum(y).backward()
    xt = torch.tensor(x, requires_grad=True)
    torch.tanh(xt).sum().backward()
    np.testing.assert_allclose(y.numpy(), torch.tanh(xt).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(t.grad.numpy(), xt.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("op, run", [
    ("tanh", lambda t: fg.tanh(t)),                                      # eager_apply, one output
    ("scale", lambda t: t.clone()),                                      # apply_unary
    ("elementwise_add", lambda t: t + t),                                # apply_binary
])
def test_an_output_dtype_other_than_the_declared_one_is_still_an_error(monkeypatch, op, run):
    call = op_call(op)
    kernel = call.kernel
    monkeypatch.setattr(call, "kernel", lambda *args, **kw: np.asarray(kernel(*args, **kw), dtype=np.float64))
    t = fg.to_tensor(np.ones((2, 3), np.float32), stop_gradient=False)
    with pytest.raises(FluidgradError, match=rf"op {op}: the kernel computed float64 where the shape rule "
                                             rf"declares float32"):
        run(t)


def test_a_multi_output_op_checks_each_output_dtype(monkeypatch):
    call = op_call("softmax_with_cross_entropy")
    kernel = call.kernel
    logits = fg.to_tensor(np.random.default_rng(0).standard_normal((4, 3)).astype("float32"), stop_gradient=False)
    label = fg.to_tensor(np.array([[0], [1], [2], [0]]))
    monkeypatch.setattr(call, "kernel", lambda *a, **kw: tuple(_non_canonical(v) for v in kernel(*a, **kw)))
    loss = fg.nn.functional.softmax_with_cross_entropy(logits, label)  # equal dtypes: accepted
    assert loss.dtype == "float32"
    monkeypatch.setattr(call, "kernel", lambda *a, **kw: tuple(v.astype(np.float64) for v in kernel(*a, **kw)))
    with pytest.raises(FluidgradError, match="softmax_with_cross_entropy: the kernel computed float64"):
        fg.nn.functional.softmax_with_cross_entropy(logits, label)


def test_updates_in_place_keep_one_entry_per_tensor_and_the_version_check():
    w = fg.to_tensor(np.full((8, 8), 2.0), stop_gradient=False)
    x = fg.to_tensor(np.full((8, 8), 3.0), stop_gradient=False)
    opt = fg.optimizer.SGD(learning_rate=0.1, parameters=[w])
    before = len(modified_tensors)
    for _ in range(3):  # each step updates w in place: one entry for w, its stamp moving on
        fg.sum(x * w).backward()
        opt.step()
        opt.clear_grad()
    assert len(modified_tensors) == before + 1
    reference, first_stamp = modified_tensors[id(w)]
    loss = fg.sum(x * w)  # recorded after the last update: reads w as it is now
    loss.backward(retain_graph=True)
    opt.step()  # a fourth update, after `loss` was recorded
    assert modified_tensors[id(w)][0] is reference and modified_tensors[id(w)][1] > first_stamp
    with pytest.raises(RuntimeError, match=r"elementwise_mul.*modified in place"):
        loss.backward()
    np.testing.assert_allclose(w.numpy(), 2.0 - 0.1 * 3.0 * 4)


def test_the_entry_of_an_updated_tensor_dies_with_it():
    w = fg.to_tensor(np.ones(3), stop_gradient=False)
    w.set_value(np.zeros(3))
    w.set_value(np.full(3, 5.0))  # the second update reuses the first's weak reference
    key = id(w)
    assert key in modified_tensors
    del w
    gc.collect()
    assert key not in modified_tensors
