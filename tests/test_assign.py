"""fluidgrad.assign (paddle.assign): a copy of a Tensor or Variable (differentiable), or NumPy
data made a constant in the current mode, and `output=` writing the copy into an existing
Tensor (in place, graph link included) or Variable (Fluid's style, a loop writing an outer
variable). Gradients are checked against PyTorch's clone / copy_."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework import program as program_module

DATA = np.arange(6.0).reshape(2, 3)


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)  # eager: outside the fixture's program_guard
    assert fg.in_dynamic_mode()


@pytest.mark.parametrize("value,expected", [
    (DATA, DATA), (DATA.astype("int32"), DATA.astype("int32")), ([[1.5, 2.5]], np.array([[1.5, 2.5]])),
    ((1, 2, 3), np.array([1, 2, 3])), (2.5, np.array([2.5])), (True, np.array([True])), (np.float32(3), np.float32([3]))])
def test_numpy_data_becomes_a_tensor_in_eager_mode(eager, value, expected):
    value, expected = (value.copy() if isinstance(value, np.ndarray) else value), np.array(expected)
    got = fg.assign(value)
    assert isinstance(got, fg.Tensor) and got.dtype == str(expected.dtype)
    np.testing.assert_array_equal(got.numpy(), expected)
    if isinstance(value, np.ndarray):
        value[...] = 0                                   # a copy: later changes to the array do not leak
        np.testing.assert_array_equal(got.numpy(), expected)


def test_numpy_data_becomes_a_constant_variable_in_static_mode():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        constant = fg.assign(DATA.astype("float32"))
        flags = fg.assign(np.array([True, False]))
        x = fg.static.data("x", [2, 3], "float32")
        out = x * constant
    assert isinstance(constant, fg.Variable) and constant.shape == (2, 3) and flags.dtype == "bool"
    got, mask = fg.Executor().run(main, feed={"x": DATA.astype("float32")}, fetch_list=[out, flags])
    np.testing.assert_array_equal(got, DATA.astype("float32") ** 2)
    np.testing.assert_array_equal(mask, [True, False])


def test_a_copy_of_a_tensor_passes_the_gradient_as_torch_clone(eager):
    x = fg.to_tensor(DATA, stop_gradient=False)
    y = fg.assign(x)
    assert y is not x
    (y * y).sum().backward()
    t = torch.tensor(DATA, requires_grad=True)
    (t.clone() * t.clone()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_a_copy_of_a_variable_passes_the_gradient():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 3], "float64")
        x.stop_gradient = False
        y = fg.assign(x)
        dx, = fg.gradients([fg.sum(y * y)], [x])
    got, = fg.Executor().run(main, feed={"x": DATA}, fetch_list=[dx])
    np.testing.assert_allclose(got, 2 * DATA)


def test_output_takes_the_copy_in_place_as_torch_copy_(eager):
    x = fg.to_tensor(DATA, stop_gradient=False)
    out = fg.to_tensor(np.zeros((2, 3)))
    alias = out
    assert fg.assign(x * 2.0, output=out) is alias
    np.testing.assert_array_equal(alias.numpy(), 2 * DATA)
    (alias * alias).sum().backward()                    # the graph link moved with the value
    t = torch.tensor(DATA, requires_grad=True)
    t_out = torch.zeros(2, 3)
    t_out.copy_(t * 2.0)
    (t_out * t_out).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    fg.assign(np.ones((2, 3)), output=out)
    np.testing.assert_array_equal(out.numpy(), np.ones((2, 3)))


def test_output_variable_is_written_in_a_loop():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        i = fg.full([1], 0, "int64")
        total = fg.full([1], 1.0, "float64")
        cond = fg.less_than(i, fg.full([1], 4, "int64"))
        loop = fg.static.nn.While(cond)
        with loop.block():
            fg.assign(total * 2.0, output=total)
            fg.assign(i + 1, output=i)
            fg.assign(fg.less_than(i, fg.full([1], 4, "int64")), output=cond)
    got, = fg.Executor().run(main, fetch_list=[total])
    np.testing.assert_array_equal(got, [16.0])


def test_bad_output_is_refused_naming_both(eager):
    with pytest.raises(ValueError, match=r"assign: cannot write .*shape \[2, 3\], float64.* output .*shape \[3\], float64"):
        fg.assign(DATA, output=fg.to_tensor(np.zeros(3)))
    with pytest.raises(ValueError, match=r"int64.*float64"):
        fg.assign(np.zeros((2, 3), "int64"), output=fg.to_tensor(np.zeros((2, 3))))
    with pytest.raises(TypeError, match="output must be a Tensor or Variable"):
        fg.assign(DATA, output=np.zeros((2, 3)))
