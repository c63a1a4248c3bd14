"""PyTorch's spellings of Tensor methods beside Paddle's, on Tensors and Variables alike:
dim= / start_dim= / end_dim= keywords, sizes as arguments (reshape / view / permute),
transpose(a, b) swapping two axes, and float() / long() / ... casts; against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

X0 = np.arange(24.0).reshape(2, 3, 4) - 7.5
CALLS = {
    "sum(dim=(0, 2))": lambda x: x.sum(dim=(0, 2)),
    "max(dim=1)": lambda x: x.amax(dim=1),
    "argmin(dim=-1, keepdim=True)": lambda x: x.argmin(dim=-1, keepdim=True),
    "flatten(start_dim=0, end_dim=1)": lambda x: x.flatten(start_dim=0, end_dim=1),
    "cumsum(dim=2)": lambda x: x.cumsum(dim=2),
    "transpose(0, 2)": lambda x: x.transpose(0, 2),
    "transpose(-1, 0)": lambda x: x.transpose(-1, 0),
    "permute(2, 0, 1)": lambda x: x.permute(2, 0, 1),
    "permute([1, 2, 0])": lambda x: x.permute([1, 2, 0]),
    "view(4, -1)": lambda x: x.view(4, -1),
    "reshape((3, 8))": lambda x: x.reshape((3, 8)),
    "double()": lambda x: x.double(),
    "int()": lambda x: x.int(),
    "bool()": lambda x: x.bool(),
    "half()": lambda x: x.half(),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_torch_spellings_match_torch_in_both_modes(call):
    fn = CALLS[call]
    expected = fn(torch.tensor(X0)).numpy()
    got = fn(fg.to_tensor(X0)).numpy()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        out = fn(fg.static.data("x", [2, 3, 4], "float64"))
    static, = fg.Executor().run(main, feed={"x": X0}, fetch_list=[out])
    np.testing.assert_array_equal(static, expected)


def test_paddle_spellings_still_work_and_both_names_at_once_are_refused():
    x = fg.to_tensor(X0)
    np.testing.assert_array_equal(x.transpose([2, 0, 1]).numpy(), np.transpose(X0, [2, 0, 1]))
    np.testing.assert_array_equal(x.flatten(start_axis=1).numpy(), X0.reshape(2, 12))
    with pytest.raises(TypeError, match="give axis= or dim=, not both"):
        x.argmax(axis=0, dim=1)
    with pytest.raises(TypeError, match="give the axis once"):
        x.sum(axis=0, dim=1)
