"""fg.chunk(x, n) on an axis of unknown size (a Program's batch): the Program has n outputs, so
a run-time size that torch.chunk cuts into n pieces (ceil(size / n) each, the last smaller) gives
torch's pieces and gradient, and a size it cuts into fewer pieces is an error naming chunk and the
sizes, never empty or wrong pieces. split itself keeps Paddle's rule (equal parts only)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg


def _chunk_program(chunks, axis, shape):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", shape, "float64")
        x.stop_gradient = False
        parts = fg.chunk(x, chunks, axis=axis)
        loss = fg.add_n([fg.sum(fg.square(p)) * float(i + 1) for i, p in enumerate(parts)])
        (grad,) = fg.gradients([loss], [x])
    return main, parts, grad


def _torch_chunk(x0, chunks, axis):
    tx = torch.tensor(x0, requires_grad=True)
    parts = torch.chunk(tx, chunks, dim=axis)
    sum((p ** 2).sum() * (i + 1) for i, p in enumerate(parts)).backward()
    return [p.detach().numpy() for p in parts], tx.grad.numpy()


@pytest.mark.parametrize("size", [8, 7, 10, 4, 0])
@pytest.mark.parametrize("axis,layout", [(0, "batch first"), (-1, "batch last")])
def test_sizes_torch_cuts_into_n_pieces_match_torch(size, axis, layout):
    shape = [None, 3] if axis == 0 else [3, None]
    main, parts, grad = _chunk_program(4, axis, shape)
    x0 = np.random.default_rng(size).normal(size=(size, 3) if axis == 0 else (3, size))
    expected, expected_grad = _torch_chunk(x0, 4, axis)
    assert len(expected) == 4
    *got, got_grad = fg.Executor().run(main, feed={"x": x0}, fetch_list=parts + [grad])
    for piece, want in zip(got, expected):
        np.testing.assert_array_equal(piece, want)
    np.testing.assert_allclose(got_grad, expected_grad, rtol=1e-12)


@pytest.mark.parametrize("size,pieces", [(1, 1), (2, 2), (3, 3), (5, 3), (6, 3)])
def test_sizes_torch_cuts_into_fewer_pieces_are_a_clear_error(size, pieces):
    assert len(torch.chunk(torch.zeros(size, 3), 4)) == pieces
    main, parts, grad = _chunk_program(4, 0, [None, 3])
    message = rf"chunk: axis 0 has {size} entries at run time, .* cuts into {pieces} pieces, but the Program was " \
              r"built for 4"
    with pytest.raises(ValueError, match=message):
        fg.Executor().run(main, feed={"x": np.zeros((size, 3))}, fetch_list=parts)


def test_split_on_an_unknown_axis_still_needs_equal_parts():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        parts = fg.split(fg.static.data("x", [None, 3], "float64"), 4)
    with pytest.raises(ValueError, match="split: size 7 is not divisible by 4"):
        fg.Executor().run(main, feed={"x": np.zeros((7, 3))}, fetch_list=parts)


def test_a_known_size_keeps_torchs_fewer_pieces():
    x0 = np.arange(15.0).reshape(5, 3)
    got = fg.chunk(fg.to_tensor(x0), 4)
    expected = torch.chunk(torch.tensor(x0), 4)
    assert len(got) == len(expected) == 3
    for piece, want in zip(got, expected):
        np.testing.assert_array_equal(piece.numpy(), want.numpy())


def test_grad_of_grad_with_unused_uneven_pieces_matches_torch():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 3], "float64")
        x.stop_gradient = False
        parts = fg.chunk(x, 4)
        (first,) = fg.gradients([fg.sum(parts[1] ** 3)], [x])          # pieces 0, 2, 3 unused
        (second,) = fg.gradients([fg.sum(first * first)], [x])
    x0 = np.random.default_rng(3).normal(size=(7, 3))
    got = fg.Executor().run(main, feed={"x": x0}, fetch_list=[first, second])
    tx = torch.tensor(x0, requires_grad=True)
    (tfirst,) = torch.autograd.grad((torch.chunk(tx, 4)[1] ** 3).sum(), [tx], create_graph=True)
    (tsecond,) = torch.autograd.grad((tfirst * tfirst).sum(), [tx])
    np.testing.assert_allclose(got[0], tfirst.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1], tsecond.numpy(), rtol=1e-12)
