"""`fluidgrad.summary(model, input_size)`: Paddle 2's `paddle.summary`, the table a user prints
first: every layer that ran (in call order) with its input and output shapes and parameter
count, then the model's total and trainable parameters and rough sizes in MB.

The model runs once on zeros of `input_size` (or on `input`) in eval mode without recording a
graph, so a summary neither moves BatchNorm's running statistics nor draws dropout masks; each
layer's training flag is restored afterwards. Containers (Sequential, LayerList, LayerDict) get no
row of their own: their layers do."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..eager import no_grad
from ..eager.tensor import Tensor
from ..framework import normalize_dtype
from ..framework.dtypes import get_default_dtype
from .layer import Layer
from .layers.container import LayerDict, LayerList, Sequential

__all__ = ['summary']

_CONTAINERS = (Sequential, LayerList, LayerDict)


def _is_shape(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(d is None or isinstance(d, (int, np.integer)) for d in value)


def _example_inputs(input_size: Any, dtypes: Any, input: Any) -> list[Tensor]:
    """The tensors the model runs on: `input` as given, else zeros of each shape in `input_size`
    (a None or -1 axis, such as a batch axis left open, becomes 1)."""
    if input is not None:
        return list(input) if isinstance(input, (list, tuple)) else [input]
    if input_size is None:
        raise ValueError("summary: give input_size (a shape or a list of shapes) or input (Tensors)")
    shapes = [input_size] if _is_shape(input_size) else list(input_size)
    if not shapes or not all(_is_shape(s) for s in shapes):
        raise ValueError(f"summary: input_size must be a shape such as (1, 4) or a list of shapes, "
                         f"got {input_size!r}")
    dtypes = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes] * len(shapes)
    if len(dtypes) != len(shapes):
        raise ValueError(f"summary: {len(dtypes)} dtypes for {len(shapes)} inputs")
    return [Tensor(np.zeros([1 if d is None or d < 0 else int(d) for d in shape],
                            normalize_dtype(dtype or get_default_dtype()))) for shape, dtype in zip(shapes, dtypes)]


def _shapes(value: Any) -> Any:
    """The shape of a Tensor, or the nested shapes of a tuple / list of them."""
    if hasattr(value, "shape") and not isinstance(value, (list, tuple)):
        return list(value.shape)
    if isinstance(value, (list, tuple)):
        return [_shapes(v) for v in value]
    return None


def _elements(value: Any) -> int:
    if hasattr(value, "shape") and not isinstance(value, (list, tuple)):
        return math.prod(value.shape) * np.dtype(value.dtype).itemsize
    return sum(_elements(v) for v in value) if isinstance(value, (list, tuple)) else 0


def _count(params: Sequence[Tensor]) -> int:
    return sum(math.prod(p.shape) for p in params)


def _table(rows: list[tuple[str, str, str, int]], total: int, trainable: int, sizes: tuple[float, ...]) -> str:
    widths = [max([len(h)] + [len(str(r[i])) for r in rows]) + 4
              for i, h in enumerate(("Layer (type)", "Input Shape", "Output Shape", "Param #"))]
    line = "-" * sum(widths)
    header = "".join(h.center(w) for h, w in zip(("Layer (type)", "Input Shape", "Output Shape", "Param #"), widths))
    body = ["".join(str(v).center(w) for v, w in zip((name, ins, outs, f"{count:,}"), widths))
            for name, ins, outs, count in rows]
    input_mb, pass_mb, params_mb = sizes
    return "\n".join([line, header, "=" * len(line), *body, "=" * len(line),
                      f"Total params: {total:,}", f"Trainable params: {trainable:,}",
                      f"Non-trainable params: {total - trainable:,}", line,
                      f"Input size (MB): {input_mb:.2f}", f"Forward/backward pass size (MB): {pass_mb:.2f}",
                      f"Params size (MB): {params_mb:.2f}",
                      f"Estimated Total Size (MB): {input_mb + pass_mb + params_mb:.2f}", line])


def summary(net: Layer, input_size: Any = None, dtypes: Any = None, input: Any = None) -> dict[str, int]:
    """Print the layer table of `net` run once on `input_size` (a shape, or a list of shapes, one
    per input; or the Tensors `input`) and return {"total_params", "trainable_params"}
    (trainable: stop_gradient False)."""
    if not isinstance(net, Layer):
        raise TypeError(f"summary: net must be a fluidgrad.nn.Layer, got {type(net).__name__}")
    inputs = _example_inputs(input_size, dtypes, input)
    layers = [layer for layer in net.sublayers() if not isinstance(layer, _CONTAINERS)] or [net]
    rows: list[tuple[str, str, str, int]] = []
    numbers: dict[str, int] = {}
    activation_bytes = [0]

    def record(layer: Layer, layer_inputs: tuple, output: Any) -> None:
        kind = type(layer).__name__
        numbers[kind] = numbers.get(kind, 0) + 1
        rows.append((f"{kind}-{numbers[kind]}", str(_shapes(list(layer_inputs))), str(_shapes(output)),
                     _count(layer.parameters())))
        activation_bytes[0] += _elements(output)

    modes = [(layer, layer.training) for layer in net.sublayers(include_self=True)]
    hooks = [layer.register_forward_post_hook(record) for layer in layers]
    try:
        net.eval()
        with no_grad():
            net(*inputs)
    finally:
        for hook in hooks:
            hook.remove()
        for layer, training in modes:
            object.__setattr__(layer, "training", training)
    params = net.parameters()
    total, trainable = _count(params), _count([p for p in params if not p.stop_gradient])
    megabytes = 1024.0 ** 2
    sizes = (sum(_elements(x) for x in inputs) / megabytes, 2 * activation_bytes[0] / megabytes,
             sum(p._array.nbytes for p in params) / megabytes)
    print(_table(rows, total, trainable, sizes))
    return {"total_params": total, "trainable_params": trainable}
