"""Datasets (paddle.io / torch.utils.data): what a DataLoader draws samples from.

A map-style `Dataset` answers `len(dataset)` and `dataset[i]`; an `IterableDataset` only
yields samples. `TensorDataset` pairs up the rows of several arrays (features, labels);
`Subset` and `random_split` pick rows of another dataset, e.g. a validation split; combine.py
joins datasets (ConcatDataset, ComposeDataset, ChainDataset).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..eager import Tensor
from ..ops.random import generator as global_generator

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclass and define `__getitem__(index)` and `__len__()`."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index)")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__()")

class IterableDataset(Dataset):
    """A dataset that yields its samples (a stream, a generator): subclass and define `__iter__`.
    A DataLoader batches it in order; it has no indices, so no sampler or shuffle applies."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__()")

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate over it, it has no indices")

    def __len__(self) -> int:
        # a TypeError (not NotImplementedError): list(dataset) asks for a length hint and takes
        # a TypeError as "unknown"
        raise TypeError(f"{type(self).__name__} is an IterableDataset without __len__: iterate over it")


class TensorDataset(Dataset):
    """Sample i is the tuple of row i of each tensor (Tensors or arrays, equal first dimensions):
    `TensorDataset([features, labels])` (Paddle) or `TensorDataset(features, labels)` (PyTorch)."""

    def __init__(self, tensors: Sequence[Any], *more: Any) -> None:
        if isinstance(tensors, (Tensor, np.ndarray)):
            tensors = [tensors, *more]
        elif more:
            raise TypeError("TensorDataset takes the tensors as one list (Paddle) or as separate arguments "
                            f"(PyTorch), got a {type(tensors).__name__} and {len(more)} more arguments")
        self.tensors = [t if isinstance(t, Tensor) else Tensor(np.asarray(t)) for t in tensors]
        if not self.tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        lengths = [t.shape[0] if len(t.shape) else None for t in self.tensors]
        if None in lengths or len(set(lengths)) != 1:
            shapes = [list(t.shape) for t in self.tensors]
            raise ValueError(f"TensorDataset: every tensor must have the same first dimension, got shapes {shapes}")

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(Tensor(np.array(t._array[index])) for t in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator: Any = None) -> list[Subset]:
    """Split `dataset` into non-overlapping random Subsets of the given lengths (counts summing to
    len(dataset), or fractions summing to 1, as PyTorch). The permutation comes from fluidgrad's
    global generator (`fluidgrad.seed`), or from `generator=` (Paddle's and torch's keyword), a
    NumPy Generator."""
    if generator is not None and not hasattr(generator, "permutation"):
        raise TypeError(f"random_split: generator must be a NumPy Generator (np.random.default_rng(seed)), "
                        f"got {type(generator).__name__}")
    total = len(dataset)
    counts = [int(n) for n in lengths]
    if lengths and all(isinstance(n, float) for n in lengths) and abs(sum(lengths) - 1) < 1e-6:
        counts = [int(np.floor(total * f)) for f in lengths]
        for i in range(total - sum(counts)):  # the rest goes round-robin, as PyTorch does
            counts[i % len(counts)] += 1
    if sum(counts) != total or any(n < 0 for n in counts):
        raise ValueError(f"random_split: lengths {list(lengths)} do not add up to the dataset's {total} samples")
    order = (generator or global_generator()).permutation(total)
    starts = np.cumsum([0] + counts)
    return [Subset(dataset, order[a:b].tolist()) for a, b in zip(starts[:-1], starts[1:])]
