"""First-hour Tensor habits against PyTorch, in both modes (review s6): `//` and `%` with their
reflected forms, `==` / `!=` elementwise, feeds keyed by Variables, and embedding refusing
negative ids."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.executor import Executor, Scope
from fluidgrad.static import data

from both_modes import compare_with_torch

INTS_X, INTS_Y = np.array([-7, -3, 0, 3, 7, -8]), np.array([2, 2, 3, -2, -2, 3])
FLOATS_X, FLOATS_Y = np.array([-7.5, -3.0, 0.25, 3.0, 7.0, -0.5]), np.array([2.0, 2.5, 3.0, -2.0, -1.5, 0.75])


def run_static(fn, *arrays):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        inputs = [data(f"in{i}", list(a.shape), a.dtype.name) for i, a in enumerate(arrays)]
        out = fn(*inputs)
    return Executor().run(main, feed={f"in{i}": a for i, a in enumerate(arrays)}, fetch_list=[out],
                          scope=Scope())[0]


def both_modes(fn, *arrays):
    eager = fn(*[fg.to_tensor(a) for a in arrays]).numpy()
    static = run_static(fn, *arrays)
    assert eager.dtype == static.dtype and eager.shape == static.shape
    np.testing.assert_array_equal(eager, static)
    return eager


# ---------------------------------------------------------------- // and %
BINARY = {
    "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "rfloordiv-scalar": lambda a, b: 7 // b, "rmod-scalar": lambda a, b: -7 % b,
    "floordiv-scalar": lambda a, b: a // 2, "mod-scalar": lambda a, b: a % 3,
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("x0, y0", [(INTS_X, INTS_Y), (FLOATS_X, FLOATS_Y)], ids=["int64", "float64"])
def test_floordiv_and_mod_operators_match_torch(name, x0, y0):
    fn = BINARY[name]
    got = both_modes(fn, x0, y0)
    want = fn(torch.tensor(x0), torch.tensor(y0)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_mod_gradient_matches_torch():
    compare_with_torch(lambda x, y: x % y, lambda x, y: x % y, {"x": FLOATS_X, "y": FLOATS_Y}, wrt=["x"])


# ---------------------------------------------------------------- feed keyed by a Variable
def test_feed_keyed_by_a_variable_or_its_name():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, w = data("x", [3], "float64"), data("w", [3], "float64")
        y = x * w
    got = Executor().run(main, feed={x: np.arange(3.0), "w": np.full(3, 2.0)}, fetch_list=[y], scope=Scope())[0]
    np.testing.assert_array_equal(got, np.arange(3.0) * 2)
    with pytest.raises(TypeError, match=r"feed keys must be variable names \(or Variables\), got int"):
        Executor().run(main, feed={0: np.ones(3)}, fetch_list=[y], scope=Scope())


# ---------------------------------------------------------------- embedding ids
@pytest.mark.parametrize("bad", [-1, -4, 4])
def test_embedding_refuses_ids_outside_the_table_in_both_modes(bad):
    ids = np.array([0, bad, 1])
    with pytest.raises(IndexError):  # PyTorch's own verdict on the same lookup
        TF.embedding(torch.tensor(ids), torch.zeros(4, 2))
    message = rf"lookup_table_v2 \(embedding\): Ids holds {bad}, outside \[0, 4\)"
    with pytest.raises(IndexError, match=message):
        fg.nn.Embedding(4, 2)(fg.to_tensor(ids))
    with pytest.raises(IndexError, match=message):
        run_static(lambda w, i: F.embedding(i, w), np.zeros((4, 2)), ids)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        out = fg.static.nn.embedding(data("ids", [3], "int64"), [4, 2])
    exe, scope = Executor(), Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(IndexError, match=message):
        exe.run(main, feed={"ids": ids}, fetch_list=[out], scope=scope)


@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding_with_repeated_ids_matches_torch_with_gradient(padding_idx):
    w, ids = np.random.default_rng(3).uniform(-1, 1, (4, 3)), np.array([[3, 0], [3, 1], [1, 1]])
    keep = 1.0 if padding_idx is None else torch.tensor(ids != padding_idx % 4)[..., None]
    compare_with_torch(lambda w, ids: F.embedding(ids, w, padding_idx=padding_idx),
                       lambda w, ids: TF.embedding(ids, w, padding_idx=padding_idx) * keep,
                       {"w": w, "ids": ids}, wrt=["w"])


# ---------------------------------------------------------------- == and !=
EQUALITY = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "eq-scalar": lambda a, b: a == 2,
    "ne-scalar": lambda a, b: a != 2, "scalar-eq": lambda a, b: 2 == a, "eq-broadcast": lambda a, b: a[None, :] == b[:, None],
}


@pytest.mark.parametrize("name", list(EQUALITY))
@pytest.mark.parametrize("a0, b0", [(np.array([0, 1, 2, 3]), np.array([0, 2, 2, 1])),
                                    (np.array([0.5, 2.0, np.nan, 2.0]), np.array([0.5, 1.0, np.nan, 2.0]))],
                         ids=["int64", "float64-nan"])
def test_equality_operators_compare_elementwise_in_both_modes(name, a0, b0):
    fn = EQUALITY[name]
    got = both_modes(fn, a0, b0)
    want = fn(torch.tensor(a0), torch.tensor(b0)).numpy()
    assert got.dtype == want.dtype == np.bool_
    np.testing.assert_array_equal(got, want)


def test_tensors_and_variables_stay_dict_keys_and_set_members_by_identity():
    a, twin = fg.to_tensor(np.array([1.0, 2.0])), fg.to_tensor(np.array([1.0, 2.0]))
    table = {a: "a", twin: "twin"}
    assert table[a] == "a" and table[twin] == "twin" and len({a, twin}) == 2
    assert a in {a} and twin not in {a}
    assert (a == None) is False and (a != None) is True  # noqa: E711  (PyTorch's answers)
    assert a in ["name", None, a]   # a list of other kinds falls back to identity
    with fg.program_guard(fg.Program(), fg.Program()):
        x, y = data("x", [2], "float64"), data("y", [2], "float64")
        assert {x: 1, y: 2}[y] == 2 and x in {x} and y not in {x}
        assert (x == None) is False and x in ["x", x]  # noqa: E711


def test_equality_in_a_bool_context_is_refused_as_in_torch():
    a, b = fg.to_tensor(np.array([1, 2])), fg.to_tensor(np.array([1, 3]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(torch.tensor([1, 2]) == torch.tensor([1, 3]))
    with pytest.raises((ValueError, RuntimeError), match="ambiguous"):
        bool(a == b)
    assert bool(fg.to_tensor(np.array(3)) == 3)
