"""Layer buffers behave as torch.nn.Module's: persistable or not, kept across reassignment,
None allowed, bad names and values refused. The same steps run on a torch Module are the oracle
for which names end up in named_buffers() and state_dict()."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


def _both(steps):
    """Run `steps(module, tensor_fn, register)` on a fluidgrad Layer and a torch Module."""
    layer, module = fg.nn.Layer(), torch.nn.Module()
    steps(layer, lambda a: fg.to_tensor(np.asarray(a, np.float32)), layer.register_buffer)
    steps(module, lambda a: torch.tensor(np.asarray(a, np.float32)), module.register_buffer)
    return layer, module


def _names(layer, module):
    fg_names = ([n for n, _ in layer.named_buffers()], list(layer.state_dict()))
    torch_names = ([n for n, _ in module.named_buffers()], list(module.state_dict()))
    return fg_names, torch_names


def _reassign(m, t, reg):
    reg("kept", t([1.0]))
    reg("scratch", t([2.0]), False)
    m.kept = t([3.0])
    m.scratch = t([4.0])


def _to_none_and_back(m, t, reg):
    reg("a", t([1.0]))
    reg("b", None)
    m.a = None
    m.b = t([5.0])


def _delete(m, t, reg):
    reg("a", t([1.0]))
    reg("b", t([2.0]), False)
    del m.a
    m.a = t([3.0])          # a plain attribute now: deleting unregistered it


def _register_again(m, t, reg):
    reg("a", t([1.0]), False)
    reg("a", t([2.0]))      # registering again makes it persistable


@pytest.mark.parametrize("steps", [_reassign, _to_none_and_back, _delete, _register_again])
def test_buffer_names_match_torch(steps):
    layer, module = _both(steps)
    fg_names, torch_names = _names(layer, module)
    assert fg_names == torch_names
    for name, value in module.state_dict().items():
        np.testing.assert_array_equal(layer.state_dict()[name].numpy(), value.numpy())


def test_nested_non_persistable_buffers_are_left_out_with_their_prefix():
    inner = fg.nn.Layer()
    inner.register_buffer("stat", fg.to_tensor(np.zeros(2, np.float32)))
    inner.register_buffer("tmp", fg.to_tensor(np.zeros(2, np.float32)), False)
    outer = fg.nn.Sequential(fg.nn.Linear(2, 2), inner)
    assert [n for n, _ in outer.named_buffers()] == ["1.stat", "1.tmp"]
    assert list(outer.state_dict()) == ["0.weight", "0.bias", "1.stat"]
    missing, unexpected = outer.set_state_dict({"1.stat": np.ones(2), "1.tmp": np.ones(2)})
    assert unexpected == ["1.tmp"] and missing == ["0.weight", "0.bias"]
    np.testing.assert_array_equal(inner.tmp.numpy(), np.zeros(2))
    outer.to("float64")       # to() moves every buffer, saved or not
    assert inner.tmp.numpy().dtype == np.float64 and inner.stat.numpy().dtype == np.float64


def test_bad_buffer_names_and_values_are_refused():
    layer = fg.nn.Linear(2, 2)
    with pytest.raises(KeyError, match="weight"):
        layer.register_buffer("weight", fg.to_tensor(np.zeros(2)))
    with pytest.raises(KeyError, match="a.b"):
        layer.register_buffer("a.b", fg.to_tensor(np.zeros(2)))
    with pytest.raises(TypeError, match="ndarray"):
        layer.register_buffer("c", np.zeros(2))
    layer.register_buffer("d", fg.to_tensor(np.zeros(2)))
    with pytest.raises(TypeError, match="buffer 'd'"):
        layer.d = np.zeros(2)


def test_a_layer_or_parameter_assigned_to_a_buffer_name_replaces_it():
    layer = fg.nn.Layer()
    layer.register_buffer("a", fg.to_tensor(np.zeros(2)), False)
    layer.register_buffer("b", fg.to_tensor(np.zeros(2)))
    layer.a = fg.nn.Linear(2, 2)
    layer.b = fg.to_tensor(np.ones(2), stop_gradient=False)      # a new leaf that wants a gradient...
    assert [n for n, _ in layer.named_buffers()] == ["b"]          # ...is still the buffer, as in torch
    layer.b = fg.nn.layer.create_parameter([2], "float64")       # a parameter takes the name over
    assert [n for n, _ in layer.named_buffers()] == []
    assert list(layer.state_dict()) == ["b", "a.weight", "a.bias"]


def test_a_traced_buffer_update_points_to_set_value():
    class Ema(fg.nn.Layer):
        def __init__(self, in_place):
            super().__init__()
            self.in_place = in_place
            self.register_buffer("average", fg.to_tensor(np.zeros(3, np.float32)))

        def forward(self, x):
            new = self.average * 0.9 + fg.mean(x, axis=0) * 0.1
            if self.in_place:
                self.average.set_value(new)
            else:
                self.average = new
            return x

    x = fg.to_tensor(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"buffer 'average'.*self.average.set_value"):
        fg.jit.to_static(Ema(False).forward)(x)
    layer = Ema(True)
    fg.jit.to_static(layer.forward)(x)
    np.testing.assert_allclose(layer.state_dict()["average"].numpy(), np.full(3, 0.1), rtol=1e-6)
