"""A PyTorch user's Layer habits (modules / named_modules, zero_grad, double / float, requires_grad_,
add_module, register_parameter), Sequential as a mutable list, load_state_dict(assign=True) and the
Transformer layers' parameter names. The same steps on torch.nn (2.13) are the oracle."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import fluidgrad as fg


def _tree(nn):
    """The same nesting in both libraries: a shared layer reached twice, a nested Sequential."""
    shared = nn.Linear(3, 3)
    block = nn.Sequential(shared, nn.ReLU())
    return nn.Sequential(nn.Linear(2, 3), block, shared, nn.Sequential(nn.Tanh(), nn.Linear(3, 1)))


def _kinds(named):
    """(name, class name) pairs, so the two libraries' walks compare by structure."""
    return [(name, type(layer).__name__.replace("Tanh", "tanh").lower()) for name, layer in named]


@pytest.mark.parametrize("kwargs", [{}, {"prefix": "model"}, {"remove_duplicate": False}])
def test_named_modules_walks_as_torch(kwargs):
    ours, theirs = _tree(fg.nn), _tree(torch.nn)
    assert _kinds(ours.named_modules(**kwargs)) == _kinds(theirs.named_modules(**kwargs))
    assert len(list(ours.modules())) == len(list(theirs.modules())) == len(ours.sublayers(include_self=True))


def test_named_modules_memo_skips_what_it_holds_and_records_what_it_yields():
    ours, theirs = _tree(fg.nn), _tree(torch.nn)
    our_memo, their_memo = {ours[1]}, {theirs[1]}
    assert _kinds(ours.named_modules(our_memo)) == _kinds(theirs.named_modules(their_memo))
    assert len(our_memo) == len(their_memo) == len(list(ours.modules())) - 1   # all but block's ReLU
    # Paddle's spelling: named_sublayers(include_self, layers_set) with the same rule
    seen = {ours[1]}
    assert [n for n, _ in ours.named_sublayers(include_self=True, layers_set=seen)] == \
        [n for n, _ in theirs.named_modules({theirs[1]})]


def _backward(model, x):
    fg.sum(model(fg.to_tensor(x))).backward()


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_as_torch(set_to_none):
    x = np.ones((2, 2), "float32")
    ours = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.ReLU(), fg.nn.Linear(3, 1))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    _backward(ours, x)
    theirs(torch.tensor(x)).sum().backward()
    first = [p.grad.numpy().copy() for p in ours.parameters()]
    kept = ours[0].weight.grad
    ours.zero_grad(set_to_none=set_to_none)
    theirs.zero_grad(set_to_none=set_to_none)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert (p.grad is None) == (q.grad is None)
        if q.grad is not None:
            assert not p.grad.numpy().any() and not q.grad.numpy().any()
    if not set_to_none:
        assert ours[0].weight.grad is kept   # the gradient Tensor stays, zeroed
    _backward(ours, x)                        # the next backward starts afresh, not from the old sums
    for p, expected in zip(ours.parameters(), first):
        np.testing.assert_array_equal(p.grad.numpy(), expected)


@pytest.mark.parametrize("method, dtype", [("double", "float64"), ("float", "float32"), ("half", "float16"),
                                           ("bfloat16", "bfloat16")])
def test_dtype_casts_floating_parameters_and_buffers_and_return_self(method, dtype):
    model = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.BatchNorm1D(3))
    model.register_buffer("steps", fg.to_tensor(np.array([3], "int64")))
    before = model[0].weight
    assert getattr(model, method)() is model
    assert model[0].weight is before                 # cast in place: optimizers keep the same Tensors
    assert {str(p.dtype) for p in model.parameters()} == {dtype}
    assert {str(b.dtype) for n, b in model.named_buffers() if n != "steps"} == {dtype}
    assert str(model.steps.dtype) == "int64"        # integer buffers stay


def test_double_forward_matches_torch_double():
    x = np.random.default_rng(0).standard_normal((4, 2))
    ours = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.Tanh(), fg.nn.Linear(3, 1)).double()
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).double()
    for index in (0, 2):
        ours[index].weight.set_value(theirs[index].weight.detach().numpy().T)
        ours[index].bias.set_value(theirs[index].bias.detach().numpy())
    got = ours(fg.to_tensor(x))
    assert str(got.dtype) == "float64"
    np.testing.assert_allclose(got.numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_requires_grad_freezes_and_unfreezes_every_parameter():
    model = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.ReLU(), fg.nn.Linear(3, 1))
    assert model.requires_grad_(False) is model
    assert all(p.stop_gradient for p in model.parameters())
    x = fg.to_tensor(np.ones((1, 2), "float32"), stop_gradient=False)
    fg.sum(model(x)).backward()
    assert all(p.grad is None for p in model.parameters()) and x.grad is not None
    model[2].requires_grad_()                         # unfreeze the head only, as torch's default True
    assert [p.stop_gradient for p in model.parameters()] == [True, True, False, False]


def test_add_module_registers_as_torch_and_refuses_what_torch_refuses():
    ours, theirs = fg.nn.Sequential(fg.nn.Linear(2, 2)), torch.nn.Sequential(torch.nn.Linear(2, 2))
    ours.add_module("head", fg.nn.Linear(2, 1))
    theirs.add_module("head", torch.nn.Linear(2, 1))
    ours.add_module("absent", None)
    theirs.add_module("absent", None)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["0.weight", "0.bias", "head.weight", "head.bias"]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()] == ["0", "head"]
    assert ours.absent is None
    ours.absent = fg.nn.ReLU()                        # a declared slot takes a layer later
    assert "absent" in dict(ours.named_children())
    ours.plain, theirs.plain = 1, 1
    for bad_name, bad_value, error in [("plain", "layer", KeyError), ("a.b", "layer", KeyError),
                                       ("", "layer", KeyError), ("x", "not a layer", TypeError)]:
        for model, nn in ((ours, fg.nn), (theirs, torch.nn)):
            value = nn.ReLU() if bad_value == "layer" else 3
            with pytest.raises(error):
                model.add_module(bad_name, value)


def test_register_parameter_as_torch():
    ours, theirs = fg.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    ours.register_parameter("scale", ours.create_parameter([1]))
    theirs.register_parameter("scale", torch.nn.Parameter(torch.ones(1)))
    ours.register_parameter("shift", None)
    theirs.register_parameter("shift", None)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "bias", "scale"]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert ours.shift is None
    ours.shift = ours.create_parameter([1], is_bias=True)   # the declared slot takes a parameter later
    assert list(ours.state_dict())[-1] == "shift"
    ours.add_parameter("gain", ours.create_parameter([1]))  # Paddle's name for the same
    assert "gain" in dict(ours.named_parameters())


def test_register_parameter_refuses_what_torch_refuses():
    layer = fg.nn.Linear(2, 2)
    layer.plain = 1
    leaf = fg.to_tensor(np.ones(2, "float32"), stop_gradient=False)
    with pytest.raises(KeyError, match="already exists"):
        layer.register_parameter("plain", layer.create_parameter([1]))
    with pytest.raises(KeyError, match="'.'"):
        layer.register_parameter("a.b", layer.create_parameter([1]))
    with pytest.raises(TypeError, match="must be a parameter Tensor"):
        layer.register_parameter("x", np.ones(2))
    with pytest.raises(ValueError, match="not a\nleaf|not a leaf"):
        layer.register_parameter("derived", leaf * 2)
    module = torch.nn.Linear(2, 2)
    module.plain = 1
    with pytest.raises(KeyError):
        module.register_parameter("plain", torch.nn.Parameter(torch.ones(1)))
    with pytest.raises(TypeError):
        module.register_parameter("x", torch.ones(2))


# ---------------------------------------------------------------- Transformer layers' names
def _old_checkpoint(layer):
    """The state dict a fluidgrad before this rename saved: feed-forward entries under "ffn."."""
    return {k.replace("linear1.", "ffn.linear1.").replace("linear2.", "ffn.linear2."): v.numpy().copy()
            for k, v in layer.state_dict().items()}


@pytest.mark.parametrize("kind", ["TransformerEncoderLayer", "TransformerDecoderLayer"])
def test_transformer_layers_keep_the_feed_forward_on_the_layer_as_torch(kind):
    layer = getattr(fg.nn, kind)(8, 2, 16, dropout=0.0)
    reference = getattr(torch.nn, kind)(8, 2, 16, dropout=0.0)
    assert [k for k in layer.state_dict() if "attn" not in k] == [k for k in reference.state_dict() if "attn" not in k]
    assert isinstance(layer.dropout, fg.nn.Dropout) and callable(layer.activation)
    assert not hasattr(layer, "ffn")


def _transformer(seed):
    np.random.seed(seed)
    return fg.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)


def test_old_ffn_checkpoints_still_load_into_nested_transformers(tmp_path):
    source, target = _transformer(0), _transformer(1)
    old = _old_checkpoint(source)
    assert "encoder.layers.0.ffn.linear1.weight" in old and "decoder.layers.0.ffn.linear2.bias" in old
    fg.save(old, str(tmp_path / "old.pdparams"))
    src, tgt = (fg.to_tensor(np.random.default_rng(2).standard_normal((2, n, 8)).astype("float32")) for n in (3, 4))
    expected = source(src, tgt).numpy()
    assert not np.allclose(target(src, tgt).numpy(), expected)
    target.load_state_dict(fg.load(str(tmp_path / "old.pdparams")))       # strict: every key found
    np.testing.assert_array_equal(target(src, tgt).numpy(), expected)
    fresh = _transformer(3)
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("error")                      # nothing missing, nothing skipped
        assert fresh.set_state_dict(old) == ([], [])
    np.testing.assert_array_equal(fresh(src, tgt).numpy(), expected)


# ---------------------------------------------------------------- load_state_dict(assign=True)
def test_assign_puts_the_given_tensors_in_place_as_torch():
    ours, theirs = fg.nn.Linear(2, 3), torch.nn.Linear(2, 3)
    ours_state = {"weight": fg.to_tensor(np.ones((2, 3))), "bias": fg.to_tensor(np.zeros(3))}
    theirs_state = {"weight": torch.ones(3, 2, dtype=torch.float64), "bias": torch.zeros(3, dtype=torch.float64)}
    ours.load_state_dict(ours_state, assign=True)
    theirs.load_state_dict(theirs_state, assign=True)
    assert ours.weight is ours_state["weight"] and ours.state_dict()["bias"] is ours_state["bias"]
    assert str(ours.weight.dtype) == "float64" and theirs.weight.dtype == torch.float64   # the dict's dtype
    assert not ours.weight.stop_gradient and theirs.weight.requires_grad                  # the layer's flag
    copied = fg.nn.Linear(2, 3)
    copied.load_state_dict(ours_state)                                                     # the default copies
    assert copied.weight is not ours_state["weight"] and str(copied.weight.dtype) == "float32"


class _Tied(fg.nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = fg.nn.Sequential(fg.nn.Linear(2, 2), fg.nn.BatchNorm1D(2), fg.nn.Linear(2, 1))
        self.tied = self.body[0]            # the same Linear under a second name

    def forward(self, x):
        return self.body(x)


def test_assign_keeps_the_layers_flags_ties_and_trains():
    model = _Tied()
    model.body[2].weight.stop_gradient = True                                             # frozen stays frozen
    arrays = {k: np.full(v.shape, 0.5, v.dtype) for k, v in model.state_dict().items()}
    model.load_state_dict(arrays, assign=True)
    assert np.shares_memory(model.body[0].weight._array, arrays["body.0.weight"])            # arrays: no copy
    assert model.tied.weight is model.body[0].weight
    assert model.body[1]._mean._array is arrays["body.1._mean"]
    assert any(b is model.body[1]._mean for b in model.buffers())
    assert model.body[2].weight.stop_gradient and model.body[2].weight.persistable
    opt = fg.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    fg.sum(model(fg.to_tensor(np.ones((4, 2), "float32")))).backward()
    opt.step()
    assert model.body[2].bias.grad is not None and model.body[2].weight.grad is None
    assert not np.allclose(model.body[2].bias.numpy(), 0.5) and np.allclose(model.body[2].weight.numpy(), 0.5)


def test_assign_checks_shapes_and_keys_first():
    layer = fg.nn.Linear(2, 3)
    before = layer.weight
    with pytest.raises(ValueError, match=r"weight has shape \[2, 3\]"):
        layer.load_state_dict({"weight": fg.to_tensor(np.ones((3, 2))), "bias": fg.to_tensor(np.zeros(3))},
                              assign=True)
    with pytest.raises(RuntimeError, match="missing keys"):
        layer.load_state_dict({"weight": fg.to_tensor(np.ones((2, 3)))}, assign=True)
    assert layer.weight is before
    bias = fg.to_tensor(np.ones(3, "float32"))
    assert layer.load_state_dict({"bias": bias}, strict=False, assign=True) == (["weight"], [])
    assert layer.bias is bias and layer.weight is before


# ---------------------------------------------------------------- Sequential as a mutable list
def _names_and_kinds(seq):
    return [(name, type(layer).__name__.lower()) for name, layer in seq.named_children()]


def _pair(named=False):
    """The same Sequential in both libraries, numbered or named."""
    def make(nn):
        layers = [nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 3), nn.Tanh()]
        return nn.Sequential(OrderedDict(zip("abcd", layers))) if named else nn.Sequential(*layers)
    return make(fg.nn), make(torch.nn)


_EDITS = {
    "set": lambda s, nn: s.__setitem__(1, nn.Sigmoid()),
    "set_negative": lambda s, nn: s.__setitem__(-1, nn.ReLU()),
    "del": lambda s, nn: s.__delitem__(1),
    "del_negative": lambda s, nn: s.__delitem__(-2),
    "del_slice": lambda s, nn: s.__delitem__(slice(0, 4, 2)),
    "append": lambda s, nn: s.append(nn.Sigmoid()),
    "extend": lambda s, nn: s.extend([nn.Sigmoid(), nn.ReLU()]),
    "insert": lambda s, nn: s.insert(1, nn.Sigmoid()),
    "insert_end": lambda s, nn: s.insert(4, nn.Sigmoid()),
    "pop": lambda s, nn: s.pop(2),
}


# Growing a named Sequential is left out: torch numbers new entries by len(), a clash with names.
@pytest.mark.parametrize("edit, named", [(edit, False) for edit in sorted(_EDITS)] +
                         [(edit, True) for edit in sorted(_EDITS) if edit not in ("append", "extend", "insert",
                                                                                  "insert_end")])
def test_sequential_edits_as_torch(edit, named):
    ours, theirs = _pair(named)
    _EDITS[edit](ours, fg.nn)
    _EDITS[edit](theirs, torch.nn)
    assert _names_and_kinds(ours) == _names_and_kinds(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("index", [slice(1, None), slice(None, 2), slice(None, None, -1), slice(1, 3)])
def test_sequential_slices_are_sequentials_of_the_same_layers_as_torch(index, named):
    ours, theirs = _pair(named)
    part, reference = ours[index], theirs[index]
    assert isinstance(part, fg.nn.Sequential)
    assert _names_and_kinds(part) == _names_and_kinds(reference)
    assert all(a is b for a, b in zip(part, list(ours)[index]))      # the same layers, not copies


def test_sequential_item_assignment_changes_the_forward():
    x = np.random.default_rng(0).standard_normal((4, 2)).astype("float32")
    model = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.ReLU(), fg.nn.Linear(3, 1))
    linear0, linear2 = model[0], model[2]
    model[1] = fg.nn.Tanh()
    expected = linear2(fg.tanh(linear0(fg.to_tensor(x))))
    np.testing.assert_allclose(model(fg.to_tensor(x)).numpy(), expected.numpy(), rtol=1e-6)
    del model[1]
    assert len(model) == 2 and model[1] is linear2 and list(model.state_dict())[-1] == "1.bias"
    assert model.pop(0) is linear0 and model[0] is linear2 and len(model.parameters()) == 2


def test_sequential_names_as_in_paddle_and_bad_indices():
    model = fg.nn.Sequential(("fc", fg.nn.Linear(2, 3)), ("act", fg.nn.ReLU()), ("out", fg.nn.Linear(3, 1)))
    model["act"] = fg.nn.Tanh()
    assert isinstance(model[1], fg.nn.Tanh)
    del model["act"]                                  # a name: the other names stay
    assert [n for n, _ in model.named_children()] == ["fc", "out"]
    for bad, error in [(5, IndexError), (-3, IndexError), (1.0, TypeError)]:
        with pytest.raises(error):
            model[bad] = fg.nn.ReLU()
        with pytest.raises(error):
            del model[bad]
    with pytest.raises(KeyError, match="no layer named 'act'"):
        del model["act"]
    with pytest.raises(TypeError, match="only a Layer"):
        model[0] = np.ones(2)
