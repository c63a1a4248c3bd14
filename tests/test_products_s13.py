"""baddbmm, dist, randn_like / rand_like (tensor/products.py, tensor/random.py) against torch:
values and gradients, eager and static, central differences."""
import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.framework.program as program_module
from both_modes import compare_with_torch
from fluidgrad.testing import check_program_grad

torch = pytest.importorskip("torch")
_RNG = np.random.default_rng(0)


@pytest.mark.parametrize("beta,alpha,bias_shape", [(1.0, 1.0, (2, 2, 4)), (0.5, 2.0, (2, 4)), (0.0, -1.5, (1,))])
def test_baddbmm_against_torch(beta, alpha, bias_shape):
    inputs = {"c": _RNG.standard_normal(bias_shape), "a": _RNG.standard_normal((2, 2, 3)),
              "b": _RNG.standard_normal((2, 3, 4))}
    compare_with_torch(lambda c, a, b: fg.baddbmm(c, a, b, beta=beta, alpha=alpha),
                       lambda c, a, b: torch.baddbmm(c, a, b, beta=beta, alpha=alpha), inputs,
                       wrt=("a", "b") if beta == 0 else ("c", "a", "b"))


@pytest.mark.parametrize("p", [2, 1, 3.5, float("inf")])
def test_dist_against_torch(p):
    inputs = {"x": _RNG.standard_normal((3, 4)), "y": _RNG.standard_normal(4)}
    compare_with_torch(lambda x, y: fg.dist(x, y, p), lambda x, y: torch.dist(x, y, p), inputs, wrt=("x", "y"))


def test_dist_and_baddbmm_numeric_gradients():
    check_program_grad(lambda v: fg.dist(v["x"], v["y"], 3),
                       {"x": _RNG.standard_normal((3, 4)), "y": _RNG.standard_normal((3, 4))})
    check_program_grad(lambda v: fg.baddbmm(v["c"], v["a"], v["b"], beta=0.5, alpha=2.0),
                       {"c": _RNG.standard_normal((2, 4)), "a": _RNG.standard_normal((2, 2, 3)),
                        "b": _RNG.standard_normal((2, 3, 4))})


def test_bad_shapes_are_named(monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    a, b = fg.ones([2, 2, 3]), fg.ones([2, 4, 4])
    with pytest.raises(ValueError, match="baddbmm: batch1 .* cannot be multiplied"):
        fg.baddbmm(fg.ones([2, 2, 4]), a, b)
    with pytest.raises(ValueError, match="baddbmm: input"):
        fg.baddbmm(fg.ones([3, 5]), a, fg.ones([2, 3, 4]))


@pytest.mark.parametrize("name", ["randn_like", "rand_like"])
def test_like_draws_keep_shape_and_dtype(name, monkeypatch):
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    fg.seed(1)
    x = fg.to_tensor(np.zeros((300, 40)))
    draw = getattr(fg, name)(x)
    assert tuple(draw.shape) == (300, 40) and str(draw.dtype).endswith("float64") and draw.stop_gradient
    values = draw.numpy()
    mean, spread = (0.0, 1.0) if name == "randn_like" else (0.5, 12 ** -0.5)
    assert abs(values.mean() - mean) < 6 * spread / np.sqrt(values.size)
    assert str(getattr(fg, name)(x, dtype="float32").dtype).endswith("float32")
