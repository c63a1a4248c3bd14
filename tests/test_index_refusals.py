"""Negative indices: refused where torch refuses them (index_select, gather, scatter, one_hot, ...)
with an error naming the op, the index, its valid range and, in a program, the variables; counted
from the end where torch counts them (x[i], take, put_, take_along_dim, index_fill). Reshapes of
empty tensors as torch's; scatter_reduce and put against torch, in both modes, with their errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.executor import Executor, Scope
from fluidgrad.framework.errors import IndexRangeError
from fluidgrad.static import data

_W = np.arange(12.0).reshape(4, 3)
_COLUMN = np.array([[-1], [0], [0], [0]])


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _run_static(fn, *arrays):
    """fn on data Variables named in0, in1, ..., run by the Executor."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        out = fn(*[data(f"in{i}", a.shape, a.dtype.name) for i, a in enumerate(arrays)])
    return Executor().run(main, feed={f"in{i}": a for i, a in enumerate(arrays)}, fetch_list=[out], scope=Scope())[0]


# name -> (call on (module-ish values), x, index, op named, axis, size)
_REFUSED = {
    "index_select": (lambda x, i: fg.index_select(x, i, axis=0), _W, np.array([2, -1]), "gather", 0, 4),
    "x.index_select(0, i)": (lambda x, i: x.index_select(0, i), _W, np.array([-1]), "gather", 0, 4),
    "gather(x, i) (Paddle's)": (lambda x, i: fg.gather(x, i), _W, np.array([-4]), "gather", 0, 4),
    "x.gather(1, i) (torch's)": (lambda x, i: x.gather(1, i), _W, _COLUMN, "take_along_axis", 1, 3),
    "take_along_axis": (lambda x, i: fg.take_along_axis(x, i, 1), _W, _COLUMN, "take_along_axis", 1, 3),
    "put_along_axis": (lambda x, i: fg.put_along_axis(x, i, 1.0, 1), _W, _COLUMN, "put_along_axis", 1, 3),
    "x.scatter(1, i, 1.0)": (lambda x, i: x.scatter(1, i, 1.0), _W, _COLUMN, "put_along_axis", 1, 3),
    "x.scatter_add(1, i, x)": (lambda x, i: x.scatter_add(1, i, x), _W, _COLUMN, "put_along_axis", 1, 3),
    "x.scatter_reduce(1, i, x, 'amax')": (lambda x, i: x.scatter_reduce(1, i, x, "amax"), _W, _COLUMN,
                                          "scatter_reduce", 1, 3),
    "x.index_add(0, i, rows)": (lambda x, i: x.index_add(0, i, x[:1]), _W, np.array([-2]), "put_along_axis", 0, 4),
    "x.index_copy(0, i, rows)": (lambda x, i: x.index_copy(0, i, x[:1]), _W, np.array([-2]), "put_along_axis", 0, 4),
    "scatter(x, i, rows) (Paddle's)": (lambda x, i: fg.scatter(x, i, x[:1]), _W, np.array([-1]), "scatter", 0, 4),
    "one_hot": (lambda x, i: fg.nn.functional.one_hot(i, 3), _W, np.array([1, -1]), "one_hot", 1, 3),
}


@pytest.mark.parametrize("call", sorted(_REFUSED))
def test_negative_index_is_refused_in_eager_mode_with_the_op_index_and_range(call, eager):
    fn, x, index, op, axis, size = _REFUSED[call]
    bad = int(index.min())
    with pytest.raises(IndexError, match=rf"{op}: index {bad} is out of range for axis {axis} of size {size}: "
                                         rf".* must lie in \[0, {size}\); a negative index does not count"):
        fn(fg.to_tensor(x), fg.to_tensor(index))


@pytest.mark.parametrize("call", sorted(_REFUSED))
def test_negative_index_is_refused_when_a_program_runs_naming_the_variables(call):
    fn, x, index, op, axis, size = _REFUSED[call]
    with pytest.raises(IndexRangeError, match=rf"\({op}, forward op.*index {int(index.min())} is out of range "
                                              rf"for axis {axis} of size {size}.*\[0, {size}\).*\[inputs .*\(shape"):
        _run_static(fn, x, index)


def test_the_same_programs_run_with_indices_in_range():
    """The refusal is of the value, not of the program: index 3 of 4 is read, not -1."""
    got = _run_static(lambda x, i: fg.index_select(x, i, axis=0), _W, np.array([3, 0]))
    np.testing.assert_array_equal(got, _W[[3, 0]])


_PAIR = np.array([-1, 1])
_COUNTED_FROM_THE_END = {   # torch counts a negative index from the end in these (t: the module's to-tensor)
    "x[i]": lambda m, t, x: x[t(_PAIR)],
    "x[-1]": lambda m, t, x: x[-1],
    "take(x, i)": lambda m, t, x: m.take(x, t(_PAIR)),
    "take_along_dim(x, i, 1)": lambda m, t, x: m.take_along_dim(x, t(_COLUMN), 1),
    "x.index_fill(0, i, 5.0)": lambda m, t, x: x.index_fill(0, t(_PAIR), 5.0),
    "x.put(i, v)": lambda m, t, x: x.put(t(_PAIR), t(np.array([7.0, 8.0]))),
    "x.put(i, v, accumulate=True)": lambda m, t, x: x.put(t(_PAIR), t(np.array([7.0, 8.0])), accumulate=True),
}


@pytest.mark.parametrize("call", sorted(_COUNTED_FROM_THE_END))
def test_negative_indices_count_from_the_end_where_torch_counts_them(call, eager):
    expected = _COUNTED_FROM_THE_END[call](torch, torch.tensor, torch.tensor(_W)).numpy()
    got = _COUNTED_FROM_THE_END[call](fg, fg.to_tensor, fg.to_tensor(_W)).numpy()
    np.testing.assert_array_equal(got, expected)


def test_setitem_with_a_negative_index_tensor_counts_from_the_end(eager):
    x, reference = fg.to_tensor(_W.copy()), torch.tensor(_W.copy())
    x[fg.to_tensor(np.array([-1]))] = 7.0
    reference[torch.tensor([-1])] = 7.0
    np.testing.assert_array_equal(x.numpy(), reference.numpy())


def test_an_index_beyond_the_end_still_names_the_whole_range(eager):
    with pytest.raises(IndexError, match=r"gather: index -5 is out of range for axis 0 of size 4 "
                                         r"\(Index must lie in \[-4, 4\)\)"):
        fg.to_tensor(_W)[fg.to_tensor(np.array([-5]))]


def test_onnx_gather_still_counts_from_the_end():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [4, 3]),
                                            helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    program, feeds, fetches = fg.onnx.import_model(model, scope=Scope())
    got = Executor().run(program, feed={"x": _W, "i": np.array([-1, 0])}, fetch_list=fetches, scope=Scope())[0]
    np.testing.assert_array_equal(got, _W[[-1, 0]])
    assert onnx is not None


# ---------------------------------------------------------------- reshape of empty tensors
_EMPTY = {"[0, 3] -> [3, 0]": ((0, 3), (3, 0)), "[0, 3] -> [3, -1]": ((0, 3), (3, -1)),
          "[0, 3] -> [-1]": ((0, 3), (-1,)), "[0, 3] -> [3, 0, 0]": ((0, 3), (3, 0, 0)),
          "[3, 0] -> [0, 5]": ((3, 0), (0, 5)), "[0, 3] -> [0, 3]": ((0, 3), (0, 3))}


@pytest.mark.parametrize("case", sorted(_EMPTY))
def test_reshape_of_an_empty_tensor_gives_torchs_shape_in_both_modes(case, eager):
    source, target = _EMPTY[case]
    expected = tuple(torch.zeros(source).reshape(target).shape)
    assert tuple(fg.zeros(list(source)).reshape(list(target)).shape) == expected
    with fg.program_guard(fg.Program(), fg.Program()):
        assert tuple(fg.reshape(data("x", list(source), "float32"), list(target)).shape) == expected


def test_reshape_refuses_a_minus_one_next_to_a_zero_of_an_empty_tensor(eager):
    with pytest.raises(RuntimeError, match="ambiguous"):
        torch.zeros(0, 3).reshape(0, -1)
    with pytest.raises(ValueError, match=r"reshape.*\[0, 3\].*to \[0, -1\].*the -1 could be any size"):
        fg.zeros([0, 3]).reshape([0, -1])


def test_reshape_zero_still_copies_a_size_paddles_way(eager):
    assert tuple(fg.zeros([2, 3]).reshape([0, -1]).shape) == (2, 3)
    assert tuple(fg.zeros([2, 0, 3]).reshape([0, -1]).shape) == (2, 0)


# ---------------------------------------------------------------- scatter_reduce and put
_X, _SRC = np.array([[1.0, 4.0, 3.0, 7.0]]), np.array([[5.0, 5.0, 2.0, 6.0]])   # a tie of two Src entries
_INDEX = np.array([[1, 1, 0, 3]])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_matches_torch_with_gradients_in_both_modes(reduce, include_self, eager):
    def run(m, x, src, index):
        return x.scatter_reduce(1, index, src, reduce, include_self=include_self)
    x, src = torch.tensor(_X, requires_grad=True), torch.tensor(_SRC, requires_grad=True)
    expected = run(torch, x, src, torch.tensor(_INDEX))
    expected_grads = torch.autograd.grad((expected * torch.arange(1.0, 5.0)).sum(), [x, src])
    fx, fsrc = fg.to_tensor(_X, stop_gradient=False), fg.to_tensor(_SRC, stop_gradient=False)
    got = run(fg, fx, fsrc, fg.to_tensor(_INDEX))
    grads = fg.grad([fg.sum(got * fg.to_tensor(np.arange(1.0, 5.0)))], [fx, fsrc])
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy())
    for g, e in zip(grads, expected_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy())
    static = _run_static(lambda a, b, i: run(fg, a, b, i), _X, _SRC, _INDEX)
    np.testing.assert_allclose(static, expected.detach().numpy())


def test_amax_gradient_without_self_goes_whole_to_the_entries_that_took_part(eager):
    """x[1] = 5 equals the max of the Src entries reduced into it but is excluded: torch 2.13 still
    counts it in the share (Src's gradient 1.0 of 2.0, X's zeroed: 1.0 of the output's 2.0 lost);
    here the entries that took part share all of it, as the numeric gradient of each side says."""
    x, src, index = np.array([1.0, 5.0]), np.array([5.0, 2.0]), np.array([1, 1])
    fx, fsrc = fg.to_tensor(x, stop_gradient=False), fg.to_tensor(src, stop_gradient=False)
    got = fx.scatter_reduce(0, fg.to_tensor(index), fsrc, "amax", include_self=False)
    grads = fg.grad([fg.sum(got * fg.to_tensor(np.array([1.0, 2.0])))], [fx, fsrc])
    np.testing.assert_array_equal(got.numpy(), [1.0, 5.0])
    np.testing.assert_array_equal(grads[0].numpy(), [1.0, 0.0])
    np.testing.assert_array_equal(grads[1].numpy(), [2.0, 0.0])


def test_integer_scatter_reduce_mean_floors_as_torch(eager):
    x, src, index = np.array([-1, -6, 4]), np.array([0, 0, 7]), np.array([0, 0, 2])
    expected = torch.tensor(x).scatter_reduce(0, torch.tensor(index), torch.tensor(src), "mean")
    got = fg.to_tensor(x).scatter_reduce(0, fg.to_tensor(index), fg.to_tensor(src), "mean")
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_scatter_reduce_reads_src_where_index_is_and_has_torchs_top_level_and_in_place_forms(eager):
    src = np.arange(8.0).reshape(2, 4)
    index = np.array([[0], [2]])
    expected = torch.zeros(2, 3, dtype=torch.float64).scatter_reduce_(1, torch.tensor(index), torch.tensor(src),
                                                                      "sum")
    x = fg.zeros([2, 3], dtype="float64")
    assert x.scatter_reduce_(1, fg.to_tensor(index), fg.to_tensor(src), "sum") is x
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    top = fg.scatter_reduce(fg.zeros([2, 3], dtype="float64"), 1, fg.to_tensor(index), fg.to_tensor(src), "sum")
    np.testing.assert_array_equal(top.numpy(), expected.numpy())


_SCATTER_REDUCE_ERRORS = {
    "reduce='max'": (lambda x, i, s: x.scatter_reduce(0, i, s, "max"), ValueError, r"reduce must be one of"),
    "src a number": (lambda x, i, s: x.scatter_reduce(0, i, 2.0, "sum"), TypeError, r"src must be a tensor"),
    "float index": (lambda x, i, s: x.scatter_reduce(0, s, s, "sum"), TypeError, r"index must be an integer"),
    "src of another dtype": (lambda x, i, s: x.scatter_reduce(0, i, fg.cast(s, "float32"), "sum"), TypeError,
                             r"Src must have the dtype of X"),
    "index longer than src": (lambda x, i, s: x.scatter_reduce(0, fg.concat([i, i]), s, "sum"), ValueError,
                              r"index .*\[6\].* is larger than src"),
}


@pytest.mark.parametrize("case", sorted(_SCATTER_REDUCE_ERRORS))
def test_scatter_reduce_errors_name_the_argument(case, eager):
    fn, kind, message = _SCATTER_REDUCE_ERRORS[case]
    with pytest.raises(kind, match=message):
        fn(fg.zeros([4], dtype="float64"), fg.to_tensor(np.array([0, 1, 1])), fg.to_tensor(np.ones(3)))


def test_put_matches_torch_with_gradients(eager):
    index = np.array([[3], [-1]])
    for accumulate in (False, True):
        x, v = torch.zeros(2, 2, dtype=torch.float64, requires_grad=True), torch.tensor([[1.0], [2.0]],
                                                                                        dtype=torch.float64,
                                                                                        requires_grad=True)
        expected = x.put(torch.tensor(index), v, accumulate=accumulate)
        expected_grads = torch.autograd.grad((expected * torch.arange(4.0).reshape(2, 2)).sum(), [x, v])
        fx = fg.to_tensor(np.zeros((2, 2)), stop_gradient=False)
        fv = fg.to_tensor(np.array([[1.0], [2.0]]), stop_gradient=False)
        got = fx.put(fg.to_tensor(index), fv, accumulate=accumulate)
        grads = fg.grad([fg.sum(got * fg.to_tensor(np.arange(4.0).reshape(2, 2)))], [fx, fv])
        np.testing.assert_array_equal(got.numpy(), expected.detach().numpy())
        for g, e in zip(grads, expected_grads):
            np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_put_in_place_and_in_a_program(eager):
    x = fg.zeros([3], dtype="float64")
    assert x.put_(fg.to_tensor(np.array([0, 0])), fg.to_tensor(np.array([1.0, 2.0])), accumulate=True) is x
    np.testing.assert_array_equal(x.numpy(), [3.0, 0.0, 0.0])
    got = _run_static(lambda a, i, v: fg.put(a, i, v), np.zeros((2, 2)), np.array([-1, 0]), np.array([4.0, 5.0]))
    np.testing.assert_array_equal(got, [[5.0, 0.0], [0.0, 4.0]])


_PUT_ERRORS = {
    "source of 3 for index of 2": (lambda x: x.put_(fg.to_tensor(np.array([0, 1])), fg.ones([3], dtype="float64")),
                                   ValueError, r"put: source .* as many entries as index"),
    "source of another dtype": (lambda x: x.put_(fg.to_tensor(np.array([0])), fg.ones([1])), TypeError,
                                r"put: source .*float32.* must have the dtype of x"),
    "index beyond the end": (lambda x: x.put_(fg.to_tensor(np.array([3])), fg.ones([1], dtype="float64")),
                             IndexError, r"put_along_axis: index 3 is out of range for axis 0 of size 3"),
}


@pytest.mark.parametrize("case", sorted(_PUT_ERRORS))
def test_put_errors(case, eager):
    fn, kind, message = _PUT_ERRORS[case]
    with pytest.raises(kind, match=message):
        fn(fg.zeros([3], dtype="float64"))
