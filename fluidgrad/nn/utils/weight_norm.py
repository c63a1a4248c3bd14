"""Weight normalisation (Salimans & Kingma, 2016) as torch.nn.utils.weight_norm and
paddle.nn.utils.weight_norm apply it: a layer's parameter `weight` is replaced by `weight_g` (its
norm over every axis but `dim`) and `weight_v` (its direction), and before each forward the layer's
`weight` is recomputed as v * g / ||v||, from ops, so gradients reach g and v.

`dim` is the axis kept (one norm per index of it; dim=0 for a Linear of torch's [out, in] layout is
dim=1 for fluidgrad's [in, out]); dim=None, or -1 as torch and Paddle read it, takes one norm of the
whole tensor."""
from __future__ import annotations

from typing import Any

from ... import functions as F
from ...eager import no_grad
from ..layer import Layer
from ..parameter import Parameter


def _kept_axis(weight: Any, dim: int | None, what: str) -> int | None:
    if dim is None or dim == -1:
        return None
    ndim = len(weight.shape)
    if not -ndim <= dim < ndim:
        raise ValueError(f"{what}: dim {dim} is out of range for a weight of shape {list(weight.shape)}")
    return dim % ndim


def norm_except_dim(v: Any, dim: int | None) -> Any:
    """||v||_2 over every axis but `dim` (keeping them as 1s), or over all of v when dim is None."""
    if dim is None:
        return F.sqrt(F.sum(F.square(v)))
    axes = [a for a in range(len(v.shape)) if a != dim]
    return F.sqrt(F.sum(F.square(v), axis=axes, keepdim=True)) if axes else F.abs(v)


class WeightNorm:
    """The forward pre-hook recomputing `layer.<name>` from `<name>_g` and `<name>_v`."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, layer: Layer) -> Any:
        g, v = getattr(layer, f"{self.name}_g"), getattr(layer, f"{self.name}_v")
        return F.multiply(v, F.divide(g, norm_except_dim(v, self.dim)))

    def __call__(self, layer: Layer, inputs: Any) -> None:
        setattr(layer, self.name, self.compute_weight(layer))


def weight_norm(layer: Layer, name: str = "weight", dim: int | None = 0) -> Layer:
    """Reparametrise layer.<name> as <name>_g * <name>_v / ||<name>_v|| (norm over every axis but
    `dim`); the layer's output is unchanged at first. Returns the layer."""
    hooks = layer.__dict__.setdefault("_weight_norm_hooks", {})
    if name in hooks:
        raise RuntimeError(f"weight_norm: {type(layer).__name__}.{name} already has weight_norm")
    weight = layer._parameters.get(name)
    if weight is None:
        raise ValueError(f"weight_norm: {type(layer).__name__} has no parameter {name!r}")
    axis = _kept_axis(weight, dim, "weight_norm")
    with no_grad():
        g = norm_except_dim(weight, axis)
    del layer._parameters[name]
    object.__delattr__(layer, name)
    layer.add_parameter(f"{name}_g", Parameter(g.numpy()))
    layer.add_parameter(f"{name}_v", Parameter(weight.numpy()))
    hook = WeightNorm(name, axis)
    setattr(layer, name, hook.compute_weight(layer))
    hooks[name] = (hook, layer.register_forward_pre_hook(hook))
    return layer


def remove_weight_norm(layer: Layer, name: str = "weight") -> Layer:
    """Undo weight_norm: <name> becomes one parameter again, holding g * v / ||v|| now."""
    hooks = layer.__dict__.get("_weight_norm_hooks", {})
    if name not in hooks:
        raise ValueError(f"remove_weight_norm: weight_norm of {name!r} not found in {type(layer).__name__}")
    hook, handle = hooks.pop(name)
    with no_grad():
        weight = hook.compute_weight(layer)
    handle.remove()
    for suffix in ("_g", "_v"):
        delattr(layer, f"{name}{suffix}")
    setattr(layer, name, Parameter(weight.numpy()))
    return layer
