"""Layers that hold other layers."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable

from ..layer import Layer

__all__ = ['Sequential', 'LayerList']


class Sequential(Layer):
    """Layers called in order: Sequential(l1, l2), Sequential(("a", l1), ...) or an OrderedDict."""

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

    def __getitem__(self, index: int | slice | str) -> Any:
        if isinstance(index, str):
            return self._sub_layers[index]
        layers = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*layers[index])
        return layers[index]

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

    def __getitem__(self, index: int) -> Layer:
        return list(self._sub_layers.values())[index]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())
