"""Recurrent layers on a time length known only when the program runs (static.data([-1, -1, 4]),
InputSpec([None, None, 4])): one `while` over the steps (nn/layers/rnn_loop.py) instead of the
unrolled steps. Every case is checked against eager mode (whose values and gradients the other
RNN tests check against PyTorch) at lengths the program never saw, and against torch.nn.LSTM
with the same weights; gradients go through `while_grad`."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.framework.program as program_module
import fluidgrad.onnx  # noqa: F401  (reachable from `import fluidgrad` once names13 lands)
from fluidgrad import nn

R = np.random.default_rng(13)


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for part in tree for leaf in _leaves(part)]
    return [tree]


class _DoublingCell(nn.RNNCellBase):
    """A user's cell: nested outputs, a state made by get_initial_states."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4 + 3, 3)

    @property
    def state_shape(self):
        return (3,)

    def forward(self, inputs, states):
        h = fg.tanh(self.linear(fg.concat([inputs, states], axis=-1)))
        return (h, h * 2.0), h


_LAYERS = {
    "LSTM": lambda: nn.LSTM(4, 5),
    "LSTM 2 layers bidirect": lambda: nn.LSTM(4, 5, num_layers=2, direction="bidirect"),
    "GRU time_major": lambda: nn.GRU(4, 5, time_major=True),
    "GRU batch_first (torch's keyword)": lambda: nn.GRU(4, 5, batch_first=True),
    "SimpleRNN relu bidirect": lambda: nn.SimpleRNN(4, 5, direction="bidirect", activation="relu"),
    "RNN(LSTMCell)": lambda: nn.RNN(nn.LSTMCell(4, 5)),
    "RNN(GRUCell, is_reverse)": lambda: nn.RNN(nn.GRUCell(4, 5), is_reverse=True),
    "RNN(SimpleRNNCell, time_major)": lambda: nn.RNN(nn.SimpleRNNCell(4, 5), time_major=True),
    "BiRNN(LSTMCell, LSTMCell)": lambda: nn.BiRNN(nn.LSTMCell(4, 5), nn.LSTMCell(4, 5)),
    "RNN(a user's cell)": lambda: nn.RNN(_DoublingCell()),
}


def _static_run(layer, x, lengths=None, initial=None):
    """layer on static.data of shape [-1, -1, 4]: the fetched outputs and final states, flat."""
    main, startup = fg.Program(), fg.Program()
    program_module._guard_depth = 1
    try:
        with fg.program_guard(main, startup):
            kwargs, feed = {}, {"x": x}
            if lengths is not None:
                kwargs["sequence_length"] = fg.static.data("lengths", [-1], "int64")
                feed["lengths"] = lengths
            if initial is not None:
                kwargs["initial_states"] = fg.static.data("h0", [-1, -1, 5], "float32")
                feed["h0"] = initial
            out = layer(fg.static.data("x", [-1, -1, 4], "float32"), **kwargs)
    finally:
        program_module._guard_depth = 0
    assert "while" in [op.type for op in main.global_block().ops]
    exe = fg.Executor()
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=_leaves(out))


def _time_major(layer):
    return getattr(layer, "time_major", False)


def _example(layer, length, batch=3):
    x = R.standard_normal((batch, length, 4)).astype("float32")
    return np.ascontiguousarray(x.transpose(1, 0, 2)) if _time_major(layer) else x


@pytest.mark.parametrize("padded", [False, True], ids=["full", "sequence_length"])
@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_a_static_program_runs_every_length_as_eager_mode_does(name, padded, eager):
    layer = _LAYERS[name]()
    for length in (1, 2, 6):
        x = _example(layer, length)
        lengths = np.array([length, 1, max(length - 1, 1)], "int64") if padded else None
        got = _static_run(layer, x, lengths)
        want = _leaves(layer(fg.to_tensor(x), sequence_length=None if lengths is None else fg.to_tensor(lengths)))
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [lambda: nn.GRU(4, 5, num_layers=2), lambda: nn.SimpleRNN(4, 5)],
                         ids=["GRU 2 layers", "SimpleRNN"])
def test_initial_states_are_fed(make, eager):
    layer = make()
    for length in (2, 5):
        x = _example(layer, length)
        h0 = R.standard_normal((layer.num_layers, 3, 5)).astype("float32")
        got = _static_run(layer, x, np.array([length, 1, 2], "int64"), h0)
        want = layer(fg.to_tensor(x), fg.to_tensor(h0), sequence_length=fg.to_tensor(np.array([length, 1, 2])))
        for a, b in zip(got, _leaves(want)):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-6)


def test_a_known_length_stays_unrolled(eager):
    main = fg.Program()
    program_module._guard_depth = 1
    try:
        with fg.program_guard(main, fg.Program()):
            nn.LSTM(4, 5)(fg.static.data("x", [-1, 3, 4], "float32"))
    finally:
        program_module._guard_depth = 0
    assert "while" not in [op.type for op in main.global_block().ops]


def test_no_time_steps_is_refused(eager):
    with pytest.raises(ValueError, match=r"LSTM: input of shape \[2, 0, 4\] needs a non-zero time length"):
        nn.LSTM(4, 5)(fg.to_tensor(np.zeros((2, 0, 4), "float32")))


# ---------------------------------------------------------------- gradients through the loop
def _static_gradients(layer, x, lengths, weights):
    """d(sum(out * weights) + sum(h_n ** 2)) / d(x, every parameter), from append_backward."""
    main, startup = fg.Program(), fg.Program()
    program_module._guard_depth = 1
    try:
        with fg.program_guard(main, startup):
            xv = fg.static.data("x", [-1, -1, 4], "float64")
            xv.stop_gradient = False
            feed = {"x": x, "w": weights}
            kwargs = {}
            if lengths is not None:
                kwargs["sequence_length"] = fg.static.data("lengths", [-1], "int64")
                feed["lengths"] = lengths
            out, states = layer(xv, **kwargs)
            h = _leaves(states)[0]
            loss = fg.sum(out * fg.static.data("w", [-1, -1, weights.shape[-1]], "float64")) + fg.sum(h * h)
            params = main.all_parameters()
            grads = fg.static.gradients(loss, [xv] + params)
    finally:
        program_module._guard_depth = 0
    exe = fg.Executor()
    exe.run(startup)
    values = exe.run(main, feed=feed, fetch_list=[loss] + grads)
    return values[0], values[1], dict(zip((p.name for p in params), values[2:]))


_GRADIENT_CASES = {
    "LSTM 2 layers bidirect, padded": (lambda: nn.LSTM(4, 5, num_layers=2, direction="bidirect"), True),
    "GRU": (lambda: nn.GRU(4, 5), False),
    "RNN(GRUCell, is_reverse), padded": (lambda: nn.RNN(nn.GRUCell(4, 5), is_reverse=True), True),
    "BiRNN(SimpleRNNCell, SimpleRNNCell)": (lambda: nn.BiRNN(nn.SimpleRNNCell(4, 5), nn.SimpleRNNCell(4, 5)),
                                            False),
}


@pytest.mark.parametrize("name", sorted(_GRADIENT_CASES))
def test_gradients_through_the_loop_are_eager_modes(name, eager):
    make, padded = _GRADIENT_CASES[name]
    layer = make()
    layer.to(dtype="float64")
    x = R.standard_normal((3, 5, 4))
    lengths = np.array([5, 2, 4], "int64") if padded else None
    width = 10 if "bidirect" in name or "BiRNN" in name else 5
    weights = R.standard_normal((3, 5, width))
    loss, x_grad, param_grads = _static_gradients(layer, x, lengths, weights)

    xt = fg.to_tensor(x, stop_gradient=False)
    out, states = layer(xt, sequence_length=None if lengths is None else fg.to_tensor(lengths))
    h = _leaves(states)[0]
    eager_loss = fg.sum(out * fg.to_tensor(weights)) + fg.sum(h * h)
    eager_loss.backward()
    np.testing.assert_allclose(loss, eager_loss.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x_grad, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    by_name = {p.name: p for p in layer.parameters()}
    assert set(param_grads) == set(by_name)
    for param_name, grad in param_grads.items():
        np.testing.assert_allclose(grad, by_name[param_name].grad.numpy(), rtol=1e-10, atol=1e-12)


def test_values_and_gradients_match_torch_lstm(eager):
    layer = nn.LSTM(4, 5, num_layers=2, direction="bidirect")
    layer.to(dtype="float64")
    reference = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True).double()
    with torch.no_grad():
        for name, param in reference.named_parameters():
            param.copy_(torch.tensor(getattr(layer, name).numpy()))
    x, weights = R.standard_normal((2, 7, 4)), R.standard_normal((2, 7, 10))
    loss, x_grad, param_grads = _static_gradients(layer, x, None, weights)

    xt = torch.tensor(x, requires_grad=True)
    out, (h, _) = reference(xt)
    torch_loss = (out * torch.tensor(weights)).sum() + (h * h).sum()
    torch_loss.backward()
    np.testing.assert_allclose(loss, torch_loss.item(), rtol=1e-12)
    np.testing.assert_allclose(x_grad, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    names = {getattr(layer, name).name: name for name, _ in reference.named_parameters()}
    for param_name, grad in param_grads.items():
        torch_grad = dict(reference.named_parameters())[names[param_name]].grad.numpy()
        np.testing.assert_allclose(grad, torch_grad, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- jit.save and ONNX
@pytest.mark.parametrize("make", [lambda: nn.LSTM(4, 5, num_layers=2, direction="bidirect"),
                                  lambda: nn.RNN(nn.GRUCell(4, 5), is_reverse=True)],
                         ids=["LSTM bidirect", "RNN(GRUCell, is_reverse)"])
def test_jit_save_with_an_unknown_length_loads_and_trains(make, tmp_path, eager):
    layer = make()
    layer.eval()
    path = str(tmp_path / "rnn" / "model")
    fg.jit.save(layer, path, input_spec=[fg.static.InputSpec([None, None, 4], "float32")])
    loaded = fg.jit.load(path)
    for length in (1, 4, 9):
        x = R.standard_normal((2, length, 4)).astype("float32")
        got, want = _leaves(loaded(fg.to_tensor(x))), _leaves(layer(fg.to_tensor(x)))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    x = R.standard_normal((2, 6, 4)).astype("float32")
    xt, xe = fg.to_tensor(x, stop_gradient=False), fg.to_tensor(x, stop_gradient=False)
    fg.sum(_leaves(loaded(xt))[0]).backward()
    fg.sum(_leaves(layer(xe))[0]).backward()
    np.testing.assert_allclose(xt.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)


def _onnx_session(path):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


_ONNX_CALLS = {
    "torch's call, dynamic_axes naming batch and time":
        lambda layer, path: fg.onnx.export(layer, (fg.to_tensor(_example(layer, 3, 2)),), str(path),
                                           input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "time"}}),
    "Paddle's call, InputSpec([None, None, 4])":
        lambda layer, path: fg.onnx.export(layer, str(path)[:-len(".onnx")],
                                           input_spec=[fg.static.InputSpec([None, None, 4], "float32", "x")]),
}


@pytest.mark.parametrize("call", sorted(_ONNX_CALLS))
@pytest.mark.parametrize("name", ["LSTM 2 layers bidirect", "GRU time_major", "BiRNN(LSTMCell, LSTMCell)",
                                  "RNN(a user's cell)"])
def test_onnx_export_with_a_dynamic_time_axis_runs_in_onnxruntime(name, call, tmp_path, eager):
    pytest.importorskip("onnx")
    layer = _LAYERS[name]()
    path = tmp_path / "rnn.onnx"
    model = _ONNX_CALLS[call](layer, path)
    assert "Loop" in [node.op_type for node in model.graph.node]
    session = _onnx_session(path)
    assert [i.name for i in session.get_inputs()] == ["x"]
    for length in (1, 5, 8):
        x = _example(layer, length, batch=3)
        got = session.run(None, {"x": x})
        want = _leaves(layer(fg.to_tensor(x)))
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-6)


def test_export_program_with_sequence_length_runs_in_onnxruntime(tmp_path, eager):
    pytest.importorskip("onnx")
    layer = nn.LSTM(4, 5, direction="bidirect")
    main, startup = fg.Program(), fg.Program()
    program_module._guard_depth = 1
    try:
        with fg.program_guard(main, startup):
            x = fg.static.data("x", [-1, -1, 4], "float32")
            lengths = fg.static.data("lengths", [-1], "int64")
            out, (h, c) = layer(x, sequence_length=lengths)
    finally:
        program_module._guard_depth = 0
    fg.Executor().run(startup)
    fg.onnx.export_program(tmp_path / "m.onnx", [x, lengths], [out, h, c], program=main)
    session = _onnx_session(tmp_path / "m.onnx")
    for length in (2, 7):
        xv = R.standard_normal((3, length, 4)).astype("float32")
        lv = np.array([length, 1, length - 1], "int64")
        got = session.run(None, {"x": xv, "lengths": lv})
        want = _leaves(layer(fg.to_tensor(xv), sequence_length=fg.to_tensor(lv)))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-6)


def test_a_loop_run_without_its_gradient_keeps_no_step_scopes():
    """Inference (a for_test clone, jit.load, ONNX's reference runs) does not keep each step's
    values, so the grown outputs cost O(time) memory there; with `while_grad` the steps stay."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [3], "float64")
        x.stop_gradient = False
        i, y = fg.static.nn.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * 2.0),
                                       [fg.full([1], 0, "int64"), x])
        loop = next(op for op in main.global_block().ops if op.type == "while")
        inference = main.clone(for_test=True)
        grad, = fg.static.gradients(fg.sum(y), [x])
    exe = fg.Executor()
    value, steps = exe.run(inference, feed={"x": np.ones(3)}, fetch_list=[y, loop.output("StepScopes")[0]])
    np.testing.assert_array_equal(value, [16.0] * 3)
    assert len(steps) == 0
    np.testing.assert_array_equal(exe.run(main, feed={"x": np.ones(3)}, fetch_list=[grad])[0], [16.0] * 3)
