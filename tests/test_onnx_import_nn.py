"""Imported NN-ish ONNX ops against PyTorch: LSTM / GRU (exported by torch.onnx.export and
hand-built with sequence_lens), Resize and GridSample models, a CNN with BatchNorm, DeformConv:
outputs, gradients by append_backward, and a few SGD steps."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import import_model  # noqa: E402


class RecurrentNet(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(4, 6, batch_first=True, bidirectional=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


class BatchNormCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False)
        return self.fc(x.flatten(1))


class GridSampleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.grid = nn.Parameter(torch.rand(2, 4, 4, 2) * 2.2 - 1.1)

    def forward(self, x):
        return nn.functional.grid_sample(self.conv(x), self.grid, mode="bilinear", padding_mode="zeros",
                                         align_corners=False)


MODELS = {
    "lstm": (lambda: RecurrentNet(nn.LSTM), (2, 5, 4)),
    "gru": (lambda: RecurrentNet(nn.GRU), (2, 5, 4)),
    "bn_cnn": (BatchNormCNN, (3, 2, 6, 6)),
    "grid_sample": (GridSampleNet, (2, 2, 5, 6)),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def exported(request, tmp_path_factory):
    make, shape = MODELS[request.param]
    torch.manual_seed(0)
    net = make().eval()
    if request.param == "bn_cnn":   # non-trivial running statistics
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(*shape)
    path = tmp_path_factory.mktemp(request.param) / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x,), str(path), dynamo=False, opset_version=17, do_constant_folding=False)
    return net, x, path


def _loss_program(path):
    scope = fg.Scope()
    program, feeds, (out,) = import_model(path, scope)
    with fg.program_guard(program, fg.Program()):
        program.global_block().var(feeds[0]).stop_gradient = False
        target = fg.static.data("target", list(out.shape), out.dtype)
        loss = fg.mean(fg.square(out - target))
    return program, scope, feeds[0], loss


def test_outputs_and_gradients_equal_pytorch(exported):
    net, x, path = exported
    program, scope, feed, loss = _loss_program(path)
    with fg.program_guard(program, fg.Program()):
        params_grads = fg.append_backward(loss)
        x_grad, = fg.gradients([loss], [program.global_block().var(feed)])
    grads = {p.name: g for p, g in params_grads}
    torch_params = {name: p for name, p in net.named_parameters() if name in grads}
    y = np.random.default_rng(1).normal(size=net(x).shape).astype("float32")
    names = sorted(torch_params)
    values = fg.Executor().run(program, feed={feed: x.numpy(), "target": y},
                               fetch_list=[loss, x_grad] + [grads[n] for n in names], scope=scope)
    xt = x.clone().requires_grad_(True)
    net.zero_grad()
    want = torch.mean(torch.square(net(xt) - torch.tensor(y)))
    want.backward()
    np.testing.assert_allclose(values[0], want.item(), rtol=1e-5)
    np.testing.assert_allclose(values[1], xt.grad.numpy(), rtol=2e-4, atol=1e-6)
    for name, got in zip(names, values[2:]):
        np.testing.assert_allclose(got, torch_params[name].grad.numpy(), rtol=2e-4, atol=1e-6, err_msg=name)


def test_batch_norm_cnn_parameters_all_get_pytorch_gradients_and_train_alike(exported):
    net, x, path = exported
    if not isinstance(net, BatchNormCNN):
        pytest.skip("the BatchNorm CNN keeps PyTorch's parameter names")
    program, scope, feed, loss = _loss_program(path)
    startup = fg.Program()
    with fg.program_guard(program, startup):
        fg.optimizer.SGD(learning_rate=0.1, parameters=[program.global_block().var(n)
                                                        for n, _ in net.named_parameters()]).minimize(loss)
    fg.Executor().run(startup, scope=scope)
    torch_net = BatchNormCNN().eval()
    torch_net.load_state_dict(net.state_dict())
    optimizer = torch.optim.SGD(torch_net.parameters(), lr=0.1)
    rng = np.random.default_rng(2)
    for _ in range(3):
        y = rng.normal(size=(x.shape[0], 5)).astype("float32")
        got, = fg.Executor().run(program, feed={feed: x.numpy(), "target": y}, fetch_list=[loss], scope=scope)
        optimizer.zero_grad()
        want = torch.mean(torch.square(torch_net(x) - torch.tensor(y)))
        want.backward()
        optimizer.step()
        np.testing.assert_allclose(got, want.item(), rtol=1e-4)
    for name, param in torch_net.named_parameters():
        np.testing.assert_allclose(scope[name], param.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def _onnx_lstm_weights(lstm: nn.LSTM):
    """PyTorch's (i, f, g, o) gate blocks as ONNX's (i, o, f, c), with a direction axis."""
    h = lstm.hidden_size

    def reorder(w):
        i, f, g, o = np.split(w.detach().numpy(), 4)
        return np.concatenate([i, o, f, g])
    w = reorder(lstm.weight_ih_l0)[None]
    r = reorder(lstm.weight_hh_l0)[None]
    b = np.concatenate([reorder(lstm.bias_ih_l0), reorder(lstm.bias_hh_l0)])[None]
    assert w.shape[1] == 4 * h
    return w, r, b


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_lstm_sequence_lens_equal_pytorch_packed_sequences(direction):
    torch.manual_seed(3)
    lstm = nn.LSTM(3, 4).double()
    steps, batch, lens = 5, 3, np.array([5, 2, 4], dtype=np.int32)
    x = np.random.default_rng(4).standard_normal((steps, batch, 3))
    w, r, b = _onnx_lstm_weights(lstm)
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "lens"], ["Y", "Y_h", "Y_c"], hidden_size=4,
                            direction=direction)
    graph = helper.make_graph(
        [node], "lstm", [helper.make_tensor_value_info("X", TensorProto.DOUBLE, list(x.shape))],
        [helper.make_tensor_value_info(n, TensorProto.DOUBLE, shape) for n, shape in
         (("Y", [steps, 1, batch, 4]), ("Y_h", [1, batch, 4]), ("Y_c", [1, batch, 4]))],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B"),
         numpy_helper.from_array(lens, "lens")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    scope = fg.Scope()
    program, feeds, fetches = import_model(model, scope)
    y, y_h, y_c = fg.Executor().run(program, feed={"X": x}, fetch_list=fetches, scope=scope)
    xt = torch.tensor(x)
    if direction == "reverse":   # each sequence reversed within its own length
        xt = torch.stack([torch.cat([xt[:n, i].flip(0), xt[n:, i]]) for i, n in enumerate(lens)], dim=1)
    packed = nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(lens), enforce_sorted=False)
    out, (h_n, c_n) = lstm(packed)
    ref, _ = nn.utils.rnn.pad_packed_sequence(out, total_length=steps)
    if direction == "reverse":
        ref = torch.stack([torch.cat([ref[:n, i].flip(0), ref[n:, i]]) for i, n in enumerate(lens)], dim=1)
    np.testing.assert_allclose(y[:, 0], ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y_h, h_n.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y_c, c_n.detach().numpy(), rtol=1e-10, atol=1e-12)


def _deform_model(x_shape, w, offset_shape, with_mask):
    inputs = [helper.make_tensor_value_info("X", TensorProto.DOUBLE, list(x_shape)),
              helper.make_tensor_value_info("offset", TensorProto.DOUBLE, list(offset_shape))]
    names = ["X", "W", "offset", "", "mask"] if with_mask else ["X", "W", "offset"]
    if with_mask:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.DOUBLE,
                                                    [offset_shape[0], offset_shape[1] // 2] + list(offset_shape[2:])))
    node = helper.make_node("DeformConv", names, ["Y"], pads=[1, 1, 1, 1], strides=[1, 1])
    out_shape = [x_shape[0], w.shape[0]] + list(offset_shape[2:])
    graph = helper.make_graph([node], "deform", inputs, [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, out_shape)],
                              [numpy_helper.from_array(w, "W")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


def test_deform_conv_with_zero_offsets_is_conv_and_its_offset_gradient_is_numeric():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((4, 3, 3, 3))
    offset_shape = (2, 18, 5, 4)
    scope = fg.Scope()
    program, feeds, (y,) = import_model(_deform_model(x.shape, w, offset_shape, with_mask=True), scope)
    mask = rng.uniform(0.5, 1.5, (2, 9, 5, 4))
    exe = fg.Executor()
    got, = exe.run(program, feed={"X": x, "offset": np.zeros(offset_shape), "mask": np.ones((2, 9, 5, 4))},
                   fetch_list=[y], scope=scope)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    with fg.program_guard(program, fg.Program()):
        offset_var = program.global_block().var("offset")
        offset_var.stop_gradient = False
        loss = fg.sum(fg.square(y))
        grad, = fg.gradients([loss], [offset_var])
    offsets = rng.uniform(-0.8, 0.8, offset_shape) + 0.1   # away from integer kinks
    feed = {"X": x, "offset": offsets, "mask": mask}
    analytic, = exe.run(program, feed=feed, fetch_list=[grad], scope=scope)
    eps, numeric = 1e-6, np.zeros(offset_shape)
    for index in [(0, 0, 1, 1), (1, 7, 2, 3), (0, 17, 4, 0), (1, 10, 0, 2)]:
        for sign in (1, -1):
            shifted = offsets.copy()
            shifted[index] += sign * eps
            value, = exe.run(program, feed={**feed, "offset": shifted}, fetch_list=[loss], scope=scope)
            numeric[index] += sign * float(value) / (2 * eps)
        np.testing.assert_allclose(analytic[index], numeric[index], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op_type, attrs", [("DepthToSpace", {"blocksize": 2}),
                                            ("DepthToSpace", {"blocksize": 2, "mode": "CRD"}),
                                            ("SpaceToDepth", {"blocksize": 2}),
                                            ("GlobalLpPool", {"p": 3})])
def test_block_moves_and_global_lp_pool_with_a_dynamic_batch_match_onnxruntime(op_type, attrs):
    ort = pytest.importorskip("onnxruntime")
    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c", "d"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    scope = fg.Scope()
    program, feeds, fetches = import_model(model, scope)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 8, 4, 6)).astype("float32")
        got, = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
        np.testing.assert_allclose(got, session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_exported_with_a_dynamic_batch_run_at_other_batches(kind, tmp_path):
    torch.manual_seed(0)
    net = getattr(nn, kind)(4, 3, num_layers=2, bidirectional=kind == "GRU", batch_first=True).eval()
    path = str(tmp_path / "rnn.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.randn(2, 5, 4),), path, dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}}, opset_version=17)
    scope = fg.Scope()
    program, feeds, fetches = import_model(path, scope)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 5, 4)).astype("float32")
        got = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
        out, state = net(torch.tensor(x))
        for value, want in zip(got, [out, *(state if kind == "LSTM" else [state])]):
            np.testing.assert_allclose(value, want.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op_type, attrs", [("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
                                            ("Selu", {"alpha": 1.5, "gamma": 2.0}), ("Celu", {"alpha": 0.7}),
                                            ("ThresholdedRelu", {"alpha": 0.5})])
@pytest.mark.parametrize("opset", [13, 17])
def test_activation_converters_with_attributes_match_onnxruntime(op_type, attrs, opset):
    ort = pytest.importorskip("onnxruntime")
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 7])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    x = np.random.default_rng(0).standard_normal((3, 7)).astype("float32") * 3
    scope = fg.Scope()
    program, feeds, fetches = import_model(model, scope)
    got, = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
    want, = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
