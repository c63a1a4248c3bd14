"""PyTorch's `x.data` (eager/tensor.py: Tensor.data, DataView): a Tensor sharing x's value, cut
from the graph; writes into it change x outside autograd, `p.data = t` replaces x's value; the
array itself is `numpy()`. PyTorch 2.13.0 is the oracle."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

P0 = np.array([[1.0, -2.0], [3.0, 0.5]])
Q0 = np.array([[0.25, 4.0], [-1.0, 2.0]])

# what torch code writes with .data; each runs outside no_grad on a parameter that requires grad
_WRITES = {
    "p.data.copy_(q)": lambda p, q: p.data.copy_(q),
    "p.data.mul_(0.9).add_(0.1 * q)": lambda p, q: p.data.mul_(0.9).add_(0.1 * q),
    "p.data.add_(q, alpha)": lambda p, q: p.data.add_(q * 0.5),
    "p.data.zero_()": lambda p, q: p.data.zero_(),
    "p.data.fill_(3.0)": lambda p, q: p.data.fill_(3.0),
    "p.data[0] = 7.0": lambda p, q: p.data.__setitem__(0, 7.0),
    "p.data[:, 1] = q[0]": lambda p, q: p.data.__setitem__((slice(None), 1), q[0]),
    "p.data += q": lambda p, q: p.data.__iadd__(q),
    "p.data.clamp_(-1, 1)": lambda p, q: p.data.clamp_(-1.0, 1.0),
    "p.data = q": lambda p, q: setattr(p, "data", q),
    "p.data = q.data": lambda p, q: setattr(p, "data", q.data),
    "p.data = q[0]  (a new shape)": lambda p, q: setattr(p, "data", q[0]),
}


@pytest.mark.parametrize("write", sorted(_WRITES))
def test_writes_through_data_change_the_parameter_as_in_torch(write):
    expected = torch.tensor(P0, requires_grad=True)
    _WRITES[write](expected, torch.tensor(Q0))
    p = fg.to_tensor(P0, stop_gradient=False)
    _WRITES[write](p, fg.to_tensor(Q0))
    np.testing.assert_array_equal(p.numpy(), expected.detach().numpy())
    assert p.is_leaf and not p.stop_gradient and p.dtype == "float64"
    (p * p).sum().backward()                        # still a leaf that gets its gradient
    np.testing.assert_array_equal(p.grad.numpy(), 2 * expected.detach().numpy())


def test_data_is_a_detached_tensor_that_follows_the_parameter():
    p = fg.to_tensor(P0, stop_gradient=False)
    d = p.data
    assert isinstance(d, fg.Tensor) and d.stop_gradient and d.is_leaf and not d.requires_grad
    assert d.shape == p.shape and d.dtype == p.dtype
    np.testing.assert_array_equal(d.numpy(), P0)
    opt = fg.optimizer.SGD(0.5, parameters=[p])
    (p * p).sum().backward()
    opt.step()                                      # d was taken before: it reads p's new value (shared storage)
    np.testing.assert_array_equal(d.numpy(), P0 - 0.5 * 2 * P0)
    d.mul_(2.0)
    np.testing.assert_array_equal(p.numpy(), 2 * (P0 - P0))
    np.testing.assert_array_equal(np.asarray(p.data), p.numpy())


def test_an_op_reading_data_keeps_the_value_it_read():
    p = fg.to_tensor(P0, stop_gradient=False)
    x = fg.to_tensor(Q0, stop_gradient=False)
    for product in (lambda: p.data * x, lambda: x * p.data, lambda: fg.multiply(p.data, x)):
        x.clear_grad()
        y = product().sum()
        p.data.fill_(9.0)                           # after the forward pass
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), P0)   # (torch would give 9s: its .data is untracked)
        p.data.copy_(fg.to_tensor(P0))


def test_a_backward_that_needs_the_old_value_refuses():
    p = fg.to_tensor(P0, stop_gradient=False)
    x = fg.to_tensor(Q0, stop_gradient=False)
    y = (p * x).sum()
    p.data.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_grad_data_zero_and_target_network_updates_train_as_torch():
    torch_net, torch_target = torch.nn.Linear(2, 2).double(), torch.nn.Linear(2, 2).double()
    net, target = fg.nn.Linear(2, 2), fg.nn.Linear(2, 2)
    for layer in (net, target):
        layer.weight.data = fg.to_tensor(P0)        # torch's (out, in) is fluidgrad's (in, out): transposed below
        layer.bias.data = fg.to_tensor(np.array([0.5, -0.5]))
    for layer in (torch_net, torch_target):
        layer.weight.data = torch.tensor(P0.T.copy())
        layer.bias.data = torch.tensor([0.5, -0.5], dtype=torch.float64)
    opt = fg.optimizer.SGD(0.1, parameters=net.parameters())
    torch_opt = torch.optim.SGD(torch_net.parameters(), lr=0.1)
    x0 = np.array([[1.0, 2.0], [-1.0, 0.5]])
    for _ in range(3):
        loss = (net(fg.to_tensor(x0)) - target(fg.to_tensor(x0)).detach()).square().sum()
        torch_loss = (torch_net(torch.tensor(x0)) - torch_target(torch.tensor(x0)).detach()).square().sum()
        for param in net.parameters():
            if param.grad is not None:
                param.grad.data.zero_()
        loss.backward()
        opt.step()
        torch_opt.zero_grad()
        torch_loss.backward()
        torch_opt.step()
        for p, q in zip(target.parameters(), net.parameters()):      # the EMA update of the target network
            p.data.mul_(0.5).add_(0.5 * q.data)
        for p, q in zip(torch_target.parameters(), torch_net.parameters()):
            p.data.mul_(0.5).add_(0.5 * q.data)
    np.testing.assert_allclose(target.weight.numpy(), torch_target.weight.detach().numpy().T, rtol=1e-12)
    np.testing.assert_allclose(target.bias.numpy(), torch_target.bias.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(net.weight.numpy(), torch_net.weight.detach().numpy().T, rtol=1e-12)


def test_data_assignment_takes_arrays_and_refuses_what_cannot_be_a_value():
    p = fg.to_tensor(P0, stop_gradient=False)
    buffer = Q0.copy()
    p.data = buffer                                 # an array is copied
    buffer[...] = 0.0
    np.testing.assert_array_equal(p.numpy(), Q0)
    with pytest.raises(TypeError, match="must be a float array, got int64"):
        p.data = np.array([1, 2])
    with fg.program_guard(fg.Program()):
        v = fg.static.data("v", [2, 2], "float64")
        with pytest.raises(TypeError, match="static Variable v"):
            p.data = v
    t = fg.to_tensor(np.array([1, 2]))              # no gradient: any dtype, as torch
    t.data = fg.to_tensor(np.array([0.5]))
    assert t.dtype == "float64" and t.shape == (1,)
