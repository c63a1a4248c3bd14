"""Paddle 2's static builders beyond fc / conv2d / batch_norm / layer_norm (conv2d_transpose,
group_norm, instance_norm, prelu, fc's num_flatten_dims=-1) against PyTorch with the
parameters they create, and static.nn.case / switch_case: the branch taken, its gradient,
and eager mode picking directly."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg

X = np.random.default_rng(0).standard_normal((2, 4, 5, 5))


def _build_and_run(builder, x=X):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        data = fg.static.data("x", [None] + list(x.shape[1:]), "float64")
        out = builder(data)
    scope = fg.Scope()
    exe = fg.Executor()
    exe.run(startup, scope=scope)
    value, = exe.run(main, feed={"x": x}, fetch_list=[out], scope=scope)
    params = {p.name: scope[p.name] for p in main.global_block().all_parameters()}
    return value, params


def _param(params, suffix):
    return torch.tensor(next(v for k, v in params.items() if k.endswith(suffix)))


@pytest.mark.parametrize("kwargs", [dict(filter_size=3, stride=2), dict(filter_size=[2, 3], padding=1, groups=2),
                                    dict(output_size=[11, 11], stride=2)])
def test_conv2d_transpose_matches_torch(kwargs):
    got, params = _build_and_run(lambda x: fg.static.nn.conv2d_transpose(x, 6, **kwargs))
    weight, bias = _param(params, "w_0"), _param(params, "b_0")
    stride, padding, groups = kwargs.get("stride", 1), kwargs.get("padding", 0), kwargs.get("groups", 1)
    want = torch.nn.functional.conv_transpose2d(torch.tensor(X), weight, bias, stride=stride, padding=padding,
                                                groups=groups)
    assert weight.shape[:2] == (4, 6 // groups)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["group_norm", "instance_norm"])
def test_group_and_instance_norm_match_torch(name):
    if name == "group_norm":
        got, params = _build_and_run(lambda x: fg.static.nn.group_norm(x, groups=2, epsilon=1e-4))
        want = torch.nn.functional.group_norm(torch.tensor(X), 2, _param(params, "w_0"), _param(params, "b_0"), 1e-4)
    else:
        got, params = _build_and_run(lambda x: fg.static.nn.instance_norm(x, epsilon=1e-4))
        want = torch.nn.functional.instance_norm(torch.tensor(X), weight=_param(params, "w_0"),
                                                 bias=_param(params, "b_0"), eps=1e-4)
    assert len(params) == 2
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("mode, alpha_shape", [("all", (1,)), ("channel", (4,)), ("element", (4, 5, 5))])
def test_prelu_modes_match_torch(mode, alpha_shape):
    got, params = _build_and_run(lambda x: fg.static.nn.prelu(x, mode=mode))
    alpha = _param(params, "w_0")
    assert tuple(alpha.shape) == alpha_shape and bool((alpha == 0.25).all())
    x = torch.tensor(X)
    want = torch.nn.functional.prelu(x, alpha) if mode != "element" else torch.where(x > 0, x, alpha * x)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_fc_with_num_flatten_dims_minus_one_maps_the_last_axis():
    got, params = _build_and_run(lambda x: fg.static.nn.fc(x, 3, num_flatten_dims=-1))
    want = torch.tensor(X) @ _param(params, "w_0") + _param(params, "b_0")
    assert got.shape == (2, 4, 5, 3)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("index, factor", [(0, 2.0), (3, 3.0), (5, 3.0), (-1, 3.0)])
def test_switch_case_with_a_list_of_pairs_defaults_to_the_largest_index(index, factor):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [3], "float64")
        x.stop_gradient = False
        i = fg.static.data("i", [], "int32")
        out = fg.static.nn.switch_case(i, [(3, lambda: x * 3), (0, lambda: x * 2)])
        grad, = fg.gradients([fg.sum(out)], [x])
    x0 = np.array([1.0, -2.0, 0.5])
    value, grad_value = fg.Executor().run(main, feed={"x": x0, "i": np.array(index, "int32")},
                                          fetch_list=[out, grad])
    np.testing.assert_allclose(value, factor * x0)
    np.testing.assert_allclose(grad_value, np.full(3, factor))
    by_position = [lambda: fg.to_tensor(x0) * 2, lambda: fg.to_tensor(x0) * 3, lambda: fg.to_tensor(x0) * 4]
    eager = fg.static.nn.switch_case(fg.to_tensor(np.array(index)), by_position)  # a Tensor: picked at once
    np.testing.assert_allclose(eager.numpy(), x0 * {0: 2, 1: 3, 2: 4}.get(index, 4))


def test_case_runs_the_first_true_predicate_and_else_the_last_function():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [], "float64")
        out = fg.static.nn.case([(x > 1, lambda: x * 10), (x > 0, lambda: x * 100), (x > 5, lambda: x * 0)])
    for value, want in [(2.0, 20.0), (0.5, 50.0), (-1.0, 0.0)]:
        got, = fg.Executor().run(main, feed={"x": np.array(value)}, fetch_list=[out])
        np.testing.assert_allclose(got, want)


def test_case_and_switch_case_refuse_malformed_branches():
    with fg.program_guard(fg.Program(), fg.Program()):
        i = fg.static.data("i", [], "int64")
        with pytest.raises(TypeError, match="switch_case: each branch must be an int index"):
            fg.static.nn.switch_case(i, {"a": lambda: i})
        with pytest.raises(ValueError, match="repeated branch indices"):
            fg.static.nn.switch_case(i, [(1, lambda: i), (1, lambda: i)])
        with pytest.raises(TypeError, match=r"case: pred_fn_pairs\[0\] must be a \(predicate, function\) pair"):
            fg.static.nn.case([i > 0])
