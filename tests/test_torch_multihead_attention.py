"""nn.MultiheadAttention (torch's name and habits) against torch 2.13.0 with the same weights,
float64: [seq, batch, embed] unless batch_first, the (output, weights) pair, torch's bool masks
(True: masked out) and key_padding_mask, kdim / vdim, bias=False; values and gradients in eager
mode and through to_static."""
import numpy as np
import pytest
import torch

import fluidgrad as fg
from both_modes import compare_with_torch

R = np.random.default_rng(12)


def _pair(**options):
    torch.manual_seed(8)
    theirs = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64, **options)
    ours = fg.nn.MultiheadAttention(8, 2, dtype="float64", **options)
    state = {name: p.detach().numpy() for name, p in theirs.named_parameters()}
    state["out_proj.weight"] = state["out_proj.weight"].T.copy()          # fluidgrad's Linear: [in, out]
    assert sorted(state) == sorted(name for name, _ in ours.named_parameters())
    ours.set_state_dict(state)
    return ours, theirs


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(False, True), (True, True), (True, False)])
def test_multihead_attention_matches_torch(batch_first, need_weights, average):
    ours, theirs = _pair(batch_first=batch_first)
    future = np.triu(np.ones((4, 6), dtype=bool), k=3)
    padding = np.zeros((2, 6), dtype=bool)
    padding[0, -1] = True
    shape = (lambda length: (2, length, 8)) if batch_first else (lambda length: (length, 2, 8))
    inputs = {"q": R.standard_normal(shape(4)), "kv": R.standard_normal(shape(6)), "mask": future, "padding": padding}

    def call(layer, q, kv, mask, padding):
        out, weights = layer(q, kv, kv, key_padding_mask=padding, need_weights=need_weights, attn_mask=mask,
                             average_attn_weights=average)
        assert (weights is None) == (not need_weights)
        return out if weights is None else (out * 1.0).sum() + (weights * weights).sum()

    compare_with_torch(lambda **x: call(ours, **x), lambda **x: call(theirs, **x), inputs, wrt=["q", "kv"],
                       rtol=1e-9, atol=1e-10, static="to_static")


def test_kdim_vdim_bias_false_and_unbatched():
    ours, theirs = _pair(kdim=5, vdim=3, bias=False)
    q, k, v = R.standard_normal((4, 8)), R.standard_normal((6, 5)), R.standard_normal((6, 3))
    out, weights = ours(fg.to_tensor(q), fg.to_tensor(k), fg.to_tensor(v))
    expected, expected_weights = theirs(torch.tensor(q), torch.tensor(k), torch.tensor(v))
    assert tuple(out.shape) == tuple(expected.shape) and tuple(weights.shape) == tuple(expected_weights.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(weights.numpy(), expected_weights.detach().numpy(), rtol=1e-9, atol=1e-10)


def test_is_causal_and_unsupported_options():
    ours, theirs = _pair(batch_first=True)
    x = R.standard_normal((2, 5, 8))
    future = torch.tensor(np.triu(np.ones((5, 5), dtype=bool), k=1))
    expected = theirs(*(torch.tensor(x),) * 3, attn_mask=future, is_causal=True, need_weights=False)[0]
    got, _ = ours(*(fg.to_tensor(x),) * 3, is_causal=True, need_weights=False)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="add_bias_kv"):
        fg.nn.MultiheadAttention(8, 2, add_bias_kv=True)
    assert fg.nn.MultiheadAttention is not fg.nn.MultiHeadAttention      # Paddle's keeps its own habits
