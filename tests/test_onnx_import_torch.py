"""Models made in PyTorch (a small ResNet-style CNN, a small transformer encoder), exported with
torch.onnx.export and imported: outputs equal PyTorch's; append_backward gives PyTorch's
gradient for every initializer; a few SGD steps track PyTorch's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
from torch import nn  # noqa: E402

import fluidgrad as fg  # noqa: E402
from fluidgrad.onnx import import_model  # noqa: E402


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.c1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.c2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(x + self.c2(torch.relu(self.c1(x))))


class SmallResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.blocks = nn.Sequential(ResidualBlock(8), ResidualBlock(8))
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.blocks(self.pool(torch.relu(self.stem(x))))
        return self.fc(x.mean(dim=(2, 3)))


class SmallTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.layer(x)).mean(dim=1)


def _export(net, x, path, dynamo):
    net.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            torch.onnx.export(net, (x,), str(path), dynamo=True, opset_version=18, optimize=False, verbose=False)
        else:
            torch.onnx.export(net, (x,), str(path), dynamo=False, opset_version=17, do_constant_folding=False)
    return path


MODELS = {
    "resnet": (SmallResNet, (4, 1, 8, 8), False),   # TorchScript exporter
    "transformer": (SmallTransformer, (3, 5, 16), True),  # dynamo exporter (onnxscript)
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def exported(request, tmp_path_factory):
    make, shape, dynamo = MODELS[request.param]
    torch.manual_seed(0)
    net = make()
    x = torch.randn(*shape)
    path = _export(net, x, tmp_path_factory.mktemp(request.param) / "model.onnx", dynamo)
    return net, x, path


def test_outputs_equal_pytorch(exported):
    net, x, path = exported
    scope = fg.Scope()
    program, feeds, fetches = import_model(path, scope)
    out, = fg.Executor().run(program, feed={feeds[0]: x.numpy()}, fetch_list=fetches, scope=scope)
    np.testing.assert_allclose(out, net(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def _loss_program(path):
    scope = fg.Scope()
    program, feeds, (out,) = import_model(path, scope)
    with fg.program_guard(program, fg.Program()):
        target = fg.static.data("target", list(out.shape), out.dtype)
        loss = fg.mean(fg.square(out - target))
    return program, scope, feeds[0], target, loss


def test_gradients_equal_pytorch_for_every_initializer(exported):
    net, x, path = exported
    program, scope, feed, target, loss = _loss_program(path)
    with fg.program_guard(program, fg.Program()):
        params_grads = fg.append_backward(loss)
    grads = {p.name: g for p, g in params_grads}
    torch_params = dict(net.named_parameters())
    assert set(grads) == set(torch_params)  # every float initializer is a trainable Parameter
    y = np.random.default_rng(1).normal(size=net(x).shape).astype("float32")
    names = sorted(grads)
    values = fg.Executor().run(program, feed={feed: x.numpy(), "target": y}, fetch_list=[grads[n] for n in names],
                               scope=scope)
    net.zero_grad()
    torch.mean(torch.square(net(x) - torch.tensor(y))).backward()
    for name, got in zip(names, values):
        np.testing.assert_allclose(got, torch_params[name].grad.numpy(), rtol=2e-4, atol=1e-6, err_msg=name)


def test_sgd_steps_track_pytorch(exported):
    net, x, path = exported
    net = type(net)()
    net.load_state_dict(exported[0].state_dict())
    program, scope, feed, target, loss = _loss_program(path)
    startup = fg.Program()
    with fg.program_guard(program, startup):
        fg.optimizer.SGD(learning_rate=0.05).minimize(loss)
    fg.Executor().run(startup, scope=scope)  # the learning rate only: imported parameters hold their values
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    rng = np.random.default_rng(2)
    for _ in range(3):
        y = rng.normal(size=net(x).shape).astype("float32")
        got, = fg.Executor().run(program, feed={feed: x.numpy(), "target": y}, fetch_list=[loss], scope=scope)
        optimizer.zero_grad()
        want = torch.mean(torch.square(net(x) - torch.tensor(y)))
        want.backward()
        optimizer.step()
        np.testing.assert_allclose(got, want.item(), rtol=1e-4)
    for name, param in net.named_parameters():
        np.testing.assert_allclose(scope[name], param.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
