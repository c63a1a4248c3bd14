"""Layers that hold other layers."""
from __future__ import annotations

import operator
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from ...eager import Tensor
from ..layer import Layer

__all__ = ['Sequential', 'LayerList', 'LayerDict', 'ParameterList', 'ParameterDict']


class Sequential(Layer):
    """Layers called in order: Sequential(l1, l2), Sequential(("a", l1), ...) or an OrderedDict.

    A mutable list as PyTorch's: `model[1] = nn.ReLU()` replaces a layer keeping its name,
    `del model[1]` / `del model[1:3]` remove layers and renumber the rest "0", "1", ...,
    `model[1:]` is a Sequential of the same layers under their names, and `append`, `extend`,
    `insert`, `pop`. A string index names a layer, as in Paddle (`del model["fc"]` keeps the
    other names)."""

    def __init__(self, *layers: Any) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, OrderedDict)):
            items: Iterable[tuple[str, Layer]] = layers[0].items()
        elif layers and all(isinstance(item, (tuple, list)) and len(item) == 2 for item in layers):
            items = layers
        else:
            items = ((str(i), layer) for i, layer in enumerate(layers))
        for name, layer in items:
            self.add_sublayer(str(name), layer)

    def forward(self, x: Any) -> Any:
        for layer in self._sub_layers.values():
            x = layer(x)
        return x

    def _key_at(self, index: Any) -> str:
        """The name of the layer at position `index` (negative counts from the end)."""
        keys = list(self._sub_layers)
        try:
            position = operator.index(index)
        except TypeError:
            raise TypeError(f"Sequential indices must be integers, slices or layer names, "
                            f"got {type(index).__name__}") from None
        if not -len(keys) <= position < len(keys):
            raise IndexError(f"Sequential: index {position} is out of range for {len(keys)} layers")
        return keys[position]

    def __getitem__(self, index: int | slice | str) -> Any:
        if isinstance(index, str):
            return self._sub_layers[index]
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._sub_layers.items())[index]))
        return self._sub_layers[self._key_at(index)]

    def __setitem__(self, index: int | str, layer: Layer) -> None:
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential: only a Layer can be put at index {index!r}, got {type(layer).__name__}")
        self.add_sublayer(index if isinstance(index, str) else self._key_at(index), layer)

    def __delitem__(self, index: int | slice | str) -> None:
        if isinstance(index, str):
            if index not in self._sub_layers:
                raise KeyError(f"Sequential has no layer named {index!r}")
            delattr(self, index)
            return
        keys = list(self._sub_layers)[index] if isinstance(index, slice) else [self._key_at(index)]
        for key in keys:
            delattr(self, key)
        self._renumber(list(self._sub_layers.values()))

    def _renumber(self, layers: list[Layer]) -> None:
        for name in list(self._sub_layers):
            delattr(self, name)
        for i, layer in enumerate(layers):
            self.add_sublayer(str(i), layer)

    def append(self, layer: Layer) -> "Sequential":
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def extend(self, layers: Iterable[Layer]) -> "Sequential":
        for layer in layers:
            self.append(layer)
        return self

    def insert(self, index: int, layer: Layer) -> "Sequential":
        """Put `layer` before position `index` (list.insert's rule); all layers renumbered."""
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.insert: expected a Layer, got {type(layer).__name__}")
        layers = list(self._sub_layers.values())
        layers.insert(index, layer)
        self._renumber(layers)
        return self

    def pop(self, index: int | str = -1) -> Layer:
        layer = self[index]
        del self[index]
        return layer

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


class LayerList(Layer):
    """A list of sublayers whose parameters the parent sees."""

    def __init__(self, sublayers: Iterable[Layer] | None = None) -> None:
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def append(self, layer: Layer) -> "LayerList":
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def extend(self, layers: Iterable[Layer]) -> "LayerList":
        for layer in layers:
            self.append(layer)
        return self

    def insert(self, index: int, layer: Layer) -> None:
        """Put `layer` before position `index` (list.insert's rule); later layers move up one name."""
        layers = list(self._sub_layers.values())
        layers.insert(index, layer)
        self._renumber(layers)

    def _renumber(self, layers: list[Layer]) -> None:
        for name in list(self._sub_layers):
            delattr(self, name)
        for layer in layers:
            self.append(layer)

    def __getitem__(self, index: int | slice) -> Any:
        layers = list(self._sub_layers.values())
        return LayerList(layers[index]) if isinstance(index, slice) else layers[index]

    def __setitem__(self, index: int, layer: Layer) -> None:
        layers = list(self._sub_layers.values())
        layers[index] = layer
        self._renumber(layers)

    def __delitem__(self, index: int | slice) -> None:
        layers = list(self._sub_layers.values())
        del layers[index]
        self._renumber(layers)

    def pop(self, index: int = -1) -> Layer:
        """Remove and return the layer at `index` (PyTorch's ModuleList.pop); later layers move down one name."""
        layer = self[index]
        del self[index]
        return layer

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


class LayerDict(Layer):
    """Sublayers by name, as a dict whose parameters the parent sees (Paddle's LayerDict,
    PyTorch's ModuleDict); insertion order is kept."""

    def __init__(self, sublayers: Mapping[str, Layer] | Iterable[tuple[str, Layer]] | None = None) -> None:
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key: str) -> Layer:
        return self._sub_layers[key]

    def __setitem__(self, key: str, layer: Layer) -> None:
        self.add_sublayer(key, layer)

    def __delitem__(self, key: str) -> None:
        if key not in self._sub_layers:
            raise KeyError(key)
        delattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._sub_layers

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._sub_layers))

    def keys(self) -> list[str]:
        return list(self._sub_layers)

    def values(self) -> list[Layer]:
        return list(self._sub_layers.values())

    def items(self) -> list[tuple[str, Layer]]:
        return list(self._sub_layers.items())

    def pop(self, key: str) -> Layer:
        layer = self[key]
        del self[key]
        return layer

    def clear(self) -> None:
        for key in list(self._sub_layers):
            del self[key]

    def update(self, sublayers: Mapping[str, Layer] | Iterable[tuple[str, Layer]]) -> None:
        for key, layer in (sublayers.items() if isinstance(sublayers, Mapping) else sublayers):
            self[key] = layer


class ParameterList(Layer):
    """A list of parameters the parent sees (Paddle's ParameterList)."""

    def __init__(self, parameters: Iterable[Tensor] | None = None) -> None:
        super().__init__()
        for parameter in parameters or ():
            self.append(parameter)

    def append(self, parameter: Tensor) -> "ParameterList":
        if not isinstance(parameter, Tensor):
            raise TypeError(f"ParameterList.append: expected a parameter Tensor, got {type(parameter).__name__}")
        self.add_parameter(str(len(self._parameters)), parameter)
        return self

    def extend(self, parameters: Iterable[Tensor]) -> "ParameterList":
        for parameter in parameters:
            self.append(parameter)
        return self

    def __getitem__(self, index: int) -> Tensor:
        return list(self._parameters.values())[index]

    def __setitem__(self, index: int, parameter: Tensor) -> None:
        name = list(self._parameters)[index]
        self.add_parameter(name, parameter)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Tensor]:
        return iter(list(self._parameters.values()))


class ParameterDict(Layer):
    """Parameters by name, as a dict whose parameters the parent sees (Paddle's and PyTorch's
    ParameterDict); insertion order is kept."""

    def __init__(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Tensor:
        return self._parameters[key]

    def __setitem__(self, key: str, parameter: Tensor) -> None:
        if not isinstance(parameter, Tensor):
            raise TypeError(f"ParameterDict: {key!r} must be a parameter Tensor, got {type(parameter).__name__}")
        self.add_parameter(key, parameter)

    def __delitem__(self, key: str) -> None:
        if key not in self._parameters:
            raise KeyError(key)
        delattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._parameters))

    def keys(self) -> list[str]:
        return list(self._parameters)

    def values(self) -> list[Tensor]:
        return list(self._parameters.values())

    def items(self) -> list[tuple[str, Tensor]]:
        return list(self._parameters.items())

    def pop(self, key: str) -> Tensor:
        parameter = self[key]
        del self[key]
        return parameter

    def update(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]) -> None:
        for key, parameter in (parameters.items() if isinstance(parameters, Mapping) else parameters):
            self[key] = parameter
