"""Layer.register_full_backward_hook against torch's (nn/backward_hooks.py)."""
import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.framework.program as program_module

torch = pytest.importorskip("torch")

_X = np.random.default_rng(0).standard_normal((4, 3))


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _np(value):
    if value is None:
        return None
    return value.detach().numpy() if isinstance(value, torch.Tensor) else value.numpy()


def _model(nn, tensor):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    if nn is fg.nn:
        reference = _model(torch.nn, torch.tensor)
        model[0].weight.set_value(reference[0].weight.detach().numpy().T.copy())
        model[0].bias.set_value(reference[0].bias.detach().numpy())
        model[2].weight.set_value(reference[2].weight.detach().numpy().T.copy())
        model[2].bias.set_value(reference[2].bias.detach().numpy())
    return model.to(dtype="float64") if nn is fg.nn else model.double()


def _run(nn, tensor, hook, layer_index=2, input_wants_grad=False):
    model, seen = _model(nn, tensor), []
    handle = model[layer_index].register_full_backward_hook(lambda m, gi, go: hook(seen, gi, go))
    x = tensor(_X)
    if input_wants_grad:
        x = x.requires_grad_() if nn is torch.nn else fg.to_tensor(_X, stop_gradient=False)
    (model(x) ** 2).sum().backward()
    return model, seen, handle, x


def _record(seen, grad_input, grad_output):
    seen.append(([_np(g) for g in grad_input], [_np(g) for g in grad_output]))


@pytest.mark.parametrize("layer_index,input_wants_grad", [(2, False), (0, False), (0, True)])
def test_the_hook_sees_torchs_gradients(layer_index, input_wants_grad):
    _, ours, _, _ = _run(fg.nn, fg.to_tensor, _record, layer_index, input_wants_grad)
    _, theirs, _, _ = _run(torch.nn, torch.tensor, _record, layer_index, input_wants_grad)
    assert len(ours) == len(theirs) == 1
    for got, expected in zip(ours[0], theirs[0]):
        assert [g is None for g in got] == [g is None for g in expected]
        for g, e in zip(got, expected):
            if e is not None:
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_a_returned_grad_input_replaces_it():
    def halve(seen, grad_input, grad_output):
        return tuple(None if g is None else g * 0.5 for g in grad_input)
    ours, _, _, x = _run(fg.nn, fg.to_tensor, halve, 2, True)
    theirs, _, _, tx = _run(torch.nn, torch.tensor, halve, 2, True)
    np.testing.assert_allclose(ours[0].weight.grad.numpy(), theirs[0].weight.grad.numpy().T, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_remove_takes_the_hook_away_and_a_second_backward_runs_it_again():
    model, seen = _model(fg.nn, fg.to_tensor), []
    handle = model[2].register_full_backward_hook(lambda m, gi, go: seen.append(1))
    loss = (model(fg.to_tensor(_X)) ** 2).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert seen == [1, 1]
    handle.remove()
    (model(fg.to_tensor(_X)) ** 2).sum().backward()
    assert seen == [1, 1]


def test_no_grad_forward_runs_no_hook():
    model, seen = _model(fg.nn, fg.to_tensor), []
    model[2].register_full_backward_hook(lambda m, gi, go: seen.append(1))
    with fg.no_grad():
        out = model(fg.to_tensor(_X))
    assert out.stop_gradient and seen == []
