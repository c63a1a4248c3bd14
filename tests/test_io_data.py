"""fluidgrad.io's data loading (Dataset, TensorDataset, samplers, DataLoader) against
torch.utils.data: the same batches, in the same order, collated the same way."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import fluidgrad as fg
from fluidgrad import io

_FEATURES = np.arange(22, dtype="float32").reshape(11, 2)
_LABELS = np.arange(11, dtype="int64") * 10


def _numpy(batch):
    if isinstance(batch, (fg.Tensor, torch.Tensor)):
        return batch.numpy()
    if isinstance(batch, dict):
        return {k: _numpy(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_numpy(v) for v in batch]
    return batch


def _assert_same(got, want):
    got, want = _numpy(got), _numpy(want)
    assert type(got) is type(want) or isinstance(got, np.ndarray), (got, want)
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        for key in want:
            _assert_same(got[key], want[key])
    elif isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("batch_size", [1, 3, 4, 11, 20])
@pytest.mark.parametrize("drop_last", [False, True])
def test_tensor_dataset_batches_match_torch(batch_size, drop_last):
    dataset = io.TensorDataset([fg.to_tensor(_FEATURES), _LABELS])  # Tensors and arrays alike
    reference = tud.TensorDataset(torch.tensor(_FEATURES), torch.tensor(_LABELS))
    loader = io.DataLoader(dataset, batch_size=batch_size, drop_last=drop_last)
    expected = list(tud.DataLoader(reference, batch_size=batch_size, drop_last=drop_last))
    got = list(loader)
    assert len(loader) == len(expected) == len(got)
    _assert_same(got, expected)
    assert len(dataset) == 11 and isinstance(dataset, io.Dataset)
    _assert_same(list(dataset[4]), list(reference[4]))


def test_shuffle_is_a_fresh_permutation_each_epoch_and_repeatable_with_seed():
    loader = io.DataLoader(io.TensorDataset([_LABELS]), batch_size=4, shuffle=True)

    def epoch():
        return np.concatenate([b[0].numpy() for b in loader])

    fg.seed(3)
    first, second = epoch(), epoch()
    assert sorted(first) == sorted(second) == list(_LABELS)
    assert not np.array_equal(first, second)
    fg.seed(3)
    np.testing.assert_array_equal(epoch(), first)


class _Samples(io.Dataset):
    """Samples as dicts of an array, a number, a string and a nested tuple."""

    def __getitem__(self, i):
        return {"x": np.full((2, 3), i, "float32"), "n": i, "w": i / 2, "name": f"s{i}", "pair": (i, np.int64(-i))}

    def __len__(self):
        return 5


def test_default_collate_matches_torch_default_collate():
    samples = [_Samples()[i] for i in range(3)]
    got = io.default_collate_fn(samples)
    want = tud.default_collate(samples)
    _assert_same({k: v for k, v in got.items() if k != "name"}, {k: v for k, v in want.items() if k != "name"})
    assert got["name"] == want["name"] == ["s0", "s1", "s2"]
    batches = list(io.DataLoader(_Samples(), batch_size=2))
    assert [len(b["n"].numpy()) for b in batches] == [2, 2, 1]


class _Stream(io.IterableDataset):
    def __iter__(self):
        return iter(np.arange(7, dtype="float64"))


class _TorchStream(tud.IterableDataset):
    def __iter__(self):
        return iter(np.arange(7, dtype="float64"))


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_is_batched_in_order_like_torch(drop_last):
    got = list(io.DataLoader(_Stream(), batch_size=3, drop_last=drop_last))
    expected = list(tud.DataLoader(_TorchStream(), batch_size=3, drop_last=drop_last))
    _assert_same(got, expected)
    with pytest.raises(ValueError, match="IterableDataset"):
        io.DataLoader(_Stream(), batch_size=3, shuffle=True)


def test_batch_sampler_matches_torch_and_takes_a_sampler():
    dataset = io.TensorDataset([_LABELS])
    for drop_last in (False, True):
        got = list(io.BatchSampler(dataset, batch_size=3, drop_last=drop_last))
        want = list(tud.BatchSampler(tud.SequentialSampler(range(11)), 3, drop_last))
        assert got == want and len(io.BatchSampler(dataset, batch_size=3, drop_last=drop_last)) == len(want)
    reverse = io.BatchSampler(sampler=list(range(10, -1, -1)), batch_size=5)
    batches = list(io.DataLoader(dataset, batch_sampler=reverse))
    np.testing.assert_array_equal(batches[0][0].numpy(), _LABELS[[10, 9, 8, 7, 6]])
    with pytest.raises(ValueError, match="exactly one of dataset and sampler"):
        io.BatchSampler(dataset, sampler=[0, 1])
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        io.BatchSampler(dataset, batch_size=0)
    with pytest.raises(ValueError, match="batch_sampler sets the batches"):
        io.DataLoader(dataset, batch_sampler=reverse, batch_size=4)


def test_distributed_batch_sampler_is_a_batch_sampler_a_data_loader_takes():
    dataset = io.TensorDataset([_LABELS])
    assert fg.distributed.DistributedBatchSampler is io.DistributedBatchSampler
    seen = []
    for rank in range(3):
        sampler = io.DistributedBatchSampler(dataset, batch_size=2, num_replicas=3, rank=rank, shuffle=True)
        assert isinstance(sampler, io.BatchSampler)
        sampler.set_epoch(1)
        batches = list(io.DataLoader(dataset, batch_sampler=sampler))
        assert len(batches) == len(sampler) == 2
        seen += [int(v) for b in batches for v in b[0].numpy()]
    assert len(seen) == 12 and set(seen) == set(_LABELS.tolist())  # padded by one sample to 4 per rank


def test_num_workers_runs_in_process_with_the_same_batches():
    dataset = io.TensorDataset([_FEATURES, _LABELS])
    _assert_same(list(io.DataLoader(dataset, batch_size=4, num_workers=2)), list(io.DataLoader(dataset, batch_size=4)))
    with pytest.raises(ValueError, match="num_workers"):
        io.DataLoader(dataset, num_workers=-1)


def test_bad_datasets_and_samples_are_clear_errors():
    with pytest.raises(ValueError, match=r"same first dimension, got shapes \[\[11, 2\], \[3\]\]"):
        io.TensorDataset([_FEATURES, np.zeros(3)])
    one = io.TensorDataset(_FEATURES)          # torch's TensorDataset(x): one field per sample
    assert len(one) == len(tud.TensorDataset(torch.tensor(_FEATURES))) and len(one[0]) == 1
    with pytest.raises(TypeError, match="as one list \\(Paddle\\) or as separate arguments"):
        io.TensorDataset([_FEATURES], _LABELS)
    with pytest.raises(ValueError, match="different shapes"):
        io.default_collate_fn([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="must be a Dataset"):
        io.DataLoader(object())


def test_random_split_partitions_the_dataset():
    dataset = io.TensorDataset([_LABELS])
    fg.seed(0)
    parts = io.random_split(dataset, [8, 3])
    assert [len(p) for p in parts] == [8, 3]
    values = sorted(int(p[i][0].numpy()) for p in parts for i in range(len(p)))
    assert values == _LABELS.tolist()
    assert [len(p) for p in io.random_split(dataset, [0.5, 0.5])] == [6, 5]
    with pytest.raises(ValueError, match="do not add up"):
        io.random_split(dataset, [5, 5])


class _Plain(io.Dataset):
    """The same samples as a TensorDataset, read one by one (no fast path)."""

    def __getitem__(self, i):
        return fg.to_tensor(_FEATURES[i]), _LABELS[i]

    def __len__(self):
        return len(_LABELS)


@pytest.mark.parametrize("batch_size", [1, 4])
def test_tensor_dataset_batches_equal_the_sample_by_sample_collation(batch_size):
    sampler = io.BatchSampler(sampler=[3, 1, 4, 1, 5, 9, 2, 6], batch_size=batch_size)
    fast = list(io.DataLoader(io.TensorDataset([_FEATURES, _LABELS]), batch_sampler=sampler))
    slow = list(io.DataLoader(_Plain(), batch_sampler=sampler))
    _assert_same(fast, slow)


class _ShardedRange(io.IterableDataset):
    """torch's documented worker sharding: each worker reads its own slice of [start, end)."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = io.get_worker_info()
        start, end = self.start, self.end
        if info is not None:
            per_worker = -(-(end - start) // info.num_workers)
            start = start + info.id * per_worker
            end = min(start + per_worker, end)
        return iter(np.arange(start, end, dtype="int64"))


def test_worker_init_fn_runs_as_worker_zero_of_one():
    calls, seen_in_dataset = [], []

    def init(worker_id):
        info = io.get_worker_info()
        calls.append((worker_id, info.id, info.num_workers, info.dataset is dataset))

    class Recording(io.Dataset):
        def __getitem__(self, i):
            seen_in_dataset.append(io.get_worker_info())
            return _FEATURES[i]

        def __len__(self):
            return 4

    dataset = Recording()
    loader = io.DataLoader(dataset, batch_size=2, num_workers=3, worker_init_fn=init)
    for _ in range(2):
        for _batch in loader:
            assert io.get_worker_info() is None           # the consuming loop is not the worker
    assert calls == [(0, 0, 1, True)] * 2                 # once per iteration (workers are not persistent)
    assert len(seen_in_dataset) == 8 and all(info.id == 0 and info.num_workers == 1 for info in seen_in_dataset)
    assert io.get_worker_info() is None
    persistent = io.DataLoader(dataset, batch_size=2, num_workers=1, worker_init_fn=init, persistent_workers=True)
    calls.clear()
    for _ in range(3):
        list(persistent)
    assert calls == [(0, 0, 1, True)]
    calls.clear()
    list(io.DataLoader(dataset, batch_size=2, worker_init_fn=init))   # no workers: never called (as torch)
    assert calls == []
    with pytest.raises(TypeError, match="worker_init_fn"):
        io.DataLoader(dataset, worker_init_fn=3)


def test_a_dataset_sharded_by_worker_reads_every_sample_once():
    loader = io.DataLoader(_ShardedRange(3, 10), batch_size=3, num_workers=2)
    expected = list(tud.DataLoader(_TorchRange(3, 10), batch_size=3))
    _assert_same([b.numpy() for b in loader], [b.numpy() for b in expected])


class _TorchRange(tud.IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(np.arange(self.start, self.end, dtype="int64"))


def test_return_list_false_feeds_a_static_program():
    dataset = io.TensorDataset([_FEATURES, _LABELS])
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 2], "float32")
        y = fg.static.data("y", [None], "int64")
        total = fg.sum(x) + fg.cast(fg.sum(y), "float32")
    exe = fg.Executor()
    loader = io.DataLoader(dataset, feed_list=[x, "y"], batch_size=4, return_list=False)
    batches = list(loader())
    assert [sorted(b[0]) for b in batches] == [["x", "y"]] * 3
    got = [exe.run(main, feed=batch, fetch_list=[total])[0] for batch in batches]
    expected = [_FEATURES[i:i + 4].sum() + _LABELS[i:i + 4].sum() for i in range(0, 11, 4)]
    np.testing.assert_allclose(np.reshape(got, -1), expected)
    with pytest.raises(ValueError, match="feed_list"):
        io.DataLoader(dataset, return_list=False)
    with pytest.raises(ValueError, match="2 fields but feed_list names 1"):
        next(iter(io.DataLoader(dataset, feed_list=[x], batch_size=4, return_list=False)))
