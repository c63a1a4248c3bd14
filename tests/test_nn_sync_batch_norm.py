"""SyncBatchNorm: BatchNorm in a world of one; under the real launcher, each rank holding part of
the batch gets what BatchNorm gives on the whole batch (output, input gradient, summed weight
gradient, running statistics), also inside DataParallel (its gradient buckets all-reduced while
the backward all-reduces the statistics' gradients). PyTorch is the oracle on one process."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.nn import functional as F

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("shape", "data_format"), [((4, 3, 2, 3), "NCHW"), ((5, 2, 3), "NLC"), ((6, 3), "NC")])
def test_composed_statistics_match_torch_batch_norm(shape, data_format):
    """The all-reduced composition itself (a world of one), against torch: value, gradients of
    x / weight / bias, and the running statistics (unbiased variance)."""
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal(shape) * 2 + 1, rng.standard_normal(shape)
    channels = shape[-1] if data_format == "NLC" else shape[1]
    weight, bias = rng.random(channels) + 0.5, rng.random(channels)
    tensors = [fg.to_tensor(v, stop_gradient=False) for v in (x, weight, bias)]
    mean, var = fg.to_tensor(np.zeros(channels)), fg.to_tensor(np.ones(channels))
    y = F.sync_batch_norm(tensors[0], mean, var, tensors[1], tensors[2], momentum=0.9, data_format=data_format)
    fg.sum(y * fg.to_tensor(dy)).backward()
    to_first = (lambda a: np.moveaxis(a, -1, 1)) if data_format == "NLC" else (lambda a: a)
    reference = [torch.tensor(to_first(x), requires_grad=True), torch.tensor(weight, requires_grad=True),
                 torch.tensor(bias, requires_grad=True)]
    running = torch.zeros(channels, dtype=torch.float64), torch.ones(channels, dtype=torch.float64)
    expected = torch.nn.functional.batch_norm(reference[0], *running, reference[1], reference[2], training=True,
                                              momentum=0.1)
    (expected * torch.tensor(to_first(dy))).sum().backward()
    np.testing.assert_allclose(to_first(y.numpy()), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    for got, want in zip(tensors, reference):
        np.testing.assert_allclose(to_first(got.grad.numpy()) if got is tensors[0] else got.grad.numpy(),
                                   want.grad.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(mean.numpy(), running[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), running[1].numpy(), rtol=1e-12)


def test_sync_batch_norm_in_a_world_of_one_is_batch_norm():
    x = np.random.default_rng(1).standard_normal((4, 3, 2, 2)).astype("float32")
    fg.seed(0)
    sync = fg.nn.SyncBatchNorm(3)
    plain = fg.nn.BatchNorm2D(3)
    for mode in ("train", "eval"):
        getattr(sync, mode)(), getattr(plain, mode)()
        np.testing.assert_array_equal(sync(fg.to_tensor(x)).numpy(), plain(fg.to_tensor(x)).numpy())
    np.testing.assert_array_equal(sync._variance.numpy(), plain._variance.numpy())


def test_convert_sync_batchnorm_keeps_parameters_and_statistics():
    model = fg.nn.Sequential(fg.nn.Conv2D(2, 3, 1), fg.nn.Sequential(fg.nn.BatchNorm2D(3)), fg.nn.ReLU())
    inner = model[1][0]
    inner._mean.set_value(np.array([1.0, 2.0, 3.0], "float32"))
    model.eval()
    x = fg.to_tensor(np.random.default_rng(2).standard_normal((2, 2, 3, 3)).astype("float32"))
    before = model(x).numpy()
    converted = fg.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and isinstance(model[1][0], fg.nn.SyncBatchNorm)
    assert model[1][0].weight is inner.weight and model[1][0]._mean is inner._mean
    assert len(model.parameters()) == 4 and not model[1][0].training
    np.testing.assert_array_equal(model(x).numpy(), before)


_SCRIPT = """
import json, sys
import numpy as np
import fluidgrad as fg
from fluidgrad.ops.comm import get_world

world = get_world()
rng = np.random.default_rng(0)
x_all, dy_all = rng.standard_normal((6, 3, 2, 2)) * 2 + 1, rng.standard_normal((6, 4, 4))
rows = slice(3 * world.rank, 3 * world.rank + 3)


def model(norm=fg.nn.SyncBatchNorm):
    fg.seed(5)
    layers = fg.nn.Sequential(fg.nn.Conv2D(3, 4, 1), norm(4), fg.nn.Flatten(2))
    return layers.to("float64")


def run(layers, x, dy):
    x = fg.to_tensor(x, stop_gradient=False)
    y = layers(x)
    fg.sum(y * fg.to_tensor(dy)).backward()
    return y.numpy(), x.grad.numpy(), [p.grad.numpy() for p in layers.parameters()], layers[1]._variance.numpy()


found = {}
whole = model(fg.nn.BatchNorm2D)      # the oracle: BatchNorm over the whole batch
found["whole"] = [a.tolist() if hasattr(a, "tolist") else [g.tolist() for g in a] for a in run(whole, x_all, dy_all)]
part = run(model(), x_all[rows], dy_all[rows])
summed = [fg.distributed.all_reduce(fg.to_tensor(g)).numpy().tolist() for g in part[2]]
found["part"] = [part[0].tolist(), part[1].tolist(), summed, part[3].tolist()]
parallel = fg.DataParallel(model(), comm_buffer_size=0.0001)
x = fg.to_tensor(x_all[rows], stop_gradient=False)
fg.sum(parallel(x) * fg.to_tensor(dy_all[rows])).backward()
found["parallel"] = [p.grad.numpy().tolist() for p in parallel.parameters()]
if world.rank == 0 or world.rank == 1:
    json.dump(found, open(sys.argv[1] + str(world.rank), "w"))
"""


def test_two_ranks_with_half_the_batch_each_get_batch_norm_of_the_whole_batch(tmp_path):
    pytest.importorskip("mpi4py", reason="the `dist` extra is not installed")
    script, out = tmp_path / "script.py", tmp_path / "out"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", "2", str(script), str(out)],
                            env=env, capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    for rank in (0, 1):
        found = json.loads(Path(f"{out}{rank}").read_text())
        y, dx, grads, variance = found["whole"]
        rows = slice(3 * rank, 3 * rank + 3)
        part_y, part_dx, part_grads, part_variance = found["part"]
        np.testing.assert_allclose(part_y, np.asarray(y)[rows], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(part_dx, np.asarray(dx)[rows], rtol=1e-9, atol=1e-11)
        for got, want in zip(part_grads, grads):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(part_variance, variance, rtol=1e-12)
        for got, want in zip(found["parallel"], grads):       # DataParallel averages over the 2 ranks
            np.testing.assert_allclose(got, np.asarray(want) / 2, rtol=1e-9, atol=1e-11)
