"""Paddle's Tensor methods (fluidgrad/tensor/methods.py): each is the public function of the same
name, on eager Tensors and static Variables alike, and the classes' own methods stay theirs."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.tensor.methods import METHOD_NAMES

_X = np.arange(6.0).reshape(2, 3) - 2.0
_OWN = ("fluidgrad.framework.math_mixin", "fluidgrad.eager.tensor", "fluidgrad.framework.variable")
# a function taking PyTorch's dim= / start_dim= too, or PyTorch's argument order beside Paddle's
_TORCH_NAMES = ("fluidgrad.tensor.methods", "fluidgrad.tensor.torch_methods", "fluidgrad.tensor.torch_arithmetic",
                "fluidgrad.tensor.torch_statistics")


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_each_method_is_the_function_of_its_name_or_the_class_own(name):
    for cls in (fg.Tensor, fg.Variable):
        method = getattr(cls, name)
        assert method is getattr(fg, name) or method.__module__ in _OWN or \
            (method.__module__ in _TORCH_NAMES and method.__wrapped__ is getattr(fg, name)), (cls, name)


def test_the_classes_own_methods_are_not_replaced():
    assert "astype" in vars(fg.Tensor) and fg.Tensor.astype is vars(fg.Tensor)["astype"]
    x = fg.to_tensor(_X)
    assert x.sum(1).shape == (2,) and x.astype("float32").dtype == "float32"
    assert x.size == 6   # a property, not the function


# method -> PyTorch's spelling of the same call
_CALLS = {
    "x.max(1)": (lambda x: x.max(1), lambda t: t.max(1).values),
    "x.abs().sum()": (lambda x: x.abs().sum(), lambda t: t.abs().sum()),
    "x.unsqueeze(0).squeeze(0)": (lambda x: x.unsqueeze(0).squeeze(0), lambda t: t.unsqueeze(0).squeeze(0)),
    "x.flatten()": (lambda x: x.flatten(), lambda t: t.flatten()),
    "x.clip(-1, 1)": (lambda x: x.clip(-1.0, 1.0), lambda t: t.clip(-1.0, 1.0)),
    "x.cumsum(0)": (lambda x: x.cumsum(0), lambda t: t.cumsum(0)),
    "x.pow(3)": (lambda x: x.pow(3), lambda t: t.pow(3)),
    "x.std(1)": (lambda x: x.std(1), lambda t: t.std(1)),
    "abs(x)": (abs, abs),
    "+x": (lambda x: +x, lambda t: +t),
    "~(x > 0)": (lambda x: ~(x > 0), lambda t: ~(t > 0)),
    "x.argmax(1)": (lambda x: x.argmax(1), lambda t: t.argmax(1)),
}


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("name", sorted(_CALLS))
def test_methods_match_torch_in_both_modes(name, mode):
    ours, theirs = _CALLS[name]
    expected = theirs(torch.tensor(_X)).numpy()
    if mode == "eager":
        got = ours(fg.to_tensor(_X)).numpy()
    else:
        main = fg.Program()
        with fg.program_guard(main, fg.Program()):
            out = ours(fg.static.data("x", [None, 3], "float64"))
            assert isinstance(out, fg.Variable)
        got = fg.Executor().run(main, feed={"x": _X}, fetch_list=[out])[0]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_method_gradients_are_the_functions():
    x = fg.to_tensor(_X, stop_gradient=False)
    (x.abs() * x.clip(-1.0, 1.0)).max().backward()
    t = torch.tensor(_X, requires_grad=True)
    (t.abs() * t.clip(-1.0, 1.0)).max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
