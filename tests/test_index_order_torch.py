"""Where x[item]'s axes go when an index mixes integers, slices, None, `...`, index lists and masks:
PyTorch's rule (its integers are plain selects, applied first, so they never count as index arrays
when deciding whether the arrays' axes go first), checked against torch 2.13 itself on random
index tuples: shapes and values of reads (eager, static with known and unknown sizes), the
gradient of a read, and writes x[item] = v with v of torch's x[item] shape (eager and static)."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.executor import Executor, Scope
from fluidgrad.framework import program as program_module
from fluidgrad.static import data


@st.composite
def shapes_and_items(draw):
    """A shape and an index of it: each axis an integer, a slice, a list (all lists of one length,
    or of length 1, without repeats: a write's places are distinct) or a mask; None and one `...`
    anywhere."""
    shape = tuple(draw(st.lists(st.integers(2, 4), min_size=1, max_size=4)))
    length = draw(st.integers(1, 2))
    items, axis = [], 0
    ellipsis_at = draw(st.none() | st.integers(0, len(shape)))
    skipped = draw(st.integers(0, len(shape) - ellipsis_at)) if ellipsis_at is not None else 0
    while axis < len(shape):
        if axis == ellipsis_at:
            items.append(Ellipsis)
            axis += skipped
            ellipsis_at = None
            continue
        if draw(st.booleans()) and draw(st.booleans()):
            items.append(None)
        size = shape[axis]
        kind = draw(st.sampled_from(["int", "slice", "list", "list", "mask"]))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            items.append(slice(draw(st.none() | st.integers(-size, size)), draw(st.none() | st.integers(-size, size)),
                               draw(st.none() | st.integers(1, 2))))
        elif kind == "list":
            n = draw(st.sampled_from([1, length]))
            items.append([i - size if draw(st.booleans()) else i for i in draw(st.permutations(range(size)))[:n]])
        else:
            items.append(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))))
        axis += 1
    if draw(st.booleans()):
        items.append(None)
    return shape, tuple(items)


def _torch_item(item):
    return tuple(torch.tensor(it) if isinstance(it, (list, np.ndarray)) else it for it in item)


def _fg_item(item):
    return tuple(fg.to_tensor(np.array(it)) if isinstance(it, (list, np.ndarray)) else it for it in item)


def _torch_read(x, item):
    """torch's x[item], or None where torch refuses it (arrays that do not broadcast)."""
    try:
        return torch.tensor(x)[_torch_item(item)].numpy()
    except (IndexError, RuntimeError):
        return None


@contextlib.contextmanager
def _eager():
    """Eager mode inside the suite's program guard (as the `eager` fixtures elsewhere; hypothesis
    runs many examples in one test call, so no function-scoped fixture)."""
    depth, program_module._guard_depth = program_module._guard_depth, 0
    try:
        yield
    finally:
        program_module._guard_depth = depth


def _static(fn, x, batch_unknown=False):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        v = data("x", ([-1] if batch_unknown else [x.shape[0]]) + list(x.shape[1:]), x.dtype.name)
        out = fn(v)
    return Executor().run(main, feed={"x": x}, fetch_list=[out], scope=Scope())[0]


def _static_item(item):
    """The index for a static program: lists and masks as NumPy arrays (a constant each)."""
    return tuple(np.array(it) if isinstance(it, list) else it for it in item)


@settings(max_examples=120, deadline=None)
@given(case=shapes_and_items())
def test_reads_follow_torch(case):
    shape, item = case
    x = np.arange(float(np.prod(shape))).reshape(shape)
    want = _torch_read(x, item)
    if want is None:
        return
    with _eager():
        t = fg.to_tensor(x, stop_gradient=False)
        got = t[_fg_item(item)]
        assert tuple(got.shape) == want.shape, (item, got.shape, want.shape)
        np.testing.assert_array_equal(got.numpy(), want)
        w = np.random.default_rng(0).uniform(0.5, 1.5, want.shape)
        fg.sum(got * fg.to_tensor(w)).backward()
        reference = torch.tensor(x, requires_grad=True)
        (reference[_torch_item(item)] * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), reference.grad.numpy(), rtol=1e-12)
    for unknown in (False, True):
        np.testing.assert_array_equal(_static(lambda v: v[_static_item(item)], x, unknown), want)


@settings(max_examples=100, deadline=None)
@given(case=shapes_and_items(), static=st.booleans())
def test_writes_follow_torch(case, static):
    shape, item = case
    x = np.arange(float(np.prod(shape))).reshape(shape)
    places = _torch_read(x, item)
    if places is None:
        return
    value = 100 + np.arange(float(places.size)).reshape(places.shape)
    want = torch.tensor(x)
    want[_torch_item(item)] = torch.tensor(value)

    def write(v):
        v[_static_item(item) if static else _fg_item(item)] = value
        return v
    if static:
        got = _static(write, x, batch_unknown=True)
    else:
        with _eager():
            got = write(fg.to_tensor(x)).numpy()
    np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("item", [(0, slice(None), [1, 3]), (0, Ellipsis, [1, 3]), (-1, slice(None), [-1, 0]),
                                  (None, 0, slice(None), [1, 3]), ([0, 1], slice(None), 0),
                                  (0, [0, 2], [1, 3]), (1, slice(None), [[0], [2]]), (slice(None), 1, [0, 2])],
                         ids=repr)
def test_a_select_then_a_list_keeps_the_lists_place(item, monkeypatch):
    """The cases of the session-12 review, by name, also with a 0-D integer tensor for the integer."""
    x = np.arange(24.0).reshape(2, 3, 4)
    want = _torch_read(x, item)
    monkeypatch.setattr(fg.framework.program, "_guard_depth", 0)
    for as_tensor in (False, True):
        index = tuple(fg.to_tensor(np.int64(it)) if as_tensor and isinstance(it, int) else it for it in _fg_item(item))
        got = fg.to_tensor(x)[index]
        assert tuple(got.shape) == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
