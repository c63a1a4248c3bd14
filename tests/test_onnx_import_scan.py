"""ONNX Scan and Loop scan outputs become `while` loops: the imported program runs, and
`append_backward` differentiates it, giving PyTorch's gradient of the unrolled computation."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import import_model  # noqa: E402

T, D, H = 5, 3, 4


def _rnn_scan_model(reverse: int, output_axis: int):
    """h_t = tanh(x_t W + h_{t-1} U); Scan gives the last h and every h_t."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "W"], ["xw"]), helper.make_node("MatMul", ["h", "U"], ["hu"]),
         helper.make_node("Add", ["xw", "hu"], ["pre"]), helper.make_node("Tanh", ["pre"], ["h_next"]),
         helper.make_node("Identity", ["h_next"], ["y_t"])],
        "rnn_step",
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [H]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [D])],
        [helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [H]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [H])])
    scan = helper.make_node("Scan", ["h0", "x"], ["h_last", "ys"], body=body, num_scan_inputs=1,
                            scan_input_directions=[reverse], scan_output_axes=[output_axis])
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array((rng.standard_normal((D, H)) * 0.5).astype("float32"), "W"),
             numpy_helper.from_array((rng.standard_normal((H, H)) * 0.5).astype("float32"), "U")]
    ys_shape = [T, H] if output_axis == 0 else [H, T]
    graph = helper.make_graph([scan], "rnn", [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [H]),
                                              helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, D])],
                              [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [H]),
                               helper.make_tensor_value_info("ys", TensorProto.FLOAT, ys_shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _torch_unrolled(model, h0, x, reverse, output_axis, weights):
    params = {t.name: torch.tensor(numpy_helper.to_array(t), requires_grad=True) for t in model.graph.initializer}
    h = torch.tensor(h0)
    steps = range(T - 1, -1, -1) if reverse else range(T)
    ys = []
    for t in steps:
        h = torch.tanh(torch.tensor(x[t]) @ params["W"] + h @ params["U"])
        ys.append(h)
    ys = torch.stack(ys, dim=output_axis)
    loss = h.sum() + (ys * torch.tensor(weights)).sum()
    loss.backward()
    return h.detach().numpy(), ys.detach().numpy(), {k: v.grad.numpy() for k, v in params.items()}


@pytest.mark.parametrize("reverse, output_axis", [(0, 0), (1, 1)])
def test_scan_rnn_forward_and_gradients_equal_pytorch_unrolled(reverse, output_axis):
    model = _rnn_scan_model(reverse, output_axis)
    rng = np.random.default_rng(2)
    h0 = rng.standard_normal(H).astype("float32")
    x = rng.standard_normal((T, D)).astype("float32")
    weights = rng.standard_normal([T, H] if output_axis == 0 else [H, T]).astype("float32")
    scope = fg.Scope()
    program, feed_names, (h_last, ys) = import_model(model, scope)
    block = program.global_block()
    with fg.program_guard(program, fg.Program()):
        loss = fg.sum(h_last) + fg.sum(ys * fg.static.create_parameter(list(weights.shape), "float32", name="c"))
        params_grads = fg.append_backward(loss)
    scope["c"] = weights
    grads = {p.name: g for p, g in params_grads if p.name in ("W", "U")}
    got = fg.Executor().run(program, feed={"h0": h0, "x": x},
                            fetch_list=[h_last, ys, grads["W"], grads["U"]], scope=scope)
    want_h, want_ys, want_grads = _torch_unrolled(model, h0, x, reverse, output_axis, weights)
    np.testing.assert_allclose(got[0], want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want_ys, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want_grads["W"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[3], want_grads["U"], rtol=1e-4, atol=1e-5)
    assert any(op.type == "while" for op in block.ops)


def test_loop_scan_outputs_with_a_trip_count_fed_at_run_time():
    """The scan output grows a row per step: one program serves every trip count."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc", "x"], ["acc_next"]),
         helper.make_node("Mul", ["acc_next", "acc_next"], ["row"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_next", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("row", TensorProto.FLOAT, [2])])
    loop = helper.make_node("Loop", ["n", "", "acc0"], ["acc_final", "rows"], body=body)
    graph = helper.make_graph([loop], "g", [helper.make_tensor_value_info("n", TensorProto.INT64, []),
                                            helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [2]),
                                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("acc_final", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("rows", TensorProto.FLOAT, [None, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    scope = fg.Scope()
    program, _, fetch_vars = import_model(model, scope)
    acc0, x = np.array([1.0, 2.0], "float32"), np.array([0.5, -1.0], "float32")
    for n in (3, 6):
        acc, rows = fg.Executor().run(program, feed={"n": np.array(n), "acc0": acc0, "x": x},
                                      fetch_list=fetch_vars, scope=scope)
        sums = acc0 + x * np.arange(1, n + 1)[:, None]
        np.testing.assert_allclose(acc, sums[-1])
        np.testing.assert_allclose(rows, sums ** 2)
