"""The top-level functions are the Tensor methods' torch forms (one code, tensor/torch_*.py):
torch's argument order and keywords work on fg.index_add / add / subtract / round / masked_select
as on the methods; torch 2.13.0 the oracle, eager and static mode."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from both_modes import compare_with_torch

_X = np.random.default_rng(7).standard_normal((3, 4))

_CALLS = {
    "index_add(x, 1, index, source)": lambda m, x: m.index_add(x, 1, _index(m, [3, 0]), x[:, :2]),
    "index_add(x, 0, index, source, alpha=2)": lambda m, x: m.index_add(x, 0, _index(m, [2, 2]), x[:2], alpha=2),
    "add(x, 2x, alpha=0.5)": lambda m, x: m.add(x, x * 2, alpha=0.5),
    "subtract(x, x * x, alpha=3)": lambda m, x: m.subtract(x, x * x, alpha=3),
    "round(x, decimals=2)": lambda m, x: m.round(x * 3, decimals=2),
}


def _index(m, values):
    array = np.array(values)
    return torch.tensor(array) if m is torch else fg.to_tensor(array)


@pytest.mark.parametrize("call", sorted(_CALLS))
def test_functions_take_torchs_forms_in_both_modes(call):
    fn = _CALLS[call]
    wrt = [] if call.startswith("round") else ["x"]    # (round's gradient is zero: nothing to compare)
    compare_with_torch(lambda x: fn(fg, x), lambda x: fn(torch, x), {"x": _X}, wrt=wrt)


def test_masked_select_broadcasts_as_torch(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    mask = np.array([True, False, True, True])
    got = fg.masked_select(fg.to_tensor(_X), fg.to_tensor(mask))
    np.testing.assert_array_equal(got.numpy(), torch.masked_select(torch.tensor(_X), torch.tensor(mask)).numpy())


@pytest.mark.parametrize("name", ["add", "index_add", "round", "masked_select", "median", "var", "clamp",
                                  "index_select", "scatter", "max", "sort", "split"])
def test_the_method_is_the_function(name):
    assert getattr(fg.Tensor, name) is getattr(fg, name)


def test_paddle_forms_still_work(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    x = fg.to_tensor(_X)
    np.testing.assert_allclose(fg.add(x, x).numpy(), 2 * _X)
    np.testing.assert_allclose(fg.index_add(x, fg.to_tensor(np.array([0])), 1, x[:, :1]).numpy()[:, 0], 2 * _X[:, 0])
