"""Layer hooks and containers, nn.initializer, nn.utils and metric.accuracy beyond the review's
cases: against PyTorch and NumPy."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


def test_layer_list_edits_keep_parameters_in_order():
    layers = fg.nn.LayerList([fg.nn.Linear(2, 3), fg.nn.Linear(3, 4)])
    layers.insert(1, fg.nn.Linear(3, 3))
    layers[0] = fg.nn.Linear(2, 3)
    del layers[-1]
    assert [tuple(p.shape) for p in layers.parameters()] == [(2, 3), (3,), (3, 3), (3,)]
    assert list(layers.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_layer_dict_behaves_as_a_dict_of_sublayers():
    named = fg.nn.LayerDict([("a", fg.nn.Linear(2, 3)), ("b", fg.nn.ReLU())])
    named["c"] = fg.nn.Linear(3, 1)
    assert list(named) == ["a", "b", "c"] and "b" in named and len(named.parameters()) == 4
    named.pop("a")
    assert named.keys() == ["b", "c"] and len(named.parameters()) == 2


def test_forward_hooks_run_in_order_and_a_none_result_keeps_the_value():
    calls = []
    layer = fg.nn.Linear(2, 2)
    layer.register_forward_pre_hook(lambda lyr, inputs: calls.append("pre"))
    layer.register_forward_hook(lambda lyr, inputs, out: calls.append("post"))
    x = fg.to_tensor(np.ones((1, 2), "float32"))
    np.testing.assert_allclose(layer(x).numpy(), (fg.matmul(x, layer.weight) + layer.bias).numpy())
    assert calls == ["pre", "post"]


def test_orthogonal_initializer_gives_orthonormal_rows_or_columns():
    for shape in [(3, 5), (6, 2), (4, 2, 2)]:
        weight = fg.nn.Layer().create_parameter(list(shape), attr=fg.ParamAttr(
            initializer=fg.nn.initializer.Orthogonal(gain=2.0))).numpy().reshape(shape[0], -1)
        gram = weight @ weight.T if shape[0] <= weight.shape[1] else weight.T @ weight
        np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=1e-5)


def test_assign_initializer_refuses_a_value_of_another_shape():
    with pytest.raises(ValueError, match="Assign"):
        fg.nn.Linear(3, 2, weight_attr=fg.ParamAttr(initializer=fg.nn.initializer.Assign(np.zeros((2, 3)))))


def test_clip_grad_value_and_vector_round_trip_match_torch():
    layer = fg.nn.Linear(3, 2)
    fg.sum(layer(fg.to_tensor(np.full((4, 3), 5.0, "float32")))).backward()
    expected = np.clip(layer.weight.grad.numpy().copy(), -0.5, 0.5)
    fg.nn.utils.clip_grad_value_(layer.parameters(), 0.5)
    np.testing.assert_array_equal(layer.weight.grad.numpy(), expected)
    vector = fg.nn.utils.parameters_to_vector(layer.parameters())
    fg.nn.utils.vector_to_parameters(vector * 2, layer.parameters())
    np.testing.assert_allclose(fg.nn.utils.parameters_to_vector(layer.parameters()).numpy(), 2 * vector.numpy())


def test_infinity_norm_clipping_matches_torch():
    grads = [np.array([3.0, -4.0]), np.array([[1.0, 12.0]])]
    ours = [fg.to_tensor(np.zeros_like(g), stop_gradient=False) for g in grads]
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, t, g in zip(ours, theirs, grads):
        p.grad, t.grad = fg.to_tensor(g), torch.tensor(g)
    norm = fg.nn.utils.clip_grad_norm_(ours, 2.0, norm_type=float("inf"))
    expected = torch.nn.utils.clip_grad_norm_(theirs, 2.0, norm_type=float("inf"))
    assert float(norm) == pytest.approx(float(expected))
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-6)

