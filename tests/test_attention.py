"""Attention, the Transformer layers and Embedding's padding_idx against PyTorch, in both modes.

The fused op `attention_softmax` has its op cases in tests/op_cases/attention.py; here the
public functions and layers built on it are compared with torch's."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.nn.functional as F
from both_modes import compare_with_torch

R = np.random.default_rng(11)


def _to_torch_layout(x):
    return x.permute(0, 2, 1, 3)        # [B, L, H, D] <-> [B, H, L, D]


@pytest.mark.parametrize("mask_kind", ["none", "causal", "bool", "float", "causal_rect"])
def test_scaled_dot_product_attention(mask_kind):
    lq = 3 if mask_kind == "causal_rect" else 5
    inputs = {"q": R.normal(size=(2, lq, 3, 4)), "k": R.normal(size=(2, 5, 3, 4)), "v": R.normal(size=(2, 5, 3, 6)),
              "mask": (R.normal(size=(2, 1, lq, 5)) if mask_kind == "float" else R.uniform(size=(lq, 5)) > 0.3)}
    inputs["mask"][..., 0] = True if mask_kind == "bool" else inputs["mask"][..., 0]   # no row fully masked
    causal = mask_kind.startswith("causal")
    use_mask = mask_kind in ("bool", "float")

    def ours(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, mask if use_mask else None, is_causal=causal)

    def theirs(q, k, v, mask):
        out = TF.scaled_dot_product_attention(_to_torch_layout(q), _to_torch_layout(k), _to_torch_layout(v),
                                              attn_mask=mask if use_mask else None, is_causal=causal)
        return _to_torch_layout(out)

    compare_with_torch(ours, theirs, inputs, wrt=["q", "k", "v"] + (["mask"] if mask_kind == "float" else []))


def test_attention_dropout_drops_weights_only_while_training():
    q = fg.to_tensor(R.normal(size=(1, 4, 2, 8)))
    plain = F.scaled_dot_product_attention(q, q, q).numpy()
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, q, q, dropout_p=0.5, training=False).numpy(), plain)
    assert not np.allclose(F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy(), plain)


def _linear_from_torch(layer, torch_linear):
    layer.weight.set_value(torch_linear.weight.detach().numpy().T.copy())
    layer.bias.set_value(torch_linear.bias.detach().numpy().copy())


def copy_mha(ours, theirs):
    """torch's stacked in_proj [3E, E] into q/k/v_proj ([in, out] layout), and out_proj."""
    w = theirs.in_proj_weight.detach().numpy()
    b = theirs.in_proj_bias.detach().numpy()
    e = ours.embed_dim
    for i, proj in enumerate((ours.q_proj, ours.k_proj, ours.v_proj)):
        proj.weight.set_value(w[i * e:(i + 1) * e].T.copy())
        proj.bias.set_value(b[i * e:(i + 1) * e].copy())
    _linear_from_torch(ours.out_proj, theirs.out_proj)


def _norm_from_torch(ours, theirs):
    ours.weight.set_value(theirs.weight.detach().numpy().copy())
    ours.bias.set_value(theirs.bias.detach().numpy().copy())


def copy_encoder_layer(ours, theirs):
    copy_mha(ours.self_attn, theirs.self_attn)
    _linear_from_torch(ours.linear1, theirs.linear1)
    _linear_from_torch(ours.linear2, theirs.linear2)
    _norm_from_torch(ours.norm1, theirs.norm1)
    _norm_from_torch(ours.norm2, theirs.norm2)


def copy_decoder_layer(ours, theirs):
    copy_mha(ours.self_attn, theirs.self_attn)
    copy_mha(ours.cross_attn, theirs.multihead_attn)
    _linear_from_torch(ours.linear1, theirs.linear1)
    _linear_from_torch(ours.linear2, theirs.linear2)
    for i in (1, 2, 3):
        _norm_from_torch(getattr(ours, f"norm{i}"), getattr(theirs, f"norm{i}"))


def _layer_params(layer):
    return {name.replace(".", "__"): p for name, p in layer.named_parameters()}


def _compare_layer(ours, theirs, inputs, call_ours, call_theirs, rtol=1e-6):
    """Output and input gradients against torch, eager and through to_static (static mode);
    then the parameter gradients of one eager backward against torch's."""
    compare_with_torch(lambda **x: call_ours(ours, **x), lambda **x: call_theirs(theirs, **x), inputs,
                       wrt=[k for k, v in inputs.items() if v.dtype.kind == "f"], rtol=rtol, atol=1e-8,
                       static="to_static")
    tensors = {k: fg.to_tensor(v) for k, v in inputs.items()}
    fg.sum(fg.square(call_ours(ours, **tensors))).backward()
    torch_out = call_theirs(theirs, **{k: torch.tensor(v) for k, v in inputs.items()})
    (torch_out ** 2).sum().backward()
    torch_grads = {n: p.grad for n, p in theirs.named_parameters()}
    return torch_grads


@pytest.mark.parametrize("need_weights", [False, True])
def test_multi_head_attention_matches_torch(need_weights):
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    ours = fg.nn.MultiHeadAttention(8, 2, need_weights=need_weights).to("float64")
    copy_mha(ours, theirs)
    mask = R.uniform(size=(4, 6)) > 0.3
    mask[:, 0] = True
    inputs = {"q": R.normal(size=(2, 4, 8)), "kv": R.normal(size=(2, 6, 8)), "mask": mask}

    def call_ours(layer, q, kv, mask):
        out = layer(q, kv, kv, attn_mask=mask)
        return out[0] if need_weights else out

    def call_theirs(layer, q, kv, mask):
        return layer(q, kv, kv, attn_mask=~mask, need_weights=False)[0]

    torch_grads = _compare_layer(ours, theirs, inputs, call_ours, call_theirs)
    e = 8
    in_proj = np.concatenate([p.weight.grad.numpy().T for p in (ours.q_proj, ours.k_proj, ours.v_proj)])
    np.testing.assert_allclose(in_proj, torch_grads["in_proj_weight"].numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours.out_proj.weight.grad.numpy().T, torch_grads["out_proj.weight"].numpy(),
                               rtol=1e-6, atol=1e-9)
    assert in_proj.shape == (3 * e, e)
    if need_weights:
        _, weights = ours(fg.to_tensor(inputs["q"]), fg.to_tensor(inputs["kv"]), attn_mask=fg.to_tensor(mask))
        _, torch_weights = theirs(torch.tensor(inputs["q"]), torch.tensor(inputs["kv"]), torch.tensor(inputs["kv"]),
                                  attn_mask=torch.tensor(~mask), average_attn_weights=False)
        np.testing.assert_allclose(weights.numpy(), torch_weights.detach().numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("normalize_before", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_matches_torch(normalize_before, activation):
    torch.manual_seed(1)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=normalize_before,
                                              dtype=torch.float64, activation=activation)    # "gelu": exact
    ours = fg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                         normalize_before=normalize_before).to("float64")
    copy_encoder_layer(ours, theirs)
    causal = fg.nn.Transformer.generate_square_subsequent_mask(5, "float64")
    torch_grads = _compare_layer(
        ours, theirs, {"x": R.normal(size=(2, 5, 8))},
        lambda layer, x: layer(x, causal), lambda layer, x: layer(x, src_mask=torch.tensor(causal.numpy())))
    np.testing.assert_allclose(ours.linear1.weight.grad.numpy().T, torch_grads["linear1.weight"].numpy(),
                               rtol=1e-6, atol=1e-9)


def test_transformer_decoder_layer_and_stack_match_torch():
    torch.manual_seed(2)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0, batch_first=True, dtype=torch.float64)
    ours = fg.nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0).to("float64")
    copy_decoder_layer(ours, theirs)
    causal = fg.nn.Transformer.generate_square_subsequent_mask(4, "float64")
    torch_grads = _compare_layer(
        ours, theirs, {"tgt": R.normal(size=(2, 4, 8)), "memory": R.normal(size=(2, 6, 8))},
        lambda layer, tgt, memory: layer(tgt, memory, tgt_mask=causal),
        lambda layer, tgt, memory: layer(tgt, memory, tgt_mask=torch.tensor(causal.numpy())))
    np.testing.assert_allclose(ours.cross_attn.out_proj.weight.grad.numpy().T,
                               torch_grads["multihead_attn.out_proj.weight"].numpy(), rtol=1e-6, atol=1e-9)


def test_transformer_stacks_layers_with_fresh_parameters():
    fg.seed(0)
    model = fg.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=3, dim_feedforward=16,
                              dropout=0.0, normalize_before=True)
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 3
    w0, w1 = (layer.self_attn.q_proj.weight for layer in model.encoder.layers)
    assert w0 is not w1 and w0.shape == w1.shape
    src, tgt = fg.to_tensor(R.normal(size=(2, 5, 8)).astype("float32")), fg.to_tensor(R.normal(size=(2, 3, 8)).astype("float32"))
    out = model(src, tgt, tgt_mask=fg.nn.Transformer.generate_square_subsequent_mask(3))
    assert out.shape == [2, 3, 8] or tuple(out.shape) == (2, 3, 8)
    manual = model.decoder(tgt, model.encoder(src), fg.nn.Transformer.generate_square_subsequent_mask(3))
    np.testing.assert_allclose(out.numpy(), manual.numpy())
    fg.mean(out).backward()
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_padding_idx_reads_zeros_and_gets_no_gradient(padding_idx):
    table = R.normal(size=(5, 3))
    ids = np.array([[0, 2, 4], [2, 1, 4]])
    compare_with_torch(lambda w, ids: F.embedding(ids, w, padding_idx=padding_idx),
                       lambda w, ids: TF.embedding(ids, w, padding_idx=padding_idx) *
                       (1.0 if padding_idx is None else (ids != padding_idx % 5)[..., None]),
                       {"w": table, "ids": ids}, wrt=["w"])
    layer = fg.nn.Embedding(5, 3, padding_idx=padding_idx)
    if padding_idx is not None:
        assert not layer.weight.numpy()[padding_idx].any()
        layer.weight.set_value(np.ones((5, 3), dtype="float32"))        # even a non-zero row reads zeros
        out = layer(fg.to_tensor(ids))
        assert not out.numpy()[ids == padding_idx % 5].any()
        fg.sum(out).backward()
        assert not layer.weight.grad.numpy()[padding_idx].any()


def test_bad_attention_input_is_a_clear_error():
    x = fg.to_tensor(R.normal(size=(2, 3, 4)))
    with pytest.raises(ValueError, match="batch, seq, heads, dim"):
        F.scaled_dot_product_attention(x, x, x)
    with pytest.raises(ValueError, match="not divisible"):
        fg.nn.MultiHeadAttention(10, 3)
    q = fg.to_tensor(R.normal(size=(1, 3, 1, 4)))
    with pytest.raises(Exception, match="attention_softmax"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=fg.to_tensor(np.ones((2, 2), dtype=bool)))
    with pytest.raises(ValueError, match="padding_idx 7 is out of range"):
        fg.nn.Embedding(5, 3, padding_idx=7)
