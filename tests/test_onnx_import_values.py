"""Values an imported program fixes when it is built: shapes computed by the graph (folded, or
evaluated from constants), values fed as data (a clear error from import_model, bound by the
backend at run time; a Reshape's shape is read at run time instead), old opsets brought up by onnx.version_converter, and the training
update rules of ai.onnx.preview.training."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import backend, import_model  # noqa: E402
from fluidgrad.onnx.errors import ValueRequiredError  # noqa: E402


def _model(nodes, inputs, outputs, initializers=(), opset=17, domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    return helper.make_model(graph, opset_imports=imports)


def _run_imported(model, feed):
    scope = fg.Scope()
    program, feed_names, fetch_vars = import_model(model, scope)
    return fg.Executor().run(program, feed={n: feed[n] for n in feed_names}, fetch_list=fetch_vars, scope=scope)


def _repeats_fed_as_data():
    """y = Tile(x, Concat(Split(repeats)...)): the repeats, which fluidgrad's tile fixes when the
    program is built, are a graph input."""
    nodes = [helper.make_node("Split", ["repeats"], ["rows", "cols"], name="split_repeats", num_outputs=2),
             helper.make_node("Concat", ["rows", "cols"], ["target"], axis=0),
             helper.make_node("Tile", ["x", "target"], ["y"], name="tile_by_fed_repeats")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                          helper.make_tensor_value_info("repeats", TensorProto.INT64, [2])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], opset=18)


def test_import_model_names_the_node_and_the_graph_input_a_value_comes_from():
    with pytest.raises(ValueRequiredError, match=r"tile_by_fed_repeats.*graph input\(s\) 'repeats'") as info:
        import_model(_repeats_fed_as_data(), fg.Scope())
    assert info.value.graph_inputs == ["repeats"]


def test_backend_binds_fed_repeats_and_imports_once_per_value():
    rep = backend.prepare(_repeats_fed_as_data())
    x = np.arange(12, dtype="float32").reshape(2, 6)
    for repeats in ([1, 2], [2, 1], [1, 2], [3, 1]):
        y, = rep.run({"x": x, "repeats": np.array(repeats, dtype="int64")})
        np.testing.assert_array_equal(y, np.tile(x, repeats))
    assert len(rep._imports) == 3


def test_a_reshape_to_a_fed_shape_reads_it_at_run_time():
    """Reshape's shape computed from a graph input is the ShapeTensor of fluidgrad's reshape: one
    program serves every value."""
    nodes = [helper.make_node("Split", ["shape"], ["rows", "cols"], num_outputs=2),
             helper.make_node("Concat", ["rows", "cols"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                           helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], opset=18)
    scope = fg.Scope()
    program, feed_names, fetch_vars = import_model(model, scope)
    assert any(op.type == "reshape" and op.input("ShapeTensor") for op in program.global_block().ops)
    x = np.arange(12, dtype="float32").reshape(2, 6)
    for shape in ([3, 4], [4, -1], [12, 1], [0, 6]):
        y, = fg.Executor().run(program, feed={"x": x, "shape": np.array(shape, "int64")}, fetch_list=fetch_vars,
                               scope=scope)
        np.testing.assert_array_equal(y, ReferenceEvaluator(model).run(None, {"x": x, "shape": np.array(
            shape, "int64")})[0])
    rep = backend.prepare(model)
    for shape in ([3, 4], [4, 3]):
        rep.run({"x": x, "shape": np.array(shape, dtype="int64")})
    assert len(rep._imports) == 1


def test_a_shape_computed_from_constants_by_an_op_without_a_folder_is_evaluated():
    shape = numpy_helper.from_array(np.array([3, 4], dtype="int64"), "shape")
    nodes = [helper.make_node("Split", ["shape"], ["rows", "cols"], num_outputs=2),
             helper.make_node("Concat", ["cols", "rows"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], [shape], opset=18)
    x = np.random.rand(2, 6).astype("float32")
    y, = _run_imported(model, {"x": x})
    np.testing.assert_array_equal(y, x.reshape(4, 3))


def test_a_shape_from_a_trainable_initializer_is_never_folded_into_a_constant():
    """Gradients must reach a float initializer: a computation on it stays ops."""
    w = numpy_helper.from_array(np.array([2.0, 3.0], dtype="float32"), "w")
    nodes = [helper.make_node("Mul", ["w", "w"], ["ww"]), helper.make_node("Mul", ["x", "ww"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w])
    scope = fg.Scope()
    program, _, (y,) = import_model(model, scope)
    with fg.program_guard(program, fg.Program()):
        (grad,) = fg.gradients([fg.sum(y)], [program.global_block().var("w")])
    x = np.array([1.0, 5.0], dtype="float32")
    g, = fg.Executor().run(program, feed={"x": x}, fetch_list=[grad], scope=scope)
    np.testing.assert_allclose(g, 2 * x * np.array([2.0, 3.0]))


def test_an_opset_1_model_is_brought_up_by_the_version_converter():
    model = _model([helper.make_node("Not", ["x"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.BOOL, [3])],
                   [helper.make_tensor_value_info("y", TensorProto.BOOL, [3])], opset=1)
    model.ir_version = 3
    x = np.array([True, False, True])
    y, = _run_imported(model, {"x": x})
    np.testing.assert_array_equal(y, ~x)


@pytest.mark.parametrize("op, attrs, n_states", [
    ("Adagrad", {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.01}, 1),
    ("Momentum", {"alpha": 0.9, "beta": 0.1, "mode": "standard", "norm_coefficient": 0.01}, 1),
    ("Momentum", {"alpha": 0.9, "beta": 0.1, "mode": "nesterov", "norm_coefficient": 0.0}, 1),
    ("Adam", {"alpha": 0.9, "beta": 0.99, "epsilon": 1e-6, "norm_coefficient": 0.01,
              "norm_coefficient_post": 0.02}, 2),
])
@pytest.mark.parametrize("step", [0, 3])
def test_training_update_rules_equal_onnx_reference(op, attrs, n_states, step):
    rng = np.random.default_rng(0)
    n = 2
    names = ["R", "T"] + [f"{k}{i}" for k in ["X", "G", "V", "H"][:2 + n_states] for i in range(n)]
    outputs = [f"{k}{i}_new" for k in ["X", "V", "H"][:1 + n_states] for i in range(n)]
    node = helper.make_node(op, names, outputs, domain="ai.onnx.preview.training", **attrs)
    inputs = [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
              helper.make_tensor_value_info("T", TensorProto.INT64, [])] + \
             [helper.make_tensor_value_info(name, TensorProto.FLOAT, [3]) for name in names[2:]]
    model = _model([node], inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, [3]) for o in outputs],
                   domains=[("ai.onnx.preview.training", 1)])
    feed = {"R": np.array(0.1, dtype="float32"), "T": np.array(step, dtype="int64")}
    feed.update({name: rng.random(3).astype("float32") for name in names[2:]})
    expected = ReferenceEvaluator(model).run(None, feed)
    got = backend.prepare(model).run(feed)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
