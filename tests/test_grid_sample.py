"""nn.functional.grid_sample / affine_grid against PyTorch: values, gradients with respect to
the input, the grid and theta, second order, static = eager, and bad input."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
import fluidgrad.nn.functional as F
from fluidgrad.testing import check_program_grad

CASES_2D = [(mode, pad, ac) for mode in ("bilinear", "nearest", "bicubic")
            for pad in ("zeros", "border", "reflection") for ac in (True, False)]
CASES_3D = [(mode, pad, ac) for mode in ("bilinear", "nearest") for pad in ("zeros", "border", "reflection")
            for ac in (True, False)]


def _inputs(nd: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 5, 4) if nd == 2 else (2, 2, 4, 3, 5))
    grid = rng.uniform(-1.3, 1.3, (2, 3, 4, 2) if nd == 2 else (2, 2, 3, 2, 3))
    return x, grid


def _eager(x, grid, **kw):
    xt, gt = fg.to_tensor(x, stop_gradient=False), fg.to_tensor(grid, stop_gradient=False)
    out = F.grid_sample(xt, gt, **kw)
    return xt, gt, out


def _torch(x, grid, **kw):
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    return xt, gt, torch.nn.functional.grid_sample(xt, gt, **kw)


@pytest.mark.parametrize("mode,padding_mode,align_corners", CASES_2D)
def test_grid_sample_2d_values_and_gradients_equal_pytorch(mode, padding_mode, align_corners):
    _compare(2, mode, padding_mode, align_corners)


@pytest.mark.parametrize("mode,padding_mode,align_corners", CASES_3D)
def test_grid_sample_3d_values_and_gradients_equal_pytorch(mode, padding_mode, align_corners):
    _compare(3, mode, padding_mode, align_corners)


def _compare(nd, mode, padding_mode, align_corners):
    x, grid = _inputs(nd)
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    xt, gt, out = _eager(x, grid, **kw)
    xr, gr, ref = _torch(x, grid, **kw)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = np.random.default_rng(1).standard_normal(ref.shape)
    (out * fg.to_tensor(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-9, atol=1e-11)
    grid_grad = np.zeros_like(grid) if gt.grad is None else gt.grad.numpy()   # nearest: no path to the grid
    np.testing.assert_allclose(grid_grad, gr.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_static_gradient_equals_central_differences(mode):
    x, grid = _inputs(2, seed=3)
    check_program_grad(lambda v: F.grid_sample(v["x"], v["grid"], mode=mode, padding_mode="border",
                                               align_corners=False),
                       {"x": x, "grid": grid * 0.9}, rtol=1e-5, atol=1e-7)


def test_grid_sample_static_equals_eager():
    x, grid = _inputs(2, seed=4)
    _, _, eager = _eager(x, grid, mode="bicubic", padding_mode="reflection", align_corners=False)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        xv, gv = fg.static.data("x", list(x.shape), "float64"), fg.static.data("grid", list(grid.shape), "float64")
        out = F.grid_sample(xv, gv, mode="bicubic", padding_mode="reflection", align_corners=False)
    static, = fg.Executor().run(main, feed={"x": x, "grid": grid}, fetch_list=[out])
    np.testing.assert_allclose(static, eager.numpy(), rtol=1e-12, atol=1e-14)


def test_grid_sample_second_order_equals_pytorch():
    """d/d(grid) of <v, dL/dx>: the backward is itself differentiable."""
    x, grid = _inputs(2, seed=5)
    xt, gt, out = _eager(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
    xr, gr, ref = _torch(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
    v = np.random.default_rng(6).standard_normal(x.shape)
    dx, = fg.grad([(out * out).sum()], [xt], create_graph=True)
    (dx * fg.to_tensor(v)).sum().backward()
    dxr, = torch.autograd.grad((ref * ref).sum(), [xr], create_graph=True)
    (dxr * torch.tensor(v)).sum().backward()
    np.testing.assert_allclose(gt.grad.numpy(), gr.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.filterwarnings("ignore:Since version 1.3.0")
@pytest.mark.parametrize("shape", [[2, 3, 4, 5], [2, 1, 3, 4, 2], [1, 1, 1, 3]])
@pytest.mark.parametrize("align_corners", [True, False])
def test_affine_grid_equals_pytorch_with_theta_gradient(shape, align_corners):
    nd = len(shape) - 2
    theta = np.random.default_rng(7).standard_normal((shape[0], nd, nd + 1))
    tt = fg.to_tensor(theta, stop_gradient=False)
    grid = F.affine_grid(tt, shape, align_corners=align_corners)
    tr = torch.tensor(theta, requires_grad=True)
    ref = torch.nn.functional.affine_grid(tr, shape, align_corners=align_corners)
    np.testing.assert_allclose(grid.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    weights = np.random.default_rng(8).standard_normal(ref.shape)
    (grid * fg.to_tensor(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(tt.grad.numpy(), tr.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_affine_grid_then_grid_sample_trains_theta_like_pytorch():
    x = np.random.default_rng(9).standard_normal((2, 3, 6, 5))
    theta = np.array([[[0.9, 0.1, 0.05], [-0.1, 1.1, 0.0]]] * 2)
    tt = fg.to_tensor(theta, stop_gradient=False)
    out = F.grid_sample(fg.to_tensor(x), F.affine_grid(tt, [2, 3, 4, 4], align_corners=False), align_corners=False)
    tr = torch.tensor(theta, requires_grad=True)
    ref = torch.nn.functional.grid_sample(torch.tensor(x), torch.nn.functional.affine_grid(tr, [2, 3, 4, 4],
                                          align_corners=False), align_corners=False)
    (out * out).mean().backward()
    (ref * ref).mean().backward()
    np.testing.assert_allclose(tt.grad.numpy(), tr.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_bad_input_raises_clear_errors():
    x, grid = _inputs(2)
    with pytest.raises(ValueError, match="grid_sample: expects"):
        F.grid_sample(fg.to_tensor(x), fg.to_tensor(grid[..., :1]))
    with pytest.raises(ValueError, match="mode must be"):
        F.grid_sample(fg.to_tensor(x), fg.to_tensor(grid), mode="area")
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(fg.to_tensor(x), fg.to_tensor(grid), padding_mode="wrap")
    with pytest.raises(ValueError, match="affine_grid: expects"):
        F.affine_grid(fg.to_tensor(np.zeros((2, 3, 3))), [2, 1, 4, 4])
