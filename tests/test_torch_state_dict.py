"""PyTorch state dicts load into the same model built with fluidgrad (torch's names and layouts
converted: nn/torch_state.py), and fluidgrad's go back into torch, giving torch's outputs."""
import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.framework.program as program_module

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(12, 12), nn.Tanh(), nn.Linear(12, 3))


class _Attention:
    """nn.MultiheadAttention called as self-attention, returning the output only."""

    def __init__(self, nn, **kwargs):
        self.layer = nn.MultiheadAttention(8, 2, **kwargs)

    def __call__(self, x):
        kv = x[..., :self.layer.kdim] if hasattr(self.layer, "kdim") and self.layer.kdim != 8 else x
        return self.layer(x, kv, kv)[0]


_MODELS = {
    "MLP with square Linear layers": (lambda nn: nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6), nn.ReLU(),
                                                               nn.Linear(6, 6)), (5, 6)),
    "CNN: Conv2d, BatchNorm2d, Linear": (_cnn, (2, 2, 4, 4)),
    "LSTM, 2 layers, bidirectional, batch_first": (
        lambda nn: nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True), (2, 4, 6)),
    "GRU": (lambda nn: nn.GRU(6, 5, batch_first=True), (2, 4, 6)),
    "TransformerEncoder, batch_first": (lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), num_layers=2), (2, 5, 8)),
    "MultiheadAttention": (lambda nn: _Attention(nn), (5, 2, 8)),
    "Bilinear": (lambda nn: nn.Bilinear(6, 6, 3), (4, 6)),
    "LayerNorm and GroupNorm": (lambda nn: nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Unflatten(1, (8, 1)),
                                                         nn.GroupNorm(2, 8)), (3, 6)),
}


def _run(model, x, m):
    if isinstance(model, _Attention):
        return model(x)
    if m is torch and isinstance(model, torch.nn.Bilinear):
        return model(x, x)
    if m is fg and isinstance(model, fg.nn.Bilinear):
        return model(x, x)
    out = model(x)
    return out[0] if isinstance(out, tuple) else out


def _pair(build):
    ours, theirs = build(fg.nn), build(torch.nn)
    for model in (ours, theirs):
        layer = model.layer if isinstance(model, _Attention) else model
        layer.eval()
    (ours.layer if isinstance(ours, _Attention) else ours).to(dtype="float64")
    (theirs.layer if isinstance(theirs, _Attention) else theirs).double()
    return ours, theirs


def _layer(model):
    return model.layer if isinstance(model, _Attention) else model


def _outputs(ours, theirs, shape):
    x = np.random.default_rng(1).standard_normal(shape)
    got = _run(ours, fg.to_tensor(x), fg).numpy()
    with torch.no_grad():
        expected = _run(theirs, torch.tensor(x), torch).numpy()
    return got, expected


def _randomise_batch_norm_statistics(model):
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)


@pytest.mark.parametrize("name", sorted(_MODELS))
def test_a_torch_state_dict_loads_and_gives_torchs_outputs(name):
    build, shape = _MODELS[name]
    torch.manual_seed(0)
    ours, theirs = _pair(build)
    _randomise_batch_norm_statistics(_layer(theirs))
    _layer(ours).load_state_dict(_layer(theirs).state_dict())      # torch Tensors: converted by itself
    got, expected = _outputs(ours, theirs, shape)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(_MODELS))
def test_fluidgrads_state_dict_goes_back_into_torch(name):
    build, shape = _MODELS[name]
    ours, theirs = _pair(build)
    state = fg.nn.to_torch_state_dict(_layer(ours))
    _layer(theirs).load_state_dict({key: torch.from_numpy(value) for key, value in state.items()})
    got, expected = _outputs(ours, theirs, shape)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_multihead_attention_with_other_key_and_value_sizes():
    ours, theirs = fg.nn.MultiheadAttention(8, 2, kdim=4, vdim=6), torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=6)
    ours.to(dtype="float64")
    theirs.double().eval()
    ours.eval()
    ours.load_state_dict(theirs.state_dict())
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((3, 2, 8)), rng.standard_normal((5, 2, 4)), rng.standard_normal((5, 2, 6))
    got = ours(fg.to_tensor(q), fg.to_tensor(k), fg.to_tensor(v))[0].numpy()
    expected = theirs(torch.tensor(q), torch.tensor(k), torch.tensor(v))[0].detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert sorted(fg.nn.to_torch_state_dict(ours)) == sorted(theirs.state_dict())


def test_a_full_transformer_round_trips_under_torchs_keys():
    def build(nn):
        return nn.Transformer(8, 2, 1, 1, dim_feedforward=16, dropout=0.0, batch_first=True)
    torch.manual_seed(0)
    ours, theirs = build(fg.nn).to(dtype="float64"), build(torch.nn).double()
    ours.eval()
    theirs.eval()
    assert sorted(fg.nn.to_torch_state_dict(ours)) == sorted(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    rng = np.random.default_rng(3)
    src, tgt = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 3, 8))
    got = ours(fg.to_tensor(src), fg.to_tensor(tgt)).numpy()
    expected = theirs(torch.tensor(src), torch.tensor(tgt)).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11)


def test_a_safetensors_file_pytorch_wrote_loads_with_its_layouts(tmp_path):
    """fg.load of a safetensors file marked as PyTorch's (format "pt", as Hugging Face's
    save_pretrained writes) marks the dict, so load_state_dict converts: a square Linear would
    otherwise load transposed, silently."""
    safetensors_torch = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
    path = str(tmp_path / "model.safetensors")
    safetensors_torch.save_file(theirs.state_dict(), path, metadata={"format": "pt"})
    ours = fg.nn.Sequential(fg.nn.Linear(4, 4), fg.nn.ReLU(), fg.nn.Linear(4, 4))
    ours.load_state_dict(fg.load(path))
    x = np.random.default_rng(4).standard_normal((3, 4)).astype("float32")
    np.testing.assert_allclose(ours(fg.to_tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_numpy_arrays_from_torch_need_the_explicit_converter():
    """A dict of NumPy arrays cannot be told apart from fluidgrad's own: load_torch_state_dict
    converts it; plain load_state_dict refuses the transposed weight and points at the converter."""
    torch.manual_seed(0)
    theirs = torch.nn.Linear(3, 2).double()
    arrays = {key: value.numpy() for key, value in theirs.state_dict().items()}
    ours = fg.nn.Linear(3, 2).to(dtype="float64")
    with pytest.raises(ValueError, match="load_torch_state_dict"):
        ours.load_state_dict(arrays)
    fg.nn.load_torch_state_dict(ours, arrays)
    x = np.random.default_rng(5).standard_normal((4, 3))
    np.testing.assert_allclose(ours(fg.to_tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    converted = fg.nn.from_torch_state_dict(ours, arrays)
    np.testing.assert_array_equal(converted["weight"], arrays["weight"].T)


def test_torch_only_keys_mark_a_numpy_dict_as_torchs():
    """BatchNorm's running_mean is torch's name alone: a NumPy dict holding it, for a model with
    that BatchNorm, is converted whole (the square Linear beside it transposed too)."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).double().eval()
    with torch.no_grad():
        theirs[1].running_mean.uniform_(-1, 1)
    arrays = {key: value.numpy() for key, value in theirs.state_dict().items()}
    ours = fg.nn.Sequential(fg.nn.Linear(4, 4), fg.nn.BatchNorm1d(4)).to(dtype="float64")
    ours.eval()
    result = ours.load_state_dict(arrays)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(ours[1].running_mean.numpy(), arrays["1.running_mean"])
    x = np.random.default_rng(7).standard_normal((3, 4))
    np.testing.assert_allclose(ours(fg.to_tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_torch_only_keys_in_a_strict_load_point_at_the_converter():
    """Keys that fit no sublayer (a DataParallel "module." prefix) are not converted: the strict
    error names them and points at the converter."""
    arrays = {f"module.{key}": value.numpy() for key, value in torch.nn.BatchNorm1d(3).state_dict().items()}
    with pytest.raises(RuntimeError, match="load_torch_state_dict"):
        fg.nn.BatchNorm1d(3).load_state_dict(arrays)


def test_training_goes_on_from_loaded_torch_weights():
    """The loaded values are the parameters the optimizer updates: one SGD step agrees."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    ours = fg.nn.Sequential(fg.nn.Linear(4, 4), fg.nn.Tanh(), fg.nn.Linear(4, 1)).to(dtype="float64")
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(6).standard_normal((8, 4))
    torch_opt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    our_opt = fg.optimizer.SGD(learning_rate=0.1, parameters=ours.parameters())
    (theirs(torch.tensor(x)) ** 2).mean().backward()
    torch_opt.step()
    (ours(fg.to_tensor(x)) ** 2).mean().backward()
    our_opt.step()
    after = fg.nn.to_torch_state_dict(ours)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(after[key], value.numpy(), rtol=1e-12, atol=1e-14)


def test_add_bias_kv_is_refused_by_name():
    theirs = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(ValueError, match="bias_k"):
        fg.nn.MultiheadAttention(8, 2).load_state_dict(theirs.state_dict())


def test_a_torch_pickle_is_refused_with_the_safetensors_way(tmp_path):
    path = str(tmp_path / "model.pt")
    torch.save(torch.nn.Linear(2, 2).state_dict(), path)
    with pytest.raises(fg.serialization.CheckpointError, match="safetensors.torch.save_file"):
        fg.load(path)


class _TiedLanguageModel:
    """torch's weight tying: the output Linear shares the embedding's [vocab, hidden] weight."""

    def __init__(self, nn):
        self.encoder, self.decoder = nn.Embedding(10, 6), nn.Linear(6, 10)
        self.decoder.weight = self.encoder.weight

    def __call__(self, ids):
        return self.decoder(self.encoder(ids))


def test_tied_embedding_and_linear_train_as_torchs():
    torch.manual_seed(0)
    theirs, ours = _TiedLanguageModel(torch.nn), _TiedLanguageModel(fg.nn)
    ours.encoder.weight.set_value(theirs.encoder.weight.detach().numpy())
    ours.decoder.bias.set_value(theirs.decoder.bias.detach().numpy())
    ids = np.array([[1, 2, 3], [4, 5, 9]])
    (theirs(torch.tensor(ids)) ** 2).mean().backward()
    (ours(fg.to_tensor(ids)) ** 2).mean().backward()
    assert ours.decoder.weight is ours.encoder.weight
    np.testing.assert_allclose(ours.encoder.weight.grad.numpy(), theirs.encoder.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-7)
    back = fg.nn.to_torch_state_dict(ours.decoder)
    np.testing.assert_array_equal(back["weight"], theirs.decoder.weight.detach().numpy())


def test_a_linear_weight_of_neither_layout_is_named():
    layer = fg.nn.Linear(3, 2)
    layer.weight = fg.nn.Parameter(fg.zeros([4, 4]))
    with pytest.raises(ValueError, match=r"Linear\(3, 2\): weight of shape \[4, 4\]"):
        layer(fg.ones([1, 3]))
