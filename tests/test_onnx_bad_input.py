"""Untrusted model files: clear errors, nothing half-loaded, no reads outside the model's folder,
no allocation beyond the data present."""
from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import import_model  # noqa: E402
from fluidgrad.onnx.errors import OnnxImportError, UnsafeModelError, UnsupportedOnnxOpError  # noqa: E402


def _model(nodes=None, initializers=(), opset=17, inputs=None):
    nodes = nodes or [helper.make_node("Add", ["x", "w"], ["y"], name="add0")]
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _weights(name="w", shape=(2, 3)):
    return numpy_helper.from_array(np.arange(np.prod(shape), dtype="float32").reshape(shape), name)


def test_a_good_model_imports(tmp_path):
    path = tmp_path / "good.onnx"
    onnx.save(_model(initializers=[_weights()]), path)
    scope = fg.Scope()
    program, feeds, fetches = import_model(path, scope)
    x = np.ones((2, 3), "float32")
    out, = fg.Executor().run(program, feed={"x": x}, fetch_list=fetches, scope=scope)
    np.testing.assert_array_equal(out, x + np.arange(6, dtype="float32").reshape(2, 3))
    assert feeds == ["x"] and "w" in scope and program.global_block().var("w").trainable


def test_not_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("this is a shopping list, not a model\n" * 20)
    with pytest.raises(OnnxImportError, match="not an ONNX model"):
        import_model(path)


def test_truncated(tmp_path):
    data = _model(initializers=[_weights(shape=(64, 64))]).SerializeToString()
    for cut in (len(data) // 2, len(data) - 7, 40):
        path = tmp_path / f"cut{cut}.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(OnnxImportError, match="truncated|not a valid|needs"):
            import_model(path)


def test_missing_file(tmp_path):
    with pytest.raises(OnnxImportError, match="no such model file"):
        import_model(tmp_path / "absent.onnx")


def test_unsupported_op_names_type_node_and_opset():
    node = helper.make_node("StringNormalizer", ["x"], ["y"], name="normalise_words")
    model = _model([node], inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])])
    with pytest.raises(UnsupportedOnnxOpError, match=r"normalise_words.*StringNormalizer.*opset 17"):
        import_model(model, fg.Scope())


def test_opset_newer_than_supported():
    model = _model(initializers=[_weights()], opset=onnx.defs.onnx_opset_version() + 1)
    with pytest.raises(OnnxImportError, match="newer than"):
        import_model(model, fg.Scope())


def test_nothing_half_loaded_into_the_scope():
    """The initializers of a model whose last node fails never reach the scope."""
    nodes = [helper.make_node("Add", ["x", "w"], ["h"], name="ok"),
             helper.make_node("StringNormalizer", ["h"], ["y"], name="bad")]
    scope = fg.Scope()
    with pytest.raises(UnsupportedOnnxOpError):
        import_model(_model(nodes, initializers=[_weights()]), scope)
    assert "w" not in scope and len(scope) == 0


def _external_model(tmp_path, location, shape=(2, 3), length=None):
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=list(shape))
    tensor.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": "0"}
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(_model(initializers=[tensor]).SerializeToString())
    return path


def test_external_data_inside_the_folder_loads(tmp_path):
    path = _external_model(tmp_path, "weights.bin")
    (path.parent / "weights.bin").write_bytes(np.arange(6, dtype="float32").tobytes())
    scope = fg.Scope()
    import_model(path, scope)
    np.testing.assert_array_equal(scope["w"], np.arange(6, dtype="float32").reshape(2, 3))


@pytest.mark.parametrize("location", ["../secret.bin", "sub/../../secret.bin", "/etc/passwd"])
def test_external_data_outside_the_folder_is_refused(tmp_path, location):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 24)
    path = _external_model(tmp_path, location)
    scope = fg.Scope()
    with pytest.raises(UnsafeModelError, match="outside|leaves|absolute"):
        import_model(path, scope)
    assert len(scope) == 0


def test_external_data_symlink_out_is_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 24)
    path = _external_model(tmp_path, "link.bin")
    os.symlink(tmp_path / "secret.bin", path.parent / "link.bin")
    with pytest.raises(UnsafeModelError, match="outside"):
        import_model(path, fg.Scope())


def test_external_data_shorter_than_declared_is_refused(tmp_path):
    """A tensor declaring 10**12 values over a 24-byte file: refused before any allocation."""
    path = _external_model(tmp_path, "weights.bin", shape=(1000000, 1000000))
    (path.parent / "weights.bin").write_bytes(b"\0" * 24)
    with pytest.raises(UnsafeModelError, match="holds only|needs"):
        import_model(path, fg.Scope())


def test_external_data_length_disagreeing_with_shape_is_refused(tmp_path):
    path = _external_model(tmp_path, "weights.bin", length=8)
    (path.parent / "weights.bin").write_bytes(b"\0" * 24)
    with pytest.raises(UnsafeModelError, match="declares 8 bytes"):
        import_model(path, fg.Scope())


def test_inline_tensor_with_less_data_than_declared_is_refused():
    tensor = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], np.zeros(6, "float32").tobytes(), raw=True)
    tensor.dims[:] = [100000, 100000]
    with pytest.raises(UnsafeModelError, match="needs 40000000000 bytes"):
        import_model(_model(initializers=[tensor]), fg.Scope())


def test_external_data_in_a_proto_without_a_folder_is_refused(tmp_path):
    path = _external_model(tmp_path, "weights.bin")
    with pytest.raises(UnsafeModelError, match="not a file"):
        import_model(onnx.load(path, load_external_data=False), fg.Scope())
