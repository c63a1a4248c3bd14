"""Arithmetic on a size known only when the traced program runs (`x.shape[0]` of an InputSpec's
None) never computes with -1 (framework/runtime_dims.py): a value is computed when the program
runs, as eager mode and PyTorch compute it for each batch, or a TypeError names the size."""
import math

import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.framework.program as program_module
from fluidgrad.framework.runtime_dims import RuntimeDim, TracedSize

_VALUES = {
    "1.0 / n": lambda x: x.sum(0) * (1.0 / x.shape[0]),
    "n * 0.5": lambda x: x * (x.shape[0] * 0.5),
    "0.5 * n + 1": lambda x: x * (0.5 * x.shape[0] + 1),
    "x / (2 * n)": lambda x: x / (2 * x.shape[0]),
    "n / 2": lambda x: x * (x.shape[0] / 2),
    "unbiased": lambda x: ((x - x.mean(0)) ** 2).mean(0) * (x.shape[0] / (x.shape[0] - 1)),
    "(n - 1) * x": lambda x: (x.shape[0] - 1) * x,
    "n // 2 in reshape": lambda x: x.reshape(x.shape[0] // 2, -1).sum(1),
    "size(0) view": lambda x: x.view(x.size(0), -1) * (1.0 / x.size(0)),
    "zeros(n, 4)": lambda x: x + fg.zeros(x.shape[0], 4) if isinstance(x, (fg.Tensor, fg.framework.Variable))
    else x + torch.zeros(x.shape[0], 4, dtype=x.dtype),
    "new_zeros(n, 4)": lambda x: x + x.new_zeros(x.shape[0], 4),
    "1 - 1 / n": lambda x: x * (1 - 1 / x.shape[0]),
    "np.float32(2) * n": lambda x: x * (np.float32(2.0) * x.shape[0]),
    "n < x (a tensor)": lambda x: (x.shape[0] < x * 4.0).float(),
    "n ** x (a tensor)": lambda x: x * 3.0 + x.shape[0] ** (x * 0.0 + 2.0),
}


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)


@pytest.mark.parametrize("name", sorted(_VALUES))
def test_arithmetic_on_an_unknown_batch_gives_the_eager_and_torch_value(tmp_path, name, eager):
    function = _VALUES[name]
    path = str(tmp_path / "f")
    fg.jit.save(function, path, input_spec=[fg.jit.InputSpec([None, 4], "float32", name="x")])
    loaded = fg.jit.load(path)
    for batch in (2, 6):
        a = np.random.default_rng(batch).normal(size=(batch, 4)).astype("float32")
        got = loaded(fg.to_tensor(a))
        want = function(fg.to_tensor(a))
        torch_want = function(torch.tensor(a))
        assert got.dtype == want.dtype == "float32"
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got.numpy(), torch_want.numpy(), rtol=1e-5, atol=1e-6)


def test_a_captured_tensor_divided_by_an_unknown_batch(tmp_path, eager):
    weight = fg.to_tensor(np.arange(4.0, dtype="float32"))

    def function(x):
        return x + weight / x.shape[0]

    path = str(tmp_path / "f")
    fg.jit.save(function, path, input_spec=[fg.jit.InputSpec([None, 4], "float32", name="x")])
    a = np.ones((5, 4), "float32")
    np.testing.assert_allclose(fg.jit.load(path)(fg.to_tensor(a)).numpy(), function(fg.to_tensor(a)).numpy())


def _branch(x):
    return x * 2.0 if x.shape[0] > 1 else x


def _loop(x):
    return sum(x[i] for i in range(x.shape[0]))


_REFUSED = {
    "x.shape[0] > 1": (_branch, ">"),
    "range(x.shape[0])": (_loop, "range"),
    "int(x.shape[0])": (lambda x: x * int(x.shape[0]), "int"),
    "float(x.shape[0])": (lambda x: x * float(x.shape[0]), "float"),
    "x.shape[0] == 4": (lambda x: x * 2.0 if x.shape[0] == 4 else x, "=="),
    "math.sqrt(x.shape[0])": (lambda x: x / math.sqrt(x.shape[0]), "float"),
    "np.zeros(x.shape[0])": (lambda x: x + fg.to_tensor(np.zeros((x.shape[0], 4), "float32")), "int"),
    "x.shape[0] % 2": (lambda x: x * (x.shape[0] % 2), "% 2"),
    "x.shape[0] ** 2": (lambda x: x * (x.shape[0] ** 2), "** 2"),
    "x[x.shape[0] - 1]": (lambda x: x[x.shape[0] - 1], "int"),
    "reshape(n / 2)": (lambda x: x.reshape([x.shape[0] / 2, -1]), "/ 2"),
    "full(n * 1.5)": (lambda x: fg.full([x.shape[0] * 1.5], 1.0), "* 1.5"),
    "{x.shape[0]: 1}": (lambda x: x * {x.shape[0]: 1.0}[x.shape[0]], "hash"),
}


@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_what_needs_an_unknown_size_now_is_a_type_error_naming_it(tmp_path, name):
    function, what = _REFUSED[name]
    with pytest.raises(TypeError, match=r"x\.shape\[0\]") as caught:
        fg.jit.save(function, str(tmp_path / "f"), input_spec=[fg.jit.InputSpec([None, 4], "float32", name="x")])
    assert what in str(caught.value) and "run" in str(caught.value)


def test_the_traced_function_reads_traced_sizes_and_fluidgrad_reads_runtime_dims(tmp_path):
    seen = []

    def function(t):
        seen.append((t.shape, t.size()))
        return t * 2.0

    fg.jit.save(function, str(tmp_path / "f"), input_spec=[fg.jit.InputSpec([None, 3], name="t")])
    (user, known), (sized, _) = seen[0]
    assert isinstance(user, TracedSize) and isinstance(sized, TracedSize) and type(known) is int and known == 3
    assert isinstance(user.library_form(), RuntimeDim) and user.library_form() == -1
    assert repr(user) == "t.shape[0]" and (user * 2 + 1).describe() == "((t.shape[0] * 2) + 1)"
    assert (1.0 / user).describe() == "(1.0 / t.shape[0])"
