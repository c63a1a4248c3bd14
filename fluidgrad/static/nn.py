"""Fluid-style layer builders: each creates its parameters and appends its ops."""
from __future__ import annotations

from typing import Any

from .. import functions as F
from ..dispatch import apply_op
from ..framework import ParamAttr, Variable, unique_name
from ..initializer import Constant, Normal, XavierUniform
from .input import create_parameter

_ACTIVATIONS = {"relu", "sigmoid", "tanh", "softmax", "leaky_relu", None}


def _activate(x: Variable, activation: str | None) -> Variable:
    if activation not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(a for a in _ACTIVATIONS if a)}")
    return x if activation is None else apply_op(activation, {"X": x})


def _param_name(attr: ParamAttr, prefix: str, suffix: str) -> str:
    return attr.name or f"{prefix}.{suffix}"


def fc(x: Variable, size: int, num_flatten_dims: int = 1, weight_attr: Any = None, bias_attr: Any = None,
       activation: str | None = None, name: str | None = None) -> Variable:
    """out = activation(x @ W + b): W is [in, size], `in` the product of x's dims after
    `num_flatten_dims`. Paddle's `input=` / `param_attr=` / `act=` keywords work too."""
    if not isinstance(x, Variable):
        raise TypeError(f"fc: x must be a Variable, got {type(x).__name__}")
    shape = list(x.shape)
    if not 0 < num_flatten_dims < len(shape):
        raise ValueError(f"fc: num_flatten_dims={num_flatten_dims} must lie in [1, {len(shape) - 1}] "
                         f"for input {x.name} of shape {shape}")
    tail = shape[num_flatten_dims:]
    if any(d < 0 for d in tail):
        raise ValueError(f"fc: input {x.name} of shape {shape} needs known sizes after axis {num_flatten_dims}")
    in_features = 1
    for d in tail:
        in_features *= d
    prefix = name or unique_name("fc")
    w_attr = ParamAttr.of(weight_attr)
    if w_attr is None:
        raise ValueError("fc: weight_attr=False is not allowed; fc always has a weight")
    weight = create_parameter([in_features, size], x.dtype, _param_name(w_attr, prefix, "w_0"), w_attr,
                              default_initializer=XavierUniform())
    if len(tail) > 1:
        x = F.reshape(x, [0] * num_flatten_dims + [in_features])
    out = F.matmul(x, weight)
    b_attr = ParamAttr.of(bias_attr)
    if b_attr is not None:
        bias = create_parameter([size], x.dtype, _param_name(b_attr, prefix, "b_0"), b_attr, is_bias=True,
                                default_initializer=Constant(0.0))
        out = apply_op("elementwise_add", {"X": out, "Y": bias})
    return _activate(out, activation)


def embedding(input: Variable, size: tuple[int, int] | list[int], is_sparse: bool = False,
              padding_idx: int | None = None, param_attr: Any = None, dtype: Any = "float32",
              name: str | None = None) -> Variable:
    """Rows of a [vocab, dim] table picked by integer ids: out shape is ids.shape + [dim]."""
    if not isinstance(input, Variable) or not input.dtype.startswith("int"):
        raise TypeError(f"embedding: input must be an integer Variable, got "
                        f"{getattr(input, 'name', type(input).__name__)} ({getattr(input, 'dtype', '?')})")
    attr = ParamAttr.of(param_attr) or ParamAttr()
    prefix = name or unique_name("embedding")
    table = create_parameter(list(size), dtype, _param_name(attr, prefix, "w_0"), attr,
                             default_initializer=Normal(0.0, 1.0 / max(size[1], 1) ** 0.5))
    return F.gather(table, input, axis=0)

from .control_flow import While, cond, while_loop  # noqa: E402,F401  (differentiable control flow)
