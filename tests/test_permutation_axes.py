"""transpose / permute / swapaxes / movedim / squeeze take the axes torch takes ([-ndim, ndim - 1],
0 and -1 of a 0-D tensor) and refuse the others with an IndexError naming the function, never
wrapping an axis modulo the rank."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.static import data

_SWAPS = {
    "transpose": lambda x, a, b: x.transpose(a, b),
    "swapaxes": lambda x, a, b: x.swapaxes(a, b),
    "movedim": lambda x, a, b: x.movedim(a, b),
    "permute": lambda x, a, b: x.permute(*[a if i == 0 else b if i == 1 else i for i in range(len(x.shape))]),
}


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(rank=st.integers(1, 4), a=st.integers(-6, 6), b=st.integers(-6, 6), name=st.sampled_from(sorted(_SWAPS)))
def test_axes_match_torch_or_are_refused_naming_the_function(rank, a, b, name):
    import fluidgrad.framework.program as program_module
    saved, program_module._guard_depth = program_module._guard_depth, 0
    try:
        value = np.arange(float(np.prod(range(2, rank + 2)))).reshape(range(2, rank + 2))
        call = _SWAPS[name]
        try:
            expected = call(torch.tensor(value), a, b).numpy()
        except (IndexError, RuntimeError):
            with pytest.raises((IndexError, ValueError), match=name):
                call(fg.to_tensor(value), a, b)
            return
        np.testing.assert_array_equal(call(fg.to_tensor(value), a, b).numpy(), expected)
    finally:
        program_module._guard_depth = saved


@pytest.mark.parametrize("call", ["squeeze(0)", "squeeze(-1)", "movedim(0, -1)", "transpose(0, -1)"])
def test_zero_dim_tensor_takes_axis_0_and_minus_1(call, eager):
    got = eval(f"x.{call}", {"x": fg.to_tensor(np.array(2.5))})
    assert tuple(got.shape) == () and float(got.numpy()) == 2.5
    with pytest.raises(IndexError, match="squeeze"):
        fg.to_tensor(np.array(2.5)).squeeze(1)


def test_static_transpose_refuses_an_axis_out_of_range():
    x = data("x", [2, 3], "float32")
    with pytest.raises(IndexError, match=r"transpose.*\[2, 3\]"):
        fg.transpose(x, [0, 2])
    with pytest.raises(IndexError, match="movedim"):
        x.movedim(0, -3)
