"""Scan inputs and outputs of `while` (`static.control_flow.while_loop_scan`): step i reads row i of
each scan input and gives one row per scan output, stacked after the initial rows. Values and
gradients against PyTorch running the same Python loop and against central differences
(float64), eager mode against static mode, ONNX export through onnxruntime, bad input, and the
point of it all: training through the dynamic-length RNN loop takes memory linear in the length."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.framework.program as program_module
from fluidgrad import nn, static
from fluidgrad.static.control_flow import while_loop_scan
from fluidgrad.testing import check_program_grad

T, B, D, H = 5, 3, 4, 2


def _feed(rng, steps=T):
    return {"x": rng.normal(size=(steps, B, D)), "h0": rng.normal(size=(B, H)),
            "W": rng.normal(size=(D, H)), "U": rng.normal(size=(H, H)) / 2, "first": rng.normal(size=(2, B, H))}


def _loop(v, steps):
    """h = tanh(x_i W + h U) over the rows of x; rows out: h * x_i[:, :H]; two initial rows."""
    def body(i, h, x_i):
        h = fg.tanh(fg.matmul(x_i, v["W"]) + fg.matmul(h, v["U"]))
        return [i + 1, h], [h * fg.slice(x_i, [1], [0], [H])]

    (_, h), (rows,) = while_loop_scan(lambda i, h: i < steps, body, [fg.full([1], 0, "int64"), v["h0"]],
                                      [v["first"]], [v["x"]])
    return h, rows


def _torch_loop(feed, steps):
    t = {k: torch.tensor(a, requires_grad=True) for k, a in feed.items()}
    h, rows = t["h0"], [t["first"]]
    for i in range(steps):
        h = torch.tanh(t["x"][i] @ t["W"] + h @ t["U"])
        rows.append((h * t["x"][i][:, :H])[None])
    return t, h, torch.cat(rows)


def _static(feed, steps, fetch_grads=True):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        v = {k: static.data(k, [-1] + list(a.shape[1:]) if k == "x" else list(a.shape), "float64")
             for k, a in feed.items()}
        for var in v.values():
            var.stop_gradient = False
        weights = static.data("weights", [-1, B, H], "float64")
        h, rows = _loop(v, fg.full([1], steps, "int64"))
        loss = fg.sum(rows * weights) + fg.sum(h * h)
        grads = fg.gradients([loss], list(v.values())) if fetch_grads else []
    return main, [h, rows, loss], grads


def test_values_and_gradients_match_torch(rng):
    feed = _feed(rng)
    weights = rng.normal(size=(T + 2, B, H))
    main, outs, grads = _static(feed, T)
    values = fg.Executor().run(main, feed={**feed, "weights": weights}, fetch_list=outs + grads)
    t, h, rows = _torch_loop(feed, T)
    loss = (rows * torch.tensor(weights)).sum() + (h * h).sum()
    loss.backward()
    for got, want in zip(values[:3], (h, rows, loss)):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-10)
    for name, got in zip(feed, values[3:]):
        np.testing.assert_allclose(got, t[name].grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"d loss / d {name}")


def test_a_loop_over_fewer_steps_than_rows_gives_the_rest_zero_gradient(rng):
    feed = _feed(rng)
    weights = rng.normal(size=(2 + 2, B, H))
    main, outs, grads = _static(feed, 2)
    values = fg.Executor().run(main, feed={**feed, "weights": weights}, fetch_list=outs + grads)
    t, h, rows = _torch_loop(feed, 2)
    ((rows * torch.tensor(weights)).sum() + (h * h).sum()).backward()
    np.testing.assert_allclose(values[1], rows.detach().numpy(), rtol=1e-10)
    x_grad = values[3 + list(feed).index("x")]
    np.testing.assert_allclose(x_grad, t["x"].grad.numpy(), rtol=1e-9, atol=1e-12)
    assert not x_grad[2:].any()


def test_gradients_match_central_differences(rng):
    feed = _feed(rng, steps=3)

    def build(v):
        h, rows = _loop(v, fg.full([1], 3, "int64"))
        return [h, fg.reshape(rows, [3 + 2, B, H])]

    check_program_grad(build, feed, rtol=1e-6, atol=1e-8)


def test_no_step_gives_the_initial_rows_and_their_gradient(rng):
    feed = _feed(rng)
    weights = rng.normal(size=(2, B, H))
    main, outs, grads = _static(feed, 0)
    h, rows, _, *values = fg.Executor().run(main, feed={**feed, "weights": weights}, fetch_list=outs + grads)
    np.testing.assert_array_equal(rows, feed["first"])
    np.testing.assert_array_equal(h, feed["h0"])
    got = dict(zip(feed, values))
    np.testing.assert_array_equal(got["first"], weights)
    assert not got["x"].any() and not got["W"].any()


def test_eager_mode_runs_the_same_loop(rng, monkeypatch):
    feed = _feed(rng)
    main, outs, _ = _static(feed, T, fetch_grads=False)
    want = fg.Executor().run(main, feed={**feed, "weights": np.ones((T + 2, B, H))}, fetch_list=outs[:2])
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    tensors = {k: fg.to_tensor(a, stop_gradient=False) for k, a in feed.items()}
    h, rows = _loop(tensors, fg.to_tensor(np.array([T])))
    np.testing.assert_allclose(h.numpy(), want[0], rtol=1e-12)
    np.testing.assert_allclose(rows.numpy(), want[1], rtol=1e-12)
    (fg.sum(rows) + fg.sum(h * h)).backward()
    t, th, trows = _torch_loop(feed, T)
    (trows.sum() + (th * th).sum()).backward()
    for name, tensor in tensors.items():
        np.testing.assert_allclose(tensor.grad.numpy(), t[name].grad.numpy(), rtol=1e-9, atol=1e-12)


def test_onnx_export_runs_in_onnxruntime_at_any_length(rng, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    feed = {k: a.astype("float32") for k, a in _feed(rng).items()}
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        v = {k: static.data(k, [-1, -1, D] if k == "x" else list(a.shape), "float32") for k, a in feed.items()}
        steps = fg.slice(fg.shape(v["x"]), [0], [0], [1])
        h, rows = _loop(v, steps)
    fg.onnx.export_program(tmp_path / "scan.onnx", list(v.values()), [h, rows], program=main)
    session = ort.InferenceSession(str(tmp_path / "scan.onnx"), providers=["CPUExecutionProvider"])
    for steps in (0, 1, 4):
        run_feed = {**feed, "x": feed["x"][:steps]}
        want = fg.Executor().run(main, feed=run_feed, fetch_list=[h, rows])
        got = session.run(None, run_feed)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- bad input
def test_a_body_giving_the_wrong_number_of_rows_is_refused():
    x0 = static.data("x0", [2], "float32")
    with pytest.raises(ValueError, match="while_loop_scan: body gave 2 rows for 1 scan outputs"):
        while_loop_scan(lambda i: i < 3, lambda i: ([i + 1], [x0, x0]), [fg.full([1], 0, "int64")],
                        [fg.unsqueeze(x0, [0])])


def test_initial_rows_of_another_shape_are_refused():
    x0 = static.data("x0", [2], "float32")
    with pytest.raises(ValueError, match=r"op while: ScanInit .*shape \[1, 3\].* must be rows of the scanned"):
        while_loop_scan(lambda i: i < 3, lambda i: ([i + 1], [x0]), [fg.full([1], 0, "int64")],
                        [static.data("first", [1, 3], "float32")])


def test_more_steps_than_rows_of_a_scan_input_is_a_clear_error():
    x = static.data("x", [-1, 2], "float32")
    _, (rows,) = while_loop_scan(lambda i: i < 3, lambda i, x_i: ([i + 1], [x_i * 2.0]),
                                 [fg.full([1], 0, "int64")], [static.data("first", [0, 2], "float32")], [x])
    with pytest.raises(Exception, match="while: step 2 reads row 2 of the scan input .* which has 2 rows"):
        fg.Executor().run(feed={"x": np.ones((2, 2), "float32"), "first": np.ones((0, 2), "float32")},
                          fetch_list=[rows])


# ---------------------------------------------------------------- what it is for
def _traced_peak_of_a_training_step(layer, length):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        out, _ = layer(static.data("x", [2, -1, 3], "float32"))
        loss = fg.mean(out * out)
        grads = fg.gradients([loss], main.all_parameters())
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    x = np.random.default_rng(0).standard_normal((2, length, 3)).astype("float32")
    exe.run(main, feed={"x": x}, fetch_list=grads, scope=scope)
    tracemalloc.start()
    try:
        exe.run(main, feed={"x": x}, fetch_list=grads, scope=scope)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_training_through_the_rnn_loop_takes_memory_linear_in_the_length(monkeypatch):
    """Appending each step's output to a loop-carried buffer kept every step's copy for the
    gradient: four times the length took about ten times the memory. Now about four."""
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    layer = nn.LSTM(3, 32)
    short, long = (_traced_peak_of_a_training_step(layer, n) for n in (60, 240))
    assert long < 5.5 * short, f"T=60: {short} bytes, T=240: {long} bytes"
