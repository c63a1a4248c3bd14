"""Functions that cut or join along an axis (concat, split, chunk, unbind, slice, strided_slice,
glu, cross_entropy, repeat_interleave): a 0-D input or an axis out of range is refused with an
error naming the function and the shape, in both modes, as PyTorch refuses them; reductions
still take axis 0 / -1 of a 0-D tensor, as PyTorch's do."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.nn import functional as F
from fluidgrad.static import data

_CUTS = {
    "concat": lambda x, axis: fg.concat([x, x], axis=axis),
    "split": lambda x, axis: fg.split(x, 1, axis=axis),
    "chunk": lambda x, axis: fg.chunk(x, 1, axis=axis),
    "unbind": lambda x, axis: fg.unbind(x, axis=axis),
    "unstack": lambda x, axis: fg.unstack(x, axis=axis),
    "slice": lambda x, axis: fg.slice(x, [axis], [0], [1]),
    "strided_slice": lambda x, axis: fg.strided_slice(x, [axis], [0], [1], [1]),
    "glu": lambda x, axis: F.glu(x, axis=axis),
    "repeat_interleave": lambda x, axis: fg.repeat_interleave(x, 2, axis=axis),
}


def _in_mode(mode, value):
    """The function's input: an eager Tensor, or a static data Variable of that shape."""
    if mode == "eager":
        return fg.to_tensor(value)
    return data("x", list(value.shape), "float64")


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("name", sorted(_CUTS))
def test_a_0d_input_is_refused_naming_the_function(mode, name):
    with fg.program_guard(fg.Program(), fg.Program()):
        x = _in_mode(mode, np.float64(1.5))
        with pytest.raises(ValueError, match=rf"{name.split('_')[0]}.*0-D.*no axis 0"):
            _CUTS[name](x, 0)


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("name", sorted(_CUTS))
@pytest.mark.parametrize("axis", [2, -3])
def test_an_axis_out_of_range_is_refused_not_wrapped(mode, name, axis):
    """unstack(x, axis=2) of a [2, 4] x once wrapped to axis 0: a wrong answer, not an error."""
    with fg.program_guard(fg.Program(), fg.Program()):
        x = _in_mode(mode, np.arange(8.0).reshape(2, 4))
        with pytest.raises(ValueError, match=rf"{name.split('_')[0]}.*axis {axis}.*out of range.*\[2, 4\]"):
            _CUTS[name](x, axis)


@pytest.mark.parametrize("name", sorted(_CUTS))
def test_torch_refuses_the_same_0d_input(name):
    """The oracle: PyTorch's counterparts refuse a 0-D tensor too (so refusing is not a gap)."""
    torch_cuts = {"concat": lambda z: torch.cat([z, z]), "split": lambda z: torch.split(z, 1),
                  "chunk": lambda z: torch.chunk(z, 1), "unbind": torch.unbind, "unstack": torch.unbind,
                  "slice": lambda z: z[0:1], "strided_slice": lambda z: z[0:1:1],
                  "glu": torch.nn.functional.glu, "repeat_interleave": lambda z: torch.repeat_interleave(z, 2, 0)}
    with pytest.raises((RuntimeError, IndexError)):
        torch_cuts[name](torch.tensor(1.5, dtype=torch.float64))


@pytest.mark.parametrize("axis", [-1, 2])
def test_cross_entropy_refuses_a_class_axis_it_does_not_have(axis):
    logits = np.zeros((2, 3)) if axis == 2 else np.float64(0.5)
    label = np.array([[0], [1]]) if axis == 2 else np.int64(0)
    with pytest.raises(ValueError, match=r"cross_entropy: .*(0-D|out of range)"):
        F.cross_entropy(fg.to_tensor(logits), fg.to_tensor(label), axis=axis)


@pytest.mark.parametrize("fn, torch_fn", [("sum", "sum"), ("max", "amax"), ("argmax", "argmax")])
def test_reductions_still_take_axis_0_of_a_0d_tensor(fn, torch_fn):
    expected = getattr(torch, torch_fn)(torch.tensor(1.5, dtype=torch.float64), 0)
    out = getattr(fg, fn)(fg.to_tensor(np.float64(1.5)), axis=0)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(out.numpy(), np.asarray(expected))
