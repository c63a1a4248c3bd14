"""ONNX sequences and optionals become Python lists of Variables (and EMPTY) at import: the
sequence ops are list operations, SequenceMap and a Loop over a sequence are unrolled, and
a sequence graph input is fed as its elements (the backend binds its length)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import backend, import_model  # noqa: E402
from fluidgrad.onnx.errors import ValueRequiredError  # noqa: E402


def _square_map_body():
    return helper.make_graph([helper.make_node("Mul", ["e", "e"], ["sq"])], "square",
                             [helper.make_tensor_value_info("e", TensorProto.FLOAT, [None, 2])],
                             [helper.make_tensor_value_info("sq", TensorProto.FLOAT, [None, 2])])


def test_split_map_concat_imports_and_differentiates():
    """x -> SplitToSequence -> SequenceMap(square) -> SequenceErase(last) -> ConcatFromSequence."""
    w = numpy_helper.from_array(np.arange(12, dtype="float32").reshape(6, 2) / 10, "w")
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"]),
             helper.make_node("SplitToSequence", ["xw", "sizes"], ["seq"], axis=0),
             helper.make_node("SequenceMap", ["seq"], ["squares"], body=_square_map_body()),
             helper.make_node("SequenceErase", ["squares"], ["kept"]),
             helper.make_node("SequenceLength", ["kept"], ["n"]),
             helper.make_node("ConcatFromSequence", ["kept"], ["y"], axis=0)]
    sizes = numpy_helper.from_array(np.array([1, 2, 3], dtype="int64"), "sizes")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2]),
                               helper.make_tensor_value_info("n", TensorProto.INT64, [])], [w, sizes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    scope = fg.Scope()
    program, _, (y, n) = import_model(model, scope)
    with fg.program_guard(program, fg.Program()):
        (grad,) = fg.gradients([fg.sum(y)], [program.global_block().var("w")])
    x = np.random.default_rng(0).random((6, 2)).astype("float32")
    got_y, got_n, got_grad = fg.Executor().run(program, feed={"x": x}, fetch_list=[y, n, grad], scope=scope)
    wv = numpy_helper.to_array(w)
    np.testing.assert_allclose(got_y, ((x * wv) ** 2)[:3], rtol=1e-6)
    assert int(got_n) == 2
    want = np.zeros_like(wv)
    want[:3] = 2 * (x * wv)[:3] * x[:3]
    np.testing.assert_allclose(got_grad, want, rtol=1e-5)


def _sequence_input_model():
    nodes = [helper.make_node("SequenceInsert", ["s", "t"], ["s2"]),
             helper.make_node("SequenceMap", ["s2"], ["squares"], body=_square_map_body()),
             helper.make_node("ConcatFromSequence", ["squares"], ["y"], axis=0, new_axis=1)]
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [None, 2]))
    graph = helper.make_graph(nodes, "g", [helper.make_value_info("s", seq_type),
                                           helper.make_tensor_value_info("t", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3, 2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_sequence_input_needs_its_length_and_the_backend_binds_it():
    model = _sequence_input_model()
    with pytest.raises(ValueRequiredError, match="graph input 's' is an ONNX sequence_type"):
        import_model(model, fg.Scope())
    rep = backend.prepare(model)
    rng = np.random.default_rng(1)
    t = rng.random((3, 2)).astype("float32")
    for length in (1, 3):
        s = [rng.random((3, 2)).astype("float32") for _ in range(length)]
        y, = rep.run({"s": s, "t": t})
        np.testing.assert_allclose(y, np.stack(s + [t]) ** 2, rtol=1e-6)


def test_optional_inputs_present_and_empty():
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"])]
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    graph = helper.make_graph(nodes, "g", [helper.make_value_info("o", opt_type)],
                              [helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
    rep = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    assert bool(rep.run({"o": np.ones(2, "float32")})[0])
    assert not bool(rep.run({"o": None})[0])


def test_an_if_giving_sequences_is_imported_per_condition_by_the_backend():
    def branch(name, values):
        return helper.make_graph(
            [helper.make_node("Constant", [], [f"{name}_c"], value=numpy_helper.from_array(np.array(values, "float32"))),
             helper.make_node("SequenceConstruct", [f"{name}_c", f"{name}_c"], [f"{name}_s"])], name, [],
            [helper.make_value_info(f"{name}_s", helper.make_sequence_type_proto(
                helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))])
    nodes = [helper.make_node("If", ["cond"], ["seq"], then_branch=branch("then", [1, 2]),
                              else_branch=branch("else", [3, 4])),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ValueRequiredError, match="condition, as the branches give sequences"):
        import_model(model, fg.Scope())
    rep = backend.prepare(model)
    np.testing.assert_array_equal(rep.run({"cond": np.array(True)})[0], [1, 2, 1, 2])
    np.testing.assert_array_equal(rep.run({"cond": np.array(False)})[0], [3, 4, 3, 4])
