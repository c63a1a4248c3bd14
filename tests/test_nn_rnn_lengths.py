"""SimpleRNN, LSTM and GRU on a padded batch with `sequence_length` (Paddle 2's way; PyTorch's
pack_padded_sequence as the oracle): outputs past each length are zero, final states are those at
each sequence's last valid step, the backward direction starts there; gradients of the inputs,
initial states and every weight match PyTorch's and central differences, in eager mode, under
jit.to_static and in a Program built on static.data with an unknown batch."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from both_modes import compare_with_torch

import fluidgrad as fg
from fluidgrad.testing import check_program_grad

TORCH = {"SimpleRNN": torch.nn.RNN, "LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}
R = np.random.default_rng(11)


def _pair(kind, num_layers=1, bidirectional=False, time_major=False):
    ours = getattr(fg.nn, kind)(3, 4, num_layers=num_layers, direction="bidirect" if bidirectional else "forward",
                                time_major=time_major).to("float64")
    theirs = TORCH[kind](3, 4, num_layers=num_layers, bidirectional=bidirectional, batch_first=not time_major,
                         dtype=torch.float64)
    ours.set_state_dict({name: p.detach().numpy() for name, p in theirs.named_parameters()})
    return ours, theirs


def _torch_packed(theirs, x, lengths, initial, time_major):
    """PyTorch's outputs (padded back with zeros) and final states for a padded batch."""
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=not time_major, enforce_sorted=False)
    out, final = theirs(packed, initial)
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=not time_major,
                                                    total_length=x.shape[0 if time_major else 1])
    return out, final


def _flat(cat, reshape, out, final, lstm):
    return cat([reshape(p, [-1]) for p in [out, *(final if lstm else [final])]])


def _states(kind, states, batch):
    return {"h0": R.normal(size=(states, batch, 4)), **({"c0": R.normal(size=(states, batch, 4))} if kind == "LSTM"
                                                        else {})}


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("num_layers,bidirectional", [(1, False), (2, True)])
@pytest.mark.parametrize("with_state,time_major", [(False, False), (True, True)])
def test_padded_batch_matches_torch_packed(kind, num_layers, bidirectional, with_state, time_major):
    ours, theirs = _pair(kind, num_layers, bidirectional, time_major)
    lstm, batch, time = kind == "LSTM", 4, 6
    x = R.normal(size=(time, batch, 3) if time_major else (batch, time, 3))
    inputs = {"x": x, "lengths": np.array([3, 6, 1, 4]),
              **_states(kind, num_layers * (2 if bidirectional else 1), batch)}

    def initial(values):
        return ((values["h0"], values["c0"]) if lstm else values["h0"]) if with_state else None

    def run_ours(lengths, **values):
        out, final = ours(values["x"], initial(values), sequence_length=lengths)
        return _flat(fg.concat, fg.reshape, out, final, lstm)

    def run_theirs(lengths, **values):
        out, final = _torch_packed(theirs, values["x"], lengths, initial(values), time_major)
        return _flat(torch.cat, torch.reshape, out, final, lstm)

    wrt = ["x"] + ([k for k in ("h0", "c0") if k in inputs] if with_state else [])
    compare_with_torch(run_ours, run_theirs, inputs, wrt=wrt, rtol=1e-9, atol=1e-12, static="to_static")

    # every weight's gradient, one eager backward each
    ours.clear_gradients()
    fg.sum(fg.square(run_ours(**{k: fg.to_tensor(v) for k, v in inputs.items()}))).backward()
    (run_theirs(**{k: torch.tensor(v) for k, v in inputs.items()}) ** 2).sum().backward()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(getattr(ours, name).grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_a_program_on_static_data_with_an_unknown_batch(kind):
    ours, theirs = _pair(kind, num_layers=2, bidirectional=True)
    lstm = kind == "LSTM"
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 5, 3], "float64")
        x.stop_gradient = False
        lengths = fg.static.data("lengths", [None], "int64")
        out, final = ours(x, sequence_length=lengths)
        loss = fg.sum(fg.square(_flat(fg.concat, fg.reshape, out, final, lstm)))
        params = [main.global_block().var(getattr(ours, name).name) for name, _ in theirs.named_parameters()]
        grads = fg.gradients([loss], [x] + params)
    exe = fg.Executor()
    exe.run(startup)
    for batch_lengths in ([2, 5, 4], [1]):                      # one Program, two batch sizes
        x0 = R.normal(size=(len(batch_lengths), 5, 3))
        got = exe.run(main, feed={"x": x0, "lengths": np.array(batch_lengths)}, fetch_list=[loss] + grads)
        tx = torch.tensor(x0, requires_grad=True)
        theirs.zero_grad()
        expected_out, expected_final = _torch_packed(theirs, tx, torch.tensor(batch_lengths), None, False)
        expected = (_flat(torch.cat, torch.reshape, expected_out, expected_final, lstm) ** 2).sum()
        expected.backward()
        np.testing.assert_allclose(got[0], expected.item(), rtol=1e-10)
        np.testing.assert_allclose(got[1], tx.grad.numpy(), rtol=1e-9, atol=1e-12)
        for value, (name, p) in zip(got[2:], theirs.named_parameters()):
            np.testing.assert_allclose(value, p.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_gradients_match_central_differences(kind):
    layer = getattr(fg.nn, kind)(2, 3, num_layers=2, direction="bidirect").to("float64")
    lstm = kind == "LSTM"
    feeds = {"x": R.normal(size=(3, 4, 2)), "lengths": np.array([4, 2, 1]), **{
        k: R.normal(size=(4, 3, 3)) for k in (("h0", "c0") if lstm else ("h0",))}}

    def build(v):
        out, final = layer(v["x"], (v["h0"], v["c0"]) if lstm else v["h0"], sequence_length=v["lengths"])
        return [out, *(final if lstm else [final])]

    check_program_grad(build, feeds, rtol=1e-6, atol=1e-8)


def test_padding_is_ignored_and_a_zero_length_keeps_the_initial_state():
    gru = fg.nn.GRU(3, 4, direction="bidirect").to("float64")
    x0, h0 = R.normal(size=(2, 5, 3)), R.normal(size=(2, 2, 4))
    lengths = fg.to_tensor(np.array([3, 0]))
    out, h = gru(fg.to_tensor(x0), fg.to_tensor(h0), sequence_length=lengths)
    noisy = x0.copy()
    noisy[0, 3:] = R.normal(size=(2, 3)) * 100.0                # whatever the padding holds
    out2, h2 = gru(fg.to_tensor(noisy), fg.to_tensor(h0), sequence_length=lengths)
    np.testing.assert_array_equal(out.numpy(), out2.numpy())
    np.testing.assert_array_equal(h.numpy(), h2.numpy())
    assert not out.numpy()[0, 3:].any() and not out.numpy()[1].any()
    np.testing.assert_array_equal(h.numpy()[:, 1], h0[:, 1])


def test_bad_lengths_are_a_clear_error():
    lstm = fg.nn.LSTM(3, 4)
    x = fg.to_tensor(np.zeros((2, 5, 3), "float32"))
    with pytest.raises(ValueError, match=r"LSTM: sequence_length must lie in \[0, 5\]"):
        lstm(x, sequence_length=fg.to_tensor(np.array([6, 2])))
    with pytest.raises(ValueError, match="one per sequence of the batch of 2, got shape \\[3\\]"):
        lstm(x, sequence_length=fg.to_tensor(np.array([1, 2, 3])))
    with pytest.raises(ValueError, match="1-D integers"):
        lstm(x, sequence_length=fg.to_tensor(np.array([1.0, 2.0])))


def test_sequence_mask_in_both_modes():
    lengths = np.array([[3, 0], [1, 4]])
    expected = np.arange(5) < lengths[..., None]
    eager = fg.nn.functional.sequence_mask(fg.to_tensor(lengths), 5, dtype="float32")
    assert eager.dtype == "float32" or str(eager.dtype) == "float32"
    np.testing.assert_array_equal(eager.numpy(), expected)
    np.testing.assert_array_equal(fg.nn.functional.sequence_mask(fg.to_tensor(lengths)).numpy(),
                                  expected[..., :4])                 # maxlen None: max(lengths)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("lengths", [None, 2], "int64")
        mask = fg.nn.functional.sequence_mask(x, 5, dtype="bool")
        with pytest.raises(ValueError, match="sequence_mask: maxlen is needed"):
            fg.nn.functional.sequence_mask(x)
    got, = fg.Executor().run(main, feed={"lengths": lengths}, fetch_list=[mask])
    np.testing.assert_array_equal(got, expected)


def test_lengths_as_a_list_or_array_are_taken_as_the_tensor_would_be():
    gru = fg.nn.GRU(3, 4)
    x = fg.to_tensor(R.normal(size=(2, 5, 3)).astype("float32"))
    expected, _ = gru(x, sequence_length=fg.to_tensor(np.array([2, 5])))
    for lengths in ([2, 5], np.array([2, 5], "int32")):
        np.testing.assert_array_equal(gru(x, sequence_length=lengths)[0].numpy(), expected.numpy())
