"""Indexing and the selection / shape-building functions through the public API, in both modes,
against PyTorch: x[...], x[...] = v, IndexError for out-of-range indices (issue 10 item 2), and
functions whose op case alone does not cover their argument handling (nonzero, where, pad, ...)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.executor import Executor, Scope
from fluidgrad.framework import program as program_module
from fluidgrad.static import data
from fluidgrad.testing import check_grad

RNG = np.random.default_rng(11)
X34 = RNG.uniform(-1, 1, (3, 4))
X234 = RNG.uniform(-1, 1, (2, 3, 4))
X345 = RNG.uniform(-1, 1, (3, 4, 5))


def run_eager(fn, *arrays):
    out = fn(*[fg.to_tensor(a) for a in arrays])
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return [o.numpy() for o in outs]


def run_static(fn, *arrays, unknown_batch=False):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        inputs = [data(f"in{i}", ([-1] + list(a.shape[1:])) if unknown_batch else a.shape, a.dtype.name)
                  for i, a in enumerate(arrays)]
        out = fn(*inputs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return Executor().run(main, feed={f"in{i}": a for i, a in enumerate(arrays)}, fetch_list=outs, scope=Scope())


def both_modes(fn, *arrays):
    eager, static = run_eager(fn, *arrays), run_static(fn, *arrays)
    for e, s in zip(eager, static):
        assert e.dtype == s.dtype and e.shape == s.shape
        np.testing.assert_array_equal(e, s)
    return eager


def assert_matches(got, want):
    want = [w.detach().numpy() if isinstance(w, torch.Tensor) else np.asarray(w)
            for w in (want if isinstance(want, (list, tuple)) else [want])]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ x[...]
GETITEM = [
    (1,), (-1,), (slice(None, None, 2),), (slice(None, None, -1),), (slice(3, 0, -2),),
    (slice(-2, None), slice(None, None, -3)), (Ellipsis, 1), (None, 1, slice(1, 3)), (1, None, -1),
    (slice(None), [2, 0, 2]), ([1, -1],), (np.array([[0, 1], [2, 2]]),), (Ellipsis, None),
    (slice(5, 10),), (slice(None, None, 7), 3), ([0, 2], slice(None), 1), (1, slice(None), [0, 3]),
]


def torch_split(item, ndim):
    """PyTorch's reading of `item` as two NumPy indexings: its integers first (plain selects, on
    all axes), then the rest; so x[0, :, [1, 3]] keeps the list's axis in place (NumPy's own rule,
    counting the 0 as an index array, would put it first)."""
    items = list(item) + ([] if any(it is Ellipsis for it in item) else [Ellipsis])
    consumed = sum(it is not None and it is not Ellipsis for it in items)
    first, rest = [], []
    for it in items:
        if it is Ellipsis:
            first += [slice(None)] * (ndim - consumed)
            rest += [slice(None)] * (ndim - consumed)
        elif isinstance(it, int):
            first.append(it)
        else:
            first += [] if it is None else [slice(None)]
            rest.append(it)
    return tuple(first), tuple(rest)


@pytest.mark.parametrize("item", GETITEM, ids=[repr(i) for i in GETITEM])
def test_getitem_matches_numpy_in_both_modes_with_gradient(item):
    x = X345
    got = both_modes(lambda t: t[item], x)
    first, rest = torch_split(item, x.ndim)
    np.testing.assert_array_equal(got[0], x[first][rest])
    # the gradient (eager) is the scatter-add of the output gradient (NumPy's rule for `item` read as PyTorch does)
    t = fg.to_tensor(x, stop_gradient=False)
    w = RNG.uniform(0.5, 1.5, np.shape(x[first][rest]))
    fg.sum(t[item] * fg.to_tensor(w)).backward()
    expected = np.zeros_like(x)
    np.add.at(expected[first], rest, w)   # (expected[first] is a view: basic indexing)
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-12)


def test_getitem_boolean_mask_both_modes():
    mask = X34 > 0
    got = both_modes(lambda t, m: t[m], X34, mask)
    np.testing.assert_array_equal(got[0], X34[mask])
    got = run_eager(lambda t: t[t > 0.2], X34)
    np.testing.assert_array_equal(got[0], X34[X34 > 0.2])
    rows = np.array([True, False, True])
    np.testing.assert_array_equal(run_eager(lambda t: t[rows], X34)[0], X34[rows])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
                          st.none() | st.integers(-3, 3).filter(lambda s: s != 0)), min_size=1, max_size=3))
def test_random_strided_slices_match_numpy(bounds):
    x = X234
    item = tuple(slice(*b) for b in bounds)
    np.testing.assert_array_equal(run_eager(lambda t: t[item], x)[0], x[item])


def test_strided_slice_function_and_unknown_batch():
    fn = lambda t: fg.strided_slice(t, [0, 2], [2, -1], [-2**31, 0], [-1, -2])  # noqa: E731
    np.testing.assert_array_equal(both_modes(fn, X234)[0], X234[2::-1, :, -1:0:-2])
    got = run_static(lambda t: t[:, ::-1], X234, unknown_batch=True)[0]
    np.testing.assert_array_equal(got, X234[:, ::-1])


# ------------------------------------------------------------------ IndexError (issue 10 item 2)
@pytest.mark.parametrize("index", [-5, 4, 5, 100])
def test_out_of_range_integer_raises_index_error_in_both_modes(index):
    x = np.arange(4.0)
    with pytest.raises(IndexError, match=rf"index {index} is out of range for axis 0 of size 4"):
        fg.to_tensor(x)[index]
    with pytest.raises(IndexError, match=rf"index {index} is out of range for axis 0 of size 4"):
        run_static(lambda t: t[index], x)
    with pytest.raises(IndexError, match=rf"index {index} is out of range for axis 1 of size 4"):
        fg.to_tensor(X34)[0, index]


def test_out_of_range_on_an_axis_of_unknown_size_raises_when_run():
    with pytest.raises(IndexError, match=r"index 3 is out of range for axis 0 of size 3"):
        run_static(lambda t: t[3], X34, unknown_batch=True)
    np.testing.assert_array_equal(run_static(lambda t: t[-3], X34, unknown_batch=True)[0], X34[-3])


@pytest.mark.parametrize("fn, message", [
    (lambda t: fg.gather(t, fg.to_tensor(np.array([0, 3]))), r"gather: index 3 is out of range for axis 0 of size 3"),
    (lambda t: fg.gather(t, fg.to_tensor(np.array([-5])), axis=1), r"gather: index -5 .* axis 1 of size 4"),
    (lambda t: t[[0, 7]], r"index 7 is out of range for axis 0 of size 3"),
    (lambda t: fg.take_along_axis(t, fg.to_tensor(np.array([[4]])), 1), r"take_along_axis: index 4 .* axis 1 .* 4"),
    (lambda t: fg.gather_nd(t, fg.to_tensor(np.array([[1, -9]]))), r"gather_nd: index -9 .* axis 1 of size 4"),
    (lambda t: fg.index_select(t, fg.to_tensor(np.array([3])), axis=0), r"gather: index 3 .* axis 0 .* 3"),
    (lambda t: fg.scatter(t, fg.to_tensor(np.array([3])), t[:1]), r"scatter: index 3 .* axis 0 .* 3"),
    (lambda t: fg.one_hot(fg.to_tensor(np.array([1, -4])), 3), r"one_hot: index -4 .* size 3"),
])
def test_out_of_range_tensor_indices_raise_index_error(fn, message):
    with pytest.raises(IndexError, match=message):
        fn(fg.to_tensor(X34))


def test_static_gather_index_error_names_the_op():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, i = data("x", [3, 4], "float64"), data("i", [2], "int64")
        out = fg.gather(x, i)
    with pytest.raises(IndexError, match=r"op #\d+ \(gather.*index 9 is out of range for axis 0 of size 3"):
        Executor().run(main, feed={"x": X34, "i": np.array([0, 9])}, fetch_list=[out], scope=Scope())


# ------------------------------------------------------------------ x[...] = v
SETITEM = [(1, 5.0), ((slice(None), 0), np.arange(3.0)), ((slice(None, None, 2), slice(3, 0, -2)), 9.0),
           ((Ellipsis, -1), np.ones(3)), ((0, slice(1, 3)), np.array([2.0, 3.0])),
           (np.array([2, 0, 2]), np.arange(4.0)), (np.array([-1]), 7.0)]   # index_put (rows of axis 0)


@pytest.mark.parametrize("item, value", SETITEM, ids=[repr(s[0]) for s in SETITEM])
def test_setitem_eager_values_and_gradients_match_torch(item, value):
    x = fg.to_tensor(X34, stop_gradient=False)
    v = fg.to_tensor(np.asarray(value, dtype=np.float64), stop_gradient=False)
    y = x * 2.0
    y[item] = v
    fg.sum(y * y).backward()
    tx = torch.tensor(X34, requires_grad=True)
    tv = torch.tensor(np.asarray(value, dtype=np.float64), requires_grad=True)
    ty = tx * 2.0
    titem = item if not any(isinstance(i, slice) and (i.step or 1) < 0 for i in np.atleast_1d(item)) else None
    if titem is None:  # torch has no negative steps: numpy reference
        ref = X34 * 2.0
        ref[item] = value
        np.testing.assert_allclose(y.numpy(), ref)
        return
    ty[titem] = tv
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy())


@pytest.mark.parametrize("item, value", SETITEM, ids=[repr(s[0]) for s in SETITEM])
def test_setitem_static_equals_eager(item, value):
    def build(t):
        y = t * 2.0
        y[item] = value
        return y
    both_modes(build, X34)


def test_setitem_static_gradient_reads_the_old_value():
    """`y[0] = 1` after `w = y * y`: w's gradient uses y before the assignment."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = data("x", [3, 4], "float64")
        x.stop_gradient = False
        y = x * 1.0
        w = y * y
        y[0] = 1.0
        grad, = fg.gradients([fg.sum(w) + fg.sum(y)], [x])
    got = Executor().run(main, feed={"x": X34}, fetch_list=[grad], scope=Scope())[0]
    expected = 2 * X34 + 1
    expected[0] -= 1
    np.testing.assert_allclose(got, expected)


def test_setitem_with_mask_and_refusals():
    x = fg.to_tensor(X34.copy())
    x[x > 0] = 0.0
    np.testing.assert_array_equal(x.numpy(), np.where(X34 > 0, 0.0, X34))
    leaf = fg.to_tensor(X34, stop_gradient=False)
    with pytest.raises(RuntimeError, match="leaf Tensor"):
        leaf[0] = 1.0
    with fg.no_grad():
        leaf[0] = 1.0
    assert (leaf.numpy()[0] == 1).all()
    with fg.program_guard(fg.Program(), fg.Program()):
        p = fg.static.create_parameter([3], "float64")
        with pytest.raises(TypeError, match="parameter"):
            p[0] = 1.0


def test_setitem_through_an_index_array_with_other_indices_and_out_of_range():
    y = fg.to_tensor(X34) * 1.0
    y[np.array([0, 1]), 1:] = 1.0       # every pattern: tests/test_setitem.py
    want = X34.copy()
    want[np.array([0, 1]), 1:] = 1.0
    np.testing.assert_array_equal(y.numpy(), want)
    with pytest.raises(IndexError, match="out of range"):
        y[np.array([0, 3])] = 1.0


def test_setitem_after_use_in_eager_is_caught_at_backward():
    x = fg.to_tensor(X34, stop_gradient=False)
    y = x * 1.0
    z = y * y
    y[0] = 0.0
    with pytest.raises(RuntimeError):
        z.sum().backward()


# ------------------------------------------------------------------ functions with argument handling
def test_nonzero_and_where_forms():
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    got = both_modes(lambda t: fg.nonzero(t), x)
    assert_matches(got, torch.nonzero(torch.tensor(x)))
    got = both_modes(lambda t: fg.nonzero(t, as_tuple=True), x)
    assert_matches(got, torch.nonzero(torch.tensor(x), as_tuple=True))
    got = both_modes(lambda t: fg.where(t > 0), x)
    assert_matches(got, torch.where(torch.tensor(x) > 0))
    got = both_modes(lambda t: fg.where(t > 0, t, 0.5), x)
    assert_matches(got, torch.where(torch.tensor(x) > 0, torch.tensor(x), 0.5))
    got = both_modes(lambda t: fg.masked_fill(t, t < 0, -7.0), x)
    assert_matches(got, torch.tensor(x).masked_fill(torch.tensor(x) < 0, -7.0))
    got = both_modes(lambda t: fg.nonzero(t), np.zeros((0, 2)))
    assert got[0].shape == (0, 2)


def test_sorting_functions():
    t = torch.tensor(X234)
    assert_matches(both_modes(lambda x: fg.topk(x, 2), X234), torch.topk(t, 2))
    assert_matches(both_modes(lambda x: fg.topk(x, 1, axis=0, largest=False), X234), torch.topk(t, 1, 0, False))
    assert_matches(both_modes(lambda x: fg.sort(x, axis=1, descending=True), X234), torch.sort(t, 1, True)[0])
    assert_matches(both_modes(lambda x: fg.argsort(x), X234), torch.argsort(t))
    assert_matches(both_modes(lambda x: fg.argmax(x, axis=-1, keepdim=True), X234), torch.argmax(t, -1, True))
    assert_matches(both_modes(lambda x: fg.argmin(x), X234), torch.argmin(t))


def test_scatter_family_functions():
    index = np.array([[0, 1], [2, 3], [0, 1]])
    updates = np.array([1.0, 2.0, 3.0])
    t = torch.tensor(X34)
    expected = t.index_put((torch.tensor(index[:, 0]), torch.tensor(index[:, 1])), torch.tensor(updates),
                           accumulate=True)
    assert_matches(both_modes(lambda x, i, u: fg.scatter_nd_add(x, i, u), X34, index, updates), expected)
    assert_matches(both_modes(lambda i, u: fg.scatter_nd(i, u, [3, 4]), index, updates),
                   expected - t)
    assert_matches(both_modes(lambda x, i: fg.put_along_axis(x, i, 9.0, 1), X34, np.array([[1], [0], [3]])),
                   t.scatter(1, torch.tensor([[1], [0], [3]]), 9.0))
    assert_matches(both_modes(lambda x, i: fg.index_select(x, i, axis=1), X34, np.array([3, 0, 3])),
                   t.index_select(1, torch.tensor([3, 0, 3])))


def test_put_along_axis_mul_gradient_of_x():
    index = np.array([[0, 0, 2], [1, 3, 3]])
    check_grad("put_along_axis", {"X": X34[:2], "Index": index, "Value": RNG.uniform(0.5, 2, (2, 3))},
               {"axis": 1, "reduce": "mul"}, no_grad=["Value"],
               torch_fn=lambda X, Index, Value: X.scatter_reduce(1, Index, Value, "prod"))


def test_shape_building_functions():
    t = torch.tensor(X34)
    assert_matches(both_modes(lambda x: fg.tile(x, [2, 1, 2]), X34), torch.tile(t, (2, 1, 2)))
    assert_matches(both_modes(lambda x: fg.expand(x[:, None], [3, 2, -1]), X34), t[:, None].expand(3, 2, 4))
    assert_matches(both_modes(lambda x: fg.broadcast_to(x, [2, 3, 4]), X34), t.broadcast_to(2, 3, 4))
    assert_matches(both_modes(lambda x: fg.flip(x, 1), X34), torch.flip(t, [1]))
    assert_matches(both_modes(lambda x: fg.roll(x, [1, 2], [0, 1]), X34), torch.roll(t, (1, 2), (0, 1)))
    assert_matches(both_modes(lambda x: fg.roll(x, -3), X34), torch.roll(t, -3))
    assert_matches(both_modes(lambda x: fg.tril(x, -1), X34), torch.tril(t, -1))
    assert_matches(both_modes(lambda x: fg.triu(x), X34), torch.triu(t))
    assert_matches(both_modes(lambda x: fg.unstack(x, axis=1), X34), torch.unbind(t, 1))
    assert_matches(both_modes(lambda x: fg.chunk(x, 2, axis=1), X34), torch.chunk(t, 2, 1))
    assert_matches(both_modes(lambda x: fg.chunk(x, 3, axis=1), X34), torch.chunk(t, 3, 1))
    assert_matches(both_modes(lambda x: fg.flatten(x, 1, 2), X234), torch.flatten(torch.tensor(X234), 1, 2))
    assert_matches(both_modes(lambda x: fg.squeeze(x[:, None, :, None]), X34), t)
    assert_matches(both_modes(lambda x: fg.unsqueeze(x, [0, -1]), X34), t[None, :, :, None])
    assert_matches(both_modes(lambda x: fg.reshape(x, [0, -1, 2]), X234), torch.tensor(X234).reshape(2, 6, 2))
    assert_matches(both_modes(lambda x: fg.stack([x, x], axis=-1), X34), torch.stack([t, t], -1))
    assert_matches(both_modes(lambda x: fg.repeat_interleave(x, 2, axis=1), X34), t.repeat_interleave(2, 1))
    assert_matches(both_modes(lambda x: fg.repeat_interleave(x, 3), X34), t.repeat_interleave(3))
    assert_matches(both_modes(lambda x, r: fg.repeat_interleave(x, r, axis=0), X34, np.array([2, 0, 1])),
                   t.repeat_interleave(torch.tensor([2, 0, 1]), 0))


def test_repeat_interleave_gradient_is_twice_differentiable():
    x = fg.to_tensor(X34, stop_gradient=False)
    y = fg.repeat_interleave(x, fg.to_tensor(np.array([1, 3, 2])), axis=0)
    (g,) = fg.grad([fg.sum(y * y * y)], [x], create_graph=True)
    (gg,) = fg.grad([fg.sum(g)], [x])
    counts = np.array([1, 3, 2])[:, None]
    np.testing.assert_allclose(g.numpy(), 3 * counts * X34 ** 2)
    np.testing.assert_allclose(gg.numpy(), 6 * counts * X34)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_function_matches_torch(mode):
    x = RNG.uniform(-1, 1, (2, 3, 4, 5))
    t = torch.tensor(x)
    assert_matches(both_modes(lambda v: F.pad(v, [1, 2, 2, 1], mode=mode), x), TF.pad(t, (1, 2, 2, 1), mode=mode))
    channel_last = both_modes(lambda v: F.pad(v, [1, 2], mode=mode, data_format="NHWC"), x)
    expected = TF.pad(t.permute(0, 3, 1, 2), (1, 2, 0, 0), mode=mode).permute(0, 2, 3, 1)
    assert_matches(channel_last, expected)


def test_pad_paddle_full_length_and_edge_and_wrap():
    x = RNG.uniform(-1, 1, (2, 3))
    got = both_modes(lambda v: F.pad(v, [1, 0, 2, 3], value=2.0), x)
    np.testing.assert_array_equal(got[0], np.pad(x, [(1, 0), (2, 3)], constant_values=2.0))
    np.testing.assert_array_equal(run_eager(lambda v: F.pad(v, [5, 4], mode="edge"), x)[0],
                                  np.pad(x, [(0, 0), (5, 4)], mode="edge"))
    np.testing.assert_array_equal(run_eager(lambda v: F.pad(v, [7, 8], mode="wrap"), x)[0],
                                  np.pad(x, [(0, 0), (7, 8)], mode="wrap"))


def test_creation_functions(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)  # eager: outside the fixture's program_guard
    assert fg.in_dynamic_mode()
    np.testing.assert_array_equal(fg.arange(5).numpy(), np.arange(5))
    assert fg.arange(5).dtype == "int64" and fg.arange(0.0, 1.0, 0.25).dtype == "float32"
    np.testing.assert_allclose(fg.arange(1, 2, 0.1, dtype="float64").numpy(), torch.arange(1, 2, 0.1,
                                                                                          dtype=torch.float64))
    np.testing.assert_allclose(fg.linspace(0, 1, 11).numpy(), torch.linspace(0, 1, 11).numpy())
    a, b = np.arange(3.0), np.arange(4.0)
    assert_matches(both_modes(lambda u, v: fg.meshgrid(u, v), a, b),
                   torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing="ij"))
    assert_matches(both_modes(lambda u, v: fg.meshgrid([u, v], indexing="xy"), a, b),
                   torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing="xy"))
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        r = fg.arange(2, 9, 3)
        assert isinstance(r, fg.Variable)
    np.testing.assert_array_equal(Executor().run(main, fetch_list=[r], scope=Scope())[0], np.arange(2, 9, 3))


def test_one_hot_axis_and_negative_labels():
    labels = np.array([[0, 1], [2, 0]])
    got = both_modes(lambda t: fg.one_hot(t, 3, axis=1), labels)
    expected = TF.one_hot(torch.tensor(labels), 3).permute(0, 2, 1).float()
    assert got[0].dtype == np.float32
    assert_matches(got, expected)
    with pytest.raises(RuntimeError, match="non-negative"):   # torch refuses a negative label ...
        TF.one_hot(torch.tensor([[0, -1]]), 3)
    with pytest.raises(IndexError, match=r"one_hot: index -1 .* \[0, 3\)"):   # ... and so does fluidgrad
        both_modes(lambda t: fg.one_hot(t, 3, axis=1), np.array([[0, -1]]))


def test_meshgrid_grad_of_grad():
    a = fg.to_tensor(np.arange(3.0), stop_gradient=False)
    u, v = fg.meshgrid(a, a)
    (g,) = fg.grad([fg.sum(u * u * v)], [a], create_graph=True)
    (gg,) = fg.grad([fg.sum(g * g)], [a])
    ta = torch.arange(3.0, dtype=torch.float64, requires_grad=True)
    tu, tv = torch.meshgrid(ta, ta, indexing="ij")
    (tg,) = torch.autograd.grad((tu * tu * tv).sum(), ta, create_graph=True)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), ta)
    np.testing.assert_allclose(g.numpy(), tg.detach().numpy())
    np.testing.assert_allclose(gg.numpy(), tgg.numpy())
