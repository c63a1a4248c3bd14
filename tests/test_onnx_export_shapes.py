"""onnx.export of eager code with dynamic axes: shape reads (`t.shape[0]`) become run-time sizes
(Shape, Gather) where they are a whole value or a reshape entry, are refused elsewhere, and
dynamic_axes keys name inputs and outputs as PyTorch's do. onnxruntime runs the models at
sizes other than the example's; NumPy (or PyTorch for the key spellings) gives the answer."""
import os
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

import fluidgrad as fg  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402
from fluidgrad.onnx import export, import_model  # noqa: E402
from fluidgrad.onnx.errors import OnnxExportError  # noqa: E402

EXAMPLE = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)


def _run(tmp_path, fn, inputs, dynamic_axes, others):
    path = os.fspath(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "not checked" warning: the second trace ran
        model = export(fn, path, [fg.to_tensor(x) for x in inputs], dynamic_axes=dynamic_axes)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(session.get_inputs(), others)}
    return model, session.run(None, feeds)


@pytest.mark.parametrize("batch", [1, 5])
def test_shape_reads_of_a_dynamic_batch_follow_the_batch(tmp_path, batch):
    def fn(t):
        flat = t.reshape([t.shape[0], t.shape[1] * t.shape[2]])
        return fg.sum(flat, axis=0) / t.shape[0], flat * 2.0

    other = np.random.default_rng(batch).normal(size=(batch, 3, 4)).astype(np.float32)
    model, (mean, flat) = _run(tmp_path, fn, [EXAMPLE], {0: [0]}, [other])
    np.testing.assert_allclose(mean, other.reshape(batch, 12).mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flat, other.reshape(batch, 12) * 2, rtol=1e-6)
    assert {"Shape", "Gather"} <= {node.op_type for node in model.graph.node}
    flat_out = model.graph.output[1].type.tensor_type.shape.dim
    assert flat_out[0].dim_param and flat_out[1].dim_value == 12   # the followed axis is dynamic


def test_a_shape_read_of_a_fixed_axis_stays_a_constant(tmp_path):
    def fn(t):
        return t.reshape([t.shape[0], -1]) / t.shape[2]

    model, (got,) = _run(tmp_path, fn, [EXAMPLE], {0: [0]}, [EXAMPLE[:1]])
    np.testing.assert_allclose(got, EXAMPLE[:1].reshape(1, 12) / 4, rtol=1e-6)


def test_two_inputs_sharing_a_dynamic_batch(tmp_path):
    def fn(x, w):
        return fg.matmul(x, w) / x.shape[0]

    x, w = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    _, (got,) = _run(tmp_path, fn, [x, w], {"x": [0]}, [np.ones((6, 3), np.float32), w])
    np.testing.assert_allclose(got, np.full((6, 2), 3 / 6), rtol=1e-6)


@pytest.mark.parametrize("fn, what", [
    (lambda t: t * (1.0 / t.shape[0] ** 2), "op scale"),                     # a count not linear in the size
    (lambda t: sum(t[i] for i in range(t.shape[0])), "ops change"),           # a loop over the batch
    (lambda t: t + fg.to_tensor(np.ones((t.shape[0], 1, 1), np.float32)), "constant Tensor"),
])
def test_a_shape_read_that_cannot_follow_the_batch_is_refused(tmp_path, fn, what):
    with pytest.raises(OnnxExportError, match=f"shape.*{what}"):
        export(fn, os.fspath(tmp_path / "m.onnx"), [fg.to_tensor(EXAMPLE)], dynamic_axes={0: [0]})


def test_a_product_of_sizes_is_traced_again_with_the_axis_unknown(tmp_path):
    """The second trace cannot write reshape's `t.shape[0] * 3`; traced with the batch -1, the
    size is computed when the model runs (and checked against the function at two sizes)."""
    other = np.random.default_rng(1).normal(size=(5, 3, 4)).astype(np.float32)
    _, (got,) = _run(tmp_path, lambda t: t.reshape([t.shape[0] * 3, 4]), [EXAMPLE], {0: [0]}, [other])
    np.testing.assert_array_equal(got, other.reshape(15, 4))


def test_without_dynamic_axes_shape_reads_are_the_example_sizes(tmp_path):
    _, (got,) = _run(tmp_path, lambda t: t * (1.0 / t.shape[0]), [EXAMPLE], None, [EXAMPLE])
    np.testing.assert_allclose(got, EXAMPLE / 2, rtol=1e-6)


@pytest.mark.parametrize("keys", [
    {"x": {0: "batch"}},              # the argument name, axes named (torch.onnx.export's form)
    {"x": [0], "out": [0]},           # argument name + a name that is no output: refused below
    {0: [0]}, {-2: [0]},              # indices, inputs first
])
def test_dynamic_axes_keys(tmp_path, keys):
    def flatten(x):
        return fg.flatten(x, 1)

    other = np.ones((5, 3, 4), np.float32)
    if "out" in keys:
        with pytest.raises(ValueError, match="'out' names no input or output.*argument name \\['x'\\]"):
            _run(tmp_path, flatten, [EXAMPLE], keys, [other])
        return
    model, (got,) = _run(tmp_path, flatten, [EXAMPLE], keys, [other])
    np.testing.assert_array_equal(got, torch.flatten(torch.tensor(other), 1).numpy())
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param


def test_dynamic_axes_of_a_layer_use_its_forward_argument_names(tmp_path):
    layer = fg.nn.Linear(4, 2)
    other = np.ones((7, 4), np.float32)
    _, (got,) = _run(tmp_path, layer, [EXAMPLE[0]], {"x": [0]}, [other])
    np.testing.assert_allclose(got, layer(fg.to_tensor(other)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("keys, pattern", [
    ({5: [0]}, "key 5 names no input"),
    ({True: [0]}, "key True names no input"),
    ({0: [3]}, r"\[3\] names an axis outside the 3 axes"),
])
def test_bad_dynamic_axes_are_refused(tmp_path, keys, pattern):
    with pytest.raises(ValueError, match=pattern):
        export(lambda t: t * 2.0, os.fspath(tmp_path / "m.onnx"), [fg.to_tensor(EXAMPLE)], dynamic_axes=keys)


def test_a_function_that_cannot_run_at_another_size_warns(tmp_path):
    w = fg.to_tensor(np.ones((4, 2), np.float32))
    with pytest.warns(UserWarning, match="not checked"):   # axis 2 meets w's fixed 4
        export(lambda t: fg.matmul(t, w), os.fspath(tmp_path / "m.onnx"), [fg.to_tensor(EXAMPLE)],
               dynamic_axes={0: [2]})


def test_setitem_on_the_input_exports_with_a_dynamic_batch(tmp_path):
    def clamp_first_feature(x):
        x[:, 0] = 1.0
        return x * 2.0

    rng = np.random.default_rng(0)
    example, batch3 = rng.standard_normal((2, 5)).astype("float32"), rng.standard_normal((3, 5)).astype("float32")
    path = tmp_path / "setitem.onnx"
    export(clamp_first_feature, path, [fg.to_tensor(example)], dynamic_axes={0: [0]})
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got, = session.run(None, {session.get_inputs()[0].name: batch3})
    np.testing.assert_array_equal(got, clamp_first_feature(fg.to_tensor(batch3)).numpy())


# Ops whose exporter reads its input's shape (Resize sizes, ConstantOfShape, Expand): every axis
# that follows the dynamic batch is written unknown, so onnxruntime and the importer follow it.
def _layer(layer):
    layer.eval()
    return layer


FOLLOWING_THE_BATCH = {
    "nearest_to_a_size": (lambda x: F.interpolate(x, size=[5, 7], mode="nearest"), (2, 3, 4, 4)),
    "bilinear_align_corners": (lambda x: F.interpolate(x, size=[5, 7], mode="bilinear", align_corners=True),
                               (2, 3, 4, 4)),
    "bicubic_to_a_size": (lambda x: F.interpolate(x, size=[5, 7], mode="bicubic"), (2, 3, 4, 4)),
    "linear_1d": (lambda x: F.interpolate(x, size=[9], mode="linear", data_format="NCW"), (2, 3, 6)),
    "trilinear": (lambda x: F.interpolate(x, size=[3, 4, 5], mode="trilinear", data_format="NCDHW"),
                  (2, 2, 3, 3, 3)),
    "nearest_3d_scale": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest", data_format="NCDHW"),
                         (2, 2, 2, 2, 2)),
    "var_over_features": (lambda x: fg.var(x, axis=[1, 2], keepdim=True), (2, 3, 4)),
    "std_biased": (lambda x: fg.std(x, axis=1, unbiased=False), (2, 3, 4)),
    "zeros_and_full_like": (lambda x: fg.zeros_like(x) + fg.full_like(x, 2.0) * x, (2, 3, 4)),
    "where_zeros_like": (lambda x: fg.where(x > 0, x, fg.zeros_like(x)), (2, 3, 4)),
    "normalize": (lambda x: F.normalize(x, axis=-1), (2, 3, 4)),
    "group_norm": (_layer(fg.nn.GroupNorm(1, 3)), (2, 3, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(FOLLOWING_THE_BATCH))
def test_ops_reading_their_input_shape_follow_a_dynamic_batch(tmp_path, name):
    fn, shape = FOLLOWING_THE_BATCH[name]
    rng = np.random.default_rng(0)
    example, batch3 = rng.normal(size=shape).astype(np.float32), rng.normal(size=(3,) + shape[1:]).astype(np.float32)
    want = fn(fg.to_tensor(batch3)).numpy()
    _, (got,) = _run(tmp_path, fn, [example], {0: [0]}, [batch3])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    scope = fg.Scope()
    program, feeds, fetches = import_model(os.fspath(tmp_path / "model.onnx"), scope)
    again, = fg.Executor().run(program, feed={feeds[0]: batch3}, fetch_list=fetches, scope=scope)
    np.testing.assert_allclose(again, want, rtol=1e-5, atol=1e-5)
