"""Sizes unknown while tracing (an InputSpec's None) read as `x.shape[0]`: computed at run time
(framework/runtime_dims.py, static/runtime_shape.py), through jit.save / jit.load and ONNX export."""
import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.framework.runtime_dims import RuntimeDim, TracedSize


@pytest.fixture(params=[True, False], ids=["eager", "in a program guard"])
def mode(request, monkeypatch):
    if request.param:
        import fluidgrad.framework.program as program_module
        monkeypatch.setattr(program_module, "_guard_depth", 0)
    return request.param


class _ByBatch(fg.nn.Layer):
    """A conv net whose forward reads the batch size the way `how` says."""

    def __init__(self, how):
        super().__init__()
        self.how = how
        self.conv, self.fc = fg.nn.Conv2D(1, 2, 3, padding=1), fg.nn.Linear(2 * 4 * 4, 3)

    def forward(self, x):
        h = fg.nn.functional.relu(self.conv(x))
        return _FORWARDS[self.how](self, x, h)


_FORWARDS = {
    "reshape [n, -1]": lambda m, x, h: m.fc(h.reshape([x.shape[0], -1])),
    "reshape(n, 32) + zeros": lambda m, x, h: m.fc(h.reshape(x.shape[0], 32)) + fg.zeros([x.shape[0], 3]),
    "reshape [n * 2, 16]": lambda m, x, h: h.reshape([x.shape[0] * 2, 16]).sum(axis=1),
    "reshape [2 * n, -1]": lambda m, x, h: h.reshape([2 * x.shape[0], -1]).mean(axis=1),
    "reshape [n // 2, -1]": lambda m, x, h: h.reshape([x.shape[0] // 2, -1]).mean(axis=1),
    "reshape [-1, n - 1 + 1, 32]": lambda m, x, h: h.reshape([-1, x.shape[0] - 1 + 1, 32]).sum(axis=2),
    "full([n + 1, 2])": lambda m, x, h: fg.full([x.shape[0] + 1, 2], 2.5) * 1.0,
    "ones of h.shape": lambda m, x, h: fg.ones(h.shape) + h,
    "x / n": lambda m, x, h: m.fc(h.flatten(1)) / x.shape[0],
    "expand_as": lambda m, x, h: fg.expand_as(m.fc.bias.reshape([1, 3]), m.fc(h.flatten(1))),
    "expand [n, 3]": lambda m, x, h: fg.expand(m.fc.bias.reshape([1, 3]), [x.shape[0], 3]),
}


@pytest.mark.parametrize("how", sorted(_FORWARDS))
def test_jit_save_reads_the_batch_at_run_time(tmp_path, how, mode):
    layer = _ByBatch(how)
    layer.eval()
    path = str(tmp_path / "model")
    fg.jit.save(layer, path, input_spec=[fg.jit.InputSpec([None, 1, 4, 4], "float32")])
    loaded = fg.jit.load(path)
    for batch in (4, 6, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 1, 4, 4)).astype("float32")
        got = loaded(fg.to_tensor(x))
        with fg.static.program_guard(fg.Program(), fg.Program()) if not mode else _nothing():
            want = _eager_forward(layer, x)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _eager_forward(layer, x):
    import fluidgrad.framework.program as program_module
    saved = program_module._guard_depth
    program_module._guard_depth = 0
    try:
        return layer(fg.to_tensor(x)).numpy()
    finally:
        program_module._guard_depth = saved


def test_a_run_time_size_exports_to_onnx_as_shape_reads(tmp_path, mode):
    ort = pytest.importorskip("onnxruntime")
    layer = _ByBatch("reshape(n, 32) + zeros")
    layer.eval()
    path = str(tmp_path / "model")
    fg.jit.save(layer, path, input_spec=[fg.jit.InputSpec([None, 1, 4, 4], "float32", name="x")])
    scope = fg.Scope()
    program, feeds, fetches = fg.static.load_inference_model(path, fg.Executor(), scope=scope)
    onnx_path = str(tmp_path / "model.onnx")
    from fluidgrad.onnx import export_program
    model = export_program(onnx_path, [program.global_block().var(n) for n in feeds], fetches,
                                   program=program, scope=scope)
    types = {node.op_type for node in model.graph.node}
    assert {"Shape", "Concat", "Reshape", "ConstantOfShape"} <= types
    session = ort.InferenceSession(onnx_path)
    x = np.random.default_rng(0).standard_normal((7, 1, 4, 4)).astype("float32")
    got, = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, _eager_forward(layer, x), rtol=1e-5, atol=1e-6)


_REFUSED = {
    "x.shape[0] / 2": (lambda x: x.reshape([x.shape[0] / 2, -1]), "/ 2"),
    "x.shape[0] % 2": (lambda x: x.reshape([x.shape[0] % 2, -1]), "% 2"),
    "x.shape[0] ** 2": (lambda x: x.reshape([x.shape[0] ** 2, -1]), "** 2"),
    "x.shape[0] * 1.5": (lambda x: x.reshape([x.shape[0] * 1.5, -1]), "* 1.5"),
}


@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_arithmetic_a_traced_size_cannot_carry_is_named(tmp_path, name, mode):
    function, what = _REFUSED[name]
    with pytest.raises(TypeError, match=r"x\.shape\[0\]") as caught:
        fg.jit.save(function, str(tmp_path / "f"), input_spec=[fg.jit.InputSpec([None, 4], "float32", name="x")])
    assert what in str(caught.value) and "run" in str(caught.value)


def test_runtime_dims_appear_only_while_tracing_and_only_for_unknown_sizes(tmp_path):
    x = fg.static.data("x", [-1, 3], "float32")
    assert type(x.shape[0]) is int and x.shape == (-1, 3)
    seen = []

    def function(t):
        seen.append(t.shape)
        return t * 2.0

    fg.jit.save(function, str(tmp_path / "f"), input_spec=[fg.jit.InputSpec([None, 3])])
    dim, known = seen[0]
    assert isinstance(dim, TracedSize) and type(known) is int and known == 3
    assert isinstance(dim.library_form(), RuntimeDim) and dim.library_form() == -1   # (what fluidgrad's code reads)
    assert (dim * 2 + 1).describe().endswith(".shape[0] * 2) + 1)")


def test_the_shape_op_and_run_time_shape_inputs_build_and_run():
    x = fg.static.data("x", [-1, 2, 3], "float32")
    shape = fg.dispatch.append_static_op("shape", {"X": x}, {})
    assert shape.shape == (3,) and shape.dtype == "int64"
    out = fg.dispatch.append_static_op("reshape", {"X": x, "ShapeTensor": shape}, {"shape": [-1, 2, 3]})
    filled = fg.dispatch.append_static_op("fill_constant", {"ShapeTensor": shape},
                                          {"shape": [-1, 2, 3], "value": 1.5, "dtype": "float32"})
    assert out.shape == (-1, 2, 3) and filled.shape == (-1, 2, 3)
    data = np.arange(24, dtype="float32").reshape(4, 2, 3)
    got = fg.Executor().run(feed={"x": data}, fetch_list=[shape, out, filled])
    np.testing.assert_array_equal(got[0], [4, 2, 3])
    np.testing.assert_array_equal(got[1], data)
    np.testing.assert_array_equal(got[2], np.full((4, 2, 3), 1.5, "float32"))


def test_a_shape_tensor_of_the_wrong_rank_or_dtype_is_named():
    x = fg.static.data("x", [-1, 6], "float32")
    bad = fg.static.data("s", [3], "float32")
    with pytest.raises(Exception, match="ShapeTensor"):
        fg.dispatch.append_static_op("reshape", {"X": x, "ShapeTensor": bad}, {"shape": [-1, -1]})
    three = fg.static.data("t", [3], "int64")
    with pytest.raises(Exception, match="ShapeTensor"):
        fg.dispatch.append_static_op("fill_constant", {"ShapeTensor": three},
                                     {"shape": [-1, 2], "value": 0.0, "dtype": "float32"})


def test_gradients_flow_through_a_run_time_reshape_of_a_loaded_model(tmp_path):
    layer = _ByBatch("reshape [n, -1]")
    path = str(tmp_path / "model")
    fg.jit.save(layer, path, input_spec=[fg.jit.InputSpec([None, 1, 4, 4], "float32")])
    loaded = fg.jit.load(path)
    import fluidgrad.framework.program as program_module
    saved, program_module._guard_depth = program_module._guard_depth, 0
    try:
        x = fg.to_tensor(np.random.default_rng(1).standard_normal((3, 1, 4, 4)).astype("float32"),
                         stop_gradient=False)
        loaded(x).sum().backward()
        x_eager = fg.to_tensor(x.numpy().copy(), stop_gradient=False)
        layer(x_eager).sum().backward()
    finally:
        program_module._guard_depth = saved
    np.testing.assert_allclose(x.grad.numpy(), x_eager.grad.numpy(), rtol=1e-5, atol=1e-6)
