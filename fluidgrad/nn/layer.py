"""Layer: the base class of eager models, owning parameters, buffers and sublayers.

Attributes register themselves: assigning a parameter (a Tensor made by `create_parameter`,
or any leaf Tensor with stop_gradient=False) or a Layer to `self.x` records it under the
name `x`, in order (other Tensors, such as a cached activation, are plain attributes; state
Tensors are declared with `register_buffer`), so `parameters()` and
`state_dict()` list them deterministically (own entries first, then each sublayer's,
dotted: `fc1.weight`). As in PyTorch and Paddle, a buffer stays a buffer when a new Tensor
(or None) is assigned to its name, e.g. `self.average = self.average * 0.9 + x * 0.1`, and a
buffer registered with `persistable=False` is listed by `buffers()` but left out of
`state_dict()`. `train()` / `eval()` set the `training` flag that Dropout and
BatchNorm read.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..eager.tensor import Tensor
from ..dispatch import sync_from_scope, write_to_scope
from ..framework.device import as_device, is_cpu
from ..framework import ParamAttr, Variable, normalize_dtype, optimize_options, unique_name
from ..framework.dtypes import get_default_dtype, is_float
from ..framework.variable import names_a_dtype
from ..initializer import Constant, Initializer, XavierUniform
from ..ops.registry import get_op_def
from .backward_hooks import call_with_backward_hooks
from .parameter import mark_parameter


# Called with each Layer about to run (see Layer.__call__); jit.to_static registers one while tracing.
call_observers: list[Callable[["Layer"], None]] = []

# Called as convert(layer, state_dict) on every state dict a Layer loads; one that recognises
# another framework's dict returns it in the layer's keys and layouts (nn/torch_state.py
# registers PyTorch's, from above this module).
state_dict_converters: list[Callable[["Layer", dict], dict]] = []

# what load_state_dict / set_state_dict return: unpacks as Paddle's (missing, unexpected) pair and
# reads as torch's result.missing_keys / result.unexpected_keys
IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])

_TORCH_ONLY_KEYS = ("running_mean", "running_var", "num_batches_tracked", "in_proj_weight", "in_proj_bias")


def _torch_hint(suspect: bool) -> str:
    """A pointer to the converter, for an error whose cause looks like a PyTorch state dict
    (torch-only key names, a weight given transposed)."""
    if suspect:
        return ("; a PyTorch state dict? fluidgrad.nn.load_torch_state_dict(layer, state_dict) converts "
                "torch's names and layouts (Linear's weight is [in, out] here)")
    return ""


class _Spec:
    """What an initializer reads from the variable it fills."""

    def __init__(self, shape: Sequence[int], dtype: str) -> None:
        self.shape, self.dtype = tuple(shape), dtype


def initial_value(initializer: Initializer, shape: Sequence[int], dtype: str) -> np.ndarray:
    """Run an initializer's op kernel at once (the static initializers append that same op)."""
    op_def = get_op_def(initializer.op_type)
    attrs = {**op_def.attrs, "shape": [int(d) for d in shape], "dtype": dtype,
             **initializer.attrs(_Spec(shape, dtype))}
    return np.asarray(op_def.kernel(**attrs), dtype=dtype)


def learning_rate_factor(param: Any) -> float:
    """The factor ParamAttr(learning_rate=...) gave a parameter (1.0 when none)."""
    return optimize_options(param)[0]


def create_parameter(shape: Sequence[int], dtype: Any = None, attr: Any = None, is_bias: bool = False,
                     default_initializer: Initializer | None = None, name: str | None = None) -> Tensor:
    """A parameter Tensor (persistable; stop_gradient=False unless the attr says not trainable)."""
    param_attr = ParamAttr.of(attr)
    if param_attr is None:
        raise ValueError("create_parameter: attr=False means no parameter; do not call it then")
    dtype = normalize_dtype(dtype or get_default_dtype())
    initializer = param_attr.initializer or default_initializer or (Constant(0.0) if is_bias else XavierUniform())
    tensor = Tensor(initial_value(initializer, shape, dtype), stop_gradient=not param_attr.trainable,
                    name=param_attr.name or name)
    tensor.persistable = True
    options = param_attr.optimize_options()    # kept beside the value: copies of the Tensor keep it too
    if options is not None:
        tensor._param_attr = options
    return mark_parameter(tensor)


class HookRemoveHelper:
    """What register_forward_pre_hook / register_forward_post_hook return: `.remove()` takes the hook away."""

    _next_id = 0

    def __init__(self, hooks: dict[int, Callable[..., Any]], key: int) -> None:
        self._hooks, self._key = hooks, key

    @classmethod
    def add(cls, layer: "Layer", table: str, hook: Callable[..., Any]) -> "HookRemoveHelper":
        if not callable(hook):
            raise TypeError(f"{type(layer).__name__}: a forward hook must be callable, got {type(hook).__name__}")
        hooks = layer.__dict__.get(table)
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(layer, table, hooks)
        cls._next_id += 1
        hooks[cls._next_id] = hook
        return cls(hooks, cls._next_id)

    def remove(self) -> None:
        self._hooks.pop(self._key, None)


def _is_parameter(value: Any) -> bool:
    """A Tensor that registers as a parameter: persistable and trainable."""
    return isinstance(value, Tensor) and value.persistable and not value.stop_gradient


class Layer:
    """Base class: subclasses create parameters and sublayers in __init__ and define forward."""

    def __init__(self, name_scope: str | None = None, dtype: Any = None) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistable_buffer_names", set())
        object.__setattr__(self, "_sub_layers", OrderedDict())
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_dtype", normalize_dtype(dtype or get_default_dtype()))
        object.__setattr__(self, "_full_name", unique_name(name_scope or type(self).__name__.lower()))
        object.__setattr__(self, "_param_counts", {"w": 0, "b": 0})  # Paddle's names: w_0, w_1, ..., b_0, ...

    # ---- registration
    def _registries(self) -> tuple[OrderedDict, OrderedDict, OrderedDict]:
        try:
            return self._parameters, self._buffers, self._sub_layers
        except AttributeError:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before assigning "
                               f"parameters or sublayers") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (Tensor, Layer)) or name in self.__dict__.get("_parameters", ()) \
                or name in self.__dict__.get("_sub_layers", ()) or name in self.__dict__.get("_buffers", ()):
            params, buffers, layers = self._registries()
            if name in buffers and not isinstance(value, Layer) and not _is_parameter(value):
                if value is not None and not isinstance(value, Tensor):
                    hint = (f"; while tracing (to_static, onnx.export) write it in place: "
                            f"self.{name}.set_value(...)") if isinstance(value, Variable) else ""
                    raise TypeError(f"{type(self).__name__}: cannot assign a {type(value).__name__} to the "
                                    f"buffer {name!r} (a Tensor or None expected){hint}")
                buffers[name] = value  # a buffer replaced by a new Tensor is still that buffer
                object.__setattr__(self, name, value)
                return
            if isinstance(value, Layer):
                target = layers
            elif isinstance(value, Tensor) and not value.persistable and not value.stop_gradient \
                    and value.is_leaf:
                value.persistable = True  # a leaf that wants a gradient, e.g. to_tensor(..., stop_gradient=False)
                target = params
            elif isinstance(value, Tensor) and value.persistable:
                target = params
            else:
                target = None
                if name in params and isinstance(value, Tensor):   # torch and Paddle refuse: it would never train
                    raise TypeError(f"{type(self).__name__}: cannot assign a plain Tensor (shape {list(value.shape)}, "
                                    f"{value.dtype}) as parameter {name!r} (nn.Parameter or None expected): wrap it, "
                                    f"self.{name} = nn.Parameter(t), or copy its values in with "
                                    f"self.{name}.set_value(t)")
            for registry in (params, buffers, layers):
                if registry is not target:
                    registry.pop(name, None)
            self.__dict__.get("_non_persistable_buffer_names", set()).discard(name)
            if target is not None:
                target[name] = value  # a replacement keeps its place, as in PyTorch
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for registry in self._registries():
            registry.pop(name, None)
        self.__dict__.get("_non_persistable_buffer_names", set()).discard(name)
        object.__delattr__(self, name)

    def create_parameter(self, shape: Sequence[int], attr: Any = None, dtype: Any = None, is_bias: bool = False,
                         default_initializer: Initializer | None = None) -> Tensor:
        kind = "b" if is_bias else "w"
        name = f"{self._full_name}.{kind}_{self._param_counts[kind]}"
        self._param_counts[kind] += 1
        return create_parameter(shape, dtype or self._dtype, attr, is_bias, default_initializer, name=name)

    def _check_new_entry(self, method: str, name: Any, registry: OrderedDict) -> None:
        """The checks PyTorch and Paddle make before registering `name`: a non-empty string
        without '.', not already a plain attribute (or an entry of another kind). An attribute
        holding None is free: layers write `self.bias = None` for an absent parameter."""
        self._registries()
        if not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}.{method}: the name must be a string, got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f"{type(self).__name__}.{method}: the name must be a non-empty string without '.', "
                           f"got {name!r}")
        if getattr(self, name, None) is not None and name not in registry:
            raise KeyError(f"{type(self).__name__}.{method}: attribute {name!r} already exists")

    def add_parameter(self, name: str, parameter: Tensor | None) -> Tensor | None:
        """Register `parameter` (a Tensor, made persistable) or None (a declared but absent
        parameter: left out of `parameters()` and `state_dict()`) under `name`."""
        self._check_new_entry("add_parameter", name, self._parameters)
        if parameter is None:
            self._parameters[name] = None
            object.__setattr__(self, name, None)
            return None
        if not isinstance(parameter, Tensor):
            raise TypeError(f"{type(self).__name__}.add_parameter: {name!r} must be a parameter Tensor or None, "
                            f"got {type(parameter).__name__}")
        if not parameter.is_leaf:
            raise ValueError(f"{type(self).__name__}.add_parameter: {name!r} is the result of an operation (not a "
                             f"leaf); create parameters with create_parameter and compute from them in forward()")
        parameter.persistable = True
        setattr(self, name, parameter)
        self._parameters[name] = parameter
        return parameter

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """PyTorch's name for `add_parameter` (None allowed)."""
        self.add_parameter(name, param)

    def add_sublayer(self, name: str, sublayer: "Layer | None") -> "Layer | None":
        """Register `sublayer` (or None: a declared but absent sublayer) under `name`."""
        if sublayer is not None and not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer: {name} must be a Layer, got {type(sublayer).__name__}")
        name = str(name)
        if sublayer is None:
            _, _, layers = self._registries()
            self.__dict__.get("_parameters", {}).pop(name, None)
            self.__dict__.get("_buffers", {}).pop(name, None)
            layers[name] = None
            object.__setattr__(self, name, None)
            return None
        setattr(self, name, sublayer)
        return sublayer

    def add_module(self, name: str, module: "Layer | None") -> None:
        """PyTorch's name for `add_sublayer`, with its checks (a new name, or a sublayer's)."""
        self._check_new_entry("add_module", name, self._registries()[2])
        self.add_sublayer(name, module)

    register_module = add_module  # PyTorch's other name

    def register_buffer(self, name: str, tensor: Tensor | None, persistable: bool = True,
                        persistent: bool | None = None) -> None:
        """A non-trainable state Tensor (e.g. BatchNorm's running mean): in `buffers()` and moved
        by `to()`; in `state_dict()` only when `persistable` (PyTorch: `persistent`; scratch
        state is not saved)."""
        _, buffers, _ = self._registries()
        if persistent is not None:
            if not persistable:
                raise ValueError(f"{type(self).__name__}.register_buffer: give persistable= (Paddle) or "
                                 f"persistent= (PyTorch), not both")
            persistable = bool(persistent)
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"{type(self).__name__}.register_buffer: the name must be a non-empty string "
                           f"without '.', got {name!r}")
        if hasattr(self, name) and name not in buffers:
            raise KeyError(f"{type(self).__name__}.register_buffer: {name!r} is already an attribute "
                           f"(a parameter, sublayer or plain value)")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"{type(self).__name__}.register_buffer: {name!r} must be a Tensor or None, "
                            f"got {type(tensor).__name__}")
        if tensor is not None:
            tensor.persistable = True
            tensor.stop_gradient = True
        buffers[name] = tensor
        non_persistable = self.__dict__.setdefault("_non_persistable_buffer_names", set())
        if persistable:
            non_persistable.discard(name)
        else:
            non_persistable.add(name)
        object.__setattr__(self, name, tensor)

    # ---- traversal
    def named_parameters(self, prefix: str = "", include_sublayers: bool = True,
                         recurse: bool | None = None) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, parameter), each parameter once; `recurse` is PyTorch's include_sublayers."""
        include_sublayers = include_sublayers if recurse is None else recurse
        seen: set[int] = set()
        for name, layer in self._named_layers(prefix, include_sublayers):
            for pname, param in layer._parameters.items():
                if param is not None and id(param) not in seen:
                    seen.add(id(param))
                    yield (f"{name}.{pname}" if name else pname), param

    def parameters(self, include_sublayers: bool = True, recurse: bool | None = None) -> list[Tensor]:
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers, recurse=recurse)]

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True,
                      recurse: bool | None = None) -> Iterator[tuple[str, Tensor]]:
        include_sublayers = include_sublayers if recurse is None else recurse
        for name, layer in self._named_layers(prefix, include_sublayers):
            for bname, buf in layer._buffers.items():
                if buf is not None:
                    yield (f"{name}.{bname}" if name else bname), buf

    def buffers(self, include_sublayers: bool = True, recurse: bool | None = None) -> list[Tensor]:
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers, recurse=recurse)]

    def get_submodule(self, target: str) -> "Layer":
        """PyTorch's lookup of a sublayer by dotted name ("" is this layer); a clear error names
        the missing part."""
        layer = self
        for part in target.split(".") if target else ():
            child = layer._sub_layers.get(part)
            if child is None:
                raise AttributeError(f"{type(layer).__name__} has no sublayer {part!r} (looking up {target!r})")
            layer = child
        return layer

    def get_parameter(self, target: str) -> Tensor:
        """PyTorch's lookup of a parameter by dotted name ("fc1.weight")."""
        owner, _, name = target.rpartition(".")
        layer = self.get_submodule(owner)
        if layer._parameters.get(name) is None:
            raise AttributeError(f"{type(layer).__name__} has no parameter {name!r} (looking up {target!r})")
        return layer._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """PyTorch's lookup of a buffer by dotted name ("bn._mean")."""
        owner, _, name = target.rpartition(".")
        layer = self.get_submodule(owner)
        if layer._buffers.get(name) is None:
            raise AttributeError(f"{type(layer).__name__} has no buffer {name!r} (looking up {target!r})")
        return layer._buffers[name]

    def _named_layers(self, prefix: str, include_sublayers: bool, memo: set | None = None,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Layer"]]:
        """This layer, then every sublayer depth-first in registration order: each once, unless
        `remove_duplicate` is False (then once per path); layers in `memo` are skipped, with
        everything below them, and the ones yielded are added to it."""
        stack: list[tuple[str, Layer]] = [(prefix, self)]
        seen = set() if memo is None else memo
        while stack:
            name, layer = stack.pop()
            if layer in seen:
                continue
            if remove_duplicate:
                seen.add(layer)
            yield name, layer
            if include_sublayers:
                children = [(f"{name}.{n}" if name else n, sub) for n, sub in layer._sub_layers.items()
                            if sub is not None]
                stack.extend(reversed(children))

    def named_sublayers(self, prefix: str = "", include_self: bool = False,
                        layers_set: set | None = None) -> Iterator[tuple[str, "Layer"]]:
        """Paddle's walk: (dotted name, layer) depth-first, each layer once (`layers_set` holds
        the ones already seen, shared between calls when given)."""
        for name, layer in self._named_layers(prefix, True, layers_set):
            if layer is not self or include_self:
                yield name, layer

    def sublayers(self, include_self: bool = False) -> list["Layer"]:
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Layer"]]:
        """PyTorch's walk: this layer (named `prefix`) first, then every sublayer depth-first."""
        return self._named_layers(prefix, True, memo, remove_duplicate)

    def modules(self) -> Iterator["Layer"]:
        """PyTorch's name for `sublayers(include_self=True)`, as an iterator."""
        return (layer for _, layer in self.named_modules())

    def children(self) -> Iterator["Layer"]:
        return iter(layer for layer in self._sub_layers.values() if layer is not None)

    def named_children(self) -> Iterator[tuple[str, "Layer"]]:
        return iter((n, layer) for n, layer in self._sub_layers.items() if layer is not None)

    def apply(self, fn: Callable[["Layer"], Any]) -> "Layer":
        for layer in self.sublayers(include_self=True):
            fn(layer)
        return self

    # ---- modes
    def train(self, mode: bool = True) -> "Layer":
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, "training", bool(mode))
        return self

    def eval(self) -> "Layer":
        return self.train(False)

    # ---- gradients and state
    def clear_gradients(self) -> None:
        for param in self.parameters():
            param.clear_grad()

    clear_grad = clear_gradients

    def zero_grad(self, set_to_none: bool = True) -> None:
        """PyTorch 2's rule: every parameter's gradient becomes None, or with
        `set_to_none=False` zeros (the gradient Tensors kept, holding new zero arrays)."""
        for param in self.parameters():
            if set_to_none or param.grad is None:
                param.clear_grad()
            else:
                param.grad._array = np.zeros_like(param.grad._array)

    def requires_grad_(self, requires_grad: bool = True) -> "Layer":
        """Freeze (False) or unfreeze (True) every parameter: stop_gradient = not requires_grad."""
        for param in self.parameters():
            param.stop_gradient = not bool(requires_grad)
        return self

    def state_dict(self, include_sublayers: bool = True) -> "OrderedDict[str, Tensor]":
        """Parameters and persistable buffers by dotted name (the Tensors themselves, not copies)."""
        state: OrderedDict[str, Tensor] = OrderedDict()
        for name, param in self.named_parameters(include_sublayers=include_sublayers):
            sync_from_scope(param)     # trained by a static Program: its values live in the scope
            state[name] = param
        for prefix, layer in self._named_layers("", include_sublayers):
            scratch = layer.__dict__.get("_non_persistable_buffer_names", ())
            for bname, buf in layer._buffers.items():
                if buf is not None and bname not in scratch:
                    sync_from_scope(buf)
                    state[f"{prefix}.{bname}" if prefix else bname] = buf
        return state

    # Older names of entries below this layer, {"old.dotted.prefix": "new.dotted.prefix"}: a
    # checkpoint saved before a rename still loads (e.g. TransformerEncoderLayer's "ffn.linear1").
    _renamed_state_keys: dict[str, str] = {}

    def _upgrade_state_keys(self, state_dict: dict[str, Any]) -> dict[str, Any]:
        """`state_dict` with keys under an old name (see `_renamed_state_keys`) renamed, unless
        the layer also has an entry of the old name."""
        renames = [(f"{prefix}.{old}." if prefix else f"{old}.", f"{prefix}.{new}." if prefix else f"{new}.")
                   for prefix, layer in self._named_layers("", True) for old, new in layer._renamed_state_keys.items()]
        if not renames:
            return state_dict
        own = self.state_dict()
        upgraded: dict[str, Any] = {}
        for key, value in state_dict.items():
            if key not in own:
                old, new = next(((o, n) for o, n in renames if key.startswith(o)), ("", ""))
                key = new + key[len(old):]
            upgraded[key] = value
        return upgraded

    def set_state_dict(self, state_dict: dict[str, Any], use_structured_name: bool = True) -> IncompatibleKeys:
        """Copy values (Tensors or arrays) into the parameters and buffers of the same names.

        Shapes must match (error naming the entry), except that a [1] value fills a 0-D
        parameter when the dict was read from a fluidgrad.save file of format 1 (those stored
        0-D values as [1]); returns (missing_keys, unexpected_keys).
        """
        missing, unexpected = self._load_state(self._in_own_layouts(state_dict), assign=False)
        for name, param in self.state_dict().items():  # used in a static Program: it reads the scope
            write_to_scope(param)
        if missing or unexpected:  # as Paddle: loading goes on, but not silently
            warnings.warn(f"set_state_dict: {type(self).__name__} kept its own values of {len(missing)} entries "
                          f"missing from the state dict {missing[:4]}, and skipped {len(unexpected)} unexpected "
                          f"entries {unexpected[:4]}", stacklevel=2)
        return IncompatibleKeys(missing, unexpected)

    load_dict = set_state_dict
    set_dict = set_state_dict

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True,
                        assign: bool = False) -> IncompatibleKeys:
        """PyTorch's name, so PyTorch's rule: with strict=True (the default) a key missing from
        the state dict or one the layer lacks (a renamed head, a "module." prefix) is a
        RuntimeError and nothing is loaded; strict=False loads what matches and returns
        (missing_keys, unexpected_keys). Paddle's set_state_dict loads what matches with a warning.

        assign=True (PyTorch 2): the state dict's Tensors become the layer's parameters and
        buffers (no copy; they keep their dtype, and the layer's stop_gradient and ParamAttr
        options). An optimizer made before holds the old Tensors: make it after loading."""
        state_dict = self._in_own_layouts(state_dict)
        own, state = self.state_dict(), self._upgrade_state_keys(state_dict)
        missing = [n for n in own if n not in state]
        unexpected = [n for n in state if n not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"load_state_dict: {type(self).__name__} and the state dict differ: missing keys "
                               f"{missing}, unexpected keys {unexpected} (strict=False loads the keys that match)"
                               f"{_torch_hint(any(k.rsplit('.', 1)[-1] in _TORCH_ONLY_KEYS for k in unexpected))}")
        return self._load_state(state_dict, assign=assign)

    def _in_own_layouts(self, state_dict: dict[str, Any]) -> dict[str, Any]:
        """`state_dict` as this layer's keys and layouts: each of `state_dict_converters` may
        recognise another framework's dict and convert it (nn/torch_state.py: PyTorch's)."""
        for convert in state_dict_converters:
            state_dict = convert(self, state_dict)
        return state_dict

    def _load_state(self, state_dict: dict[str, Any], assign: bool) -> IncompatibleKeys:
        """Check every matching entry's shape, then copy (or with `assign`, put) them all in."""
        own, legacy = self.state_dict(), getattr(state_dict, "zero_d_as_shape_1", False)
        state = self._upgrade_state_keys(state_dict)
        values = {}
        for name, value in state.items():
            if name in own:
                array = value._array if isinstance(value, Tensor) else np.asarray(value)
                if legacy and array.shape == (1,) and tuple(own[name].shape) == ():
                    value = array = array.reshape(())
                if tuple(array.shape) != tuple(own[name].shape):
                    transposed = array.ndim == 2 and tuple(array.shape[::-1]) == tuple(own[name].shape)
                    raise ValueError(f"set_state_dict: {name} has shape {list(own[name].shape)} in "
                                     f"{type(self).__name__}, the state dict gives {list(array.shape)}"
                                     f"{_torch_hint(transposed)}")
                values[name] = value
        missing = [n for n in own if n not in state]
        unexpected = [n for n in state if n not in own]
        if own and state and not values:  # e.g. every key saved with a "model." prefix
            raise ValueError(f"set_state_dict: no key of the state dict matches {type(self).__name__}: it expects "
                             f"{missing[:4]}{'...' if len(missing) > 4 else ''}, the dict has "
                             f"{unexpected[:4]}{'...' if len(unexpected) > 4 else ''}")
        if assign:
            self._assign_state({id(own[name]): (own[name], value) for name, value in values.items()})
        else:  # copies: two layers loaded from one dict must not share arrays
            for name, value in values.items():
                own[name].set_value(np.array(value._array if isinstance(value, Tensor) else value))
        return IncompatibleKeys(missing, unexpected)

    def _assign_state(self, replacements: dict[int, tuple[Tensor, Any]]) -> None:
        """Put each new value in place of its old Tensor wherever the layers hold it (tied
        weights stay tied): a Tensor as it is, an array wrapped without a copy."""
        new_tensors = {}
        for key, (old, value) in replacements.items():
            tensor = value if isinstance(value, Tensor) and value.is_leaf else \
                Tensor(value._array if isinstance(value, Tensor) else np.asarray(value), name=old.name)
            tensor.persistable, tensor.stop_gradient = True, old.stop_gradient
            if tensor._param_attr is None:
                tensor._param_attr = old._param_attr
            new_tensors[key] = tensor
        for _, layer in self._named_layers("", True):
            for registry in (layer._parameters, layer._buffers):
                for attr, held in list(registry.items()):
                    if held is not None and id(held) in new_tensors:
                        registry[attr] = new_tensors[id(held)]
                        object.__setattr__(layer, attr, new_tensors[id(held)])

    def to(self, device: Any = None, dtype: Any = None, blocking: bool | None = None, **_: Any) -> "Layer":
        """Paddle's `to(device=None, dtype=None, blocking=None)` and PyTorch's habits (`to("cpu")`,
        `to("float64")`, `to("cpu", "float64")`): every floating parameter and buffer cast to
        `dtype` in place, so the Tensors stay those an optimizer and ParamAttr options know.
        fluidgrad runs on the CPU: another device is an error."""
        if device is not None and not is_cpu(device):
            if dtype is not None or not names_a_dtype(device):
                as_device(device, f"{type(self).__name__}.to")
            device, dtype = None, device
        if dtype is not None:
            dtype = normalize_dtype(dtype)
            for tensor in list(self.parameters()) + self.buffers():
                if is_float(tensor.dtype):
                    tensor._array = tensor._array.astype(dtype)
            for layer in self.sublayers(include_self=True):
                object.__setattr__(layer, "_dtype", dtype)
        return self

    def cpu(self) -> "Layer":
        """PyTorch's move to the CPU, where fluidgrad's layers always are: returns self."""
        return self

    def cuda(self, device: Any = None) -> "Layer":
        raise ValueError(f"{type(self).__name__}.cuda: fluidgrad runs on the CPU only")

    def double(self) -> "Layer":
        """PyTorch's cast: floating parameters and buffers to float64 (in place); returns self."""
        return self.to(dtype="float64")

    def float(self) -> "Layer":
        """Floating parameters and buffers to float32 (in place); returns self."""
        return self.to(dtype="float32")

    def half(self) -> "Layer":
        """PyTorch's cast: floating parameters and buffers to float16 (all of them, BatchNorm's too)."""
        return self.to(dtype="float16")

    def bfloat16(self) -> "Layer":
        """PyTorch's cast: floating parameters and buffers to bfloat16 (all of them, BatchNorm's too)."""
        return self.to(dtype="bfloat16")

    # ---- calling
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        for observe in call_observers:  # jit.to_static notes the Layers a trace ran (their modes)
            observe(self)
        pre_hooks, post_hooks = self.__dict__.get("_forward_pre_hooks"), self.__dict__.get("_forward_post_hooks")
        for hook in list(pre_hooks.values()) if pre_hooks else ():
            replaced = hook(self, inputs)
            if replaced is not None:
                inputs = replaced if isinstance(replaced, tuple) else (replaced,)
        backward_hooks = self.__dict__.get("_backward_hooks")
        output = call_with_backward_hooks(self, list(backward_hooks.values()), self.forward, inputs, kwargs) \
            if backward_hooks else self.forward(*inputs, **kwargs)
        for hook in list(post_hooks.values()) if post_hooks else ():
            replaced = hook(self, inputs, output)
            if replaced is not None:
                output = replaced
        return output

    def register_forward_pre_hook(self, hook: Callable[["Layer", tuple], Any]) -> "HookRemoveHelper":
        """Call `hook(layer, inputs)` before each forward; a returned value (a tuple, or one input)
        replaces the inputs. `.remove()` on the result takes the hook away."""
        return HookRemoveHelper.add(self, "_forward_pre_hooks", hook)

    def register_forward_post_hook(self, hook: Callable[["Layer", tuple, Any], Any]) -> "HookRemoveHelper":
        """Call `hook(layer, inputs, output)` after each forward; a returned value replaces the output."""
        return HookRemoveHelper.add(self, "_forward_post_hooks", hook)

    register_forward_hook = register_forward_post_hook  # PyTorch's name

    def register_full_backward_hook(self, hook: Callable[["Layer", tuple, tuple], Any]) -> "HookRemoveHelper":
        """PyTorch's: call `hook(layer, grad_input, grad_output)` in eager backward, once the
        gradients w.r.t. this layer's inputs are computed; a returned tuple replaces grad_input
        (see nn/backward_hooks.py). `.remove()` on the result takes the hook away."""
        return HookRemoveHelper.add(self, "_backward_hooks", hook)

    def full_name(self) -> str:
        return self._full_name

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, layer in self._sub_layers.items():
            body = repr(layer).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return lines[0] + ")" if len(lines) == 1 else "\n".join(lines) + "\n)"
