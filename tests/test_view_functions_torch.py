"""Every PyTorch view function's eager result is a view of its base, as in torch 2.13 (the oracle):
an in-place write through it (setitem and the in-place methods) reaches the base, a change of the
base shows in the view, and the gradients are torch's (CopySlices: the base's history rewritten);
a view of a leaf that requires a gradient refuses the write, as torch does; `reshape` / `flatten`
of a non-contiguous view copy (no link) and `view` refuses there, as torch's; an expanded view
refuses writes where an element repeats. Static programs are untouched (no views there)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)


# name -> (base shape, the view taken the same way of a fluidgrad or a torch tensor)
_VIEWS = {
    "view(3, 2)": ((2, 3), lambda x: x.view(3, 2)),
    "view(-1)": ((2, 3), lambda x: x.view(-1)),
    "view_as": ((2, 3), lambda x: x.view_as(x.reshape(6))),
    "reshape(3, 2)": ((2, 3), lambda x: x.reshape(3, 2)),
    "reshape(-1)": ((2, 3), lambda x: x.reshape(-1)),
    "flatten()": ((2, 3, 2), lambda x: x.flatten()),
    "flatten(1)": ((2, 3, 2), lambda x: x.flatten(1)),
    "unflatten(1, (3, 1))": ((2, 3), lambda x: x.unflatten(1, (3, 1))),
    "ravel()": ((2, 3), lambda x: x.ravel()),
    "squeeze()": ((2, 1, 3), lambda x: x.squeeze()),
    "squeeze(1)": ((2, 1, 3), lambda x: x.squeeze(1)),
    "squeeze(0) (no axis of size 1)": ((2, 3), lambda x: x.squeeze(0)),
    "unsqueeze(0)": ((2, 3), lambda x: x.unsqueeze(0)),
    "unsqueeze(-1)": ((2, 3), lambda x: x.unsqueeze(-1)),
    "t()": ((2, 3), lambda x: x.t()),
    "T": ((2, 3), lambda x: x.T),
    "mT": ((2, 2, 3), lambda x: x.mT),
    "transpose(0, 1)": ((2, 3), lambda x: x.transpose(0, 1)),
    "permute(2, 0, 1)": ((2, 3, 2), lambda x: x.permute(2, 0, 1)),
    "swapaxes(0, 2)": ((2, 3, 2), lambda x: x.swapaxes(0, 2)),
    "movedim(0, 1)": ((2, 3), lambda x: x.movedim(0, 1)),
    "x[0]": ((2, 3), lambda x: x[0]),
    "x[:, 1:]": ((2, 3), lambda x: x[:, 1:]),
    "x[None, :, ::2]": ((2, 3), lambda x: x[None, :, ::2]),
    "x[...]": ((2, 3), lambda x: x[...]),
    "narrow(1, 1, 2)": ((2, 3), lambda x: x.narrow(1, 1, 2)),
    "select(1, 2)": ((2, 3), lambda x: x.select(1, 2)),
    "unbind(1)[2]": ((2, 3), lambda x: x.unbind(1)[2]),
    "chunk(2, 1)[1]": ((2, 3), lambda x: x.chunk(2, 1)[1]),
    "split(1, dim=1)[2]": ((2, 3), lambda x: x.split(1, dim=1)[2]),
    "split([1, 2], dim=1)[1]": ((2, 3), lambda x: x.split([1, 2], dim=1)[1]),
    "tensor_split(2, 1)[0]": ((2, 3), lambda x: x.tensor_split(2, 1)[0]),
    "diagonal()": ((3, 3), lambda x: x.diagonal()),
    "diagonal(1)": ((3, 4), lambda x: x.diagonal(1)),
    "diagonal(-1, 0, 2)": ((3, 2, 3), lambda x: x.diagonal(-1, 0, 2)),
    "diagonal(0, 1, 2)": ((2, 3, 3), lambda x: x.diagonal(0, 1, 2)),
    "expand(2, 3) (no repeat)": ((2, 3), lambda x: x.expand(2, 3)),
    "expand(1, 2, 3) (no repeat)": ((2, 3), lambda x: x.expand(1, 2, 3)),
    "detach()": ((2, 3), lambda x: x.detach()),
    "contiguous() (of a contiguous x)": ((2, 3), lambda x: x.contiguous()),
    "t()[0]": ((2, 3), lambda x: x.t()[0]),
    "view(6)[1:4]": ((2, 3), lambda x: x.view(6)[1:4]),
    "x[0].unsqueeze(1)": ((2, 3), lambda x: x[0].unsqueeze(1)),
    "transpose(0, 1).reshape(3, 2, 1) (a view still)": ((2, 3), lambda x: x.transpose(0, 1).reshape(3, 2, 1)),
    "x[:1].reshape(-1) (a view still)": ((2, 3), lambda x: x[:1].reshape(-1)),
    "x[:, ::2].view(-1) (a view still: evenly strided)": ((2, 4), lambda x: x[:, ::2].view(-1)),
    "detach()[1]": ((2, 3), lambda x: x.detach()[1]),
    "unsqueeze(0).squeeze(0).t()": ((2, 3), lambda x: x.unsqueeze(0).squeeze(0).t()),
}

# name -> a write into view v of a value `w` of v's shape
_WRITES = {
    "v.add_(w)": lambda v, w: v.add_(w),
    "v.mul_(w)": lambda v, w: v.mul_(w),
    "v.copy_(w)": lambda v, w: v.copy_(w),
    "v[...] = w": lambda v, w: v.__setitem__(Ellipsis, w),
    "v.fill_(7)": lambda v, w: v.fill_(7.0),
    "v.zero_()": lambda v, w: v.zero_(),
    "v -= w": lambda v, w: v.__isub__(w),
}


# torch refuses in-place writes (with gradients) into the outputs of unbind / split / chunk ("a
# function that returns multiple views"); fluidgrad writes them as the same single view, compared here
_SINGLE_VIEW = {
    "unbind(1)[2]": lambda x: x.select(1, 2), "chunk(2, 1)[1]": lambda x: x.narrow(1, 2, 1),
    "split(1, dim=1)[2]": lambda x: x.narrow(1, 2, 1), "split([1, 2], dim=1)[1]": lambda x: x.narrow(1, 1, 2),
    "tensor_split(2, 1)[0]": lambda x: x.narrow(1, 0, 2),
}


def _both(array, requires_grad=False):
    return fg.to_tensor(array, stop_gradient=not requires_grad), torch.tensor(array, requires_grad=requires_grad)


def _base(shape):
    return np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape) / 4


def _view_shape(name):
    shape, take = _VIEWS[name]
    return tuple(take(torch.tensor(_base(shape))).shape)


@pytest.mark.parametrize("write", sorted(_WRITES))
@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_a_write_through_the_view_reaches_the_base(name, write):
    shape, take = _VIEWS[name]
    (fx, tx), w = _both(_base(shape)), np.linspace(-1, 1, int(np.prod(_view_shape(name)))).reshape(_view_shape(name))
    fw, tw = _both(w)
    _WRITES[write](take(fx), fw)
    _WRITES[write](take(tx), tw)
    np.testing.assert_allclose(fx.numpy(), tx.numpy(), rtol=1e-14)


@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_a_change_of_the_base_shows_in_the_view(name):
    shape, take = _VIEWS[name]
    fx, tx = _both(_base(shape))
    fv, tv = take(fx), take(tx)
    fx.mul_(3.0)
    tx.mul_(3.0)
    fx[(0,) * len(shape)] = -1.0
    tx[(0,) * len(shape)] = -1.0
    np.testing.assert_allclose(fv.numpy(), tv.numpy(), rtol=1e-14)
    assert tuple(fv.shape) == tuple(tv.shape)


@pytest.mark.parametrize("write", ["v.mul_(w)", "v.copy_(w)", "v[...] = w", "v.zero_()"])
@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_gradients_of_a_write_through_the_view_are_torchs(name, write):
    """y = x * 2 (not a leaf), a write of w * 3 through a view of y, then a loss reading y and the
    view: the gradients of x and w are torch's (the base's history rewritten, CopySlices)."""
    shape, take = _VIEWS[name]
    torch_take = _SINGLE_VIEW.get(name, take)
    rng = np.random.default_rng(len(name))
    view_shape = _view_shape(name)
    (fx, tx), (fw, tw) = _both(_base(shape), True), _both(rng.normal(size=view_shape), True)
    c, d = rng.normal(size=shape), rng.normal(size=view_shape)
    losses = []
    for x, w, lib, view in ((fx, fw, fg, take), (tx, tw, torch, torch_take)):
        y = x * 2.0
        v = view(y)
        _WRITES[write](v, w * 3.0)
        loss = (y * lib.tensor(c)).sum() + (v * lib.tensor(d)).sum()
        loss.backward()
        losses.append(loss.item())
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-12)
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    if tw.grad is None:
        assert fw.grad is None or not fw.grad.numpy().any()
    else:
        np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(set(_VIEWS) - {"detach()", "detach()[1]"}))
def test_a_view_of_a_leaf_that_requires_grad_refuses_the_write_as_torch(name):
    shape, take = _VIEWS[name]
    fx, tx = _both(_base(shape), True)
    with pytest.raises(RuntimeError):
        take(tx).add_(1.0)
    with pytest.raises(RuntimeError, match="leaf"):
        take(fx).add_(1.0)
    np.testing.assert_array_equal(fx.numpy(), _base(shape))
    with fg.no_grad():               # allowed under no_grad, in both
        take(fx).add_(1.0)
    with torch.no_grad():
        take(tx).add_(1.0)
    np.testing.assert_allclose(fx.numpy(), tx.detach().numpy(), rtol=1e-14)


def test_a_write_through_a_detached_view_changes_the_values_not_the_graph():
    for lib in (fg, torch):
        x = lib.tensor(np.ones((2, 3)), requires_grad=True) if lib is torch else fg.to_tensor(np.ones((2, 3)),
                                                                                            stop_gradient=False)
        y = x * 2.0
        y.detach()[0].fill_(5.0)
        (y * y).sum().backward()
        np.testing.assert_array_equal((y.detach() if lib is torch else y).numpy(), [[5, 5, 5], [2, 2, 2]])
        assert x.grad is not None
    assert x.is_leaf


@pytest.mark.parametrize("take", [lambda x: x.t().reshape(-1), lambda x: x.t().flatten(),
                                  lambda x: x[:, :2].reshape(-1), lambda x: x.t().contiguous(),
                                  lambda x: x[:, ::2].flatten()],
                         ids=["t().reshape(-1)", "t().flatten()", "x[:, :2].reshape(-1)", "t().contiguous()",
                              "x[:, ::2].flatten()"])
def test_reshaping_a_non_contiguous_view_copies_as_torch(take):
    fx, tx = _both(np.zeros((2, 3)))
    take(fx).fill_(1.0)
    take(tx).fill_(1.0)
    np.testing.assert_array_equal(fx.numpy(), tx.numpy())
    assert not fx.numpy().any()


@pytest.mark.parametrize("take", [lambda x: x.t().view(-1), lambda x: x.T.view(8), lambda x: x[:, :2].view(-1),
                                  lambda x: x.t().view_as(x.reshape(8))],
                         ids=["t().view(-1)", "T.view(8)", "x[:, :2].view(-1)", "t().view_as(8)"])
def test_view_of_a_non_contiguous_view_refuses_as_torch(take):
    fx, tx = _both(np.zeros((2, 4)))
    with pytest.raises(RuntimeError):
        take(tx)
    with pytest.raises(RuntimeError, match="view.*reshape"):
        take(fx)


@pytest.mark.parametrize("name, shape, take", [
    ("t()", (2, 3), lambda x: x.t()), ("x[:, ::2]", (2, 3), lambda x: x[:, ::2]),
    ("x[:, 1:]", (2, 3), lambda x: x[:, 1:]), ("x[1:]", (3, 2), lambda x: x[1:]),
    ("unsqueeze(1)", (2, 3), lambda x: x.unsqueeze(1)), ("diagonal()", (3, 3), lambda x: x.diagonal()),
    ("x.expand(2, 3)", (1, 3), lambda x: x.expand(2, 3)), ("x", (2, 3), lambda x: x)])
def test_is_contiguous_is_torchs(name, shape, take):
    fx, tx = _both(np.zeros(shape))
    assert take(fx).is_contiguous() == take(tx).is_contiguous()


@pytest.mark.parametrize("take", [lambda x: x.expand(2, 3), lambda x: x.broadcast_to((2, 3)),
                                  lambda x: x.expand_as(x.expand(4, 3)), lambda x: x.unsqueeze(0).expand(2, 1, 3)],
                         ids=["expand(2, 3)", "broadcast_to", "expand_as", "unsqueeze(0).expand(2, 1, 3)"])
def test_a_write_into_an_expanded_view_that_repeats_refuses_as_torch(take):
    fx, tx = _both(np.zeros((1, 3)))
    with pytest.raises(RuntimeError):
        take(tx).add_(1.0)
    with pytest.raises(RuntimeError, match="expand"):
        take(fx).add_(1.0)
    assert not fx.numpy().any()
    fv, tv = take(fx), take(tx)                  # reads follow the base
    fx.fill_(2.0)
    tx.fill_(2.0)
    np.testing.assert_array_equal(fv.numpy(), tv.numpy())


def test_a_view_of_a_view_is_refreshed_through_the_chain():
    fx, tx = _both(np.zeros((2, 3)))
    fa, ta = fx.t()[1:], tx.t()[1:]
    fb, tb = fx[:, 0], tx[:, 0]
    fa.fill_(4.0)
    ta.fill_(4.0)
    fb.add_(1.0)
    tb.add_(1.0)
    for f, t in ((fx, tx), (fa, ta), (fb, tb)):
        np.testing.assert_array_equal(f.numpy(), t.numpy())


def test_a_view_saved_for_backward_then_changed_through_its_base_refuses_backward_as_torch():
    fx, tx = _both(np.ones((2, 3)), True)
    for x, lib_error in ((tx, RuntimeError), (fx, RuntimeError)):
        y = x * 2.0
        v = y[0]
        z = v * v                      # saves v
        y.add_(1.0)                    # changes v too
        with pytest.raises(lib_error):
            z.sum().backward()


def test_a_view_read_after_its_base_changed_has_torchs_gradient():
    fx, tx = _both(np.ones((2, 3)), True)
    for x in (fx, tx):
        y = x * 2.0
        v = y[0]
        y.mul_(3.0)
        (v * v).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-14)


def test_an_optimizer_step_shows_in_a_view_of_the_parameter():
    layer = fg.nn.Linear(3, 2)
    row = layer.weight[0]
    transposed = layer.weight.t()
    layer(fg.to_tensor(np.ones((4, 3), dtype="float32"))).sum().backward()
    fg.optimizer.SGD(0.5, parameters=layer.parameters()).step()
    np.testing.assert_array_equal(row.numpy(), layer.weight.numpy()[0])
    np.testing.assert_array_equal(transposed.numpy(), layer.weight.numpy().T)


def test_traced_code_with_view_functions_matches_eager():
    """jit.to_static traces view functions as ordinary ops (a program has no views)."""
    def f(x):
        y = x * 2.0
        return y.t()[0] * y.view(-1)[1:3].sum() + y.diagonal().sum() + y.unbind(1)[2].unsqueeze(0).squeeze(0)
    x = fg.to_tensor(np.arange(6.0).reshape(2, 3))
    traced = fg.jit.to_static(f)
    np.testing.assert_array_equal(traced(x).numpy(), f(x).numpy())


def test_a_copy_of_a_view_is_its_own_tensor():
    import copy
    x = fg.to_tensor(np.zeros((2, 3)))
    v = copy.deepcopy(x[0])
    v.fill_(1.0)
    assert not x.numpy().any() and v.numpy().all()


def test_writes_outside_autograd_into_a_view_reach_the_base():
    """`v.data` writes and Paddle's set_value on a view change the base, as torch's v.data.fill_ /
    v.copy_ do; `v.data = t` gives v other storage, so v stops being a view (torch's)."""
    for lib in (fg, torch):
        x = lib.zeros((2, 3), dtype=lib.float64) if lib is torch else fg.zeros([2, 3], dtype="float64")
        x[0].data.fill_(1.0)
        x.t()[2].data.mul_(3.0)
        row = x[1]
        row.data = lib.ones(3, dtype=lib.float64) if lib is torch else fg.ones([3], dtype="float64")
        row.add_(1.0)
        if lib is torch:
            want = x.numpy()
        else:
            got = x.numpy()
    np.testing.assert_array_equal(got, want)
    x = fg.to_tensor(np.zeros((2, 3)))
    x.t().set_value(np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(3, 2).T)


def test_a_detached_tensor_does_not_keep_its_base_and_graph_alive():
    """`losses.append(loss.detach())` keeps the value, not the loss and the graph behind it."""
    import gc
    import weakref
    x = fg.to_tensor(np.ones(3), stop_gradient=False)
    y = x * 2.0
    kept = y.detach()
    alive = weakref.ref(y)
    del y
    gc.collect()
    assert alive() is None
    kept.add_(1.0)                   # its base is gone: an ordinary tensor now
    np.testing.assert_array_equal(kept.numpy(), [3.0, 3.0, 3.0])
