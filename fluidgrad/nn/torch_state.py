"""PyTorch state dicts in and out: torch's key names and weight layouts, converted layer by layer.

A PyTorch checkpoint names and lays out some weights differently from fluidgrad's (Paddle's)
layers, so loading one as is goes wrong, silently where the shapes happen to agree (a square
Linear loads transposed). The differences, and what this module does with them:

- Linear: torch's weight is [out, in], fluidgrad's [in, out]: transposed.
- BatchNorm: torch's running_mean / running_var are fluidgrad's _mean / _variance; torch's
  num_batches_tracked has no counterpart (fluidgrad's momentum is never None): dropped on the
  way in, written as 0 on the way out.
- MultiHeadAttention (and torch's nn.MultiheadAttention under fluidgrad): torch packs the query,
  key and value projections into in_proj_weight [3E, E] / in_proj_bias [3E] (or q_proj_weight,
  k_proj_weight, v_proj_weight when kdim / vdim differ); fluidgrad has three Linear layers.
- TransformerDecoderLayer: torch's cross-attention is `multihead_attn`, fluidgrad's `cross_attn`.
- Bilinear: torch's bias is [out], fluidgrad's [1, out].

Everything else (convolutions, embeddings, norms' weight and bias, recurrent layers, whose
gate orders agree) has the same names and layouts. `Layer.load_state_dict` / `set_state_dict`
convert by themselves when the dict is recognisably torch's: its values are torch Tensors, it
was read by `fluidgrad.load` from a safetensors file that PyTorch wrote (format "pt"), or it has
a key only torch's form of one of the layer's sublayers has (BatchNorm's running_mean, ...).
Otherwise a dict of NumPy arrays from torch cannot be told apart from fluidgrad's own: pass it
through `from_torch_state_dict` first.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator

import numpy as np

from ..eager.tensor import Tensor
from . import layer as layer_module
from .layer import Layer
from .layers.common import Bilinear, Linear
from .layers.norm import _BatchNormNd
from .layers.transformer import MultiHeadAttention, TransformerDecoderLayer

__all__ = ["from_torch_state_dict", "to_torch_state_dict", "load_torch_state_dict", "is_torch_state_dict"]

_BATCH_NORM_NAMES = (("running_mean", "_mean"), ("running_var", "_variance"))
_PROJECTIONS = ("q", "k", "v")


def is_torch_state_dict(state_dict: Any, layer: Layer | None = None) -> bool:
    """True for a dict whose values are torch Tensors, one `fluidgrad.load` read from a
    safetensors file PyTorch wrote (it carries `torch_layout = True`), or, given the `layer` it
    is for, one holding a key only torch's form of a sublayer has (a BatchNorm's running_mean,
    an attention's in_proj_weight, a decoder layer's multihead_attn)."""
    if getattr(state_dict, "torch_layout", False):
        return True
    if any(type(value).__module__.split(".")[0] == "torch" for value in state_dict.values()):
        return True
    return layer is not None and any(_torch_only_keys(prefix, sub, state_dict) for prefix, sub in _sublayers(layer))


def _torch_only_keys(prefix: str, sub: Layer, state_dict: dict[str, Any]) -> bool:
    if isinstance(sub, _BatchNormNd):
        return prefix + "running_mean" in state_dict or prefix + "running_var" in state_dict
    if isinstance(sub, MultiHeadAttention):
        return prefix + "in_proj_weight" in state_dict or prefix + "q_proj_weight" in state_dict
    if isinstance(sub, TransformerDecoderLayer):
        return any(key.startswith(prefix + "multihead_attn.") for key in state_dict)
    return False


def from_torch_state_dict(layer: Layer, state_dict: dict[str, Any]) -> "OrderedDict[str, np.ndarray]":
    """`state_dict` (PyTorch's keys and layouts, values torch Tensors or arrays) with the keys
    and layouts of `layer`, ready for `layer.load_state_dict`. Keys `layer` does not know are
    kept as they are, so load_state_dict's strict check still names them."""
    state = OrderedDict((key, _array(value)) for key, value in state_dict.items())
    for prefix, sub in _sublayers(layer):
        if isinstance(sub, TransformerDecoderLayer):
            _rename_prefix(state, f"{prefix}multihead_attn.", f"{prefix}cross_attn.")
    for prefix, sub in _sublayers(layer):
        if isinstance(sub, MultiHeadAttention):
            _unpack_projections(state, prefix, sub)
        elif isinstance(sub, _BatchNormNd):
            for torch_name, own_name in _BATCH_NORM_NAMES:
                _rename(state, prefix + torch_name, prefix + own_name)
            state.pop(prefix + "num_batches_tracked", None)
    for prefix, sub in _sublayers(layer):   # after the unpacking: q_proj / k_proj / v_proj are Linear
        _relayout(state, prefix, sub, to_torch=False)
    return state


def to_torch_state_dict(layer: Layer) -> "OrderedDict[str, np.ndarray]":
    """`layer`'s parameters and buffers under PyTorch's keys and layouts, as NumPy arrays:
    `torch_model.load_state_dict({k: torch.from_numpy(v) for k, v in ...items()})` takes it."""
    state = OrderedDict((key, np.array(value.numpy())) for key, value in layer.state_dict().items())
    for prefix, sub in _sublayers(layer):
        _relayout(state, prefix, sub, to_torch=True)
    for prefix, sub in _sublayers(layer):
        if isinstance(sub, MultiHeadAttention):
            _pack_projections(state, prefix, sub)
        elif isinstance(sub, _BatchNormNd):
            for torch_name, own_name in _BATCH_NORM_NAMES:
                _rename(state, prefix + own_name, prefix + torch_name)
            if prefix + "running_mean" in state:
                state[prefix + "num_batches_tracked"] = np.array(0, dtype=np.int64)
    for prefix, sub in _sublayers(layer):
        if isinstance(sub, TransformerDecoderLayer):
            _rename_prefix(state, f"{prefix}cross_attn.", f"{prefix}multihead_attn.")
    return state


def load_torch_state_dict(layer: Layer, state_dict: dict[str, Any], strict: bool = True) -> tuple[list, list]:
    """Load a PyTorch state dict (any values: torch Tensors, NumPy arrays) into `layer`,
    converting keys and layouts; `strict` as in `load_state_dict`."""
    return layer.load_state_dict(_Converted(from_torch_state_dict(layer, state_dict)), strict=strict)


class _Converted(OrderedDict):
    """A dict already in fluidgrad's layouts: `Layer` must not convert it again."""
    torch_layout = False


def _converted_for(layer: Layer, state_dict: dict[str, Any]) -> dict[str, Any]:
    """The hook `Layer` calls on every state dict it loads: torch's dicts are converted."""
    if isinstance(state_dict, _Converted) or not state_dict or not is_torch_state_dict(state_dict, layer):
        return state_dict
    return _Converted(from_torch_state_dict(layer, state_dict))


layer_module.state_dict_converters.append(_converted_for)


def _sublayers(layer: Layer) -> Iterator[tuple[str, Layer]]:
    """(dotted prefix ending in "." or "", sublayer) for the layer itself and every sublayer."""
    for name, sub in layer.named_sublayers(include_self=True):
        yield (f"{name}." if name else ""), sub


def _relayout(state: dict[str, np.ndarray], prefix: str, sub: Layer, to_torch: bool) -> None:
    """Linear's weight transposed (unless the layer holds it as torch does: a tied weight, see
    Linear.weight_in_out); Bilinear's bias [out] <-> [1, out]."""
    if isinstance(sub, Linear) and state.get(prefix + "weight") is not None and \
            tuple(sub.weight.shape) == (sub.in_features, sub.out_features):
        state[prefix + "weight"] = np.ascontiguousarray(state[prefix + "weight"].T)
    elif isinstance(sub, Bilinear) and state.get(prefix + "bias") is not None:
        bias = state[prefix + "bias"]
        state[prefix + "bias"] = bias.reshape(-1) if to_torch else bias.reshape(1, -1)


def _unpack_projections(state: dict[str, np.ndarray], prefix: str, attention: MultiHeadAttention) -> None:
    """torch's in_proj_weight / in_proj_bias (or q_proj_weight, ...) -> q_proj.weight, ... ([out, in])."""
    for extra in ("bias_k", "bias_v"):
        if prefix + extra in state:
            raise ValueError(f"from_torch_state_dict: {prefix}{extra} (torch's add_bias_kv=True) has no "
                             f"counterpart in fluidgrad's {type(attention).__name__}")
    packed = state.pop(prefix + "in_proj_weight", None)
    for index, p in enumerate(_PROJECTIONS):
        separate = state.pop(f"{prefix}{p}_proj_weight", None)
        if separate is not None:
            state[f"{prefix}{p}_proj.weight"] = separate
        elif packed is not None:
            state[f"{prefix}{p}_proj.weight"] = _third(packed, index, prefix + "in_proj_weight")
    packed_bias = state.pop(prefix + "in_proj_bias", None)
    if packed_bias is not None:
        for index, p in enumerate(_PROJECTIONS):
            state[f"{prefix}{p}_proj.bias"] = _third(packed_bias, index, prefix + "in_proj_bias")


def _pack_projections(state: dict[str, np.ndarray], prefix: str, attention: MultiHeadAttention) -> None:
    """q_proj.weight, ... ([out, in] by now) -> torch's in_proj_weight, or q_proj_weight, ...
    when the key or value size differs from the embedding size (torch's kdim / vdim)."""
    weights = [state.pop(f"{prefix}{p}_proj.weight") for p in _PROJECTIONS]
    if all(w.shape == weights[0].shape for w in weights):
        state[prefix + "in_proj_weight"] = np.concatenate(weights, axis=0)
    else:
        for p, weight in zip(_PROJECTIONS, weights):
            state[f"{prefix}{p}_proj_weight"] = weight
    biases = [state.pop(f"{prefix}{p}_proj.bias", None) for p in _PROJECTIONS]
    if all(b is not None for b in biases):
        state[prefix + "in_proj_bias"] = np.concatenate(biases, axis=0)


def _third(packed: np.ndarray, index: int, name: str) -> np.ndarray:
    if packed.shape[0] % 3:
        raise ValueError(f"from_torch_state_dict: {name} of shape {list(packed.shape)} does not split into "
                         f"query, key and value thirds on axis 0")
    size = packed.shape[0] // 3
    return packed[index * size:(index + 1) * size]


def _rename(state: dict[str, Any], old: str, new: str) -> None:
    if old in state:
        state[new] = state.pop(old)


def _rename_prefix(state: "OrderedDict[str, Any]", old: str, new: str) -> None:
    for key in [k for k in state if k.startswith(old)]:
        state[new + key[len(old):]] = state.pop(key)


def _array(value: Any) -> np.ndarray:
    """A NumPy array of a fluidgrad Tensor, a torch Tensor (without importing torch) or an array."""
    if isinstance(value, Tensor):
        return np.array(value.numpy())
    if type(value).__module__.split(".")[0] == "torch":
        value = value.detach().cpu()
        try:
            return value.numpy().copy()
        except TypeError:      # bfloat16 and other dtypes NumPy lacks: as float32
            return value.float().numpy()
    return np.asarray(value)

