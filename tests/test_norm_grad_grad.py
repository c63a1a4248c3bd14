"""Grad of grad of the normalisation functions built on the fused norm ops (group_norm and
instance_norm on layer_norm, instance_norm with running statistics on batch_norm, rms_norm from
elementwise ops, layer_norm and batch_norm themselves): Hessian-vector products against central
differences and PyTorch's double backward in static mode (`gradients` of `gradients`), eager
`grad(create_graph=True)` equal to static, and a third derivative through the grad-of-grad ops.
The ops themselves are covered by tests/op_cases/norm.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fluidgrad as fg
from fluidgrad.nn import functional as F
from fluidgrad.testing import ProgramGradCheck, check_program_grad

RNG = np.random.default_rng(11)


def _r(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape)


def _p(*shape):
    return RNG.uniform(0.5, 1.5, size=shape)


X3 = _r(2, 4, 3)
RUNNING = [np.array([0.1, -0.2]), np.array([0.7, 1.3])]   # running mean and variance: constants
# name, function, differentiated inputs, constant inputs, the same in PyTorch
CASES = [
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, 1e-5, w, b), [X3, _p(4), _r(4)], [],
     lambda x, w, b: TF.group_norm(x, 2, w, b, 1e-5)),
    ("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [_r(2, 2, 3), _p(2), _r(2)], [],
     lambda x, w, b: TF.instance_norm(x, weight=w, bias=b, eps=1e-5)),
    ("instance_norm-running-stats", lambda x, w, m, v: F.instance_norm(x, m, v, w, None, use_input_stats=False),
     [_r(2, 2, 3), _p(2)], RUNNING, lambda x, w, m, v: TF.batch_norm(x, m, v, w, None, training=False, eps=1e-5)),
    ("rms_norm", lambda x, w: F.rms_norm(x, [4], w), [_r(2, 3, 4), _p(4)], [],
     lambda x, w: TF.rms_norm(x, [4], w, 1e-6)),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, [3, 4], w, b), [_r(2, 3, 4), _p(3, 4), _r(3, 4)], [],
     lambda x, w, b: TF.layer_norm(x, [3, 4], w, b, 1e-5)),
    ("batch_norm-train", lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, training=True),
     [_r(4, 2, 2), _p(2), _r(2)], RUNNING,
     lambda x, w, b, m, v: TF.batch_norm(x, m.clone(), v.clone(), w, b, training=True, eps=1e-5)),
]


def _first_order(fn, n, n_const):
    """Static: the input gradients of sum(fn(inputs) * cot)."""
    def build(v):
        inputs = [v[f"a{i}"] for i in range(n)]
        loss = fg.sum(fn(*inputs, *(v[f"c{i}"] for i in range(n_const))) * v["cot"])
        return [g for g in fg.gradients([loss], inputs) if g is not None]
    return build


@pytest.mark.parametrize("name, fn, arrays, consts, torch_fn", CASES, ids=[c[0] for c in CASES])
def test_hessian_vector_products_match_numeric_and_torch(name, fn, arrays, consts, torch_fn):
    n = len(arrays)
    feeds = {f"a{i}": a for i, a in enumerate(arrays)}
    feeds.update({f"c{i}": c for i, c in enumerate(consts)})
    torch_consts = [torch.tensor(c) for c in consts]
    expected_out = torch_fn(*(torch.tensor(a) for a in arrays), *torch_consts)
    feeds["cot"] = RNG.uniform(0.5, 1.5, size=tuple(expected_out.shape))
    wrt = [f"a{i}" for i in range(n)]
    build = _first_order(fn, n, len(consts))
    analytic = check_program_grad(build, feeds, wrt=wrt, rtol=1e-5)
    check = ProgramGradCheck(build, feeds, wrt)

    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss = (torch_fn(*leaves, *torch_consts) * torch.tensor(feeds["cot"])).sum()
    firsts = torch.autograd.grad(loss, leaves, create_graph=True)
    objective = sum((g * torch.tensor(check.feeds[f"cotangent_{j}"])).sum() for j, g in enumerate(firsts))
    seconds = torch.autograd.grad(objective, leaves, allow_unused=True)
    for key, g in zip(wrt, seconds):
        want = np.zeros_like(feeds[key]) if g is None else g.numpy()
        np.testing.assert_allclose(analytic[key], want, rtol=1e-6, atol=1e-9, err_msg=f"{name}: {key}")

    tensors = [fg.to_tensor(a, stop_gradient=False) for a in arrays]
    out = fn(*tensors, *(fg.to_tensor(c) for c in consts))
    eager_first = fg.grad([fg.sum(out * fg.to_tensor(feeds["cot"]))], tensors, create_graph=True)
    eager_objective = fg.add_n([fg.sum(g * fg.to_tensor(check.feeds[f"cotangent_{j}"]))
                                for j, g in enumerate(eager_first)])
    eager_second = fg.grad([eager_objective], tensors, allow_unused=True)
    for key, g in zip(wrt, eager_second):
        got = np.zeros_like(feeds[key]) if g is None else g.numpy()
        np.testing.assert_allclose(got, analytic[key], rtol=1e-9, atol=1e-11, err_msg=f"{name} eager: {key}")


@pytest.mark.parametrize("op", ["layer_norm", "batch_norm"])
def test_third_derivative_through_the_grad_of_grad_ops(op):
    """The grad-of-grad ops are ordinary ops: differentiating them again matches differences."""
    x = _r(3, 2, 2)
    running = {"m": RUNNING[0], "v": RUNNING[1]}

    def fn(v):
        if op == "layer_norm":
            return F.layer_norm(v["x"], [2, 2])
        return F.batch_norm(v["x"], v["m"], v["v"], None, None, training=True)
    w1, w2 = _r(3, 2, 2), _r(3, 2, 2)

    def second_order(v):
        (g1,) = fg.gradients([fg.sum(fn(v) ** 2 * v["w1"])], [v["x"]])
        (g2,) = fg.gradients([fg.sum(g1 * v["w2"])], [v["x"]])
        return g2
    check_program_grad(second_order, {"x": x, "w1": w1, "w2": w2, **running}, wrt=["x"], rtol=1e-4, eps=1e-5)
