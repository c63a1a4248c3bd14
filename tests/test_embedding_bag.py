"""F.embedding_bag and nn.EmbeddingBag against torch 2.13: values and gradients (the weight's and
per_sample_weights') over the modes, 2-D and offset forms, padding_idx, empty bags and
include_last_offset; a Program (bag count known or unknown until run time) equal to eager mode;
torch's state_dict and from_pretrained; bad input named."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
import fluidgrad.framework.program as program_module

_RNG = np.random.default_rng(1405)
_W = _RNG.normal(size=(7, 3))
_IDS = np.array([1, 2, 4, 5, 4, 3, 2, 2, 0])
_OFFSETS = np.array([0, 2, 2, 5])          # bag 1 is empty
_FORMS = {  # name: (input, offsets, keywords)
    "offsets": (_IDS, _OFFSETS, {}),
    "offsets-empty-last-bags": (_IDS, np.array([0, 3, 9, 9]), {}),
    "include-last-offset": (_IDS, np.array([0, 2, 2, 5, 9]), {"include_last_offset": True}),
    "padding": (_IDS, _OFFSETS, {"padding_idx": 2}),
    "padding-negative": (_IDS, _OFFSETS, {"padding_idx": -3}),
    "2d": (_IDS.reshape(3, 3), None, {}),
    "2d-padding": (_IDS.reshape(3, 3), None, {"padding_idx": 2}),
    "int32": (_IDS.astype("int32"), _OFFSETS.astype("int32"), {}),
}


@pytest.fixture
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _torch(ids, offsets, mode, per_sample_weights=None, **kw):
    weight = torch.tensor(_W, requires_grad=True)
    psw = None if per_sample_weights is None else torch.tensor(per_sample_weights, requires_grad=True)
    out = TF.embedding_bag(torch.tensor(ids), weight, None if offsets is None else torch.tensor(offsets), mode=mode,
                           per_sample_weights=psw, **kw)
    dout = np.arange(1.0, out.numel() + 1).reshape(tuple(out.shape)) / 5
    out.backward(torch.tensor(dout))
    return out.detach().numpy(), weight.grad.numpy(), None if psw is None else psw.grad.numpy(), dout


def _eager(ids, offsets, mode, dout, per_sample_weights=None, **kw):
    weight = fg.to_tensor(_W, stop_gradient=False)
    psw = None if per_sample_weights is None else fg.to_tensor(per_sample_weights, stop_gradient=False)
    out = fg.nn.functional.embedding_bag(fg.to_tensor(ids), weight, None if offsets is None else fg.to_tensor(offsets),
                                         mode=mode, per_sample_weights=psw, **kw)
    out.backward(fg.to_tensor(dout))
    return out.numpy(), weight.grad.numpy(), None if psw is None else psw.grad.numpy()


def _static(ids, offsets, mode, dout, per_sample_weights=None, known=True, **kw):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        weight = fg.static.data("w", list(_W.shape), "float64")
        weight.stop_gradient = False
        x = fg.static.data("x", list(ids.shape) if known else [None] * ids.ndim, str(ids.dtype))
        feed = {"w": _W, "x": ids, "g": dout}
        off = None
        if offsets is not None:
            off = fg.static.data("off", list(offsets.shape) if known else [None], str(offsets.dtype))
            feed["off"] = offsets
        psw = None
        if per_sample_weights is not None:
            psw = fg.static.data("psw", list(ids.shape), "float64")
            psw.stop_gradient = False
            feed["psw"] = per_sample_weights
        out = fg.nn.functional.embedding_bag(x, weight, off, mode=mode, per_sample_weights=psw, **kw)
        g = fg.static.data("g", [None, 3], "float64")
        wrt = [weight] + ([psw] if psw is not None else [])
        grads = fg.gradients([fg.sum(out * g)], wrt)
    got = fg.Executor().run(main, feed=feed, fetch_list=[out] + grads)
    return got[0], got[1], got[2] if psw is not None else None


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("form", list(_FORMS))
def test_values_and_weight_gradient_match_torch_in_both_modes(form, mode, monkeypatch):
    ids, offsets, kw = _FORMS[form]
    out, grad, _, dout = _torch(ids, offsets, mode, **kw)
    for known in (True, False):
        s_out, s_grad, _ = _static(ids, offsets, mode, dout, known=known, **kw)
        np.testing.assert_allclose(s_out, out, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(s_grad, grad, rtol=1e-12, atol=1e-15)
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    e_out, e_grad, _ = _eager(ids, offsets, mode, dout, **kw)
    np.testing.assert_allclose(e_out, out, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(e_grad, grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("form", ["offsets", "padding", "2d"])
def test_per_sample_weights_and_their_gradient_match_torch(form, monkeypatch):
    ids, offsets, kw = _FORMS[form]
    psw = _RNG.normal(size=ids.shape)
    out, grad, psw_grad, dout = _torch(ids, offsets, "sum", psw, **kw)
    got = _static(ids, offsets, "sum", dout, psw, **kw)
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    for values in (got, _eager(ids, offsets, "sum", dout, psw, **kw)):
        for value, expected in zip(values, (out, grad, psw_grad)):
            np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_divides_by_the_batch_count(mode, eager):
    """torch's documented rule, as its F.embedding computes it: torch 2.13's CPU embedding_bag
    divides some rows by another row's count (pytorch/pytorch#190063, fixed by #190264), so the
    reference is torch's F.embedding(scale_grad_by_freq=True) reduced per bag."""
    weight = torch.tensor(_W, requires_grad=True)
    rows = TF.embedding(torch.tensor(_IDS), weight, scale_grad_by_freq=True)
    bag = torch.tensor(np.searchsorted(_OFFSETS, np.arange(len(_IDS)), side="right") - 1)
    expected = torch.zeros(len(_OFFSETS), 3, dtype=torch.float64).index_add(0, bag, rows)
    if mode == "mean":
        expected = expected / torch.bincount(bag, minlength=len(_OFFSETS)).clamp(min=1)[:, None]
    dout = np.arange(1.0, 13.0).reshape(4, 3)
    expected.backward(torch.tensor(dout))
    out, grad, _ = _eager(_IDS, _OFFSETS, mode, dout, scale_grad_by_freq=True)
    np.testing.assert_allclose(out, expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad, weight.grad.numpy(), rtol=1e-12)
    values = TF.embedding_bag(torch.tensor(_IDS), torch.tensor(_W), torch.tensor(_OFFSETS), mode=mode,
                              scale_grad_by_freq=True)
    np.testing.assert_allclose(out, values.numpy(), rtol=1e-12)


def test_max_norm_renormalises_the_used_rows_in_place_as_torch(eager):
    t_weight, f_weight = torch.tensor(_W * 3), fg.to_tensor(_W * 3)
    expected = TF.embedding_bag(torch.tensor(_IDS[:5]), t_weight, torch.tensor([0, 2]), max_norm=1.5, mode="sum")
    got = fg.nn.functional.embedding_bag(fg.to_tensor(_IDS[:5]), f_weight, fg.to_tensor(np.array([0, 2])),
                                         max_norm=1.5, mode="sum")
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(f_weight.numpy(), t_weight.numpy(), rtol=1e-12)


def test_layer_loads_a_torch_state_dict_and_matches_torch(eager):
    torch.manual_seed(0)
    reference = torch.nn.EmbeddingBag(7, 3, mode="max", padding_idx=2).double()
    layer = fg.nn.EmbeddingBag(7, 3, mode="max", padding_idx=2)
    assert list(layer.weight.shape) == [7, 3] and not np.any(layer.weight.numpy()[2])
    layer.set_state_dict(reference.state_dict())
    np.testing.assert_array_equal(layer.weight.numpy(), reference.weight.detach().numpy())
    expected = reference(torch.tensor(_IDS), torch.tensor(_OFFSETS))
    got = layer(fg.to_tensor(_IDS), fg.to_tensor(_OFFSETS))
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-12)
    frozen = fg.nn.EmbeddingBag.from_pretrained(fg.to_tensor(_W), mode="sum")
    assert frozen.weight.stop_gradient and str(frozen.weight.dtype) == "float64"
    tuned = fg.nn.EmbeddingBag.from_pretrained(_W, freeze=False, mode="sum", include_last_offset=True)
    assert not tuned.weight.stop_gradient
    expected = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(_W), mode="sum", include_last_offset=True)(
        torch.tensor(_IDS), torch.tensor(np.array([0, 4, 9])))
    np.testing.assert_allclose(tuned(fg.to_tensor(_IDS), fg.to_tensor(np.array([0, 4, 9]))).numpy(),
                               expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("call, error, message", [
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS.reshape(3, 3)), w, fg.to_tensor(_OFFSETS)), ValueError,
     "a 2-D input .* offsets must be None"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w), ValueError, "a 1-D input .* needs offsets"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w, fg.to_tensor(_OFFSETS), mode="mean",
                                  per_sample_weights=fg.to_tensor(np.ones(9))), NotImplementedError,
     "per_sample_weights is only supported for mode='sum'"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w, fg.to_tensor(np.array([1, 3]))), ValueError,
     r"offsets\[0\] has to be 0"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w, fg.to_tensor(np.array([0, 3, 2]))), ValueError,
     r"offsets must be non-decreasing, but offsets\[1\] = 3 > offsets\[2\] = 2"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w, fg.to_tensor(np.array([0, 10]))), ValueError,
     r"offsets\[-1\] can not be greater than input's length 9"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(np.array([1, 7])), w, fg.to_tensor(np.array([0]))), IndexError,
     "lookup_table_v2.*7, outside"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS * 1.0), w, fg.to_tensor(_OFFSETS)), TypeError,
     "input must hold int32 or int64 ids, got float64"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w, fg.to_tensor(_OFFSETS), mode="median"), ValueError,
     "mode must be one of"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w, fg.to_tensor(_OFFSETS), mode="max",
                                  scale_grad_by_freq=True), ValueError, "max mode does not support scaling"),
    (lambda F, w: F.embedding_bag(fg.to_tensor(_IDS), w, fg.to_tensor(_OFFSETS), padding_idx=7), ValueError,
     "padding_idx 7 is out of range for 7 rows"),
])
def test_bad_input_is_refused_by_name(call, error, message, eager):
    with pytest.raises(error, match=f"embedding_bag|{message}") as info:
        call(fg.nn.functional, fg.to_tensor(_W))
    assert __import__("re").search(message, str(info.value)), str(info.value)


def test_max_norm_in_a_program_is_refused():
    x = fg.static.data("x", [4], "int64")
    w = fg.static.data("w", [7, 3], "float64")
    with pytest.raises(ValueError, match="embedding_bag: max_norm .* needs eager Tensors"):
        fg.nn.functional.embedding_bag(x, w, fg.static.data("off", [2], "int64"), max_norm=1.0)
