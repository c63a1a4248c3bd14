"""einsum broadcasting an index of size 1 against the other operands' size, as PyTorch's einsum:
through fluidgrad.einsum's ellipsis of different widths, in a static program whose batch size is
known only at run time, and still refusing sizes that cannot broadcast. (The op cases in
tests/op_cases/linalg.py check values, gradients, grad of grad and eager = static.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.onnx import export_program
from fluidgrad.static import data


def _torch_value_and_grads(equation, *arrays):
    tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = torch.einsum(equation, *tensors)
    (out * torch.tensor(np.cos(np.arange(out.numel())).reshape(out.shape))).sum().backward()
    return out.detach().numpy(), [t.grad.numpy() for t in tensors]


@pytest.mark.parametrize("equation, shapes", [
    ("...ij,...jk->...ik", [(1, 3, 2, 4), (2, 1, 4, 5)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]),
    ("...ij,jk", [(3, 1, 2, 4), (4, 5)]),
    ("b...,b...->b", [(2, 1, 3), (2, 4, 1)]),
])
def test_ellipsis_dimensions_of_size_1_broadcast_in_eager_mode(equation, shapes):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    expected, expected_grads = _torch_value_and_grads(equation, *arrays)
    tensors = [fg.to_tensor(a, stop_gradient=False) for a in arrays]
    out = fg.einsum(equation, *tensors)
    fg.sum(out * fg.to_tensor(np.cos(np.arange(out.size)).reshape(out.shape))).backward()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    for tensor, grad in zip(tensors, expected_grads):
        np.testing.assert_allclose(tensor.grad.numpy(), grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_a, batch_b", [(None, 1), (1, None)])
def test_a_batch_known_only_at_run_time_against_a_batch_of_1(batch_a, batch_b):
    """[-1, 3, 4] against [1, 4, 5]: the output's batch is unknown at build time; at run time it
    is 2 and the size-1 operand's gradient is summed over it."""
    rng = np.random.default_rng(2)
    a0 = rng.standard_normal((2 if batch_a is None else 1, 3, 4))
    b0 = rng.standard_normal((2 if batch_b is None else 1, 4, 5))
    expected, (ga, gb) = _torch_value_and_grads("bij,bjk->bik", a0, b0)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        a, b = data("a", [batch_a, 3, 4], "float64"), data("b", [batch_b, 4, 5], "float64")
        a.stop_gradient = b.stop_gradient = False
        out = fg.einsum("bij,bjk->bik", a, b)
        assert list(out.shape) == [-1, 3, 5]
        weights = data("w", [None, 3, 5], "float64")
        grads = fg.gradients([fg.sum(out * weights)], [a, b])
    w = np.cos(np.arange(expected.size)).reshape(expected.shape)
    got, got_a, got_b = fg.Executor().run(main, feed={"a": a0, "b": b0, "w": w}, fetch_list=[out] + grads)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(got_a, ga, rtol=1e-12)
    np.testing.assert_allclose(got_b, gb, rtol=1e-12)


def test_sizes_that_cannot_broadcast_are_still_refused():
    with pytest.raises(ValueError, match=r"einsum.*index 'j' is 2 in one operand and 3 .*must match or be 1"):
        fg.einsum("ij,jk->ik", fg.to_tensor(np.ones((4, 2))), fg.to_tensor(np.ones((3, 5))))


@pytest.mark.parametrize("batch_a, batch_b", [(None, 1), (1, None), (1, 2)])
def test_onnx_export_expands_the_operand_of_size_1(batch_a, batch_b, tmp_path):
    """ONNX's Einsum broadcasts only '...' axes: the exporter Expands the size-1 operand, to a
    size read from the other operand's Shape when it is known only at run time."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    a0 = rng.standard_normal((2 if batch_a in (None, 2) else 1, 3, 4))
    b0 = rng.standard_normal((2 if batch_b in (None, 2) else 1, 4, 5))
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        a, b = data("a", [batch_a, 3, 4], "float64"), data("b", [batch_b, 4, 5], "float64")
        out = fg.einsum("bij,bjk->bik", a, b)
    path = str(tmp_path / "einsum.onnx")
    export_program(path, [a, b], [out], program=main)
    got, = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"a": a0, "b": b0})
    np.testing.assert_allclose(got, torch.einsum("bij,bjk->bik", torch.tensor(a0), torch.tensor(b0)).numpy(),
                               rtol=1e-12)
