"""Spectral normalisation (Miyato et al., 2018) as torch.nn.utils.spectral_norm and
paddle.nn.utils.spectral_norm apply it: a layer's `weight` becomes `weight_orig` / sigma, sigma its
largest singular value estimated by power iteration. The parameter is `weight_orig`; the buffers
`weight_u` and `weight_v` hold the iteration's vectors, advanced n_power_iterations steps (without
a gradient) at each forward while training and left as they are in eval, as torch does; sigma =
u^T W v is computed from ops, so the gradient reaches weight_orig through it.

The weight is read as a matrix [size of `dim`, everything else]; dim defaults to 0, and to 1 for
the transposed convolutions (whose weight is [in, out, ...])."""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import functions as F
from ...eager import to_tensor
from ..layer import Layer
from ..parameter import Parameter


def _normalized(vector: np.ndarray, eps: float) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), eps)


class SpectralNorm:
    """The forward pre-hook recomputing `layer.<name>` from `<name>_orig`, `<name>_u`, `<name>_v`."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight: Any) -> Any:
        """The weight as [size of dim, rest] (dim moved first)."""
        if self.dim != 0:
            order = [self.dim] + [a for a in range(len(weight.shape)) if a != self.dim]
            weight = F.transpose(weight, order)
        return F.reshape(weight, [int(weight.shape[0]), -1])

    def compute_weight(self, layer: Layer, do_power_iteration: bool) -> Any:
        weight = getattr(layer, f"{self.name}_orig")
        u, v = getattr(layer, f"{self.name}_u"), getattr(layer, f"{self.name}_v")
        if do_power_iteration and self.n_power_iterations > 0:
            matrix = np.moveaxis(weight.numpy(), self.dim, 0).reshape(int(weight.shape[self.dim]), -1)
            u_value, v_value = u.numpy(), v.numpy()
            for _ in range(self.n_power_iterations):
                v_value = _normalized(matrix.T @ u_value, self.eps)
                u_value = _normalized(matrix @ v_value, self.eps)
            # new buffers, not writes into the old: a graph built before may still read them (torch clones too)
            u, v = to_tensor(u_value.astype(u.dtype)), to_tensor(v_value.astype(v.dtype))
            setattr(layer, f"{self.name}_u", u)
            setattr(layer, f"{self.name}_v", v)
        sigma = F.sum(F.multiply(u, F.matmul(self.matrix(weight), v)))
        return F.divide(weight, sigma)

    def __call__(self, layer: Layer, inputs: Any) -> None:
        setattr(layer, self.name, self.compute_weight(layer, do_power_iteration=layer.training))


def spectral_norm(layer: Layer, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Layer:
    """Reparametrise layer.<name> as <name>_orig divided by its spectral norm (see the module
    docstring). Returns the layer."""
    hooks = layer.__dict__.setdefault("_spectral_norm_hooks", {})
    if name in hooks:
        raise RuntimeError(f"spectral_norm: {type(layer).__name__}.{name} already has spectral_norm")
    weight = layer._parameters.get(name)
    if weight is None:
        raise ValueError(f"spectral_norm: {type(layer).__name__} has no parameter {name!r}")
    if n_power_iterations < 0:
        raise ValueError(f"spectral_norm: n_power_iterations must be >= 0, got {n_power_iterations}")
    if dim is None:
        dim = 1 if "Transpose" in type(layer).__name__ else 0
    if not -len(weight.shape) <= dim < len(weight.shape):
        raise ValueError(f"spectral_norm: dim {dim} is out of range for a weight of shape {list(weight.shape)}")
    hook = SpectralNorm(name, int(n_power_iterations), dim % len(weight.shape), float(eps))
    rows, cols = [int(d) for d in hook.matrix(weight).shape]
    rng = np.random.default_rng()
    u = _normalized(rng.standard_normal(rows), hook.eps).astype(weight.dtype)
    v = _normalized(rng.standard_normal(cols), hook.eps).astype(weight.dtype)
    del layer._parameters[name]
    object.__delattr__(layer, name)
    layer.add_parameter(f"{name}_orig", Parameter(weight.numpy()))
    layer.register_buffer(f"{name}_u", to_tensor(u))
    layer.register_buffer(f"{name}_v", to_tensor(v))
    setattr(layer, name, hook.compute_weight(layer, do_power_iteration=False))
    hooks[name] = (hook, layer.register_forward_pre_hook(hook))
    return layer


def remove_spectral_norm(layer: Layer, name: str = "weight") -> Layer:
    """Undo spectral_norm: <name> becomes one parameter again, holding weight_orig / sigma now."""
    hooks = layer.__dict__.get("_spectral_norm_hooks", {})
    if name not in hooks:
        raise ValueError(f"remove_spectral_norm: spectral_norm of {name!r} not found in {type(layer).__name__}")
    hook, handle = hooks.pop(name)
    weight = hook.compute_weight(layer, do_power_iteration=False).numpy()
    handle.remove()
    for suffix in ("_orig", "_u", "_v"):
        delattr(layer, f"{name}{suffix}")
    setattr(layer, name, Parameter(weight))
    return layer
