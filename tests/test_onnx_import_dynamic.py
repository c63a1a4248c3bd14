"""A PyTorch model exported with a dynamic batch (torch.onnx.export's dynamic_axes, the
TorchScript exporter: Shape -> Gather -> Concat -> Reshape over the batch dimension) imports
once, runs at several batch sizes, and trains like PyTorch; a shape that depends on an
unknown dimension anywhere else is refused with a clear error."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from torch import nn  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import import_model  # noqa: E402


class Reshaping(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6)
        self.out = nn.Linear(3, 2)

    def forward(self, x):
        flat = x.reshape(x.shape[0], -1)                  # the batch dim read from the input
        y = torch.tanh(self.fc(flat)).view(x.size(0), 2, 3)
        return self.out(y).mean(dim=1)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    net = Reshaping().eval()
    path = tmp_path_factory.mktemp("dyn") / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.randn(4, 3, 4),), str(path), dynamo=False, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                          opset_version=17, do_constant_folding=False)
    assert "Shape" in {n.op_type for n in onnx.load(str(path)).graph.node}
    return net, path


def test_imports_once_and_runs_at_two_batch_sizes(exported):
    net, path = exported
    scope = fg.Scope()
    program, feeds, fetches = import_model(path, scope)
    assert program.global_block().var(feeds[0]).shape[0] == -1
    for batch in (2, 7):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 4)).astype("float32")
        out, = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
        np.testing.assert_allclose(out, net(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_trains_like_pytorch_at_changing_batch_sizes(exported):
    net, path = exported
    net = Reshaping()
    net.load_state_dict(exported[0].state_dict())
    scope = fg.Scope()
    program, feeds, (out,) = import_model(path, scope)
    startup = fg.Program()
    with fg.program_guard(program, startup):
        target = fg.static.data("target", list(out.shape), out.dtype)
        loss = fg.mean(fg.square(out - target))
        fg.optimizer.SGD(learning_rate=0.1).minimize(loss)
    fg.Executor().run(startup, scope=scope)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    rng = np.random.default_rng(3)
    for batch in (3, 5, 2):
        x = rng.standard_normal((batch, 3, 4)).astype("float32")
        y = rng.standard_normal((batch, 2)).astype("float32")
        got, = fg.Executor().run(program, feed={feeds[0]: x, "target": y}, fetch_list=[loss], scope=scope)
        optimizer.zero_grad()
        want = torch.mean(torch.square(net(torch.tensor(x)) - torch.tensor(y)))
        want.backward()
        optimizer.step()
        np.testing.assert_allclose(got, want.item(), rtol=1e-5)
    for name, param in net.named_parameters():
        np.testing.assert_allclose(scope[name], param.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_shape_computed_from_a_dynamic_dimension_is_computed_at_run_time():
    """ConstantOfShape(Shape(x) * 2): sizes derived from the batch are computed when the program runs."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Mul", ["s", "two"], ["doubled"]),
             helper.make_node("ConstantOfShape", ["doubled"], ["zeros"], name="zeros_like_x")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("zeros", TensorProto.FLOAT, ["batch", 6])],
                              [helper.make_tensor("two", TensorProto.INT64, [1], [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    scope = fg.Scope()
    program, feeds, fetches = import_model(model, scope)
    for batch in (1, 4):
        got, = fg.Executor().run(program, feed={"x": np.ones((batch, 3), "float32")}, fetch_list=fetches, scope=scope)
        np.testing.assert_array_equal(got, np.zeros((2 * batch, 6), "float32"))


def test_a_run_time_shape_that_does_not_fit_is_a_clear_error():
    """Reshape(x, Shape(NonZero(x))) under allowzero=1: read when the program runs, and refused
    then, naming reshape and both shapes, when it does not hold x's elements."""
    nodes = [helper.make_node("NonZero", ["x"], ["where"]), helper.make_node("Shape", ["where"], ["s"]),
             helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    scope = fg.Scope()
    program, feeds, fetches = import_model(model, scope)
    x = np.array([[1, 0, 2], [0, 3, 0]], "float32")   # 3 non-zero entries: NonZero is [2, 3]
    got, = fg.Executor().run(program, feed={"x": x}, fetch_list=fetches, scope=scope)
    np.testing.assert_array_equal(got, x)
    with pytest.raises(Exception, match=r"reshape.*\[2, 3\].*\[2, 2\]"):
        fg.Executor().run(program, feed={"x": np.array([[1, 0, 0], [0, 3, 0]], "float32")}, fetch_list=fetches,
                          scope=scope)


class SizedByTheBatch(nn.Module):
    """Constants shaped by the dynamic batch (ConstantOfShape of Shape reads) and a resize to a
    size (Resize `sizes` = the input's own batch and channels, then the new spatial size)."""

    def forward(self, x):
        batch, channels = x.shape[0], x.shape[1]
        flags = torch.zeros(batch, 5) + torch.ones(7, batch).sum(0, keepdim=True).T
        same = torch.full_like(x, 2.0) * x + torch.ones(channels, batch, 1, 1).permute(1, 0, 2, 3)
        grown = nn.functional.interpolate(same, size=[6, 7], mode="bilinear", align_corners=False)
        doubled = nn.functional.interpolate(x, scale_factor=2, mode="nearest")
        return grown.mean(dim=(1, 2, 3)), flags, doubled


def test_constants_and_resizes_shaped_by_a_dynamic_batch(tmp_path):
    path = tmp_path / "sized.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(SizedByTheBatch(), (torch.randn(2, 3, 4, 5),), str(path), dynamo=False,
                          input_names=["x"], output_names=["grown", "flags", "doubled"],
                          dynamic_axes={name: {0: "batch"} for name in ("x", "grown", "flags", "doubled")},
                          opset_version=17, do_constant_folding=False)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"ConstantOfShape", "Resize"} <= ops
    scope = fg.Scope()
    program, feeds, fetches = import_model(path, scope)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 4, 5)).astype("float32")
        got = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
        want = SizedByTheBatch()(torch.tensor(x))
        for value, expected in zip(got, want):
            np.testing.assert_allclose(value, expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL])
def test_constant_of_shape_reading_two_unknown_sizes_in_another_order(dtype):
    ort = pytest.importorskip("onnxruntime")
    value = helper.make_tensor("value", dtype, [1], [1 if dtype == TensorProto.BOOL else 3])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "order"], ["picked"]),
             helper.make_node("Concat", ["picked", "four"], ["target"], axis=0),
             helper.make_node("ConstantOfShape", ["target"], ["filled"], value=value)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", 2, "b"])],
                              [helper.make_tensor_value_info("filled", dtype, ["b", "a", 4])],
                              [helper.make_tensor("order", TensorProto.INT64, [2], [2, 0]),
                               helper.make_tensor("four", TensorProto.INT64, [1], [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    scope = fg.Scope()
    program, feeds, fetches = import_model(model, scope)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in [(3, 2, 5), (1, 2, 2)]:
        x = np.zeros(shape, "float32")
        got, = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
        want, = session.run(None, {"x": x})
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
