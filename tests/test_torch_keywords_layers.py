"""PyTorch's keywords on the norm, activation and shape layers, against torch 2.13.0 (float64):
each torch spelling computes what torch's layer computes, Paddle's keep their meaning, and an
argument given under both names is a TypeError."""
import numpy as np
import pytest
import torch

import fluidgrad as fg

R = np.random.default_rng(12)


def _ours_and_theirs(make_ours, make_theirs, shape):
    x = R.standard_normal(shape) * 2 + 0.5
    ours, theirs = make_ours().to(dtype="float64"), make_theirs().double()
    return ours, theirs, x


_SAME_AS_TORCH = {
    "LayerNorm(4, bias=False)": (lambda: fg.nn.LayerNorm(4, bias=False), lambda: torch.nn.LayerNorm(4, bias=False),
                                 (3, 4)),
    "GroupNorm(2, 4, eps=1e-2, affine=False)": (lambda: fg.nn.GroupNorm(2, 4, eps=1e-2, affine=False),
                                                lambda: torch.nn.GroupNorm(2, 4, eps=1e-2, affine=False), (2, 4, 3)),
    "InstanceNorm2d(3)": (lambda: fg.nn.InstanceNorm2d(3), lambda: torch.nn.InstanceNorm2d(3), (2, 3, 4, 5)),
    "InstanceNorm1D(3, eps=0.1, affine=False)": (lambda: fg.nn.InstanceNorm1D(3, eps=0.1, affine=False),
                                                 lambda: torch.nn.InstanceNorm1d(3, eps=0.1), (2, 3, 6)),
    "RMSNorm(4, eps=1e-3)": (lambda: fg.nn.RMSNorm(4, eps=1e-3), lambda: torch.nn.RMSNorm(4, eps=1e-3), (3, 4)),
    "BatchNorm2d(3, eps=1e-3, affine=False)": (lambda: fg.nn.BatchNorm2d(3, eps=1e-3, affine=False),
                                               lambda: torch.nn.BatchNorm2d(3, eps=1e-3, affine=False), (4, 3, 2, 2)),
    "Softmin(dim=0)": (lambda: fg.nn.Softmin(dim=0), lambda: torch.nn.Softmin(dim=0), (3, 4)),
    "Softmin(1)": (lambda: fg.nn.Softmin(1), lambda: torch.nn.Softmin(1), (3, 4, 2)),
    "GLU(dim=0)": (lambda: fg.nn.GLU(dim=0), lambda: torch.nn.GLU(dim=0), (4, 3)),
    "Hardtanh(min_val=-0.5, max_val=2.0)": (lambda: fg.nn.Hardtanh(min_val=-0.5, max_val=2.0),
                                            lambda: torch.nn.Hardtanh(min_val=-0.5, max_val=2.0), (3, 4)),
    "Softshrink(lambd=1.0)": (lambda: fg.nn.Softshrink(lambd=1.0), lambda: torch.nn.Softshrink(lambd=1.0), (3, 4)),
    "Hardshrink(lambd=1.0)": (lambda: fg.nn.Hardshrink(lambd=1.0), lambda: torch.nn.Hardshrink(lambd=1.0), (3, 4)),
    "ReLU(True)": (lambda: fg.nn.ReLU(True), lambda: torch.nn.ReLU(True), (3, 4)),
    "ReLU6(inplace=True)": (lambda: fg.nn.ReLU6(inplace=True), lambda: torch.nn.ReLU6(inplace=True), (3, 4)),
    "LeakyReLU(0.2, inplace=True)": (lambda: fg.nn.LeakyReLU(0.2, inplace=True),
                                     lambda: torch.nn.LeakyReLU(0.2, inplace=True), (3, 4)),
    "ELU(inplace=True)": (lambda: fg.nn.ELU(inplace=True), lambda: torch.nn.ELU(inplace=True), (3, 4)),
    "SELU(inplace=True)": (lambda: fg.nn.SELU(inplace=True), lambda: torch.nn.SELU(inplace=True), (3, 4)),
    "Hardsigmoid(inplace=True)": (lambda: fg.nn.Hardsigmoid(inplace=True),
                                  lambda: torch.nn.Hardsigmoid(inplace=True), (3, 4)),
    "Flatten(start_dim=1, end_dim=2)": (lambda: fg.nn.Flatten(start_dim=1, end_dim=2),
                                        lambda: torch.nn.Flatten(start_dim=1, end_dim=2), (2, 3, 4, 5)),
}


@pytest.mark.parametrize("call", sorted(_SAME_AS_TORCH))
def test_torch_keywords_compute_what_torch_computes(call):
    make_ours, make_theirs, shape = _SAME_AS_TORCH[call]
    ours, theirs, x = _ours_and_theirs(make_ours, make_theirs, shape)
    expected = theirs(torch.tensor(x)).detach().numpy()       # torch's inplace layers overwrite their input
    got = ours(fg.to_tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    assert sorted(n for n, _ in ours.named_parameters()) == sorted(n for n, _ in theirs.named_parameters())


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("track_running_stats", [True, False])
def test_torch_cased_batch_norm_takes_torchs_momentum(dims, track_running_stats):
    """Three training steps then eval: running statistics (batch weight 0.3, torch's meaning) and
    the eval output agree with torch's."""
    shape = (6, 3) if dims == 1 else (4, 3, 2, 2)
    ours = getattr(fg.nn, f"BatchNorm{dims}d")(3, momentum=0.3, eps=1e-3,
                                              track_running_stats=track_running_stats).to(dtype="float64")
    theirs = getattr(torch.nn, f"BatchNorm{dims}d")(3, momentum=0.3, eps=1e-3,
                                                    track_running_stats=track_running_stats).double()
    assert ours.momentum == 0.3
    for _ in range(3):
        x = R.standard_normal(shape) * 2 + 1
        np.testing.assert_allclose(ours(fg.to_tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-7, atol=1e-9)
    if track_running_stats:
        np.testing.assert_allclose(ours._mean.numpy(), theirs.running_mean.numpy(), rtol=1e-10)
        np.testing.assert_allclose(ours._variance.numpy(), theirs.running_var.numpy(), rtol=1e-10)
    ours.eval()
    theirs.eval()
    x = R.standard_normal(shape)
    np.testing.assert_allclose(ours(fg.to_tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-7, atol=1e-9)


def test_paddle_cased_batch_norm_keeps_paddles_momentum():
    ours = fg.nn.BatchNorm1D(3, momentum=0.7).to(dtype="float64")
    theirs = torch.nn.BatchNorm1d(3, momentum=0.3).double()
    x = R.standard_normal((5, 3))
    ours(fg.to_tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(ours._mean.numpy(), theirs.running_mean.numpy(), rtol=1e-10)
    assert not fg.nn.BatchNorm2D(3, affine=False).parameters()
    assert fg.nn.BatchNorm2D(3, track_running_stats=False).use_global_stats is False


def test_sync_batch_norm_conversion_keeps_torchs_momentum():
    sync = fg.nn.SyncBatchNorm.convert_sync_batchnorm(fg.nn.BatchNorm2d(3, momentum=0.25))
    assert sync._running_momentum == pytest.approx(0.75)


_BOTH_GIVEN = {
    "LayerNorm(4, epsilon=1e-3, eps=1e-4)": lambda: fg.nn.LayerNorm(4, epsilon=1e-3, eps=1e-4),
    "LayerNorm(4, weight_attr=False, elementwise_affine=False)":
        lambda: fg.nn.LayerNorm(4, weight_attr=False, elementwise_affine=False),
    "BatchNorm2D(3, momentum=0.1, eps=1e-3)": lambda: fg.nn.BatchNorm2D(3, momentum=0.1, eps=1e-3),
    "BatchNorm2D(3, use_global_stats=True, track_running_stats=False)":
        lambda: fg.nn.BatchNorm2D(3, use_global_stats=True, track_running_stats=False),
    "GroupNorm(2, 4, epsilon=0.1, eps=0.2)": lambda: fg.nn.GroupNorm(2, 4, epsilon=0.1, eps=0.2),
    "Softmax(axis=0, dim=1)": lambda: fg.nn.Softmax(axis=0, dim=1),
    "GLU(axis=0, dim=1)": lambda: fg.nn.GLU(axis=0, dim=1),
    "Flatten(start_axis=2, start_dim=0)": lambda: fg.nn.Flatten(start_axis=2, start_dim=0),
    "Hardtanh(-2.0, min_val=-3.0)": lambda: fg.nn.Hardtanh(-2.0, min_val=-3.0),
}


@pytest.mark.parametrize("call", sorted(_BOTH_GIVEN))
def test_an_argument_under_both_names_is_an_error(call):
    with pytest.raises(TypeError, match="not both|ambiguous|PyTorch's keywords"):
        _BOTH_GIVEN[call]()


def test_unsupported_torch_options_are_refused_clearly():
    with pytest.raises(ValueError, match="momentum=None"):
        fg.nn.BatchNorm2d(3, momentum=None)
    with pytest.raises(ValueError, match="track_running_stats=True"):
        fg.nn.InstanceNorm2d(3, track_running_stats=True)
