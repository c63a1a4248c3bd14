"""PyTorch's model-building names in fluidgrad.nn: nn.Module / ModuleList / ModuleDict (Paddle's
Layer / LayerList / LayerDict), nn.Parameter, layers' bias= / device= / dtype= keywords,
register_buffer(persistent=), Embedding.from_pretrained; torch 2.13.0 is the oracle."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import nn

_RNG = np.random.default_rng(12)


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _make_net(module, parameter, ones):
    """The same model code written against torch.nn or fluidgrad.nn."""
    class Net(module.Module):
        def __init__(self):
            super().__init__()
            self.scale = parameter(ones([3]))
            self.offset = parameter(ones([3]), requires_grad=False)
            self.blocks = module.ModuleList([module.Linear(3, 4), module.Linear(4, 2, bias=False)])
            self.heads = module.ModuleDict({"a": module.Linear(2, 1)})

        def forward(self, x):
            x = x * self.scale + self.offset
            for block in self.blocks:
                x = torch.tanh(block(x)) if module is torch.nn else fg.tanh(block(x))
            return self.heads["a"](x)

    return Net()


def _copy_weights(net, reference):
    """torch's weights into the fluidgrad net (Linear's weight is [in, out] in Paddle's layout)."""
    for (name, mine), (_, theirs) in zip(net.named_parameters(), reference.named_parameters()):
        value = theirs.detach().numpy()
        mine.set_value(value.T if name.endswith("weight") else value)


def _pair():
    torch.manual_seed(0)
    reference = _make_net(torch.nn, torch.nn.Parameter, lambda s: torch.ones(s, dtype=torch.float64) * 1.5).double()
    net = _make_net(nn, nn.Parameter, lambda s: fg.ones(s, dtype="float64") * 1.5).to(dtype="float64")
    _copy_weights(net, reference)
    return net, reference


def test_module_style_model_registers_and_trains_as_torch(eager):
    net, reference = _pair()
    names = [n for n, _ in reference.named_parameters()]
    assert [n for n, _ in net.named_parameters()] == names == ["scale", "offset", "blocks.0.weight", "blocks.0.bias",
                                                               "blocks.1.weight", "heads.a.weight", "heads.a.bias"]
    assert list(net.state_dict()) == list(reference.state_dict()) and net.offset.stop_gradient
    x = _RNG.standard_normal((5, 3))
    fg.mean(net(fg.to_tensor(x)) ** 2).backward()
    torch.mean(reference(torch.tensor(x)) ** 2).backward()
    for (name, mine), (_, theirs) in zip(net.named_parameters(), reference.named_parameters()):
        if name == "offset":
            assert mine.grad is None and theirs.grad is None
            continue
        expected = theirs.grad.numpy()
        np.testing.assert_allclose(mine.grad.numpy(), expected.T if name.endswith("weight") else expected, rtol=1e-10)


def test_isinstance_parameter(eager):
    layer = nn.Linear(2, 2)
    layer.register_buffer("count", fg.zeros([1]))
    assert isinstance(layer.weight, nn.Parameter) and isinstance(nn.Parameter(fg.ones([2])), nn.Parameter)
    assert isinstance(nn.Parameter(fg.ones([2]), requires_grad=False), nn.Parameter)
    assert not isinstance(layer.count, nn.Parameter) and not isinstance(fg.ones([2]), nn.Parameter)
    layer.requires_grad_(False)
    assert isinstance(layer.weight, nn.Parameter) and isinstance(nn.Parameter(fg.ones([2])).requires_grad_(False),
                                                                 nn.Parameter)
    assert isinstance(fg.nn.create_parameter([2], "float32"), nn.Parameter)


def test_parameter_shares_its_datas_value_and_is_a_leaf(eager):
    source = fg.to_tensor(np.arange(3.0), stop_gradient=False)
    param = nn.Parameter(source * 2)
    assert param.is_leaf and not param.stop_gradient and param.persistable
    np.testing.assert_array_equal(param.numpy(), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(nn.Parameter(np.ones(2)).numpy(), [1.0, 1.0])


def test_module_style_model_trains_under_to_static(eager):
    net, reference = _pair()
    x = _RNG.standard_normal((5, 3))
    traced = fg.jit.to_static(net)
    fg.mean(traced(fg.to_tensor(x)) ** 2).backward()
    torch.mean(reference(torch.tensor(x)) ** 2).backward()
    np.testing.assert_allclose(net.scale.grad.numpy(), reference.scale.grad.numpy(), rtol=1e-10)
    assert net.offset.grad is None


def test_module_style_model_built_in_static_mode_trains():
    """In static mode fg.ones is a Variable: nn.Parameter takes its value now, the Parameter joins
    the Program as a Layer's weights do, and minimize trains it (the frozen one stays)."""
    main, startup = fg.Program(), fg.Program()
    x0 = _RNG.standard_normal((6, 3)).astype("float32")
    with fg.program_guard(main, startup):
        net = _make_net(nn, nn.Parameter, lambda s: fg.ones(s) * 1.5)
        assert [n for n, _ in net.named_parameters()][0] == "scale"
        np.testing.assert_array_equal(net.scale.numpy(), [1.5, 1.5, 1.5])
        x = fg.static.data("x", [None, 3], "float32")
        loss = fg.mean(net(x) ** 2)
        fg.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fg.Executor()
    exe.run(startup)
    losses = [float(exe.run(main, feed={"x": x0}, fetch_list=[loss])[0]) for _ in range(4)]
    assert losses[-1] < losses[0]
    state = net.state_dict()
    assert not np.allclose(state["scale"].numpy(), 1.5)
    np.testing.assert_array_equal(state["offset"].numpy(), [1.5, 1.5, 1.5])


def test_parameter_of_a_fed_variable_is_a_clear_error():
    x = fg.static.data("x", [2], "float32")
    with pytest.raises(ValueError, match="nn.Parameter.*'x'"):
        nn.Parameter(x * 2)


# ---------------------------------------------------------------- bias= / device= / dtype=
@pytest.mark.parametrize("make, names", [
    (lambda: nn.Linear(2, 3, bias=False), ["weight"]),
    (lambda: nn.Linear(2, 3, False), ["weight"]),
    (lambda: nn.Linear(2, 3, True), ["weight", "bias"]),
    (lambda: nn.Bilinear(2, 3, 4, bias=False), ["weight"]),
    (lambda: nn.Conv1D(1, 2, 3, bias=False), ["weight"]),
    (lambda: nn.Conv2D(1, 2, 3, 1, 0, 1, 1, False), ["weight"]),
    (lambda: nn.Conv3D(1, 2, 3, bias=False), ["weight"]),
    (lambda: nn.Conv2DTranspose(1, 2, 3, bias=False), ["weight"]),
    (lambda: nn.Conv3DTranspose(1, 2, 3, bias=True), ["weight", "bias"]),
])
def test_layers_take_torchs_bias(make, names):
    assert [name for name, _ in make().named_parameters()] == names


def test_bias_false_with_a_bias_attr_is_an_error():
    with pytest.raises(ValueError, match="Linear: bias=False"):
        nn.Linear(2, 2, bias_attr=fg.ParamAttr(name="b"), bias=False)
    with pytest.raises(TypeError, match="Conv2D: bias must be True or False"):
        nn.Conv2D(1, 1, 3, bias="no")


def test_layers_take_torchs_device_and_dtype(eager):
    layer = nn.Linear(2, 3, device="cpu", dtype="float64")
    assert layer.weight.dtype == "float64" and layer.bias.dtype == "float64"
    assert nn.Conv2D(1, 1, 3, dtype="float64").weight.dtype == "float64"
    with pytest.raises(ValueError, match="Linear: fluidgrad runs on the CPU only"):
        nn.Linear(2, 3, device="cuda")


def test_linear_without_bias_matches_torch(eager):
    reference = torch.nn.Linear(3, 2, bias=False).double()
    layer = nn.Linear(3, 2, bias=False, dtype="float64")
    layer.weight.set_value(reference.weight.detach().numpy().T)
    x = _RNG.standard_normal((4, 3))
    np.testing.assert_allclose(layer(fg.to_tensor(x)).numpy(), reference(torch.tensor(x)).detach().numpy(),
                               rtol=1e-12)


# ---------------------------------------------------------------- register_buffer(persistent=)
def test_register_buffer_persistent(eager):
    layer = nn.Layer()
    layer.register_buffer("scratch", fg.zeros([2]), persistent=False)
    layer.register_buffer("kept", fg.zeros([2]), persistent=True)
    layer.register_buffer("paddle", fg.zeros([2]), persistable=False)
    assert list(layer.state_dict()) == ["kept"]
    assert [n for n, _ in layer.named_buffers()] == ["scratch", "kept", "paddle"]
    reference = torch.nn.Module()
    reference.register_buffer("scratch", torch.zeros(2), persistent=False)
    reference.register_buffer("kept", torch.zeros(2), persistent=True)
    assert list(reference.state_dict()) == ["kept"]
    with pytest.raises(ValueError, match="not both"):
        layer.register_buffer("both", fg.zeros([2]), persistable=False, persistent=True)


# ---------------------------------------------------------------- Embedding.from_pretrained
@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_from_pretrained_matches_torch(eager, freeze):
    vectors = _RNG.standard_normal((5, 3))
    vectors[1] = 0.0
    ids = np.array([[4, 1, 0], [1, 2, 2]])
    reference = torch.nn.Embedding.from_pretrained(torch.tensor(vectors), freeze=freeze, padding_idx=1)
    layer = nn.Embedding.from_pretrained(fg.to_tensor(vectors), freeze=freeze, padding_idx=1)
    assert layer.weight.dtype == "float64" and layer.weight.stop_gradient == freeze
    out, expected = layer(fg.to_tensor(ids)), reference(torch.tensor(ids))
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
    if not freeze:
        (out * out).sum().backward()
        (expected * expected).sum().backward()
        np.testing.assert_allclose(layer.weight.grad.numpy(), reference.weight.grad.numpy(), rtol=1e-12)


def test_embedding_from_pretrained_copies_and_checks(eager):
    vectors = np.ones((3, 2), "float32")
    layer = nn.Embedding.from_pretrained(vectors)
    layer.weight.set_value(np.zeros((3, 2), "float32"))
    assert vectors.sum() == 6.0
    with pytest.raises(ValueError, match="padding_idx=0 .* not zeros"):
        nn.Embedding.from_pretrained(vectors, padding_idx=0)
    with pytest.raises(ValueError, match="2-D"):
        nn.Embedding.from_pretrained(np.ones(3))


# ---------------------------------------------------------------- more of nn.Module's surface
def test_module_lookups_and_recurse_match_torch(eager):
    def build(m):
        outer = m.Sequential(m.Linear(2, 3), m.ModuleDict({"head": m.Linear(3, 1)}))
        outer.register_buffer("steps", (fg if m is nn else torch).zeros([1]))
        return outer

    net, reference = build(nn), build(torch.nn)
    assert [n for n, _ in net.named_parameters(recurse=False)] == [n for n, _ in
                                                                     reference.named_parameters(recurse=False)] == []
    assert len(net.parameters(recurse=True)) == len(list(reference.parameters(recurse=True))) == 4
    assert [n for n, _ in net.named_buffers(recurse=False)] == ["steps"] and len(net.buffers(recurse=False)) == 1
    assert net.get_submodule("1.head") is net[1]["head"]
    assert net.get_parameter("1.head.bias") is net[1]["head"].bias
    assert net.get_buffer("steps") is net.steps
    assert tuple(reference.get_parameter("1.head.weight").shape) == (1, 3)
    with pytest.raises(AttributeError, match="no sublayer 'tail'"):
        net.get_submodule("1.tail")
    assert net.cpu() is net
    with pytest.raises(ValueError, match="CPU only"):
        net.cuda()
    net.register_module("extra", nn.ReLU())
    assert "extra" in dict(net.named_children())


def test_module_list_pop_and_parameter_dict(eager):
    layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)])
    last = layers.pop()
    assert isinstance(last, nn.Linear) and len(layers) == 2
    assert [n for n, _ in layers.named_parameters()] == ["0.weight", "0.bias"]
    table = nn.ParameterDict({"a": nn.Parameter(fg.ones([2])), "b": nn.Parameter(fg.zeros([3]))})
    holder = nn.Module()
    holder.table = table
    assert [n for n, _ in holder.named_parameters()] == ["table.a", "table.b"]
    assert list(table.keys()) == ["a", "b"] and "a" in table and len(table) == 2
    table.pop("a")
    assert list(holder.state_dict()) == ["table.b"]
    with pytest.raises(TypeError, match="ParameterDict: 'c' must be a parameter Tensor"):
        table["c"] = 1.0


def test_dropout_takes_torchs_inplace(eager):
    assert nn.Dropout(0.2, inplace=True).eval()(fg.ones([2])).numpy().tolist() == [1.0, 1.0]
    assert nn.AlphaDropout(0.2, inplace=False).p == 0.2
