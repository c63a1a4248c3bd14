"""x[...] = v exported to ONNX (set_value: fluidgrad/onnx/export_indexing.py; index arrays and
masks: scatter_nd): onnxruntime on the file, with a batch of another size than the traced one,
and the file imported back, both give fluidgrad's values; a sliced axis of unknown size is
refused naming the op and the axis."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from fluidgrad.onnx import export, export_program, import_model  # noqa: E402
from fluidgrad.onnx.errors import OnnxExportError  # noqa: E402

R = np.random.default_rng(41)


def _writes(x):
    y = x * 2.0
    y[:, 0] = 5.0                                   # an integer after the batch
    y[..., 1:3] = fg.to_tensor(np.array([-1.0, -2.0], "float32"))
    y[:, [3, 1], 2:] = 7.0                          # an index array between slices
    y[:, :, np.array([True, False, True, False, True])] = 0.5   # a mask on a later axis
    y[:, 2, None] = fg.to_tensor(np.full((1, 5), 9.0, "float32"))   # None: value with an axis of size 1
    return y


def _run_exported(path, model, feeds):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: feeds[k] for i, k in zip(model.graph.input, feeds)})[0]


def test_eager_code_with_assignments_exports_with_a_dynamic_batch(tmp_path):
    traced_x = R.uniform(-1, 1, (2, 4, 5)).astype("float32")
    model = export(_writes, tmp_path / "w.onnx", [fg.to_tensor(traced_x)], dynamic_axes={0: [0]})
    onnx.checker.check_model(model, full_check=True)
    types = {n.op_type for n in model.graph.node}
    assert "ScatterND" in types
    x = R.uniform(-1, 1, (3, 4, 5)).astype("float32")   # another batch size than traced
    want = _writes(fg.to_tensor(x)).numpy()
    np.testing.assert_array_equal(_run_exported(tmp_path / "w.onnx", model, {"x": x}), want)
    scope = fg.Scope()
    program, feeds, fetches = import_model(tmp_path / "w.onnx", scope)
    again = fg.Executor().run(program, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)[0]
    np.testing.assert_array_equal(again, want)


@pytest.mark.parametrize("item, vshape", [
    ((slice(None), 1), (5,)), ((Ellipsis, slice(None, None, 2)), (3,)), ((slice(None), slice(3, 0, -2), -1), ()),
    ((slice(None), 0, slice(1, 4)), (1, 3)), ((slice(None), slice(1, 1)), ()), ((slice(None),), (4, 5))])
def test_static_set_value_round_trips(tmp_path, item, vshape):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 4, 5], "float64")
        v = fg.static.data("v", list(vshape), "float64")
        y = x * 1.0
        y[item] = v
    feeds = {"x": R.uniform(-1, 1, (3, 4, 5)), "v": R.uniform(-1, 1, vshape)}
    want = fg.Executor().run(main, feed=feeds, fetch_list=[y], scope=fg.Scope())[0]
    expected = feeds["x"].copy()
    expected[item] = feeds["v"]
    np.testing.assert_array_equal(want, expected)
    model = export_program(tmp_path / "s.onnx", [x, v], [y], program=main, scope=fg.Scope())
    np.testing.assert_array_equal(_run_exported(tmp_path / "s.onnx", model, feeds), want)


def test_a_sliced_axis_of_unknown_size_is_refused_naming_it(tmp_path):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 4], "float64")
        y = x * 1.0
        y[1:, 2] = 0.0
    with pytest.raises(OnnxExportError, match=r"set_value.*axis 0 of unknown size"):
        export_program(tmp_path / "r.onnx", [x], [y], program=main, scope=fg.Scope())


def test_expand_to_the_shape_of_a_tensor_with_a_dynamic_batch_imports_as_expand_as():
    """Expand(x, Shape(t)) (torch's x.expand_as(t), fluidgrad's expand_as) with t's batch unknown:
    a size-1 axis of x grows to a size known only when the program runs."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Shape", ["t"], ["t_shape"]), helper.make_node("Expand", ["x", "t_shape"], ["y"])],
        "expand_like", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, 3]),
                        helper.make_tensor_value_info("t", TensorProto.DOUBLE, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["batch", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    scope = fg.Scope()
    program, feeds, fetches = import_model(model, scope)
    x, t = R.uniform(size=(1, 3)), R.uniform(size=(4, 3))
    got = fg.Executor().run(program, feed=dict(zip(feeds, [x, t])), fetch_list=fetches, scope=scope)[0]
    np.testing.assert_array_equal(got, np.broadcast_to(x, (4, 3)))
