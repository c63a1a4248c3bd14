"""PyTorch's spellings of layer names (Conv2d, BatchNorm2d, MaxPool2d, ConvTranspose2d, ConstantPad2d,
MultiheadAttention, ...): each takes torch's constructor (positional order, keywords, defaults) and
gives torch's values and gradients; torch 2.13.0 is the oracle."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import nn

_RNG = np.random.default_rng(12)


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def test_every_torch_spelling_of_a_paddle_layer_name_exists():
    """Every torch.nn class whose name is one of fluidgrad.nn's up to case (or ConvTranspose2d for
    Conv2DTranspose) is in fluidgrad.nn under torch's spelling."""
    ours = {name.lower(): name for name in dir(nn) if name[:1].isupper()}
    ours.update({f"convtranspose{d}d": f"Conv{d}DTranspose" for d in (1, 2, 3)})
    wanted = [name for name in dir(torch.nn) if name[:1].isupper() and name.lower() in ours]
    assert len(wanted) > 40
    assert [name for name in wanted if not hasattr(nn, name)] == []


def _same_parameters(layer, reference):
    """torch's parameter values into `layer` (same names and layouts)."""
    theirs = dict(reference.named_parameters())
    names = [name for name, _ in layer.named_parameters()]
    assert names == list(theirs)
    for name, param in layer.named_parameters():
        param.set_value(theirs[name].detach().numpy())


def _check(make, shape, grad=True):
    """Build the layer from the same call with torch.nn and fluidgrad.nn (float64), copy torch's
    parameters, compare the output and the input's and parameters' gradients."""
    torch.manual_seed(0)
    reference = make(torch.nn).double()
    layer = make(nn).to(dtype="float64")
    _same_parameters(layer, reference)
    x0 = _RNG.standard_normal(shape)
    x, tx = fg.to_tensor(x0, stop_gradient=False), torch.tensor(x0, requires_grad=True)
    out, expected = layer(x), reference(tx)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    if grad:
        weights = _RNG.standard_normal(expected.shape)
        fg.sum(out * fg.to_tensor(weights)).backward()
        (expected * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
        for (name, param), (_, theirs) in zip(layer.named_parameters(), reference.named_parameters()):
            np.testing.assert_allclose(param.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    return layer, reference


_CASES = {
    "Conv1d(2, 4, 3, stride=2, padding=1, bias=False)": (lambda m: m.Conv1d(2, 4, 3, stride=2, padding=1, bias=False),
                                                         (2, 2, 7)),
    "Conv2d(2, 4, 3, 1, 1, 1, 2, False) positional": (lambda m: m.Conv2d(2, 4, 3, 1, 1, 1, 2, False), (2, 2, 5, 5)),
    "Conv2d(2, 3, 3, padding=1, padding_mode='reflect')": (
        lambda m: m.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 4, 5)),
    "Conv3d(1, 2, 2, dilation=2)": (lambda m: m.Conv3d(1, 2, 2, dilation=2), (1, 1, 4, 4, 4)),
    "ConvTranspose1d(2, 3, 3, 2, 1, 1)": (lambda m: m.ConvTranspose1d(2, 3, 3, 2, 1, 1), (2, 2, 4)),
    "ConvTranspose2d(2, 4, 3, 2, 1, 1, 2, False, 1) positional": (
        lambda m: m.ConvTranspose2d(2, 4, 3, 2, 1, 1, 2, False, 1), (1, 2, 3, 3)),
    "ConvTranspose3d(1, 2, 2, stride=2, bias=False)": (lambda m: m.ConvTranspose3d(1, 2, 2, stride=2, bias=False),
                                                       (1, 1, 2, 2, 2)),
    "BatchNorm1d(3, 1e-3, 0.3)": (lambda m: m.BatchNorm1d(3, 1e-3, 0.3), (5, 3)),
    "BatchNorm2d(3, eps=1e-3, momentum=0.2, affine=False)": (
        lambda m: m.BatchNorm2d(3, eps=1e-3, momentum=0.2, affine=False), (2, 3, 4, 4)),
    "BatchNorm3d(2)": (lambda m: m.BatchNorm3d(2), (2, 2, 2, 3, 3)),
    "InstanceNorm1d(3)": (lambda m: m.InstanceNorm1d(3), (2, 3, 6)),
    "InstanceNorm2d(3, eps=1e-3, affine=True)": (lambda m: m.InstanceNorm2d(3, eps=1e-3, affine=True), (2, 3, 4, 4)),
    "InstanceNorm3d(2)": (lambda m: m.InstanceNorm3d(2), (1, 2, 3, 3, 3)),
    "MaxPool1d(3, 2, 1)": (lambda m: m.MaxPool1d(3, 2, 1), (2, 3, 9)),
    "MaxPool2d(3, 2, 1, 1, False, True) positional": (lambda m: m.MaxPool2d(3, 2, 1, 1, False, True), (1, 2, 6, 6)),
    "MaxPool2d(2, dilation=2)": (lambda m: m.MaxPool2d(2, dilation=2), (1, 2, 6, 6)),
    "MaxPool3d(2)": (lambda m: m.MaxPool3d(2), (1, 2, 4, 4, 4)),
    "AvgPool1d(3, 2, 1)": (lambda m: m.AvgPool1d(3, 2, 1), (2, 3, 8)),
    "AvgPool2d(3, 2, 1)": (lambda m: m.AvgPool2d(3, 2, 1), (1, 2, 5, 5)),
    "AvgPool2d(3, 2, 1, True, False)": (lambda m: m.AvgPool2d(3, 2, 1, True, False), (1, 2, 6, 6)),
    "AvgPool3d(2, divisor_override=3)": (lambda m: m.AvgPool3d(2, divisor_override=3), (1, 1, 4, 4, 4)),
    "AdaptiveAvgPool1d(3)": (lambda m: m.AdaptiveAvgPool1d(3), (2, 3, 7)),
    "AdaptiveAvgPool2d((2, 3))": (lambda m: m.AdaptiveAvgPool2d((2, 3)), (1, 2, 5, 7)),
    "AdaptiveMaxPool2d(2)": (lambda m: m.AdaptiveMaxPool2d(2), (1, 2, 5, 5)),
    "AdaptiveMaxPool3d(2)": (lambda m: m.AdaptiveMaxPool3d(2), (1, 2, 4, 4, 4)),
    "ZeroPad2d((1, 0, 2, 1))": (lambda m: m.ZeroPad2d((1, 0, 2, 1)), (1, 2, 3, 3)),
    "ConstantPad1d(2, 3.5)": (lambda m: m.ConstantPad1d(2, 3.5), (1, 2, 3)),
    "ConstantPad3d((1, 0, 0, 1, 1, 1), -1.0)": (lambda m: m.ConstantPad3d((1, 0, 0, 1, 1, 1), -1.0), (1, 1, 2, 2, 2)),
    "ReflectionPad2d((2, 1, 1, 0))": (lambda m: m.ReflectionPad2d((2, 1, 1, 0)), (1, 2, 4, 4)),
    "ReplicationPad1d(2)": (lambda m: m.ReplicationPad1d(2), (1, 2, 3)),
    "ReplicationPad3d(1)": (lambda m: m.ReplicationPad3d(1), (1, 1, 2, 3, 3)),
    "CircularPad2d(1)": (lambda m: m.CircularPad2d(1), (1, 2, 3, 3)),
    "Softmax2d()": (lambda m: m.Softmax2d(), (2, 3, 2, 2)),
    "UpsamplingNearest2d(scale_factor=2)": (lambda m: m.UpsamplingNearest2d(scale_factor=2), (1, 2, 2, 3)),
    "UpsamplingBilinear2d(size=(4, 5))": (lambda m: m.UpsamplingBilinear2d(size=(4, 5)), (1, 2, 2, 3)),
}


@pytest.mark.parametrize("call", sorted(_CASES))
def test_torch_spelling_matches_torch(call):
    make, shape = _CASES[call]
    _check(make, shape)


def test_batch_norm_running_statistics_follow_torchs_momentum():
    """torch's momentum weighs the batch: running = (1 - m) running + m batch (Paddle's momentum is
    1 - m); after two training steps eval mode gives torch's values."""
    layer, reference = _check(lambda m: m.BatchNorm2d(3, momentum=0.3), (4, 3, 2, 2), grad=False)
    x0 = _RNG.standard_normal((4, 3, 2, 2)) * 2 + 1
    layer(fg.to_tensor(x0))
    reference(torch.tensor(x0))
    layer.eval()
    reference.eval()
    np.testing.assert_allclose(layer(fg.to_tensor(x0)).numpy(), reference(torch.tensor(x0)).detach().numpy(),
                               rtol=1e-10)


def test_batch_norm_without_running_statistics_uses_the_batch_in_eval():
    _check(lambda m: m.BatchNorm1d(3, track_running_stats=False).eval(), (6, 3))


def test_max_pool_indices_match_torch():
    x0 = _RNG.standard_normal((2, 2, 6, 6))
    out, indices = nn.MaxPool2d(2, return_indices=True)(fg.to_tensor(x0))
    expected, expected_indices = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x0))
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    unpooled = nn.MaxUnpool2d(2)(out, indices)
    np.testing.assert_array_equal(unpooled.numpy(), torch.nn.MaxUnpool2d(2)(expected, expected_indices).numpy())


def test_dropout2d_takes_inplace_and_zeroes_whole_channels():
    layer = nn.Dropout2d(0.5, inplace=True)
    out = layer(fg.ones([4, 8, 3, 3])).numpy()
    assert set(np.unique(out)) <= {0.0, 2.0} and np.all(out.min(axis=(2, 3)) == out.max(axis=(2, 3)))
    np.testing.assert_array_equal(layer.eval()(fg.ones([1, 2, 2, 2])).numpy(), np.ones((1, 2, 2, 2)))


def test_torch_spellings_take_device_and_dtype():
    assert nn.Conv2d(1, 2, 3, device="cpu", dtype="float64").weight.dtype == "float64"
    assert nn.MultiheadAttention(4, 2, dtype="float64").q_proj.weight.dtype == "float64"
    with pytest.raises(ValueError, match="ConvTranspose2d: fluidgrad runs on the CPU only"):
        nn.ConvTranspose2d(2, 2, 3, device="cuda:0")


@pytest.mark.parametrize("make, message", [
    (lambda: nn.Dropout2d(1.5), r"p must lie in \[0, 1\]"),
    (lambda: nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect"), "only padding_mode='zeros'"),
    (lambda: nn.MultiheadAttention(4, 2, add_bias_kv=True), "add_bias_kv"),
])
def test_what_the_torch_spellings_do_not_support_is_a_clear_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ---------------------------------------------------------------- MultiheadAttention
def _attention_pair(embed_dim=4, num_heads=2, **kwargs):
    torch.manual_seed(0)
    reference = torch.nn.MultiheadAttention(embed_dim, num_heads, **kwargs).double()
    layer = nn.MultiheadAttention(embed_dim, num_heads, **kwargs).to(dtype="float64")
    if reference.in_proj_weight is not None:
        packed = reference.in_proj_weight.detach().numpy()
        weights = [packed[i * embed_dim:(i + 1) * embed_dim] for i in range(3)]
    else:   # kdim / vdim: torch keeps three matrices
        weights = [getattr(reference, f"{n}_proj_weight").detach().numpy() for n in "qkv"]
    biases = reference.in_proj_bias.detach().numpy() if reference.in_proj_bias is not None else None
    for i, proj in enumerate((layer.q_proj, layer.k_proj, layer.v_proj)):
        proj.weight.set_value(weights[i].T)
        if biases is not None:
            proj.bias.set_value(biases[i * embed_dim:(i + 1) * embed_dim])
    layer.out_proj.weight.set_value(reference.out_proj.weight.detach().numpy().T)
    if reference.out_proj.bias is not None:
        layer.out_proj.bias.set_value(reference.out_proj.bias.detach().numpy())
    return layer, reference


def _as_pair(value):
    return (None, None) if value is None else (fg.to_tensor(value), torch.tensor(value))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "bool attn", "float attn", "key padding", "both", "3-D attn"])
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_matches_torch(batch_first, masks, average):
    layer, reference = _attention_pair(batch_first=batch_first)
    batch, q_len, k_len = 2, 3, 5
    q0 = _RNG.standard_normal((batch, q_len, 4) if batch_first else (q_len, batch, 4))
    k0 = _RNG.standard_normal((batch, k_len, 4) if batch_first else (k_len, batch, 4))
    attn = {"bool attn": np.triu(np.ones((q_len, k_len), bool), 1), "both": np.triu(np.ones((q_len, k_len), bool), 2),
            "float attn": _RNG.standard_normal((q_len, k_len)),
            "3-D attn": _RNG.standard_normal((batch * 2, q_len, k_len))}.get(masks)
    padding = np.array([[False] * 4 + [True], [False] * 5]) if masks in ("key padding", "both") else None
    (a, ta), (p, tp) = _as_pair(attn), _as_pair(padding)
    out, weights = layer(fg.to_tensor(q0), fg.to_tensor(k0), fg.to_tensor(k0), key_padding_mask=p, attn_mask=a,
                         average_attn_weights=average)
    expected, expected_weights = reference(torch.tensor(q0), torch.tensor(k0), torch.tensor(k0), key_padding_mask=tp,
                                           attn_mask=ta, average_attn_weights=average)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(weights.numpy(), expected_weights.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_multihead_attention_without_weights_and_unbatched():
    layer, reference = _attention_pair(kdim=3, vdim=2)
    q0, k0, v0 = _RNG.standard_normal((3, 4)), _RNG.standard_normal((5, 3)), _RNG.standard_normal((5, 2))
    out, weights = layer(fg.to_tensor(q0), fg.to_tensor(k0), fg.to_tensor(v0), need_weights=False)
    expected, _ = reference(torch.tensor(q0), torch.tensor(k0), torch.tensor(v0), need_weights=False)
    assert weights is None
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    out, weights = layer(fg.to_tensor(q0), fg.to_tensor(k0), fg.to_tensor(v0))
    expected, expected_weights = reference(torch.tensor(q0), torch.tensor(k0), torch.tensor(v0))
    np.testing.assert_allclose(weights.numpy(), expected_weights.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_multihead_attention_without_bias_and_its_gradients():
    layer, reference = _attention_pair(bias=False, batch_first=True)
    assert [n for n, _ in layer.named_parameters()] == ["q_proj.weight", "k_proj.weight", "v_proj.weight",
                                                        "out_proj.weight"]
    x0 = _RNG.standard_normal((2, 3, 4))
    x, tx = fg.to_tensor(x0, stop_gradient=False), torch.tensor(x0, requires_grad=True)
    fg.sum(layer(x, x, x)[0] ** 2).backward()
    (reference(tx, tx, tx)[0] ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
