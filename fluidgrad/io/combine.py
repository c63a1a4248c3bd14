"""Datasets made of other datasets (paddle.io / torch.utils.data): end to end, side by side, chained.

`ConcatDataset` puts map-style datasets one after another;
`ComposeDataset` (Paddle) puts equally long ones side by side, sample i holding the fields of
every dataset's sample i; `ChainDataset` runs iterable datasets one after another.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any

from .dataset import Dataset, IterableDataset

__all__ = ["ChainDataset", "ComposeDataset", "ConcatDataset"]


def _map_style(owner: str, datasets: Iterable[Any]) -> list[Any]:
    datasets = list(datasets)
    if not datasets:
        raise ValueError(f"{owner}: needs at least one dataset")
    for index, dataset in enumerate(datasets):
        if isinstance(dataset, IterableDataset) or not hasattr(dataset, "__getitem__") \
                or not hasattr(dataset, "__len__"):
            raise TypeError(f"{owner}: dataset {index} ({type(dataset).__name__}) is not a map-style dataset "
                            "(__getitem__ and __len__); chain iterable datasets with ChainDataset")
    return datasets


class ConcatDataset(Dataset):
    """The samples of each dataset in turn: index len(a) is b[0]. Negative indices count from the end."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = _map_style("ConcatDataset", datasets)
        self.cumulative_sizes: list[int] = []
        total = 0
        for dataset in self.datasets:
            total += len(dataset)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        total = len(self)
        if not -total <= index < total:
            raise IndexError(f"ConcatDataset: index {index} is out of range for {total} samples")
        index = index + total if index < 0 else index
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ComposeDataset(Dataset):
    """Sample i is the tuple of the fields of every dataset's sample i, in order (Paddle's
    ComposeDataset: images from one dataset, labels from another). The datasets must be equally long."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = _map_style("ComposeDataset", datasets)
        lengths = [len(d) for d in self.datasets]
        if len(set(lengths)) != 1:
            raise ValueError(f"ComposeDataset: the datasets must have one length, got {lengths}")

    def __len__(self) -> int:
        return len(self.datasets[0])

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        fields: list[Any] = []
        for dataset in self.datasets:
            sample = dataset[index]
            fields.extend(sample if isinstance(sample, (tuple, list)) else [sample])
        return tuple(fields)


class ChainDataset(IterableDataset):
    """The samples of each iterable dataset in turn (a stream made of several streams)."""

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = list(datasets)
        for index, dataset in enumerate(self.datasets):
            if not isinstance(dataset, IterableDataset):
                raise TypeError(f"ChainDataset: dataset {index} ({type(dataset).__name__}) is not an "
                                "IterableDataset; put map-style datasets end to end with ConcatDataset")

    def __iter__(self) -> Iterator[Any]:
        for dataset in self.datasets:
            yield from dataset

    def __len__(self) -> int:
        return sum(len(dataset) for dataset in self.datasets)
