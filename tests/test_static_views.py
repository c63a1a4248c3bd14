"""Writes through a view in traced (jit.to_static, jit.save, ONNX export) and static-mode code
reach the base as in eager mode and in PyTorch (fluidgrad/static_views.py): the same values,
the same gradients; a view sees its base's later changes; a copy (reshape of a transpose,
contiguous(), advanced indexing) stays a copy; what cannot be written refuses at build time."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.framework.program as program_module


def _write_row(x, w):
    y = x[0]
    y.add_(w)
    return y


def _flat_set(x, w):
    x.view(-1)[3] = 5.0
    return x.view(-1)


def _column_zero(x, w):
    x[:, 1].zero_()
    return x


def _transpose_mul(x, w):
    t = x.t()
    t.mul_(2.0)
    return t


def _unsqueeze_fill(x, w):
    x.unsqueeze(0)[0, 1].fill_(7.0)
    return x


def _diagonal_fill(x, w):
    x.diagonal().fill_(0.0)
    return x


def _narrow_mul(x, w):
    x.narrow(1, 1, 2).mul_(w[:2])
    return x


def _chain(x, w):
    row = x[1]
    row[2] = 9.0
    row[::2].mul_(w[:2])
    return row


def _view_sees_base(x, w):
    row = x[1]
    x[1, 1] = 5.0
    x.mul_(2.0)
    return row * 1.0


def _two_views(x, w):
    a, b = x[0], x[:, 0]
    a.copy_(w)
    b.add_(1.0)
    return a + 0.0


def _select_chain(x, w):
    first, second = x.select(0, 0), x.select(0, 1)
    first.zero_()
    second.copy_(w)
    return first * 1.0


def _select_iadd(x, w):
    y = x.select(1, 2)
    y += w[:3]
    return y


def _transpose_setitem(x, w):
    x.transpose(0, 1)[1] = w[:3]
    return x


def _reshape_view_strided(x, w):
    x.reshape(12)[::2].zero_()
    return x


def _copy_not_view(x, w):
    x.t().reshape(-1)[0] = 100.0          # reshape of a transpose is a copy: x keeps its values
    x.t().contiguous()[1, 1] = 100.0      # so is contiguous() of a transpose
    x[[0, 2]].fill_(100.0)                # and advanced indexing
    return x


def _expand_once(x, w):
    x[None].expand(1, 3, 4)[0, 2].fill_(-1.0)   # no element repeated: a write reaches x
    return x


def _movedim_flatten(x, w):
    x.unsqueeze(-1).movedim(-1, 0).flatten(0, 1)[2].mul_(w)
    return x


_CASES = {f.__name__.lstrip("_"): f for f in (
    _write_row, _flat_set, _column_zero, _transpose_mul, _unsqueeze_fill, _diagonal_fill, _narrow_mul, _chain,
    _view_sees_base, _two_views, _select_chain, _select_iadd, _transpose_setitem, _reshape_view_strided, _copy_not_view,
    _expand_once, _movedim_flatten)}


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(3, 4))


def _whole(case, x0, w, c):
    """x = x0 * 2 (not a leaf), the case's write, then the outputs: x and the case's result,
    and a loss weighting x by c."""
    x = x0 * 2.0
    extra = _CASES[case](x, w)
    loss = (x * c).sum() + (extra * extra).sum() + (w * w).sum()
    return x, extra, loss


def _torch(case, a, b, c):
    x0 = torch.tensor(a, requires_grad=True)
    w = torch.tensor(b, requires_grad=True)
    x, extra, loss = _whole(case, x0, w, torch.tensor(c))
    loss.backward()
    return [t.detach().numpy() for t in (x, extra, loss)], [x0.grad.numpy(), w.grad.numpy()]


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)


@pytest.mark.parametrize("case", sorted(_CASES))
def test_eager_writes_through_views_match_torch(case, eager):
    """(the reference the traced and static forms are held to)"""
    a, b, c = _data()
    x0, w = fg.to_tensor(a, stop_gradient=False), fg.to_tensor(b, stop_gradient=False)
    x, extra, loss = _whole(case, x0, w, fg.to_tensor(c))
    loss.backward()
    values, grads = _torch(case, a, b, c)
    for got, want in zip((x, extra, loss), values):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(x0.grad.numpy(), grads[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), grads[1], rtol=1e-12)


@pytest.mark.parametrize("case", sorted(_CASES))
def test_to_static_writes_through_views_as_eager_and_torch(case, eager):
    a, b, c = _data()
    function = fg.jit.to_static(lambda x0, w: _whole(case, x0, w, fg.to_tensor(c)))
    x0, w = fg.to_tensor(a, stop_gradient=False), fg.to_tensor(b, stop_gradient=False)
    x, extra, loss = function(x0, w)
    loss.backward()
    values, grads = _torch(case, a, b, c)
    for got, want in zip((x, extra, loss), values):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(x0.grad.numpy(), grads[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), grads[1], rtol=1e-12)


@pytest.mark.parametrize("case", sorted(_CASES))
def test_static_mode_writes_through_views_as_torch(case):
    a, b, c = _data()
    x0 = fg.static.data("x0", [3, 4], "float64")
    w = fg.static.data("w", [4], "float64")
    x0.stop_gradient = w.stop_gradient = False
    x, extra, loss = _whole(case, x0, w, fg.assign(c))
    grads = fg.static.gradients([loss], [x0, w])
    got = fg.Executor().run(feed={"x0": a, "w": b}, fetch_list=[x, extra, loss] + grads)
    values, want_grads = _torch(case, a, b, c)
    for g, want in zip(got, values + want_grads):
        np.testing.assert_allclose(g, want, rtol=1e-12)


class _Writer(fg.nn.Layer):
    """A layer whose forward writes through views of an intermediate and of its buffer."""

    def __init__(self):
        super().__init__()
        self.linear = fg.nn.Linear(4, 4)
        self.register_buffer("count", fg.to_tensor(np.zeros(3, "float32")))

    def forward(self, x):
        h = self.linear(x)
        h[:, 0].zero_()
        h.view(-1, 2)[:, 1].mul_(3.0)
        head = h.t()[1]
        head.add_(1.0)
        return h


def test_jit_save_and_onnx_export_of_a_layer_writing_through_views(tmp_path, eager):
    layer = _Writer()
    layer.eval()
    x = np.random.default_rng(3).normal(size=(5, 4)).astype("float32")
    want = layer(fg.to_tensor(x)).numpy()
    path = str(tmp_path / "model")
    fg.jit.save(layer, path, input_spec=[fg.jit.InputSpec([None, 4], "float32", name="x")])
    np.testing.assert_allclose(fg.jit.load(path)(fg.to_tensor(x)).numpy(), want, rtol=1e-6)
    ort = pytest.importorskip("onnxruntime")
    onnx_path = str(tmp_path / "model.onnx")
    fg.onnx.export(layer, onnx_path, [fg.to_tensor(x)])
    session = ort.InferenceSession(onnx_path)
    got, = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _Counter(fg.nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("stats", fg.to_tensor(np.zeros((2, 3))))

    def forward(self, x):
        row = self.stats[0]
        row.add_(x.sum(0))
        self.stats[1].fill_(1.0)
        return x * 1.0


def test_a_write_through_a_view_of_a_captured_buffer_reaches_it_after_each_run(eager):
    eager_layer, traced_layer = _Counter(), fg.jit.to_static(_Counter())
    x = fg.to_tensor(np.arange(6.0).reshape(2, 3))
    for _ in range(2):
        eager_layer(x)
        traced_layer(x)
    np.testing.assert_array_equal(traced_layer.stats.numpy(), eager_layer.stats.numpy())
    np.testing.assert_array_equal(eager_layer.stats.numpy(), [[6, 10, 14], [1, 1, 1]])


def test_a_write_through_a_view_of_an_argument_reaches_it_as_in_eager(eager):
    def fill(x):
        x[0].fill_(3.0)
        return x.sum()

    a, b = fg.to_tensor(np.zeros((2, 2))), fg.to_tensor(np.zeros((2, 2)))
    fill(a)
    fg.jit.to_static(fill)(b)
    np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_a_write_through_a_view_of_a_parameter_refuses_at_build_time():
    w = fg.static.create_parameter([2, 3], "float32", name="w14")
    with pytest.raises(TypeError, match="w14"):
        w[0].fill_(1.0)


def test_a_write_into_a_repeating_expanded_view_refuses_at_build_time():
    x = fg.static.data("x", [1, 3], "float32") * 1.0
    with pytest.raises(RuntimeError, match="expand"):
        x.expand(4, 3)[0].fill_(1.0)


def _parts_and_select(x):
    left, right = x.chunk(2, 1)
    left[0].fill_(1.0)
    right.mul_(2.0)
    x.select(0, -1).add_(10.0)
    return x * 1.0


def test_chunks_and_a_select_from_the_end_write_into_x_traced_as_eagerly(eager):
    """(no gradients: torch refuses in-place writes into the outputs of chunk with autograd on)"""
    a = np.arange(12.0).reshape(3, 4)
    want = _parts_and_select(fg.to_tensor(a)).numpy()
    got = fg.jit.to_static(_parts_and_select)(fg.to_tensor(a)).numpy()
    np.testing.assert_array_equal(got, want)
    tx = torch.tensor(a)
    _parts_and_select(tx)
    np.testing.assert_array_equal(want, tx.numpy())


def test_a_select_from_the_end_of_an_unknown_batch_reads_the_last_row(tmp_path, eager):
    def last(x):
        row = x.select(0, -1)
        row.mul_(-1.0)
        return x * 1.0

    path = str(tmp_path / "last")
    fg.jit.save(last, path, input_spec=[fg.jit.InputSpec([None, 3], "float64")])
    a = np.arange(12.0).reshape(4, 3)
    want = a.copy()
    want[-1] *= -1
    np.testing.assert_array_equal(fg.jit.load(path)(fg.to_tensor(a)).numpy(), want)


def test_a_write_through_a_view_of_a_variable_outside_a_loop_body_refuses():
    x = fg.static.data("x", [2, 3], "float32") * 1.0
    row = x[0]
    i = fg.full([1], 0, "int64")

    def body(i):
        row.add_(1.0)
        return [i + 1]

    with pytest.raises(RuntimeError, match="loop variable"):
        fg.static.nn.while_loop(lambda i: i < 3, body, [i])
