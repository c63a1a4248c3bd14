"""An ONNX model with Loop (an RNN written as a loop, with a scan output) and If, imported and
differentiated by append_backward: gradients equal PyTorch's unrolled computation."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import import_model  # noqa: E402

T, B, D, H = 4, 3, 5, 6


def _rnn_model(weights):
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["x_t"], axis=0),
         helper.make_node("MatMul", ["x_t", "W"], ["xw"]),
         helper.make_node("MatMul", ["h_in", "U"], ["hu"]),
         helper.make_node("Add", ["xw", "hu"], ["pre0"]),
         helper.make_node("Add", ["pre0", "b"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["h_out"], ["h_scan"])],
        "rnn_step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [B, H])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [B, H]),
         helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, [B, H])])
    then_branch = helper.make_graph([helper.make_node("MatMul", ["h_T", "V"], ["y_then"])], "then", [],
                                    [helper.make_tensor_value_info("y_then", TensorProto.FLOAT, [B, 2])])
    else_branch = helper.make_graph([helper.make_node("MatMul", ["h_T", "V"], ["hv"]),
                                     helper.make_node("Tanh", ["hv"], ["y_else"])], "else", [],
                                    [helper.make_tensor_value_info("y_else", TensorProto.FLOAT, [B, 2])])
    nodes = [
        helper.make_node("Loop", ["steps", "true", "h0"], ["h_T", "hs"], body=body),
        helper.make_node("ReduceSum", ["h_T"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["y"], then_branch=then_branch, else_branch=else_branch),
    ]
    consts = {"steps": np.array(T, "int64"), "true": np.array(True), "zero": np.array(0, "float32")}
    initializers = [numpy_helper.from_array(v, k) for k, v in {**weights, **consts}.items()]
    graph = helper.make_graph(nodes, "rnn_if",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, B, D]),
                               helper.make_tensor_value_info("h0", TensorProto.FLOAT, [B, H])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, 2]),
                               helper.make_tensor_value_info("hs", TensorProto.FLOAT, [T, B, H])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _torch_unrolled(weights, x, h0):
    w = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    h = torch.tensor(h0)
    states = []
    for t in range(T):
        h = torch.tanh(torch.tensor(x[t]) @ w["W"] + h @ w["U"] + w["b"])
        states.append(h)
    y = h @ w["V"] if h.sum() > 0 else torch.tanh(h @ w["V"])
    loss = y.square().mean() + torch.stack(states).mean()
    loss.backward()
    return y.detach().numpy(), torch.stack(states).detach().numpy(), {k: t.grad.numpy() for k, t in w.items()}


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["then", "else"])
def test_loop_and_if_import_and_differentiate(sign):
    rng = np.random.default_rng(0)
    weights = {"W": rng.normal(size=(D, H)).astype("float32") * 0.5,
               "U": rng.normal(size=(H, H)).astype("float32") * 0.5,
               "b": np.full(H, 0.3 * sign, "float32"), "V": rng.normal(size=(H, 2)).astype("float32")}
    x = (rng.normal(size=(T, B, D)) * 0.1 + 0.5 * sign).astype("float32")
    h0 = np.full((B, H), 0.5 * sign, "float32")
    scope = fg.Scope()
    program, feeds, (y, hs) = import_model(_rnn_model(weights), scope)
    assert [op.type for op in program.global_block().ops].count("while") == 1
    assert any(op.type == "conditional_block" for op in program.global_block().ops)
    with fg.program_guard(program, fg.Program()):
        loss = fg.mean(fg.square(y)) + fg.mean(hs)
        params_grads = fg.append_backward(loss)
    grads = {p.name: g for p, g in params_grads}
    assert set(grads) == set(weights)
    names = sorted(weights)
    values = fg.Executor().run(program, feed={"x": x, "h0": h0}, fetch_list=[y, hs] + [grads[n] for n in names],
                               scope=scope)
    want_y, want_hs, want_grads = _torch_unrolled(weights, x, h0)
    np.testing.assert_allclose(values[0], want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values[1], want_hs, rtol=1e-5, atol=1e-6)
    for name, got in zip(names, values[2:]):
        np.testing.assert_allclose(got, want_grads[name], rtol=1e-4, atol=1e-6, err_msg=name)
