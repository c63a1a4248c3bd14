"""jit.to_static: eager code traced into a Program gives the eager values and gradients."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad import nn
from fluidgrad.nn import functional as F


def _model():
    fg.seed(5)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to("float64")


def _grads(tensors):
    return [None if p.grad is None else p.grad.numpy().copy() for p in tensors]


def _clear(tensors):
    for p in tensors:
        p.clear_grad()


def test_values_and_gradients_equal_eager(rng):
    model = _model()
    labels = fg.to_tensor(rng.integers(0, 3, (5, 1)))

    def loss_fn(x):
        return F.cross_entropy(model(x) * 2.0 + 1.0, labels)

    static_fn = fg.jit.to_static(loss_fn)
    x = fg.to_tensor(rng.standard_normal((5, 4)), stop_gradient=False)
    watched = [x] + model.parameters()

    eager_loss = loss_fn(x)
    eager_loss.backward()
    eager_grads = _grads(watched)
    _clear(watched)

    static_loss = static_fn(x)
    assert isinstance(static_loss, fg.Tensor) and not static_loss.stop_gradient
    static_loss.backward()
    np.testing.assert_allclose(static_loss.numpy(), eager_loss.numpy(), rtol=1e-12)
    for got, want in zip(_grads(watched), eager_grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)

    types = [op.type for op in static_fn.main_program.global_block().ops]
    assert types.count("matmul") == 2 and "tanh" in types and "softmax_with_cross_entropy" in types
    assert "scale" in types and "counted_mean" in types   # the mean over labels not ignored
    params = static_fn.main_program.all_parameters()
    assert len(params) == 4  # the two Linear layers' weights and biases were captured


def test_static_results_flow_into_eager_code_and_back():
    w = fg.to_tensor(np.array([[1.0, -2.0], [0.5, 3.0]]), stop_gradient=False)

    @fg.jit.to_static
    def f(x):
        return fg.tanh(fg.matmul(x, w)), x * 3.0

    x = fg.to_tensor(np.array([[0.2, 0.4]]), stop_gradient=False)
    h, tripled = f(x)
    loss = fg.sum(h * h) + fg.sum(tripled)  # eager ops after the static call
    loss.backward()
    static_grads = _grads([x, w])
    _clear([x, w])
    h2 = fg.tanh(fg.matmul(x, w))
    (fg.sum(h2 * h2) + fg.sum(x * 3.0)).backward()
    for got, want in zip(static_grads, _grads([x, w])):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_retraces_when_shapes_change_and_reuses_otherwise():
    model = _model()
    f = fg.jit.to_static(lambda x: fg.mean(model(x)))
    f(fg.to_tensor(np.ones((2, 4))))
    first = f.main_program
    f(fg.to_tensor(np.zeros((2, 4))))
    assert f.main_program is first
    out = f(fg.to_tensor(np.ones((7, 4))))
    assert f.main_program is not first and len(f.concrete_programs) == 2
    np.testing.assert_allclose(out.numpy(), fg.mean(model(fg.to_tensor(np.ones((7, 4))))).numpy())


def test_parameter_updates_are_seen_by_the_next_call():
    layer = nn.Linear(2, 1).to("float64")
    f = fg.jit.to_static(layer)
    x = fg.to_tensor(np.ones((1, 2)))
    before = f(x).numpy().copy()
    opt = fg.optimizer.SGD(learning_rate=0.5, parameters=layer.parameters())
    fg.sum(f(x)).backward()
    opt.step()
    after = f(x).numpy()
    np.testing.assert_allclose(after, before - 0.5 * (2 + 1))  # d/dw = x = 1 (twice), d/db = 1


def test_decorated_layer_method_and_batch_norm_statistics():
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(1, 2, 3, padding=1)
            self.bn = nn.BatchNorm2D(2)

        @fg.jit.to_static
        def forward(self, x):
            return fg.mean(F.relu(self.bn(self.conv(x))))

    fg.seed(2)
    net = Net()
    twin = Net()
    twin.set_state_dict(net.state_dict())
    x = fg.to_tensor(np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype("float32"))
    out = net(x)
    out.backward()
    eager_out = Net.forward.dygraph_function(twin, x)
    eager_out.backward()
    np.testing.assert_allclose(out.numpy(), eager_out.numpy(), rtol=1e-5)
    np.testing.assert_allclose(net.bn._mean.numpy(), twin.bn._mean.numpy(), rtol=1e-5)
    for p, q in zip(net.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
    net.eval()
    net(x)
    assert len(Net.forward.__get__(net).concrete_programs) == 2  # eval mode is a new trace


def test_inputs_with_stop_gradient_get_no_gradient_and_constants_are_captured():
    w = fg.to_tensor(np.array([2.0, 3.0]), stop_gradient=False)
    offset = fg.to_tensor(np.array([1.0, 1.0]))  # a captured constant

    @fg.jit.to_static
    def f(x, y):
        return fg.sum(x * w + y * offset)

    x = fg.to_tensor(np.array([1.0, 2.0]))
    y = fg.to_tensor(np.array([4.0, 5.0]), stop_gradient=False)
    f(x, y).backward()
    assert x.grad is None
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])
    persistable = [v for v in f.main_program.global_block().vars.values() if v.persistable]
    assert len(persistable) == 2


def test_no_grad_call_records_nothing_and_errors_are_clear():
    f = fg.jit.to_static(lambda x: x * 2.0)
    with fg.no_grad():
        out = f(fg.to_tensor(np.ones(2), stop_gradient=False))
    assert out.stop_gradient
    with pytest.raises(RuntimeError, match="call the function once"):
        _ = fg.jit.to_static(lambda x: x).main_program
    with pytest.raises(TypeError, match="must return Tensors"):
        fg.jit.to_static(lambda x: 3)(fg.to_tensor(np.ones(1)))


# ------------------------------------------------------------------ the trace cache (issue 10 item 5)
def test_plain_function_calling_a_layer_retraces_after_eval():
    fg.seed(3)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).to("float64")
    f = fg.jit.to_static(lambda x: model(x))
    x = fg.to_tensor(np.ones((8, 4)))
    train_out = f(x).numpy()
    assert (train_out == 0).any(), "dropout in training mode drops something"
    model.eval()
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy())
    model.train()
    assert (f(x).numpy() == 0).any()
    assert len(f.concrete_programs) == 2  # one trace per mode, reused


def test_layer_forward_converted_retraces_after_eval():
    fg.seed(4)
    layer = fg.jit.to_static(nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.9)).to("float64"))
    x = fg.to_tensor(np.ones((16, 3)))
    assert (layer(x).numpy() == 0).any()
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy(), layer[0](x).numpy())


def test_tensors_that_print_the_same_get_their_own_values():
    """Two 5000-element Tensors in a list print alike (with '...'): each call uses its own."""
    f = fg.jit.to_static(lambda pair: pair[0] + pair[1])
    a = np.zeros(5000)
    b = np.zeros(5000)
    b[2500] = 1.0
    assert repr([fg.to_tensor(a)]) == repr([fg.to_tensor(b)])
    first = f([fg.to_tensor(a), fg.to_tensor(a)]).numpy()
    second = f([fg.to_tensor(b), fg.to_tensor(a)]).numpy()
    assert first.sum() == 0 and second[2500] == 1.0
    assert len(f.concrete_programs) == 1  # same structure: one trace, fed each call's Tensors


def test_nested_tensor_arguments_get_gradients():
    f = fg.jit.to_static(lambda d, k=2.0: fg.sum(d["w"] * d["x"]) * k)
    w = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    x = fg.to_tensor(np.array([3.0, 4.0]))
    f({"w": w, "x": x}, k=3.0).backward()
    np.testing.assert_allclose(w.grad.numpy(), [9.0, 12.0])


@pytest.mark.parametrize("first, second", [
    (2.0, 3.0), ([1, 2], [1, 3]), (np.arange(3.0), np.arange(3.0) + 1), ("sum", "mean")])
def test_non_tensor_arguments_of_equal_print_but_different_value_retrace(first, second):
    def fn(x, arg):
        if isinstance(arg, str):
            return fg.sum(x) if arg == "sum" else fg.mean(x)
        return x * float(np.sum(arg))
    f = fg.jit.to_static(fn)
    x = fg.to_tensor(np.array([1.0, 3.0]))
    for arg in (first, second, first):
        np.testing.assert_allclose(f(x, arg).numpy(), fn(x, arg).numpy())
    assert len(f.concrete_programs) == 2


def test_large_arrays_that_print_alike_are_different_keys():
    f = fg.jit.to_static(lambda x, c: x * float(c.sum()))
    a, b = np.zeros(5000), np.zeros(5000)
    b[100] = 2.0
    assert repr(a) == repr(b)
    x = fg.to_tensor(np.array([1.0]))
    assert f(x, a).numpy()[0] == 0.0 and f(x, b).numpy()[0] == 2.0


# ------------------------------------------------------------------ nested outputs (review s8)
def test_nested_outputs_keep_their_structure_and_backpropagate():
    Pair = collections.namedtuple("Pair", "low high")

    def spread(x):
        return {"pair": Pair(x * 2.0, [x.sum(), (x - 1.0, None)]), "none": None}, fg.tanh(x)

    x = fg.to_tensor(np.array([0.5, -1.0, 2.0]), stop_gradient=False)
    eager_x = fg.to_tensor(x.numpy(), stop_gradient=False)
    traced = fg.jit.to_static(spread)(x)
    eager = spread(eager_x)
    assert isinstance(traced[0]["pair"], Pair) and traced[0]["none"] is None and traced[0]["pair"].high[1][1] is None
    flat = [traced[0]["pair"].low, traced[0]["pair"].high[0], traced[0]["pair"].high[1][0], traced[1]]
    flat_eager = [eager[0]["pair"].low, eager[0]["pair"].high[0], eager[0]["pair"].high[1][0], eager[1]]
    for got, want in zip(flat, flat_eager):
        np.testing.assert_allclose(got.numpy(), want.numpy())
    weights = [1.0, 2.0, 3.0, 4.0]
    sum(w * fg.sum(t) for w, t in zip(weights, flat)).backward()
    sum(w * fg.sum(t) for w, t in zip(weights, flat_eager)).backward()
    np.testing.assert_allclose(x.grad.numpy(), eager_x.grad.numpy())


def test_a_non_tensor_leaf_inside_nested_outputs_is_refused():
    with pytest.raises(TypeError, match="must return Tensors.*got int"):
        fg.jit.to_static(lambda x: (x, [x, 3]))(fg.to_tensor(np.ones(1)))


def test_setitem_on_an_argument_writes_it_back_as_in_eager_mode():
    def clamp_first_column(x):
        x[:, 0] = 1.0
        return x * 2.0

    data = np.random.default_rng(0).standard_normal((2, 3))
    eager_x, traced_x = fg.to_tensor(data.copy()), fg.to_tensor(data.copy())
    want = clamp_first_column(eager_x)
    np.testing.assert_array_equal(fg.jit.to_static(clamp_first_column)(traced_x).numpy(), want.numpy())
    np.testing.assert_array_equal(traced_x.numpy(), eager_x.numpy())
    with pytest.raises(RuntimeError, match="leaf Tensor that requires a gradient"):
        fg.jit.to_static(clamp_first_column)(fg.to_tensor(data.copy(), stop_gradient=False))
