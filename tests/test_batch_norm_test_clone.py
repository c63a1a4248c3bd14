"""F.batch_norm's use_global_stats in a static program and its clone(for_test=True), as Paddle 2:
given explicitly False, the batch statistics stay in the test clone (Paddle's
trainable_statistics); not given, the clone normalises with the running statistics; True uses
the running ones everywhere. The ONNX export (of the clone) follows the same rule."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

F = fg.nn.functional
_X = np.random.default_rng(0).normal(2.0, 3.0, (6, 3, 4, 4)).astype("float32")


def _build(use_global_stats, training):
    """A program of F.batch_norm over running statistics away from the batch's."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3, 4, 4], "float32")
        running_mean = fg.static.create_parameter([3], "float32", default_initializer=fg.nn.initializer.Constant(-1.0))
        running_var = fg.static.create_parameter([3], "float32", default_initializer=fg.nn.initializer.Constant(4.0))
        weight = fg.static.create_parameter([3], "float32", default_initializer=fg.nn.initializer.Constant(1.5))
        bias = fg.static.create_parameter([3], "float32", default_initializer=fg.nn.initializer.Constant(0.5))
        for p in (running_mean, running_var):
            p.stop_gradient = True
        y = F.batch_norm(x, running_mean, running_var, weight, bias, training=training,
                         use_global_stats=use_global_stats)
    scope = fg.Scope()
    fg.Executor().run(startup, scope=scope)
    return main, x, y, scope


def _expected(batch_statistics, x=_X):
    running_mean, running_var = torch.full((3,), -1.0), torch.full((3,), 4.0)
    return torch.nn.functional.batch_norm(torch.from_numpy(x), running_mean, running_var, torch.full((3,), 1.5),
                                          torch.full((3,), 0.5), training=batch_statistics, eps=1e-5).numpy()


@pytest.mark.parametrize("use_global_stats, training, in_main, in_clone", [
    (False, True, True, True),      # explicit False: the batch's, also in the test clone
    (False, False, True, True),
    (None, True, True, False),      # not given: training's batch statistics, the clone's running ones
    (None, False, False, False),
    (True, True, False, False),     # True: the running statistics everywhere
])
def test_statistics_in_the_program_and_its_test_clone(use_global_stats, training, in_main, in_clone):
    main, x, y, scope = _build(use_global_stats, training)
    test = main.clone(for_test=True)
    got_clone = fg.Executor().run(test, feed={"x": _X}, fetch_list=[y.name], scope=scope)[0]
    np.testing.assert_allclose(got_clone, _expected(in_clone), rtol=1e-5, atol=1e-5)
    got_main = fg.Executor().run(main, feed={"x": _X}, fetch_list=[y.name], scope=scope)[0]
    np.testing.assert_allclose(got_main, _expected(in_main), rtol=1e-5, atol=1e-5)


def test_gradient_with_batch_statistics_in_test_mode_matches_torch():
    main, x, y, scope = _build(False, False)
    with fg.program_guard(main, fg.Program()):
        x.stop_gradient = False
        loss = fg.sum(y * y)
        grads = fg.gradients([loss], [x])
    got = fg.Executor().run(main, feed={"x": _X}, fetch_list=grads, scope=scope)[0]
    tx = torch.from_numpy(_X).requires_grad_()
    out = torch.nn.functional.batch_norm(tx, None, None, torch.full((3,), 1.5), torch.full((3,), 0.5), training=True)
    (out * out).sum().backward()
    np.testing.assert_allclose(got, tx.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_onnx_export_keeps_batch_statistics_with_a_dynamic_batch(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from fluidgrad.onnx import export_program  # optional dependency
    for use_global_stats, batch_statistics in ((False, True), (None, False)):
        main, x, y, scope = _build(use_global_stats, True)
        path = tmp_path / "bn.onnx"
        export_program(path, [x], [y], program=main, scope=scope)
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for batch in (2, 6):
            got = session.run(None, {"x": _X[:batch]})[0]
            np.testing.assert_allclose(got, _expected(batch_statistics, _X[:batch]), rtol=1e-4, atol=1e-4)
