"""The Transformer layers built with PyTorch's keywords (batch_first=, norm_first=, bias=,
dim_feedforward's default, a callable activation) against torch 2.13.0 with the same weights,
float64: [seq, batch, feature] tensors unless batch_first=True, torch's bool masks (True: masked
out), key_padding_mask= and is_causal=, nn.Transformer's final norms; values and gradients, in
eager mode and through to_static."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from both_modes import compare_with_torch
from test_attention import _norm_from_torch, copy_decoder_layer, copy_encoder_layer

R = np.random.default_rng(12)


def _padding(batch, length):
    """torch's key_padding_mask: True at the padding (the last steps of sequence 1)."""
    mask = np.zeros((batch, length), dtype=bool)
    mask[1, length - 2:] = True
    return mask


def _seq_major(shape, batch_first):
    batch, length, width = shape
    return R.standard_normal(shape if batch_first else (length, batch, width))


@pytest.mark.parametrize("batch_first", [None, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
def test_encoder_layer_with_torchs_keywords_matches_torch(batch_first, norm_first, activation):
    torch.manual_seed(3)
    act = TF.silu if activation == "callable" else activation
    keywords = {"norm_first": norm_first, **({} if batch_first is None else {"batch_first": batch_first})}
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, act, dtype=torch.float64, **keywords)
    ours = fg.nn.TransformerEncoderLayer(8, 2, 16, 0.0, fg.nn.functional.silu if activation == "callable" else act,
                                         dtype="float64", **keywords)
    assert ours.batch_first == bool(batch_first)
    copy_encoder_layer(ours, theirs)
    future = np.triu(np.ones((5, 5), dtype=bool), k=1)               # torch's bool mask: True is masked out
    inputs = {"x": _seq_major((2, 5, 8), batch_first), "mask": future, "padding": _padding(2, 5)}
    compare_with_torch(lambda x, mask, padding: ours(x, mask, src_key_padding_mask=padding),
                       lambda x, mask, padding: theirs(x, mask, src_key_padding_mask=padding),
                       inputs, wrt=["x"], rtol=1e-9, atol=1e-10, static="to_static")


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_with_torchs_keywords_matches_torch(batch_first):
    torch.manual_seed(4)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0, batch_first=batch_first, norm_first=True,
                                              dtype=torch.float64)
    ours = fg.nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0, batch_first=batch_first, norm_first=True,
                                         dtype="float64")
    copy_decoder_layer(ours, theirs)
    inputs = {"tgt": _seq_major((2, 4, 8), batch_first), "memory": _seq_major((2, 6, 8), batch_first),
              "padding": _padding(2, 6)}
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)

    def ours_call(tgt, memory, padding):
        return ours(tgt, memory, tgt_is_causal=True, memory_key_padding_mask=padding)

    def theirs_call(tgt, memory, padding):
        return theirs(tgt, memory, causal, tgt_is_causal=True, memory_key_padding_mask=padding)

    compare_with_torch(ours_call, theirs_call, inputs, wrt=["tgt", "memory"], rtol=1e-9, atol=1e-10,
                       static="to_static")


def _copy_transformer(ours, theirs):
    for mine, their in zip(ours.encoder.layers, theirs.encoder.layers):
        copy_encoder_layer(mine, their)
    for mine, their in zip(ours.decoder.layers, theirs.decoder.layers):
        copy_decoder_layer(mine, their)
    _norm_from_torch(ours.encoder.norm, theirs.encoder.norm)
    _norm_from_torch(ours.decoder.norm, theirs.decoder.norm)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_with_torchs_keywords_matches_torch(batch_first):
    torch.manual_seed(5)
    options = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
                   batch_first=batch_first)
    theirs = torch.nn.Transformer(**options, dtype=torch.float64)
    ours = fg.nn.Transformer(**options, dtype="float64")
    assert ours.encoder.norm is not None and ours.decoder.norm is not None       # torch's final norms
    _copy_transformer(ours, theirs)
    src, tgt = _seq_major((2, 5, 8), batch_first), _seq_major((2, 3, 8), batch_first)
    tgt_mask = theirs.generate_square_subsequent_mask(3, dtype=torch.float64)
    padding = _padding(2, 5)
    expected = theirs(torch.tensor(src), torch.tensor(tgt), tgt_mask=tgt_mask, src_key_padding_mask=torch.tensor(
        padding), memory_key_padding_mask=torch.tensor(padding)).detach().numpy()
    got = ours(fg.to_tensor(src), fg.to_tensor(tgt), tgt_mask=fg.to_tensor(tgt_mask.numpy()),
               src_key_padding_mask=fg.to_tensor(padding), memory_key_padding_mask=fg.to_tensor(padding))
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-10)


def test_encoder_stack_takes_torchs_mask_keyword():
    torch.manual_seed(6)
    their_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype=torch.float64)
    theirs = torch.nn.TransformerEncoder(their_layer, 2, enable_nested_tensor=False)
    ours = fg.nn.TransformerEncoder(fg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype="float64"), 2)
    for mine, their in zip(ours.layers, theirs.layers):
        copy_encoder_layer(mine, their)
    x, mask = R.standard_normal((5, 2, 8)), np.triu(np.ones((5, 5), dtype=bool), k=1)
    expected = theirs(torch.tensor(x), mask=torch.tensor(mask)).detach().numpy()
    np.testing.assert_allclose(ours(fg.to_tensor(x), mask=fg.to_tensor(mask)).numpy(), expected, rtol=1e-9,
                               atol=1e-10)


def test_torchs_defaults_and_bias_false():
    layer = fg.nn.TransformerEncoderLayer(8, 2)
    assert tuple(layer.linear1.weight.shape) == (8, 2048) and layer.batch_first is False
    assert tuple(layer(fg.to_tensor(R.standard_normal((5, 2, 8)).astype("float32"))).shape) == (5, 2, 8)
    for kind in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        ours = getattr(fg.nn, kind)(8, 2, 16, bias=False)
        theirs = getattr(torch.nn, kind)(8, 2, 16, bias=False)
        assert not [n for n, _ in ours.named_parameters() if "bias" in n]
        assert not [n for n, _ in theirs.named_parameters() if "bias" in n]


def test_paddles_keywords_keep_paddles_layout_and_masks():
    """Built with Paddle's keywords only: batch-first, and a bool mask's True means attend."""
    layer = fg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, normalize_before=True)
    assert layer.batch_first and not layer.torch_convention
    torch_layer = fg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True, batch_first=True)
    torch_layer.set_state_dict(layer.state_dict())
    x = fg.to_tensor(R.standard_normal((2, 5, 8)).astype("float32"))
    attend = np.tril(np.ones((5, 5), dtype=bool))
    np.testing.assert_allclose(layer(x, fg.to_tensor(attend)).numpy(), torch_layer(x, fg.to_tensor(~attend)).numpy(),
                               rtol=1e-6)


def test_conflicting_keywords_and_torch_style_int_masks_are_refused():
    with pytest.raises(TypeError, match="not both"):
        fg.nn.TransformerEncoderLayer(8, 2, 16, normalize_before=True, norm_first=False)
    layer = fg.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    with pytest.raises(TypeError, match="bool"):
        layer(fg.to_tensor(R.standard_normal((2, 5, 8)).astype("float32")), fg.to_tensor(np.ones((5, 5), "int64")))


def test_is_causal_with_a_key_padding_mask_and_no_attn_mask():
    """torch wants the causal attn_mask beside is_causal=True; here the hint alone builds it."""
    torch.manual_seed(7)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype=torch.float64)
    ours = fg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=False, dtype="float64")
    copy_encoder_layer(ours, theirs)
    future = torch.tensor(np.triu(np.ones((5, 5), dtype=bool), k=1))
    compare_with_torch(lambda x, padding: ours(x, src_key_padding_mask=padding, is_causal=True),
                       lambda x, padding: theirs(x, future, src_key_padding_mask=padding, is_causal=True),
                       {"x": R.standard_normal((5, 2, 8)), "padding": _padding(2, 5)}, wrt=["x"], rtol=1e-9,
                       atol=1e-10, static="to_static")


def test_custom_encoder_of_a_torch_style_transformer_sees_torchs_layout():
    torch.manual_seed(9)
    their_encoder = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                                 dtype=torch.float64), 1,
                                                enable_nested_tensor=False)
    theirs = torch.nn.Transformer(8, 2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
                                  custom_encoder=their_encoder, dtype=torch.float64)
    our_encoder = fg.nn.TransformerEncoder(fg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype="float64"), 1)
    ours = fg.nn.Transformer(8, 2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0, custom_encoder=our_encoder,
                             dtype="float64")
    copy_encoder_layer(ours.encoder.layers[0], theirs.encoder.layers[0])
    copy_decoder_layer(ours.decoder.layers[0], theirs.decoder.layers[0])
    _norm_from_torch(ours.decoder.norm, theirs.decoder.norm)
    src, tgt = R.standard_normal((5, 2, 8)), R.standard_normal((3, 2, 8))
    expected = theirs(torch.tensor(src), torch.tensor(tgt)).detach().numpy()
    np.testing.assert_allclose(ours(fg.to_tensor(src), fg.to_tensor(tgt)).numpy(), expected, rtol=1e-9, atol=1e-10)
