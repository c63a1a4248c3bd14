"""fluidgrad.assign (paddle.assign): a copy of a Tensor or Variable (differentiable), or NumPy
data made a constant (a Tensor in eager mode, a Variable in a program); a constant Tensor meeting
Variables joins the Program as a constant (dispatch); `output=` writing the copy into an existing
Tensor or Variable (Fluid's style, a loop writing an outer variable). Gradients are checked
against PyTorch's clone. (tests/test_jit_eager_idioms.py has the first cases.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.framework import program as program_module

DATA = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("value,expected", [
    (DATA, DATA), (DATA.astype("int32"), DATA.astype("int32")), ([[1.5, 2.5]], np.array([[1.5, 2.5]])),
    ((1, 2, 3), np.array([1, 2, 3])), (2.5, np.array(2.5)), (True, np.array(True)), (np.float32(3), np.float32(3))])
def test_numpy_data_becomes_a_constant_tensor_keeping_its_dtype(monkeypatch, value, expected):
    monkeypatch.setattr(program_module, "_guard_depth", 0)  # eager: outside the fixture's program_guard
    value, expected = (value.copy() if isinstance(value, np.ndarray) else value), np.array(expected)
    got = fg.assign(value)
    assert isinstance(got, fg.Tensor) and got.dtype == str(expected.dtype)
    np.testing.assert_array_equal(got.numpy(), expected)
    if isinstance(value, np.ndarray):
        value[...] = 0                                   # a copy: later changes to the array do not leak
        np.testing.assert_array_equal(got.numpy(), expected)


def test_constant_tensors_join_a_static_program_as_constants():
    main = fg.Program()
    constant = fg.to_tensor(DATA.astype("float32"))
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 3], "float32")
        out = fg.concat([x * constant, fg.matmul(constant, fg.transpose(x, [1, 0]))], axis=1)
        flags = fg.logical_not(fg.cast(x, "bool")) | fg.to_tensor(np.array([True, False, False]))
    assert isinstance(out, fg.Variable)
    xs = DATA.astype("float32") + 1
    got, mask = fg.Executor().run(main, feed={"x": xs}, fetch_list=[out, flags])
    np.testing.assert_allclose(got, np.concatenate([xs * DATA, DATA @ xs.T], axis=1), rtol=1e-6)
    np.testing.assert_array_equal(mask, np.broadcast_to([True, False, False], (2, 3)))


def test_a_tensor_that_needs_a_gradient_does_not_join_a_program():
    weight = fg.to_tensor(DATA, stop_gradient=False)
    with fg.program_guard(fg.Program(), fg.Program()):
        x = fg.static.data("x", [2, 3], "float64")
        with pytest.raises(TypeError, match=r"elementwise_mul: input Y is an eager Tensor that requires a gradient.*"
                                            r"create_parameter.*to_static"):
            x * weight


def test_a_copy_of_a_tensor_passes_the_gradient_as_torch_clone():
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


def test_output_tensor_takes_the_value():
    out = fg.to_tensor(np.zeros((2, 3)))
    assert fg.assign(fg.to_tensor(DATA) * 2.0, output=out) is out
    np.testing.assert_array_equal(out.numpy(), 2 * DATA)
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


def test_bad_output_is_refused_naming_both():
    with pytest.raises(ValueError, match=r"assign: cannot write .*shape \[2, 3\], float64.* into .*shape \[3\], float64"):
        fg.assign(DATA, output=fg.to_tensor(np.zeros(3)))
    with pytest.raises(ValueError, match=r"int64.*float64"):
        fg.assign(np.zeros((2, 3), "int64"), output=fg.to_tensor(np.zeros((2, 3))))
    with pytest.raises(TypeError, match="output must be a Tensor written from a Tensor or data"):
        fg.assign(DATA, output=np.zeros((2, 3)))
