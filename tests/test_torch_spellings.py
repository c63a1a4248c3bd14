"""The rules that let one call serve PyTorch's spelling and Paddle's without a wrong answer:
x.size (an element count that is also callable), gather told apart by argument types, expand
with sizes as arguments, sum's dtype in either positional order."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


def test_size_is_the_count_and_a_method():
    x = fg.to_tensor(np.zeros((2, 3, 4)))
    assert x.size == 24 and x.size * 2 == 48 and int(x.size) == 24 and x.numel() == 24
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    with pytest.raises(IndexError, match="size"):
        x.size(3)
    with fg.program_guard(fg.Program()):
        v = fg.static.data("v", [2, 5])
        assert v.size == 10 and v.size(0) == 2
        w = fg.static.data("w", [None, 5])
        for use in (lambda: int(w.size), lambda: w.size == 5, lambda: w.size * 2, lambda: range(w.size)):
            with pytest.raises(TypeError, match="only known when the program runs"):
                use()
        assert w.size(0) == -1 and w.size(-1) == 5 and w.size() == (-1, 5)   # torch's x.size(d), as x.shape[d]
        with pytest.raises(IndexError, match="size"):
            w.size(2)


def test_gather_picks_paddle_or_torch_by_argument_types():
    x0 = np.arange(12.0).reshape(3, 4)
    index = np.array([[0, 2], [1, 1], [3, 0]])
    x = fg.to_tensor(x0)
    torch_form = torch.gather(torch.tensor(x0), 1, torch.tensor(index)).numpy()
    np.testing.assert_array_equal(x.gather(1, fg.to_tensor(index)).numpy(), torch_form)
    np.testing.assert_array_equal(fg.gather(x, dim=1, index=fg.to_tensor(index)).numpy(), torch_form)
    rows = np.array([2, 0])
    np.testing.assert_array_equal(fg.gather(x, fg.to_tensor(rows)).numpy(), x0[rows])
    np.testing.assert_array_equal(x.gather(fg.to_tensor(rows), axis=1).numpy(), x0[:, rows])
    with pytest.raises(TypeError, match="index must be a tensor"):
        fg.gather(x, 1)


def test_expand_with_sizes_as_arguments_or_a_list():
    x0 = np.array([[1.0, 2.0]])
    x = fg.to_tensor(x0)
    for got in (x.expand(3, -1), x.expand([3, 2]), x.expand(shape=[3, -1])):
        np.testing.assert_array_equal(got.numpy(), torch.tensor(x0).expand(3, -1).numpy())


def test_sum_dtype_in_either_positional_order():
    x = fg.to_tensor(np.array([[1, 2], [3, 4]], dtype="int32"))
    for got in (fg.sum(x, 1, True, "float64"), fg.sum(x, 1, "float64", True), x.sum(1, dtype="float64", keepdim=True)):
        assert got.dtype == "float64" and got.shape == (2, 1)
        np.testing.assert_array_equal(got.numpy(), [[3.0], [7.0]])


def test_flip_and_roll_take_dims_as_methods_only_where_torch_has_it():
    x0 = np.arange(6.0).reshape(2, 3)
    x = fg.to_tensor(x0)
    np.testing.assert_array_equal(x.flip(dims=[0, 1]).numpy(), torch.tensor(x0).flip(dims=[0, 1]).numpy())
    with pytest.raises(TypeError):
        x.sum(dims=1)
