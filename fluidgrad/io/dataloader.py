"""DataLoader (paddle.io.DataLoader, torch.utils.data.DataLoader): batches of Tensors from a dataset.

    loader = DataLoader(TensorDataset([features, labels]), batch_size=32, shuffle=True)
    for epoch in range(3):
        for x, y in loader:          # a list [x_batch, y_batch] of Tensors
            ...

A map-style dataset is read through a `BatchSampler` (made from batch_size / shuffle /
drop_last, or given as `batch_sampler`, e.g. a DistributedBatchSampler); an IterableDataset is
batched in the order it yields. `collate_fn` (default: `default_collate_fn`) turns a list of
samples into one batch: Tensors and arrays are stacked along a new first axis, numbers become a
1-D Tensor, and tuples, lists and dicts are collated field by field. (A TensorDataset with the
default collate_fn is read one fancy index per tensor and batch: the same values, faster.)

Loading runs in the calling process: `num_workers` is accepted (scripts written for Paddle or
PyTorch set it) and means the same batches, read in order by this process. With num_workers > 0
the process acts as the one worker there is: `worker_init_fn(0)` is called when
an iteration starts (once for all with persistent_workers=True), and while the dataset is read
`get_worker_info()` gives WorkerInfo(id=0, num_workers=1, seed, dataset), so code that shards
the samples by worker reads every sample once. (Neither happens with num_workers=0, as in
PyTorch and Paddle.)

`return_list=False` (Paddle's static-graph feeding) gives each batch as `[{name: array}]`, one
dict per device (here one: the CPU), named by `feed_list` (the static data Variables or their
names, in the order of the batch's fields): `exe.run(program, feed=batch)` takes it.
"""
from __future__ import annotations

import numbers
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..eager import Tensor
from .dataset import Dataset, IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, _positive_batch_size

__all__ = ["DataLoader", "WorkerInfo", "default_collate_fn", "get_worker_info"]

_current_worker = threading.local()


@dataclass(frozen=True)
class WorkerInfo:
    """The running loading worker (get_worker_info()): its id, how many there are, its seed and
    the dataset it reads. fluidgrad's is worker 0 of 1, the loading process itself."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> WorkerInfo | None:
    """The running worker's WorkerInfo while a DataLoader with num_workers > 0 reads its dataset
    (or runs worker_init_fn); None elsewhere, as in the main process of a multi-process loader."""
    return getattr(_current_worker, "info", None)


@contextmanager
def _running_as(info: WorkerInfo) -> Iterator[None]:
    previous = getattr(_current_worker, "info", None)
    _current_worker.info = info
    try:
        yield
    finally:
        _current_worker.info = previous


def default_collate_fn(batch: Sequence[Any]) -> Any:
    """One batch from a list of samples: Tensors and arrays stacked on a new axis 0, numbers as a
    1-D Tensor, strings kept as a list, sequences and mappings collated field by field."""
    if not len(batch):
        raise ValueError("default_collate_fn: an empty batch")
    first = batch[0]
    if isinstance(first, Tensor):
        return Tensor(_stack([t._array for t in batch], "Tensors"))
    if isinstance(first, (np.ndarray, np.generic)) and not isinstance(first, (np.str_, np.bytes_)):
        return Tensor(_stack([np.asarray(a) for a in batch], "arrays"))
    if isinstance(first, numbers.Number):
        return Tensor(np.asarray(batch))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, Mapping):
        return {key: default_collate_fn([sample[key] for sample in batch]) for key in first}
    if isinstance(first, Sequence):
        if any(len(sample) != len(first) for sample in batch):
            raise ValueError(f"default_collate_fn: samples of different lengths "
                             f"{sorted({len(sample) for sample in batch})} cannot be batched field by field")
        return [default_collate_fn(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate_fn: cannot batch samples of type {type(first).__name__}; give collate_fn")


def _stack(arrays: list[np.ndarray], what: str) -> np.ndarray:
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"default_collate_fn: {what} of different shapes {sorted(map(list, shapes))} cannot be "
                         f"stacked into a batch; pad them or give collate_fn")
    return np.stack(arrays)


class DataLoader:
    """Iterate over batches of `dataset` (see the module docstring). Paddle's signature plus
    torch's keywords. `generator` (a NumPy Generator, an int seed, or a torch.Generator, whose
    initial seed is used) draws the shuffled order and the worker seed. Accepted and without
    effect, because batches are NumPy arrays read in this process: places, use_buffer_reader,
    use_shared_memory, pin_memory and pin_memory_device (there is no device memory to pin for),
    prefetch_factor (nothing is read ahead) and timeout (no worker is waited for); the last two
    are still checked as torch checks them."""

    def __init__(self, dataset: Any, feed_list: Any = None, places: Any = None, return_list: bool = True,
                 batch_sampler: Any = None, batch_size: int | None = 1, shuffle: bool = False,
                 drop_last: bool = False, collate_fn: Callable[[list], Any] | None = None, num_workers: int = 0,
                 use_buffer_reader: bool = True, prefetch_factor: int | None = 2, use_shared_memory: bool = True,
                 timeout: int = 0, worker_init_fn: Callable[[int], None] | None = None,
                 persistent_workers: bool = False, sampler: Any = None, pin_memory: bool = False,
                 pin_memory_device: str = "", generator: Any = None) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative integer, got {num_workers!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or timeout < 0:
            raise ValueError(f"DataLoader: timeout must be a non-negative number of seconds, got {timeout!r}")
        if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or
                                            not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(f"DataLoader: prefetch_factor must be a positive integer, got {prefetch_factor!r}")
        self.pin_memory, self.pin_memory_device, self.timeout = bool(pin_memory), pin_memory_device, timeout
        self.generator = _numpy_generator(generator)
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn must be callable (worker id -> None), "
                            f"got {type(worker_init_fn).__name__}")
        self.dataset, self.num_workers = dataset, num_workers
        self.worker_init_fn, self.persistent_workers = worker_init_fn, bool(persistent_workers)
        self._workers_started = False
        self.return_list, self.feed_names = bool(return_list), _feed_names(return_list, feed_list)
        self.collate_fn = collate_fn if collate_fn is not None else default_collate_fn
        self.iterable = isinstance(dataset, IterableDataset) or \
            (not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__"))
        if self.iterable:
            if batch_sampler is not None or sampler is not None or shuffle:
                raise ValueError("DataLoader: an IterableDataset has no indices, so batch_sampler, sampler and "
                                 "shuffle do not apply (shuffle inside the dataset's __iter__)")
            self.batch_sampler = None
            self.batch_size = None if batch_size is None else _positive_batch_size("DataLoader", batch_size)
            self.drop_last = bool(drop_last)
            return
        if not isinstance(dataset, Dataset) and not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
            raise TypeError(f"DataLoader: dataset must be a Dataset (or define __getitem__ and __len__), or an "
                            f"IterableDataset, got {type(dataset).__name__}")
        if batch_sampler is not None:
            if batch_size not in (1, None) or shuffle or drop_last or sampler is not None:
                raise ValueError("DataLoader: batch_sampler sets the batches; do not also give batch_size, "
                                 "shuffle, drop_last or sampler")
            self.batch_sampler = batch_sampler
        elif batch_size is None:
            self.batch_sampler = None  # samples one by one, not batched (PyTorch's batch_size=None)
        else:
            if shuffle and sampler is None:
                sampler, shuffle = RandomSampler(dataset, generator=self.generator), False
            self.batch_sampler = BatchSampler(dataset if sampler is None else None, sampler, shuffle, batch_size,
                                              drop_last)
        self.batch_size = getattr(self.batch_sampler, "batch_size", None)
        self.drop_last = getattr(self.batch_sampler, "drop_last", False)

    def __iter__(self) -> Iterator[Any]:
        batches = self._batches() if self.num_workers == 0 else self._as_worker()
        return batches if self.return_list else self._feeds(batches)

    def _as_worker(self) -> Iterator[Any]:
        """The batches read as worker 0 of 1 (see the module docstring); get_worker_info() gives
        that only while this loader reads, not in the loop consuming the batches."""
        seed = self.generator.integers(0, 2**31 - 1) if self.generator is not None else np.random.randint(0, 2**31 - 1)
        info = WorkerInfo(id=0, num_workers=1, seed=int(seed), dataset=self.dataset)
        with _running_as(info):
            if self.worker_init_fn is not None and not (self.persistent_workers and self._workers_started):
                self.worker_init_fn(0)
            self._workers_started = True
            batches = self._batches()
        while True:
            with _running_as(info):
                batch = next(batches, _END)
            if batch is _END:
                return
            yield batch

    def _feeds(self, batches: Iterator[Any]) -> Iterator[list[dict[str, np.ndarray]]]:
        """Paddle's return_list=False: [{feed name: array}] per batch, for Executor.run(feed=)."""
        for batch in batches:
            fields = _flat_fields(batch)
            if len(fields) != len(self.feed_names):
                raise ValueError(f"DataLoader: a batch has {len(fields)} fields but feed_list names "
                                 f"{len(self.feed_names)}: {self.feed_names}")
            yield [{name: np.asarray(field.numpy() if hasattr(field, "numpy") else field)
                    for name, field in zip(self.feed_names, fields)}]

    def _batches(self) -> Iterator[Any]:
        if self.iterable:
            return self._iterable_batches()
        if self.batch_sampler is None:
            return (self.dataset[i] for i in range(len(self.dataset)))
        if type(self.dataset) is TensorDataset and self.collate_fn is default_collate_fn:
            return self._tensor_batches()
        return (self.collate_fn([self.dataset[i] for i in indices]) for indices in self.batch_sampler)

    def _tensor_batches(self) -> Iterator[list[Tensor]]:
        """A TensorDataset's batches read by one fancy index per tensor: the values default_collate_fn
        would stack from the samples, without making a Tensor per sample."""
        tensors = self.dataset.tensors
        for indices in self.batch_sampler:
            rows = np.asarray(indices, dtype=np.int64)
            yield [Tensor(t._array[rows]) for t in tensors]

    def _iterable_batches(self) -> Iterator[Any]:
        if self.batch_size is None:
            yield from iter(self.dataset)
            return
        batch: list[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __call__(self) -> Iterator[Any]:
        """`for batch in loader():` (Paddle's static-graph examples call the loader)."""
        return iter(self)

    def __len__(self) -> int:
        if self.iterable:
            raise TypeError("DataLoader: an IterableDataset has no length")
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.dataset)


_END = object()


def _numpy_generator(generator: Any) -> np.random.Generator | None:
    """DataLoader's `generator` as a NumPy Generator: one given, one seeded by an int, or one
    seeded by a torch.Generator's initial seed (torch code passes `torch.Generator().manual_seed(s)`)."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    if callable(getattr(generator, "initial_seed", None)):
        return np.random.default_rng(int(generator.initial_seed()))
    raise TypeError(f"DataLoader: generator must be a NumPy Generator, an int seed or a torch.Generator, "
                    f"got {type(generator).__name__}")


def _feed_names(return_list: bool, feed_list: Any) -> list[str]:
    """The names of the static data variables the batches' fields feed (return_list=False)."""
    if return_list:
        return []
    if not feed_list:
        raise ValueError("DataLoader: return_list=False gives each batch as [{feed name: array}] for "
                         "Executor.run(feed=...) and needs feed_list (the static data Variables, or their names, "
                         "one per field of a batch); for batches as lists of Tensors keep return_list=True")
    names = [item if isinstance(item, str) else getattr(item, "name", None) for item in feed_list]
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f"DataLoader: feed_list must hold static data Variables or names, got "
                        f"{[type(item).__name__ for item in feed_list]}")
    return names


def _flat_fields(batch: Any) -> list[Any]:
    if isinstance(batch, (list, tuple)):
        return [field for item in batch for field in _flat_fields(item)]
    return [batch]
