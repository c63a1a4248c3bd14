"""squeeze of a 0-D tensor, as PyTorch: returned as it is for no axis, axis 0 or axis -1 (in a
Program, in eager mode and in ONNX); any other axis, or axis 0 twice, is an error naming the
0-D input and the range torch gives."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.dispatch import append_static_op

_ACCEPTED = [None, 0, -1, [0], [-1], []]


def _torch(axis):
    x = torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
    y = x.squeeze() if axis is None else x.squeeze(tuple(axis) if isinstance(axis, list) else axis)
    (y * 3.0).backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("axis", _ACCEPTED, ids=repr)
def test_static_squeeze_of_a_0d_variable_is_torchs(axis):
    x = fg.static.data("x", [], "float64")
    x.stop_gradient = False
    y = fg.squeeze(x, axis)
    assert y.shape == ()
    grad, = fg.static.gradients([y * 3.0], [x])
    got, got_grad = fg.Executor().run(feed={"x": np.float64(2.5)}, fetch_list=[y, grad])
    want, want_grad = _torch(axis)
    assert got.shape == want.shape == ()
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got_grad, want_grad)


@pytest.mark.parametrize("axes", [[0], [-1], []], ids=repr)
def test_the_squeeze_op_takes_a_0d_input_in_a_program_and_eagerly(axes, monkeypatch):
    x = fg.static.data("x", [], "float32")
    y = append_static_op("squeeze", {"X": x}, {"axes": axes})
    got, = fg.Executor().run(feed={"x": np.float32(4.0)}, fetch_list=[y])
    assert y.shape == () and got.shape == () and got == 4.0
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    eager = fg.eager.eager_apply("squeeze", {"X": fg.to_tensor(np.float32(4.0))}, {"axes": axes})
    assert tuple(eager.shape) == () and float(eager.numpy()) == 4.0


@pytest.mark.parametrize("axes, torch_axis", [([1], 1), ([-2], -2), ([0, -1], (0, -1)), ([0, 0], (0, 0))],
                         ids=repr)
def test_squeeze_of_a_0d_variable_refuses_where_torch_does(axes, torch_axis):
    with pytest.raises((IndexError, RuntimeError)):
        torch.tensor(2.0).squeeze(torch_axis)
    x = fg.static.data("x0d", [], "float32")
    with pytest.raises(Exception, match=r"squeeze: .*x0d \(shape \[\], float32\), a 0-D tensor"):
        append_static_op("squeeze", {"X": x}, {"axes": axes})
    with pytest.raises((IndexError, ValueError), match="squeeze"):
        fg.squeeze(x, axes)


def test_squeeze_of_a_0d_value_exports_to_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from fluidgrad.onnx import export_program
    x = fg.static.data("x", [], "float32")
    y = append_static_op("squeeze", {"X": x}, {"axes": [0]}) * 2.0
    path = str(tmp_path / "m.onnx")
    export_program(path, [x], [y], program=fg.static.default_main_program())
    session = ort.InferenceSession(path)
    got, = session.run(None, {"x": np.asarray(1.5, "float32")})
    assert got.shape == () and got == 3.0
