"""Channel-last layouts (NLC, NHWC, NDHWC) of pooling, convolution and normalisation.

Each function given channel-last input must give PyTorch's channel-first answer on the same
data moved there and back (`movedim`), value and gradients, eager and static; the layers must
pass their data_format on (the review found some that ignored it); a layout that does not fit
is refused naming itself.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.nn import functional as F

from both_modes import compare_with_torch

RNG = np.random.default_rng(7)


def _first(t):
    return t.movedim(-1, 1)


def _last(t):
    return t.movedim(1, -1)


def _x(*shape):
    return RNG.standard_normal(shape)


# name: (fluidgrad fn on channel-last x, torch fn on channel-first data, inputs, wrt)
_CASES = {
    "max_pool1d": (lambda x: F.max_pool1d(x, 2, data_format="NLC"),
                   lambda x: _last(TF.max_pool1d(_first(x), 2)), {"x": _x(2, 7, 3)}),
    "max_pool2d padded": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1, data_format="NHWC"),
                          lambda x: _last(TF.max_pool2d(_first(x), 3, stride=2, padding=1)), {"x": _x(2, 5, 6, 3)}),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2, data_format="NDHWC"),
                   lambda x: _last(TF.max_pool3d(_first(x), 2)), {"x": _x(1, 4, 4, 4, 2)}),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 3, stride=1, padding=1, data_format="NLC"),
                   lambda x: _last(TF.avg_pool1d(_first(x), 3, 1, 1, count_include_pad=False)), {"x": _x(2, 6, 3)}),
    "avg_pool2d divisor": (lambda x: F.avg_pool2d(x, 2, divisor_override=3, data_format="NHWC"),
                           lambda x: _last(TF.avg_pool2d(_first(x), 2, divisor_override=3)), {"x": _x(2, 4, 6, 3)}),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2, data_format="NDHWC"),
                   lambda x: _last(TF.avg_pool3d(_first(x), 2)), {"x": _x(1, 4, 2, 4, 3)}),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 3, data_format="NLC"),
                            lambda x: _last(TF.adaptive_avg_pool1d(_first(x), 3)), {"x": _x(2, 7, 3)}),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, [2, 3], data_format="NHWC"),
                            lambda x: _last(TF.adaptive_avg_pool2d(_first(x), [2, 3])), {"x": _x(2, 5, 7, 3)}),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, 2, data_format="NDHWC"),
                            lambda x: _last(TF.adaptive_avg_pool3d(_first(x), 2)), {"x": _x(1, 3, 5, 4, 2)}),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, padding=1, data_format="NLC"),
               lambda x, w, b: _last(TF.conv1d(_first(x), w, b, padding=1)),
               {"x": _x(2, 6, 3), "w": _x(4, 3, 3), "b": _x(4)}),
    "conv2d grouped strided": (lambda x, w, b: F.conv2d(x, w, b, stride=2, groups=2, data_format="NHWC"),
                               lambda x, w, b: _last(TF.conv2d(_first(x), w, b, stride=2, groups=2)),
                               {"x": _x(2, 5, 6, 4), "w": _x(6, 2, 3, 3), "b": _x(6)}),
    "conv3d": (lambda x, w: F.conv3d(x, w, data_format="NDHWC"),
               lambda x, w: _last(TF.conv3d(_first(x), w)), {"x": _x(1, 4, 4, 3, 2), "w": _x(3, 2, 2, 2, 2)}),
    "conv2d_transpose": (lambda x, w, b: F.conv2d_transpose(x, w, b, stride=2, output_size=[8, 6],
                                                            data_format="NHWC"),
                         lambda x, w, b: _last(TF.conv_transpose2d(_first(x), w, b, stride=2, output_padding=(1, 1))),
                         {"x": _x(2, 3, 2, 3), "w": _x(3, 4, 3, 3), "b": _x(4)}),
    "conv1d_transpose": (lambda x, w: F.conv1d_transpose(x, w, data_format="NLC"),
                         lambda x, w: _last(TF.conv_transpose1d(_first(x), w)), {"x": _x(2, 4, 3), "w": _x(3, 2, 3)}),
    "batch_norm NHWC training": (
        lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, training=True, data_format="NHWC"),
        lambda x, w, b, m, v: _last(TF.batch_norm(_first(x), m, v, w, b, training=True)),
        {"x": _x(2, 3, 4, 3), "w": _x(3), "b": _x(3), "m": _x(3), "v": np.abs(_x(3)) + 0.5}),
    "batch_norm NLC eval": (
        lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, training=False, data_format="NLC"),
        lambda x, w, b, m, v: _last(TF.batch_norm(_first(x), m, v, w, b, training=False)),
        {"x": _x(2, 5, 3), "w": _x(3), "b": _x(3), "m": _x(3), "v": np.abs(_x(3)) + 0.5}),
    "instance_norm NDHWC": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b, data_format="NDHWC"),
                            lambda x, w, b: _last(TF.instance_norm(_first(x), weight=w, bias=b)),
                            {"x": _x(2, 3, 2, 4, 3), "w": _x(3), "b": _x(3)}),
    "instance_norm NLC running stats": (
        lambda x, m, v: F.instance_norm(x, m, v, use_input_stats=False, data_format="NLC"),
        lambda x, m, v: _last(TF.instance_norm(_first(x), m, v, use_input_stats=False)),
        {"x": _x(2, 5, 3), "m": _x(3), "v": np.abs(_x(3)) + 0.5}),
    "group_norm NHWC": (lambda x, w, b: F.group_norm(x, 2, weight=w, bias=b, data_format="NHWC"),
                        lambda x, w, b: _last(TF.group_norm(_first(x), 2, w, b)),
                        {"x": _x(2, 3, 3, 4), "w": _x(4), "b": _x(4)}),
    "local_response_norm NLC": (lambda x: F.local_response_norm(x, 3, data_format="NLC"),
                                lambda x: _last(TF.local_response_norm(_first(x), 3)), {"x": _x(2, 4, 5)}),
    "interpolate bilinear NHWC": (lambda x: F.interpolate(x, size=[5, 7], mode="bilinear", data_format="NHWC"),
                                  lambda x: _last(TF.interpolate(_first(x), size=[5, 7], mode="bilinear")),
                                  {"x": _x(2, 3, 4, 3)}),
    "interpolate nearest NWC": (lambda x: F.interpolate(x, scale_factor=2, data_format="NWC"),
                                lambda x: _last(TF.interpolate(_first(x), scale_factor=2)), {"x": _x(2, 4, 3)}),
    "interpolate trilinear NDHWC": (
        lambda x: F.interpolate(x, size=[3, 4, 5], mode="trilinear", align_corners=True, data_format="NDHWC"),
        lambda x: _last(TF.interpolate(_first(x), size=[3, 4, 5], mode="trilinear", align_corners=True)),
        {"x": _x(1, 2, 3, 2, 2)}),
    "pixel_shuffle NHWC": (lambda x: F.pixel_shuffle(x, 2, data_format="NHWC"),
                           lambda x: _last(TF.pixel_shuffle(_first(x), 2)), {"x": _x(2, 3, 2, 8)}),
    "pixel_unshuffle NHWC": (lambda x: F.pixel_unshuffle(x, 2, data_format="NHWC"),
                             lambda x: _last(TF.pixel_unshuffle(_first(x), 2)), {"x": _x(2, 4, 6, 3)}),
}
_NOT_DIFFERENTIATED = {"m", "v"}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_channel_last_function_matches_torch_on_moved_data(name):
    fg_fn, torch_fn, inputs = _CASES[name]
    wrt = [k for k in inputs if k not in _NOT_DIFFERENTIATED]
    compare_with_torch(fg_fn, torch_fn, inputs, wrt, rtol=1e-7, atol=1e-9)


def test_channel_last_max_pool_mask_holds_indices_into_each_channel_plane():
    x = _x(2, 4, 6, 3)
    out, mask = F.max_pool2d(fg.to_tensor(x), 2, return_mask=True, data_format="NHWC")
    want, indices = TF.max_pool2d(_first(torch.tensor(x)), 2, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), _last(want).numpy())
    np.testing.assert_array_equal(mask.numpy(), _last(indices).numpy())


_LAYERS = {
    "BatchNorm1D NLC": (lambda: fg.nn.BatchNorm1D(3, data_format="NLC"), lambda: torch.nn.BatchNorm1d(3), (4, 5, 3)),
    "BatchNorm2D NHWC": (lambda: fg.nn.BatchNorm2D(3, data_format="NHWC"), lambda: torch.nn.BatchNorm2d(3),
                         (2, 4, 3, 3)),
    "BatchNorm3D NDHWC": (lambda: fg.nn.BatchNorm3D(2, data_format="NDHWC"), lambda: torch.nn.BatchNorm3d(2),
                          (2, 3, 2, 3, 2)),
    "InstanceNorm2D NHWC": (lambda: fg.nn.InstanceNorm2D(3, data_format="NHWC"),
                            lambda: torch.nn.InstanceNorm2d(3, affine=True), (2, 4, 3, 3)),
    "GroupNorm NHWC": (lambda: fg.nn.GroupNorm(2, 4, data_format="NHWC"), lambda: torch.nn.GroupNorm(2, 4),
                       (2, 3, 3, 4)),
    "MaxPool2D NHWC": (lambda: fg.nn.MaxPool2D(2, data_format="NHWC"), lambda: torch.nn.MaxPool2d(2), (2, 4, 4, 3)),
    "AvgPool1D NLC": (lambda: fg.nn.AvgPool1D(2, data_format="NLC"), lambda: torch.nn.AvgPool1d(2), (2, 6, 3)),
    "AvgPool3D NDHWC": (lambda: fg.nn.AvgPool3D(2, data_format="NDHWC"), lambda: torch.nn.AvgPool3d(2),
                        (1, 2, 4, 2, 3)),
    "AdaptiveAvgPool2D NHWC": (lambda: fg.nn.AdaptiveAvgPool2D(2, data_format="NHWC"),
                               lambda: torch.nn.AdaptiveAvgPool2d(2), (2, 5, 4, 3)),
    "Upsample NHWC": (lambda: fg.nn.Upsample(scale_factor=2, mode="bilinear", data_format="NHWC"),
                      lambda: torch.nn.Upsample(scale_factor=2, mode="bilinear"), (2, 3, 4, 3)),
    "PixelShuffle NHWC": (lambda: fg.nn.PixelShuffle(2, data_format="NHWC"), lambda: torch.nn.PixelShuffle(2),
                          (2, 3, 2, 8)),
    "Conv2D NHWC": (lambda: fg.nn.Conv2D(3, 4, 3, padding=1, data_format="NHWC"),
                    lambda: torch.nn.Conv2d(3, 4, 3, padding=1), (2, 5, 4, 3)),
    "Conv1DTranspose NLC": (lambda: fg.nn.Conv1DTranspose(3, 2, 3, stride=2, data_format="NLC"),
                            lambda: torch.nn.ConvTranspose1d(3, 2, 3, stride=2), (2, 4, 3)),
}


def _copy_parameters(layer, module):
    """module's parameters and buffers take the layer's values (float32 both)."""
    with torch.no_grad():
        for p, t in zip(layer.parameters(), module.parameters()):
            t.copy_(torch.tensor(p.numpy().reshape(tuple(t.shape))))


@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_channel_last_layer_matches_torch_and_updates_running_statistics(name):
    make, make_torch, shape = _LAYERS[name]
    layer, module = make(), make_torch()
    _copy_parameters(layer, module)
    x = RNG.standard_normal(shape).astype(np.float32) + 2.0
    xt = torch.tensor(x, requires_grad=True)
    want = _last(module(_first(xt)))
    xf = fg.to_tensor(x, stop_gradient=False)
    out = layer(xf)
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    weights = RNG.uniform(0.5, 1.5, want.shape).astype(np.float32)
    (want * torch.tensor(weights)).sum().backward()
    fg.sum(out * fg.to_tensor(weights)).backward()
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, t in zip(layer.parameters(), module.parameters()):
        np.testing.assert_allclose(p.grad.numpy().reshape(tuple(t.shape)), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    if "BatchNorm" in name:
        np.testing.assert_allclose(layer._mean.numpy(), module.running_mean.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(layer._variance.numpy(), module.running_var.numpy(), rtol=1e-5, atol=1e-6)


def test_static_builders_take_nhwc():
    x = RNG.standard_normal((2, 6, 5, 3))
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        xv = fg.static.data("x", [None, 6, 5, 3], "float64")
        conv = fg.static.nn.conv2d(xv, 4, 3, padding=1, data_format="NHWC", bias_attr=False)
        pooled = fg.static.nn.pool2d(conv, 2, "max", 2, data_format="NHWC")
    exe = fg.Executor()
    scope = fg.Scope()
    exe.run(startup, scope=scope)
    weight = np.array(scope[main.all_parameters()[0].name])
    assert weight.shape == (4, 3, 3, 3)
    got = exe.run(main, feed={"x": x}, fetch_list=[pooled], scope=scope)[0]
    want = _last(TF.max_pool2d(TF.conv2d(_first(torch.tensor(x)), torch.tensor(weight), padding=1), 2, 2))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10)


@pytest.mark.parametrize("call, layout", [
    (lambda x: F.max_pool1d(x, 2, data_format="NHWC"), "NHWC"),          # a layout of another rank
    (lambda x: F.adaptive_avg_pool2d(x, 2, data_format="NWHC"), "NWHC"),   # a typo
    (lambda x: F.conv2d(x, fg.to_tensor(np.ones((1, 3, 1, 1))), data_format="nhwc"), "nhwc"),
    (lambda x: F.instance_norm(x, data_format="NC"), "NC"),
    (lambda x: fg.nn.InstanceNorm1D(3, data_format="NHWC"), "NHWC"),
    (lambda x: fg.nn.BatchNorm2D(3, data_format="NLC"), "NLC"),
])
def test_a_layout_that_does_not_fit_is_refused_naming_it(call, layout):
    with pytest.raises(ValueError, match=layout):
        call(fg.to_tensor(np.ones((2, 4, 4, 3))))


def test_channel_last_pooling_refuses_input_of_another_rank_naming_the_layout():
    with pytest.raises(ValueError, match="max_pool2d.*NHWC.*4-D.*\\[2, 4, 3\\]"):
        F.max_pool2d(fg.to_tensor(np.ones((2, 4, 3))), 2, data_format="NHWC")
