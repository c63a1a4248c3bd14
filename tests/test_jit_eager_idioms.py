"""jit.to_static of eager idioms: `no_grad()` blocks, and Tensor's own methods (detach, clone, cpu,
to, size, requires_grad) on the static Variables a trace runs on. Eager mode is the oracle for the
traced gradients, PyTorch for the eager ones."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

X0 = np.array([[0.3, -0.7, 1.2], [0.5, 2.0, -1.1]])


def _gradients(fn, x0=X0, traced=True):
    x = fg.to_tensor(x0, stop_gradient=False)
    run = fg.jit.to_static(fn) if traced else fn
    run(x).backward()
    return x.grad.numpy()


# ---------------------------------------------------------------- no_grad inside a traced function
def _target_network(x):
    """A DQN-style target: the same weights, read once without a gradient."""
    w = fg.to_tensor(np.array([[1.0, -2.0], [0.5, 0.25], [3.0, 1.0]]), stop_gradient=False)
    with fg.no_grad():
        target = fg.tanh(fg.matmul(x, w))
    return fg.sum((fg.matmul(x, w) - target) ** 2 + fg.matmul(x, w) * target)


def _torch_target_network(x):
    w = torch.tensor([[1.0, -2.0], [0.5, 0.25], [3.0, 1.0]], dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        target = torch.tanh(x @ w)
    return ((x @ w - target) ** 2 + (x @ w) * target).sum()


def test_no_grad_block_is_a_constant_of_the_traced_gradient_as_in_torch():
    tx = torch.tensor(X0, requires_grad=True)
    _torch_target_network(tx).backward()
    np.testing.assert_allclose(_gradients(_target_network, traced=False), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(_gradients(_target_network), tx.grad.numpy(), rtol=1e-12)


def test_enable_grad_inside_no_grad_differentiates_again():
    def fn(x):
        with fg.no_grad():
            frozen = x * 3
            with fg.enable_grad():
                live = x * 5
        return fg.sum(frozen * x + live * x)

    np.testing.assert_allclose(_gradients(fn), _gradients(fn, traced=False), rtol=1e-12)
    np.testing.assert_allclose(_gradients(fn), 13 * X0, rtol=1e-12)


def test_no_grad_on_a_captured_layer_keeps_its_parameters_out_of_the_gradient():
    layer = fg.nn.Linear(3, 2)
    layer.weight.set_value(np.arange(6.0).reshape(3, 2).astype("float32"))

    @fg.jit.to_static
    def fn(x):
        with fg.no_grad():
            frozen = layer(x)
        return fg.sum(frozen * layer(x))

    x = fg.to_tensor(X0.astype("float32"), stop_gradient=False)
    fn(x).backward()
    traced = layer.weight.grad.numpy().copy()
    layer.weight.clear_grad()
    fn.dygraph_function(x).backward()
    np.testing.assert_allclose(traced, layer.weight.grad.numpy(), rtol=1e-6)


def test_a_result_computed_under_no_grad_has_no_gradient():
    def fn(x):
        with fg.no_grad():
            return x * 2

    x = fg.to_tensor(X0, stop_gradient=False)
    assert fn(x).stop_gradient
    assert fg.jit.to_static(fn)(x).stop_gradient


def test_a_function_first_called_under_no_grad_still_differentiates_later():
    static = fg.jit.to_static(lambda x: fg.sum(x * x))
    x = fg.to_tensor(X0, stop_gradient=False)
    with fg.no_grad():
        assert static(x).stop_gradient
    static(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X0, rtol=1e-12)


def test_no_grad_is_not_a_static_program_concern():
    """Outside tracing (program_guard), no_grad changes nothing, as in Paddle's static mode."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 3], "float64")
        x.stop_gradient = False
        with fg.no_grad():
            y = x * 2
        assert not y.stop_gradient
        grad, = fg.gradients([fg.sum(y * x)], [x])
    value, = fg.Executor().run(main, feed={"x": X0}, fetch_list=[grad])
    np.testing.assert_allclose(value, 4 * X0, rtol=1e-12)


# ---------------------------------------------------------------- Tensor methods on Variables
_METHODS = {
    "detach": (lambda x: fg.sum(x.detach() * x), lambda x: (x.detach() * x).sum()),
    "clone": (lambda x: fg.sum(x.clone() * x), lambda x: (x.clone() * x).sum()),
    "cpu": (lambda x: fg.sum(x.cpu() * x), lambda x: (x.cpu() * x).sum()),
    "to_dtype": (lambda x: fg.sum(x.to("float32").to("float64") * x),
                 lambda x: (x.to(torch.float32).to(torch.float64) * x).sum()),
    "to_device": (lambda x: fg.sum(x.to("cpu") * x), lambda x: (x.to("cpu") * x).sum()),
    "size": (lambda x: fg.sum(x * x.size), lambda x: (x * x.numel()).sum()),
    "requires_grad_": (lambda x: fg.sum(x.detach().requires_grad_(False) * x),
                       lambda x: (x.detach().requires_grad_(False) * x).sum()),
}


@pytest.mark.parametrize("method", sorted(_METHODS))
def test_tensor_methods_trace_with_the_eager_gradient(method):
    fn, torch_fn = _METHODS[method]
    tx = torch.tensor(X0, requires_grad=True)
    torch_fn(tx).backward()
    np.testing.assert_allclose(_gradients(fn, traced=False), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(_gradients(fn), tx.grad.numpy(), rtol=1e-6)


def test_variable_methods_in_a_static_program():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [2, 3], "float64")
        x.requires_grad = True
        assert not x.stop_gradient and x.size == 6
        assert x.cpu() is x and x.to("float64") is x and x.to("cpu") is x
        copy, cut, low = x.clone(), x.detach(), x.to("float32")
        assert (copy.shape, cut.shape, low.dtype) == ((2, 3), (2, 3), "float32")
        assert cut.stop_gradient and not copy.stop_gradient
        grad, = fg.gradients([fg.sum(copy * cut)], [x])
    values = fg.Executor().run(main, feed={"x": X0}, fetch_list=[copy, cut, low, grad])
    np.testing.assert_array_equal(values[0], X0)
    np.testing.assert_array_equal(values[1], X0)
    assert values[2].dtype == np.float32
    np.testing.assert_allclose(values[3], X0, rtol=1e-12)


def test_variable_methods_refuse_clearly_what_a_program_cannot_do():
    with fg.program_guard(fg.Program(), fg.Program()):
        x = fg.static.data("x", [None, 3], "float64")
        with pytest.raises(TypeError, match="size of variable x with shape \\[-1, 3\\]"):
            _ = x.size * 2            # the element count; torch's x.size(d) works (-1 when unknown)
        assert x.size(0) == -1 and x.size(1) == 3 and x.size() == (-1, 3)
        with pytest.raises(ValueError, match="CPU only.*cuda"):
            x.to("float64", device="cuda")
        for call in (lambda: float(x), lambda: int(x)):
            with pytest.raises(TypeError, match="variable x: a Variable has no value while the program is built"):
                call()
        with pytest.raises(TypeError, match="append_backward"):
            x.backward()


def test_assign_copies_in_both_modes_and_writes_into_an_output():
    x = fg.to_tensor(X0, stop_gradient=False)
    copy = fg.assign(x)
    fg.sum(copy * 3).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(X0, 3.0))
    out = fg.to_tensor(np.zeros((2, 3)))  # (tests run inside a program_guard: fg.zeros would be static)
    assert fg.assign(x, out) is out
    np.testing.assert_array_equal(out.numpy(), X0)
    assert out.numpy() is not x.numpy()
    np.testing.assert_array_equal(fg.assign(np.eye(2), fg.to_tensor(np.zeros((2, 2)))).numpy(), np.eye(2))

    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        v = fg.static.data("v", [2, 3], "float64")
        target = fg.zeros([2, 3], "float64")
        assert fg.assign(v * 2, target) is target
        with pytest.raises(ValueError, match="assign: cannot write .*float64.* into .*int64"):
            fg.assign(v, fg.zeros([2, 3], "int64"))
    value, = fg.Executor().run(main, feed={"v": X0}, fetch_list=[target])
    np.testing.assert_array_equal(value, 2 * X0)


def test_assign_of_an_array_is_a_constant_of_the_program():
    data = np.arange(6, dtype="int32").reshape(2, 3)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        constant = fg.assign(data)
        target = fg.zeros([2, 3], "int32")
        fg.assign(data * 2, target)
        assert isinstance(constant, fg.Variable) and constant.dtype == "int32"
    values = fg.Executor().run(main, fetch_list=[constant, target])
    np.testing.assert_array_equal(values[0], data)
    np.testing.assert_array_equal(values[1], 2 * data)
    assert isinstance(fg.assign(1.5, fg.to_tensor(np.zeros(()))), fg.Tensor)
