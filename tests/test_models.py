"""The example models (examples/char_gpt.py, digits_resnet.py, digits_unet.py) against their
PyTorch twins built from the same initial weights (examples/torch_twins.py): forward, every
parameter gradient and one SGD step agree to float32 tolerance, in eager and static mode
(jit.to_static); and each model trains, in both modes, to a loss set by a PyTorch run."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import fluidgrad as fg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import char_gpt  # noqa: E402
import torch_twins  # noqa: E402

MODES = ["eager", "static"]
BLOCK, BATCH = 16, 8


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _gpt():
    data, chars = char_gpt.encode()
    fg.seed(0)
    return char_gpt.CharGPT(char_gpt.Config(len(chars), block_size=BLOCK, n_embd=32, n_head=4, n_layer=2)), data


def _resnet():
    resnet = pytest.importorskip("digits_resnet")
    pytest.importorskip("sklearn")
    fg.seed(0)
    return resnet, resnet.DigitsResNet(width=8), resnet.load_data()


def _assert_same_parameters(twin, what, rtol=2e-4, atol=2e-6):
    for ours, theirs, transposed in twin.pairs:
        value = theirs.detach().numpy()
        np.testing.assert_allclose(ours.numpy(), value.T if transposed else value, rtol=rtol, atol=atol,
                                   err_msg=f"{what}: {ours.name}")


def _one_step_matches(model, twin, x, y, mode):
    """Loss, every parameter gradient, and the parameters after one SGD step, against torch.
    (SGD: Adam turns the float32 noise of a gradient that is exactly zero, such as the key
    projection's bias, into a full step of either sign.)"""
    loss_fn = fg.jit.to_static(model.loss) if mode == "static" else model.loss
    opt = fg.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    torch_opt = torch.optim.SGD(twin.parameters(), lr=0.1)
    loss = loss_fn(fg.to_tensor(x), fg.to_tensor(y))
    torch_loss = twin.loss(torch.from_numpy(x), torch.from_numpy(y))
    np.testing.assert_allclose(loss.numpy(), torch_loss.item(), rtol=1e-5)
    loss.backward()
    torch_loss.backward()
    scale = max(float(np.abs(p.grad.numpy()).max()) for p in model.parameters())
    for ours, theirs, transposed in twin.pairs:
        grad = theirs.grad.numpy().T if transposed else theirs.grad.numpy()
        np.testing.assert_allclose(ours.grad.numpy(), grad, rtol=1e-3, atol=1e-5 * scale,
                                   err_msg=f"gradient of {ours.name}")
    opt.step()
    torch_opt.step()
    _assert_same_parameters(twin, "after one SGD step")


@pytest.mark.parametrize("mode", MODES)
def test_char_gpt_forward_gradients_and_one_step_match_torch(mode):
    model, data = _gpt()
    twin = torch_twins.TorchCharGPT(model)
    x, y = next(char_gpt.batches(data, 1, BATCH, BLOCK))
    forward = fg.jit.to_static(model.forward) if mode == "static" else model.forward
    np.testing.assert_allclose(forward(fg.to_tensor(x)).numpy(), twin(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    _one_step_matches(model, twin, x, y, mode)


@pytest.mark.parametrize("mode", MODES)
def test_char_gpt_trains_below_the_loss_pytorch_reaches(mode):
    steps = 60
    model, data = _gpt()
    twin = torch_twins.TorchCharGPT(model)
    torch_losses = torch_twins.train_torch(twin, char_gpt.batches(data, steps, BATCH, BLOCK, seed=1), lr=1e-2)
    threshold = float(np.mean(torch_losses[-10:])) + 0.05
    losses = char_gpt.train(model, char_gpt.batches(data, steps, BATCH, BLOCK, seed=1), lr=1e-2,
                            static=mode == "static")
    assert np.mean(losses[:3]) > threshold + 0.5, (losses[:3], threshold)     # it had something to learn
    assert np.mean(losses[-10:]) < threshold, (losses[-10:], threshold)


@pytest.mark.parametrize("mode", MODES)
def test_digits_resnet_forward_gradients_and_one_step_match_torch(mode):
    resnet, model, (x_train, _, y_train, _) = _resnet()
    twin = torch_twins.TorchDigitsResNet(model)
    x, y = x_train[:16], y_train[:16]
    model.eval()
    twin.eval()
    np.testing.assert_allclose(model(fg.to_tensor(x)).numpy(), twin(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    model.train()
    twin.train()
    _one_step_matches(model, twin, x, y, mode)
    for ours, theirs in [(model.bn._mean, twin.bn.running_mean), (model.bn._variance, twin.bn.running_var)]:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_digits_resnet_trains_in_both_modes(mode):
    resnet, model, (x_train, x_test, y_train, y_test) = _resnet()
    twin = torch_twins.TorchDigitsResNet(model)
    torch_losses = torch_twins.train_torch(twin, resnet.batches(x_train, y_train, 1, 32, seed=1), lr=1e-2)
    threshold = float(np.mean(torch_losses[-10:])) + 0.05
    losses = resnet.train(model, resnet.batches(x_train, y_train, 1, 32, seed=1), lr=1e-2, static=mode == "static")
    assert np.mean(losses[:3]) > threshold + 0.5, (losses[:3], threshold)
    assert np.mean(losses[-10:]) < threshold, (losses[-10:], threshold)
    assert resnet.accuracy(model, x_test, y_test) > 0.8


def _unet():
    unet = pytest.importorskip("digits_unet")
    pytest.importorskip("sklearn")
    fg.seed(0)
    return unet, unet.DigitsUNet(width=8), unet.load_data()


@pytest.mark.parametrize("mode", MODES)
def test_digits_unet_forward_gradients_and_one_step_match_torch(mode):
    unet, model, (x_train, _) = _unet()
    twin = torch_twins.TorchDigitsUNet(model)
    noisy, clean = next(unet.batches(x_train, 1, 16))
    model.eval()
    twin.eval()
    np.testing.assert_allclose(model(fg.to_tensor(noisy)).numpy(), twin(torch.from_numpy(noisy)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    model.train()
    twin.train()
    _one_step_matches(model, twin, noisy, clean, mode)
    stats = [(model.enc1.norm._mean, twin.stages["enc1"][1].running_mean),
             (model.bottom.norm._variance, twin.stages["bottom"][1].running_var)]
    for ours, theirs in stats:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_digits_unet_denoises_in_both_modes(mode):
    """One epoch: the loss ends near PyTorch's from the same weights and batches, and the
    denoised test digits beat both baselines (the noisy input itself, the mean digit)."""
    unet, model, (x_train, x_test) = _unet()
    twin = torch_twins.TorchDigitsUNet(model)
    torch_losses = torch_twins.train_torch(twin, unet.batches(x_train, 1, 32, seed=1), lr=1e-2)
    threshold = 1.2 * float(np.mean(torch_losses[-10:]))
    losses = unet.train(model, unet.batches(x_train, 1, 32, seed=1), lr=1e-2, static=mode == "static")
    assert np.mean(losses[:3]) > 3 * threshold, (losses[:3], threshold)
    assert np.mean(losses[-10:]) < threshold, (losses[-10:], threshold)
    errors = unet.denoising_errors(model, x_train, x_test)
    assert errors["model"] < 0.7 * min(errors["noisy input"], errors["mean digit"]), errors
