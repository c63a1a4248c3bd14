"""Run one fluidgrad function in eager and in static mode and compare it with PyTorch.

`compare_with_torch(fg_fn, torch_fn, inputs, wrt)`: the inputs (NumPy arrays by name) go to
both functions as Tensors / Variables / torch tensors; the outputs, and the gradients of
sum(output * fixed random weights) with respect to the `wrt` inputs, must agree with PyTorch's
in both modes.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

import fluidgrad as fg
from fluidgrad.static import data


def _loss_weights(shape: Sequence[int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


def _torch_run(torch_fn: Callable, inputs: dict[str, np.ndarray], wrt: Sequence[str], seed: int):
    tensors = {k: torch.tensor(v, requires_grad=k in wrt) for k, v in inputs.items()}
    out = torch_fn(**tensors)
    weights = torch.tensor(_loss_weights(tuple(out.shape), seed), dtype=out.dtype)
    grads = torch.autograd.grad((out * weights).sum(), [tensors[k] for k in wrt]) if wrt else []
    return out.detach().numpy(), [g.numpy() for g in grads]


def _eager_run(fg_fn: Callable, inputs: dict[str, np.ndarray], wrt: Sequence[str], seed: int):
    tensors = {k: fg.to_tensor(v, stop_gradient=k not in wrt) for k, v in inputs.items()}
    out = fg_fn(**tensors)
    weights = fg.to_tensor(_loss_weights(tuple(out.shape), seed).astype(out.dtype))
    grads = fg.grad([fg.sum(out * weights)], [tensors[k] for k in wrt]) if wrt else []
    return out.numpy(), [g.numpy() for g in grads]


def _static_run(fg_fn: Callable, inputs: dict[str, np.ndarray], wrt: Sequence[str], seed: int):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        variables = {}
        for k, v in inputs.items():
            variables[k] = data(k, list(v.shape), str(v.dtype))
            variables[k].stop_gradient = k not in wrt
        out = fg_fn(**variables)
        weights = data("loss_weights", list(out.shape), out.dtype)
        grads = fg.gradients([fg.sum(out * weights)], [variables[k] for k in wrt]) if wrt else []
    feed = dict(inputs, loss_weights=_loss_weights(tuple(out.shape), seed).astype(out.dtype))
    values = fg.Executor().run(main, feed=feed, fetch_list=[out] + list(grads))
    return values[0], values[1:]


def _to_static_run(fg_fn: Callable, inputs: dict[str, np.ndarray], wrt: Sequence[str], seed: int):
    """Static mode for code that holds eager parameters (Layers): traced by jit.to_static."""
    names = list(inputs)
    traced = fg.jit.to_static(lambda *args: fg_fn(**dict(zip(names, args))))
    return _eager_run(lambda **tensors: traced(*(tensors[n] for n in names)), inputs, wrt, seed)


def compare_with_torch(fg_fn: Callable, torch_fn: Callable, inputs: dict[str, Any], wrt: Sequence[str] = (),
                       rtol: float = 1e-7, atol: float = 1e-9, seed: int = 0, static: str = "program") -> None:
    """Assert that fg_fn agrees with torch_fn, value and gradients, in eager and static mode.

    static="program" builds fg_fn on `data` Variables in a Program; "to_static" traces it with
    jit.to_static (for Layers, whose parameters are eager Tensors)."""
    inputs = {k: np.asarray(v) for k, v in inputs.items()}
    expected, expected_grads = _torch_run(torch_fn, inputs, wrt, seed)
    static_run = _static_run if static == "program" else _to_static_run
    for mode, run in (("eager", _eager_run), ("static", static_run)):
        value, grads = run(fg_fn, inputs, wrt, seed)
        assert value.dtype == expected.dtype, f"{mode}: dtype {value.dtype}, PyTorch {expected.dtype}"
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol, err_msg=f"{mode} value")
        for name, got, want in zip(wrt, grads, expected_grads):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{mode} gradient of {name}")
