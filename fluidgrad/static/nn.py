"""Fluid-style layer builders: each creates its parameters and appends its ops."""
from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Callable

from .. import functions as F
from ..dispatch import apply_op
from ..framework import ParamAttr, Variable, unique_name
from ..initializer import Constant, Normal, XavierUniform
from ..nn import functional as NF
from ..nn.functional.layout import run_channel_first
from .input import create_parameter

_ACTIVATIONS = {"relu", "sigmoid", "tanh", "softmax", "leaky_relu", None}


def _activate(x: Variable, activation: str | None) -> Variable:
    if activation not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(a for a in _ACTIVATIONS if a)}")
    return x if activation is None else apply_op(activation, {"X": x})


def _old_keywords(**renamed: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One keyword convention across builders (`activation`, `weight_attr`, `bias_attr`): the
    Fluid names (`act`, `param_attr`, `input`) still work, with a DeprecationWarning."""
    def decorate(builder: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(builder)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{builder.__name__}: give {new}= or its old name {old}=, not both")
                    warnings.warn(f"{builder.__name__}: {old}= is deprecated, use {new}=", DeprecationWarning,
                                  stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return builder(*args, **kwargs)
        return wrapper
    return decorate


def _known_size(x: Variable, axis: int, builder: str) -> int:
    """The number of elements in x's dims from `axis` on, which a parameter's shape needs."""
    tail = x.shape[axis:]
    if tail and min(tail) < 0:
        raise ValueError(f"{builder}: input {x.name} of shape {list(x.shape)} needs known sizes after axis {axis}")
    return math.prod(tail)


def _param_name(attr: ParamAttr, prefix: str, suffix: str) -> str:
    return attr.name or f"{prefix}.{suffix}"


@_old_keywords(input="x", param_attr="weight_attr", act="activation")
def fc(x: Variable, size: int, num_flatten_dims: int = 1, weight_attr: Any = None, bias_attr: Any = None,
       activation: str | None = None, name: str | None = None) -> Variable:
    """out = activation(x @ W + b): W is [in, size], `in` the product of x's dims after
    `num_flatten_dims`. Fluid's `input=` / `param_attr=` / `act=` keywords work too (deprecated)."""
    if not isinstance(x, Variable):
        raise TypeError(f"fc: x must be a Variable, got {type(x).__name__}")
    shape = list(x.shape)
    if num_flatten_dims < 0:  # Paddle 2: -1 flattens all but the last axis
        num_flatten_dims += len(shape)
    if not 0 < num_flatten_dims < len(shape):
        raise ValueError(f"fc: num_flatten_dims={num_flatten_dims} must lie in [1, {len(shape) - 1}] "
                         f"for input {x.name} of shape {shape}")
    tail = shape[num_flatten_dims:]
    in_features = _known_size(x, num_flatten_dims, "fc")
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
              name: str | None = None, weight_attr: Any = None) -> Variable:
    """Rows of a [vocab, dim] table picked by integer ids: out shape is ids.shape + [dim].
    The table's attribute is `weight_attr` (as every builder) or `param_attr` (Fluid's name)."""
    if weight_attr is not None and param_attr is not None:
        raise TypeError("embedding: give weight_attr= or param_attr=, not both")
    param_attr = weight_attr if weight_attr is not None else param_attr
    if not isinstance(input, Variable) or not input.dtype.startswith("int"):
        raise TypeError(f"embedding: input must be an integer Variable, got "
                        f"{getattr(input, 'name', type(input).__name__)} ({getattr(input, 'dtype', '?')})")
    attr = ParamAttr.of(param_attr) or ParamAttr()
    prefix = name or unique_name("embedding")
    table = create_parameter(list(size), dtype, _param_name(attr, prefix, "w_0"), attr,
                             default_initializer=Normal(0.0, 1.0 / max(size[1], 1) ** 0.5))
    return NF.embedding(input, table, padding_idx=padding_idx)

from .control_flow import While, case, cond, switch_case, while_loop  # noqa: E402,F401  (differentiable control flow)
from .pylayer import static_pylayer  # noqa: E402,F401  (a function with a hand-written backward, as ops)


# ---------------------------------------------------------------- convolution, pooling, normalisation
def _two(value: Any, what: str) -> list[int]:
    values = [value, value] if isinstance(value, int) else list(value)
    if len(values) != 2:
        raise ValueError(f"{what} must be an int or two ints, got {value!r}")
    return [int(v) for v in values]


def _check_nchw(input: Any, builder: str) -> None:
    if not isinstance(input, Variable) or len(input.shape) != 4:
        raise ValueError(f"{builder}: input must be a 4-D NCHW Variable, got "
                         f"{getattr(input, 'name', type(input).__name__)} of shape {list(getattr(input, 'shape', []))}")


@_old_keywords(param_attr="weight_attr", act="activation")
def conv2d(input: Variable, num_filters: int, filter_size: Any, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int | None = None, weight_attr: Any = None, bias_attr: Any = None,
           activation: str | None = None, name: str | None = None, data_format: str = "NCHW") -> Variable:
    """act(conv2d(input, W) + b) with W [num_filters, C / groups, KH, KW] initialised
    Normal(0, sqrt(2 / (C/groups * KH * KW))) as Paddle, and b [num_filters] (bias_attr=False: none).
    data_format "NHWC": channels last, in the input and the output."""
    _check_nchw(input, "conv2d")
    groups = groups or 1
    channels = input.shape[3 if data_format == "NHWC" else 1]
    if channels < 0 or channels % groups:
        raise ValueError(f"conv2d: input {input.name} has {channels} channels, which must be known and "
                         f"divisible by groups={groups}")
    kh, kw = _two(filter_size, "conv2d: filter_size")
    prefix = name or unique_name("conv2d")
    w_attr = ParamAttr.of(weight_attr)
    if w_attr is None:
        raise ValueError("conv2d: weight_attr=False is not allowed; conv2d always has a filter")
    fan_in = channels // groups * kh * kw
    weight = create_parameter([num_filters, channels // groups, kh, kw], input.dtype,
                              _param_name(w_attr, prefix, "w_0"), w_attr,
                              default_initializer=Normal(0.0, (2.0 / fan_in) ** 0.5))
    b_attr = ParamAttr.of(bias_attr)
    bias = None if b_attr is None else create_parameter(
        [num_filters], input.dtype, _param_name(b_attr, prefix, "b_0"), b_attr, is_bias=True,
        default_initializer=Constant(0.0))
    out = NF.conv2d(input, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups,
                    data_format=data_format)
    return _activate(out, activation)


def pool2d(input: Variable, pool_size: Any = -1, pool_type: str = "max", pool_stride: Any = 1,
           pool_padding: Any = 0, global_pooling: bool = False, exclusive: bool = True,
           name: str | None = None, data_format: str = "NCHW") -> Variable:
    """Fluid's pool2d: max or avg over pool_size windows (global_pooling: over all of H, W); NCHW or NHWC."""
    _check_nchw(input, "pool2d")
    if pool_type not in ("max", "avg"):
        raise ValueError(f"pool2d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    if global_pooling:
        attrs = {"pooling_type": pool_type, "global_pooling": True}
    else:
        if pool_size == -1:
            raise ValueError("pool2d: give pool_size, or global_pooling=True")
        pads = [int(pool_padding)] * 2 if isinstance(pool_padding, int) else [int(p) for p in pool_padding]
        attrs = {"pooling_type": pool_type, "ksize": _two(pool_size, "pool2d: pool_size"),
                 "strides": _two(pool_stride, "pool2d: pool_stride"), "paddings": pads, "global_pooling": False,
                 "exclusive": bool(exclusive)}
    return run_channel_first(input, data_format, 2, "pool2d",
                             lambda x: apply_op("pool2d", {"X": x}, {**attrs, "data_format": "NCHW"}))


def max_pool2d(input: Variable, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Variable:
    """Max pooling; stride defaults to kernel_size."""
    return pool2d(input, kernel_size, "max", kernel_size if stride is None else stride, padding)


def avg_pool2d(input: Variable, kernel_size: Any, stride: Any = None, padding: Any = 0,
               exclusive: bool = True) -> Variable:
    """Average pooling; stride defaults to kernel_size; `exclusive` leaves padding out of the count."""
    return pool2d(input, kernel_size, "avg", kernel_size if stride is None else stride, padding,
                  exclusive=exclusive)


@_old_keywords(param_attr="weight_attr", act="activation")
def batch_norm(input: Variable, activation: str | None = None, is_test: bool = False, momentum: float = 0.9,
               epsilon: float = 1e-5, weight_attr: Any = None, bias_attr: Any = None, data_layout: str = "NCHW",
               name: str | None = None, moving_mean_name: str | None = None,
               moving_variance_name: str | None = None, use_global_stats: bool = False) -> Variable:
    """Batch normalisation over all axes but 1, with a learned scale (init 1) and shift (init 0)
    and running mean/variance: non-trainable parameters updated in place while training
    (running = momentum * running + (1 - momentum) * batch). `clone(for_test=True)` sets is_test.
    data_layout "NHWC" (channels last, any rank): the op runs on the input seen as [positions, C]."""
    channel_last = data_layout in ("NHWC", "NLC", "NDHWC")
    if data_layout not in ("NCHW", "NCL", "NC", "NCDHW") and not channel_last:
        raise ValueError(f"batch_norm: data_layout must be 'NCHW' or 'NHWC', got {data_layout!r}")
    axis = -1 if channel_last else 1
    if not isinstance(input, Variable) or len(input.shape) < 2 or input.shape[axis] < 0:
        raise ValueError(f"batch_norm: input must be a Variable with a known channel axis "
                         f"{'(the last)' if channel_last else '1'}, got "
                         f"{getattr(input, 'name', type(input).__name__)} {list(getattr(input, 'shape', []))}")
    channels, dtype = input.shape[axis], input.dtype
    rows = F.reshape(input, [-1, channels]) if channel_last else input
    prefix = name or unique_name("batch_norm")
    s_attr = ParamAttr.of(weight_attr) or ParamAttr()
    b_attr = ParamAttr.of(bias_attr) or ParamAttr()
    scale = create_parameter([channels], dtype, _param_name(s_attr, prefix, "w_0"), s_attr,
                             default_initializer=Constant(1.0))
    bias = create_parameter([channels], dtype, _param_name(b_attr, prefix, "b_0"), b_attr, is_bias=True,
                            default_initializer=Constant(0.0))
    mean = create_parameter([channels], dtype, moving_mean_name or f"{prefix}.w_1",
                            ParamAttr(trainable=False), default_initializer=Constant(0.0))
    variance = create_parameter([channels], dtype, moving_variance_name or f"{prefix}.w_2",
                                ParamAttr(trainable=False), default_initializer=Constant(1.0))
    block = input.block.program.current_block()
    outputs = {"Y": block.create_var(unique_name(f"{prefix}.tmp")), "MeanOut": mean, "VarianceOut": variance,
               "SavedMean": block.create_var(unique_name(f"{prefix}.saved_mean"), stop_gradient=True),
               "SavedVariance": block.create_var(unique_name(f"{prefix}.saved_inv_std"), stop_gradient=True)}
    block.append_op("batch_norm", {"X": rows, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance},
                    outputs, {"momentum": float(momentum), "epsilon": float(epsilon), "is_test": bool(is_test),
                              "use_global_stats": bool(use_global_stats), "data_layout": "NCHW"})
    y = apply_op("reshape_as", {"X": outputs["Y"], "Target": input}) if channel_last else outputs["Y"]
    return _activate(y, activation)


@_old_keywords(param_attr="weight_attr", act="activation")
def layer_norm(input: Variable, scale: bool = True, shift: bool = True, begin_norm_axis: int = 1,
               epsilon: float = 1e-5, weight_attr: Any = None, bias_attr: Any = None, activation: str | None = None,
               name: str | None = None) -> Variable:
    """Normalise over the axes from begin_norm_axis on, with a learned scale (init 1) and shift
    (init 0) of that many elements."""
    if not isinstance(input, Variable) or not 0 < begin_norm_axis < len(input.shape):
        raise ValueError(f"layer_norm: begin_norm_axis={begin_norm_axis} must lie in [1, rank-1] for "
                         f"{getattr(input, 'name', type(input).__name__)} {list(getattr(input, 'shape', []))}")
    width = _known_size(input, begin_norm_axis, "layer_norm")
    prefix = name or unique_name("layer_norm")
    inputs: dict[str, Any] = {"X": input}
    s_attr = ParamAttr.of(weight_attr) if scale else None
    if s_attr is not None:
        inputs["Scale"] = create_parameter([width], input.dtype, _param_name(s_attr, prefix, "w_0"), s_attr,
                                           default_initializer=Constant(1.0))
    b_attr = ParamAttr.of(bias_attr) if shift else None
    if b_attr is not None:
        inputs["Bias"] = create_parameter([width], input.dtype, _param_name(b_attr, prefix, "b_0"), b_attr,
                                          is_bias=True, default_initializer=Constant(0.0))
    y, _mean, _var = apply_op("layer_norm", inputs, {"begin_norm_axis": begin_norm_axis, "epsilon": float(epsilon)})
    return _activate(y, activation)


def dropout(x: Variable, dropout_prob: float, is_test: bool = False, seed: int | None = None,
            name: str | None = None, dropout_implementation: str = "upscale_in_train") -> Variable:
    """Zero elements with probability dropout_prob. The default upscale_in_train (PyTorch's and
    Paddle 2's) scales the kept ones by 1/(1-p) in training and is the identity in the
    evaluation program; a seed gives the same mask on every run."""
    return NF.dropout(x, p=dropout_prob, training=not is_test, mode=dropout_implementation, seed=seed or 0)


# ---------------------------------------------------------------- Paddle 2's other static builders
def _filter_from_output_size(input: Variable, output_size: Any, stride: list[int], padding: list[int],
                             dilation: list[int]) -> list[int]:
    """The filter size giving `output_size` (Paddle's conv2d_transpose without filter_size)."""
    sizes = _two(output_size, "conv2d_transpose: output_size")
    spatial = input.shape[2:]
    if min(spatial) < 0:
        raise ValueError(f"conv2d_transpose: output_size needs known spatial sizes, input {input.name} has "
                         f"shape {list(input.shape)}")
    return [(o - (i - 1) * s + 2 * p - 1) // d + 1 for o, i, s, p, d in zip(sizes, spatial, stride, padding, dilation)]


@_old_keywords(param_attr="weight_attr", act="activation")
def conv2d_transpose(input: Variable, num_filters: int, output_size: Any = None, filter_size: Any = None,
                     padding: Any = 0, stride: Any = 1, dilation: Any = 1, groups: int | None = None,
                     weight_attr: Any = None, bias_attr: Any = None, use_cudnn: bool = True,
                     activation: str | None = None, name: str | None = None, data_format: str = "NCHW") -> Variable:
    """act(conv2d_transpose(input, W) + b), W [C, num_filters / groups, KH, KW] initialised as
    conv2d's; filter_size, or output_size to derive it from (Paddle's static builder)."""
    _check_nchw(input, "conv2d_transpose")
    groups = groups or 1
    channels = input.shape[3 if data_format == "NHWC" else 1]
    if channels < 0 or channels % groups or num_filters % groups:
        raise ValueError(f"conv2d_transpose: input {input.name} has {channels} channels and num_filters is "
                         f"{num_filters}; both must be known and divisible by groups={groups}")
    stride, dilation = _two(stride, "conv2d_transpose: stride"), _two(dilation, "conv2d_transpose: dilation")
    if filter_size is None:
        if output_size is None:
            raise ValueError("conv2d_transpose: give filter_size or output_size")
        nchw = input if data_format != "NHWC" else F.transpose(input, [0, 3, 1, 2])
        filter_size = _filter_from_output_size(nchw, output_size, stride, _two(padding, "conv2d_transpose: padding"),
                                               dilation)
    kh, kw = _two(filter_size, "conv2d_transpose: filter_size")
    prefix = name or unique_name("conv2d_transpose")
    w_attr = ParamAttr.of(weight_attr)
    if w_attr is None:
        raise ValueError("conv2d_transpose: weight_attr=False is not allowed; it always has a filter")
    weight = create_parameter([channels, num_filters // groups, kh, kw], input.dtype,
                              _param_name(w_attr, prefix, "w_0"), w_attr,
                              default_initializer=Normal(0.0, (2.0 / (channels // groups * kh * kw)) ** 0.5))
    b_attr = ParamAttr.of(bias_attr)
    bias = None if b_attr is None else create_parameter(
        [num_filters], input.dtype, _param_name(b_attr, prefix, "b_0"), b_attr, is_bias=True,
        default_initializer=Constant(0.0))
    out = NF.conv2d_transpose(input, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups,
                              output_size=output_size, data_format=data_format)
    return _activate(out, activation)


def _channel_parameters(input: Variable, builder: str, prefix: str, weight_attr: Any, bias_attr: Any,
                        channel_axis: int = 1) -> tuple[Any, Any]:
    """A scale (init 1) and a shift (init 0) per channel; False for either attr leaves it out."""
    if not isinstance(input, Variable) or len(input.shape) < 2 or input.shape[channel_axis] < 0:
        raise ValueError(f"{builder}: input must be a Variable with a known channel axis, got "
                         f"{getattr(input, 'name', type(input).__name__)} {list(getattr(input, 'shape', []))}")
    channels = input.shape[channel_axis]
    s_attr, b_attr = ParamAttr.of(weight_attr), ParamAttr.of(bias_attr)
    scale = None if s_attr is None else create_parameter(
        [channels], input.dtype, _param_name(s_attr, prefix, "w_0"), s_attr, default_initializer=Constant(1.0))
    shift = None if b_attr is None else create_parameter(
        [channels], input.dtype, _param_name(b_attr, prefix, "b_0"), b_attr, is_bias=True,
        default_initializer=Constant(0.0))
    return scale, shift


@_old_keywords(param_attr="weight_attr", act="activation")
def group_norm(input: Variable, groups: int, epsilon: float = 1e-5, weight_attr: Any = None, bias_attr: Any = None,
               activation: str | None = None, data_layout: str = "NCHW", name: str | None = None) -> Variable:
    """Normalise each group of channels of each sample, then a learned per-channel scale and shift."""
    prefix = name or unique_name("group_norm")
    scale, shift = _channel_parameters(input, "group_norm", prefix, weight_attr, bias_attr,
                                       -1 if data_layout == "NHWC" else 1)
    out = NF.group_norm(input, groups, epsilon, scale, shift, data_format=data_layout)
    return _activate(out, activation)


@_old_keywords(param_attr="weight_attr")
def instance_norm(input: Variable, epsilon: float = 1e-5, weight_attr: Any = None, bias_attr: Any = None,
                  name: str | None = None) -> Variable:
    """Normalise each channel of each sample over its positions, then a learned scale and shift."""
    prefix = name or unique_name("instance_norm")
    scale, shift = _channel_parameters(input, "instance_norm", prefix, weight_attr, bias_attr)
    return NF.instance_norm(input, weight=scale, bias=shift, eps=epsilon)


@_old_keywords(param_attr="weight_attr")
def prelu(x: Variable, mode: str, weight_attr: Any = None, data_format: str = "NCHW",
          name: str | None = None) -> Variable:
    """max(0, x) + alpha * min(0, x), alpha (init 0.25) learned: one ('all'), one per channel
    ('channel') or one per element of a sample ('element')."""
    if mode not in ("all", "channel", "element"):
        raise ValueError(f"prelu: mode must be 'all', 'channel' or 'element', got {mode!r}")
    channel_axis = -1 if data_format in ("NHWC", "NLC", "NDHWC") else 1
    if not isinstance(x, Variable) or (mode != "all" and (len(x.shape) < 2 or min(x.shape[1:]) < 0)):
        raise ValueError(f"prelu: mode {mode!r} needs a Variable with known sizes after the batch axis, got "
                         f"{getattr(x, 'name', type(x).__name__)} {list(getattr(x, 'shape', []))}")
    shape = {"all": [1], "channel": [x.shape[channel_axis]] if mode == "channel" else [],
             "element": list(x.shape[1:])}[mode]
    attr = ParamAttr.of(weight_attr) or ParamAttr()
    alpha = create_parameter(shape, x.dtype, _param_name(attr, name or unique_name("prelu"), "w_0"), attr,
                             default_initializer=Constant(0.25))
    if mode != "element":
        return NF.prelu(x, alpha, data_format=data_format)
    negative = apply_op("relu", {"X": apply_op("scale", {"X": x}, {"scale": -1.0})})
    return apply_op("elementwise_sub", {"X": apply_op("relu", {"X": x}),
                                        "Y": apply_op("elementwise_mul", {"X": negative, "Y": alpha})})
