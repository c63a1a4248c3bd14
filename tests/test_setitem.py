"""x[item] = v for every mix of index arrays, masks, integers, slices, None and `...`, against
PyTorch: values and the gradients to x and v, in eager mode, in a static Program and traced by
jit.to_static; repeated indices, `x[idx] += v`, index_put(accumulate=True), the value's dtype
cast, values with extra leading axes of size 1, axes of unknown size, and the one refusal left."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.executor import Executor, Scope
from fluidgrad.static import data

from both_modes import compare_with_torch

RNG = np.random.default_rng(7)
X345 = RNG.uniform(-1, 1, (3, 4, 5))
IDX = np.array([2, 0, -1])
IDX5 = np.array([4, 0, 1])


def _torch_item(item):
    """item for PyTorch (index arrays as tensors). fluidgrad places the arrays' axes as PyTorch
    does: integers are selects applied first, so they never count as advanced indices."""
    item = item if isinstance(item, tuple) else (item,)
    return tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i for i in item)


def _set(x, item, v):
    y = x * 2.0
    y[item] = v
    return y


def _places_shape(shape, item):
    """The shape of x[item] (PyTorch's placement of the arrays' axes)."""
    return tuple(torch.empty(shape)[_torch_item(item)].shape)


# ---------------------------------------------------------------- the patterns users meet first
PATTERNS = {  # name: item (NumPy arrays become torch tensors for the oracle)
    "slice-then-array": (slice(None), np.array([3, 0, -4])),
    "slice-then-list": (slice(None), [0, 3]),
    "array-then-slice": (IDX, slice(1, 3)),
    "ellipsis-then-array": (Ellipsis, IDX5),
    "arrays-separated-by-slice": (IDX, slice(None), IDX5),
    "arrays-separated-broadcast": (IDX[:, None], slice(None), IDX5[None, :2]),
    "mask-then-slice": (np.array([True, False, True]), slice(1, 3)),
    "slice-then-mask": (slice(None), np.array([True, False, True, True])),
    "slice-then-2d-mask": (slice(None), RNG.uniform(size=(4, 5)) > 0.4),
    "int-then-array": (1, np.array([0, 3])),
    "int-between-arrays": (IDX, 1, IDX5),
    "array-int-adjacent": (slice(None), np.array([1, 2]), 0),
    "strided-then-array": (slice(None, None, 2), slice(None), IDX5),
    "none-then-array": (None, IDX),
    "slice-array-none": (slice(1, 3), np.array([0, 3]), None),
    "duplicates": (slice(None), np.array([1, 1, 3, 1])),
    "2d-array-after-slice": (slice(None), np.array([[0, 1], [3, 3]])),
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern_matches_torch_in_eager_and_static_with_gradients(name):
    item = PATTERNS[name]
    titem = _torch_item(item)
    v = RNG.uniform(-1, 1, _places_shape(X345.shape, item))
    compare_with_torch(lambda x, v: _set(x, item, v), lambda x, v: _set(x, titem, v), {"x": X345, "v": v},
                       wrt=["x", "v"])
    compare_with_torch(lambda x: _set(x, item, 7.5), lambda x: _set(x, titem, 7.5), {"x": X345}, wrt=["x"])


@pytest.mark.parametrize("name", ["slice-then-array", "arrays-separated-by-slice", "mask-then-slice"])
def test_pattern_traced_by_jit_to_static(name):
    item = PATTERNS[name]
    titem = _torch_item(item)
    v = RNG.uniform(-1, 1, _places_shape(X345.shape, item)[-1:])   # broadcast over the other axes
    compare_with_torch(lambda x, v: _set(x, item, v), lambda x, v: _set(x, titem, v), {"x": X345, "v": v},
                       wrt=["x", "v"], static="to_static")


def test_index_tensors_and_variables_as_well_as_arrays():
    i, j = np.array([2, 0]), np.array([4, 1])
    want = torch.tensor(X345).clone()
    want[torch.tensor(i), :, torch.tensor(j)] = torch.tensor([[1.0], [2.0]], dtype=torch.float64)
    want[:, torch.tensor([True, False, True, False])] = -3.0
    y = fg.to_tensor(X345) * 1.0
    y[fg.to_tensor(i), :, fg.to_tensor(j)] = np.array([[1.0], [2.0]])
    y[:, fg.to_tensor(np.array([True, False, True, False]))] = -3.0
    np.testing.assert_array_equal(y.numpy(), want.numpy())
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, vi, vj = data("x", [-1, 4, 5], "float64"), data("i", [2], "int64"), data("j", [2], "int64")
        m = data("m", [4], "bool")
        y = x * 1.0
        y[vi, :, vj] = np.array([[1.0], [2.0]])
        y[:, m] = -3.0
    got = Executor().run(main, feed={"x": X345, "i": i, "j": j, "m": np.array([True, False, True, False])},
                         fetch_list=[y], scope=Scope())[0]
    np.testing.assert_array_equal(got, want.numpy())


# ---------------------------------------------------------------- random shapes and index patterns
def _is_full(item):
    return isinstance(item, slice) and item == slice(None)


@st.composite
def setitem_cases(draw):
    """(shape, item, value shape or None for a number, index arrays as Tensors?)."""
    rank = draw(st.sampled_from([1, 2, 3, 3, 4]))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    length = draw(st.integers(1, 3))
    items, has_mask, has_array = [], False, False
    for size in shape:
        kinds = ["full", "slice", "int"] + ([] if has_mask else ["array"] * 2) + ([] if has_mask or has_array else ["mask"])
        kind = draw(st.sampled_from(kinds))
        if kind == "full":
            items.append(slice(None))
        elif kind == "slice":
            start, stop = draw(st.integers(-size, size)), draw(st.integers(-size - 1, size + 1))
            items.append(slice(start, stop, draw(st.integers(1, 3))))
        elif kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "array":
            has_array = True
            values = draw(st.lists(st.integers(-size, size - 1), min_size=length, max_size=length))
            as_column = draw(st.booleans())
            items.append(np.array(values).reshape((length, 1) if as_column else (length,)))
        else:
            has_mask = True
            items.append(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))))
    if len(items) > 1 and _is_full(items[0]) and draw(st.booleans()):
        items[0] = Ellipsis
    while len(items) > 1 and _is_full(items[-1]) and items[0] is not Ellipsis and draw(st.booleans()):
        items.pop()                                   # trailing axes left implicit
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    places = _places_shape(shape, tuple(items))
    form = draw(st.sampled_from(["number", "same", "same", "ones", "trailing", "leading-one"]))
    if form == "number":
        vshape = None
    elif form == "same":
        vshape = places
    elif form == "ones":
        vshape = tuple(1 if draw(st.booleans()) else d for d in places)
    elif form == "trailing":
        vshape = places[draw(st.integers(0, len(places))):]
    else:
        vshape = (1,) + places
    return shape, tuple(items), vshape, draw(st.booleans())


@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(setitem_cases())
def test_random_patterns_match_torch_in_eager_with_gradients(case):
    shape, item, vshape, as_tensors = case
    x = RNG.uniform(-1, 1, shape)
    v = 7.5 if vshape is None else RNG.uniform(-1, 1, vshape)
    fg_item = tuple(fg.to_tensor(i) if as_tensors and isinstance(i, np.ndarray) else i for i in item)
    tx = torch.tensor(x, requires_grad=True)
    tv = torch.tensor(v, requires_grad=True) if vshape is not None else v
    ty = tx * 2.0
    ty[_torch_item(item)] = tv
    w = RNG.uniform(0.5, 1.5, shape)
    (ty * torch.tensor(w)).sum().backward()
    fx = fg.to_tensor(x, stop_gradient=False)
    fv = fg.to_tensor(v, stop_gradient=False) if vshape is not None else v
    fy = fx * 2.0
    fy[fg_item] = fv
    fg.sum(fy * fg.to_tensor(w)).backward()
    np.testing.assert_array_equal(fy.numpy(), ty.detach().numpy())
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    if vshape is not None:
        np.testing.assert_allclose(fv.grad.numpy(), tv.grad.numpy(), rtol=1e-12)


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(setitem_cases())
def test_random_patterns_static_equals_eager(case):
    shape, item, vshape, _ = case
    x = RNG.uniform(-1, 1, shape)
    v = 7.5 if vshape is None else RNG.uniform(-1, 1, vshape)
    eager = fg.to_tensor(x) * 2.0
    eager[item] = v
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        xv = data("x", list(shape), "float64")
        y = xv * 2.0
        y[item] = v
    got = Executor().run(main, feed={"x": x}, fetch_list=[y], scope=Scope())[0]
    np.testing.assert_array_equal(got, eager.numpy())


# ---------------------------------------------------------------- repeated indices, +=, accumulate
def test_repeated_indices_last_write_wins_and_every_copy_gets_its_place_gradient():
    idx = np.array([1, 3, 1, 1])
    v = np.array([1.0, 2.0, 3.0, 4.0])
    compare_with_torch(lambda x, v: _set(x, (slice(None), idx), v),
                       lambda x, v: _set(x, (slice(None), torch.tensor(idx)), v),
                       {"x": X345[:, :, 0], "v": v}, wrt=["x", "v"])


def test_augmented_assignment_with_repeated_indices_adds_once_as_torch():
    """`x[:, idx] += v` is x[:, idx] = x[:, idx] + v: with a repeated index one copy wins."""
    idx = np.array([1, 3, 1])
    v = RNG.uniform(-1, 1, (3, 3, 5))

    def add_into(x, v, index):
        y = x * 1.0
        y[:, index] += v
        return y
    compare_with_torch(lambda x, v: add_into(x, v, idx), lambda x, v: add_into(x, v, torch.tensor(idx)),
                       {"x": X345, "v": v}, wrt=["x", "v"])


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(accumulate):
    i, j = np.array([0, 2, 0, 0]), np.array([1, 1, 1, 3])
    v = RNG.uniform(-1, 1, (4, 5))

    def fg_put(x, v):
        return fg.index_put(x * 1.0, (fg.to_tensor(i) if fg.in_dynamic_mode() else i, j), v, accumulate)

    def torch_put(x, v):
        return torch.index_put(x * 1.0, (torch.tensor(i), torch.tensor(j)), v, accumulate)
    compare_with_torch(fg_put, torch_put, {"x": X345, "v": v}, wrt=["x", "v"])


def test_index_put_with_a_mask_and_a_number():
    mask = X345[:, :, 0] > 0
    want = torch.index_put(torch.tensor(X345), (torch.tensor(mask),), torch.tensor(2.0, dtype=torch.float64),
                           accumulate=True)
    got = fg.index_put(fg.to_tensor(X345), (fg.to_tensor(mask),), fg.to_tensor(2.0, dtype="float64"),
                       accumulate=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------- value dtype and shape
@pytest.mark.parametrize("value", [2.7, -2.7])
def test_a_float_number_into_an_integer_tensor_truncates_as_torch(value):
    for item in [(slice(None), [0, 2]), (slice(None), slice(0, 2)), (np.array([True, False, True]),)]:
        x = fg.to_tensor(np.arange(12).reshape(3, 4))
        x[item] = value
        t = torch.arange(12).reshape(3, 4)
        t[_torch_item(item)] = value
        assert x.dtype == "int64"
        np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_a_value_tensor_of_another_dtype_is_cast_to_x_dtype():
    """PyTorch refuses a float tensor written through an index array into an integer tensor
    (index_put wants equal dtypes); fluidgrad casts, as NumPy does (toward zero)."""
    x = fg.to_tensor(np.zeros((3, 4), dtype=np.int64))
    x[:, [0, 1]] = fg.to_tensor(np.array([1.5, -2.5]))
    assert x.dtype == "int64"
    np.testing.assert_array_equal(x.numpy()[:, :2], np.tile([1, -2], (3, 1)))
    y = fg.to_tensor(np.zeros((3, 4)), stop_gradient=True) * 1.0
    v = fg.to_tensor(np.ones(2, dtype=np.float32), stop_gradient=False)
    y[:, [0, 1]] = v
    fg.sum(y).backward()
    assert y.dtype == "float64" and v.grad.dtype == "float32"
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("item, vshape", [((0,), (1, 1, 4)), ((slice(None), [0, 1]), (1, 1, 3, 2)),
                                          (([0, 1],), (1, 2, 4))])
def test_a_value_with_extra_leading_axes_of_size_one_is_accepted_as_torch(item, vshape):
    v = RNG.uniform(-1, 1, vshape)
    titem = tuple(torch.tensor(i) if isinstance(i, list) else i for i in item)
    compare_with_torch(lambda x, v: _set(x, item, v), lambda x, v: _set(x, titem, v),
                       {"x": X345[:, :, 0], "v": v}, wrt=["x", "v"])


def test_a_value_that_does_not_broadcast_is_refused_naming_both_shapes():
    y = fg.to_tensor(X345) * 1.0
    with pytest.raises(ValueError, match=r"value of shape \[2\] cannot be broadcast to the indexed places of "
                                         r"shape \[3, 2, 5\]"):
        y[:, [0, 1]] = np.ones(2)
    with pytest.raises(ValueError, match=r"value of shape \[3\] cannot be broadcast"):
        y[[0, 1], :, [2, 3]] = np.ones(3)


# ---------------------------------------------------------------- axes of unknown size
def test_integers_and_arrays_on_an_axis_of_unknown_size_in_static_mode():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = data("x", [-1, 4], "float64")
        x.stop_gradient = False
        y = x * 2.0
        y[-1] = 5.0
        y[[0, 1], 2] = np.array([7.0, 8.0])
        y[:, [3, 3]] = 9.0
        grad, = fg.gradients([fg.sum(y * y)], [x])
    got, got_grad = Executor().run(main, feed={"x": X345[:, :, 0]}, fetch_list=[y, grad], scope=Scope())
    tx = torch.tensor(X345[:, :, 0], requires_grad=True)
    ty = tx * 2.0
    ty[-1] = 5.0
    ty[[0, 1], 2] = torch.tensor([7.0, 8.0], dtype=torch.float64)
    ty[:, [3, 3]] = 9.0
    (ty * ty).sum().backward()
    np.testing.assert_array_equal(got, ty.detach().numpy())
    np.testing.assert_allclose(got_grad, tx.grad.numpy())


def test_an_integer_out_of_range_on_an_axis_of_unknown_size_raises_when_run():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        y = data("x", [-1, 4], "float64") * 1.0
        y[5] = 1.0
    with pytest.raises(IndexError, match="out of range"):
        Executor().run(main, feed={"x": X345[:, :, 0]}, fetch_list=[y], scope=Scope())


# ---------------------------------------------------------------- placement with None
@pytest.mark.parametrize("item", [(np.array([0, 1]), None, 0), (slice(None), None, np.array([0, 1]), None, IDX5[:2]),
                                  (None, np.array([0, 1]), slice(None), np.array([1, 2])), (0, None, slice(None), IDX5)])
def test_none_with_separated_advanced_indices_follows_torch(item):
    """The arrays' axes go first and None's axes follow among the other axes, in both x[item]
    and x[item] = v; an integer is a select applied first (PyTorch's rule, the reference)."""
    got = fg.to_tensor(X345)[item].numpy()
    reference = torch.tensor(X345)[_torch_item(item)].numpy()
    np.testing.assert_array_equal(got, reference)
    v = RNG.uniform(-1, 1, reference.shape)
    want = torch.tensor(X345)
    want[_torch_item(item)] = torch.tensor(v)
    want = want.numpy()
    y = fg.to_tensor(X345) * 1.0
    y[item] = v
    np.testing.assert_array_equal(y.numpy(), want)
