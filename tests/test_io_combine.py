"""fluidgrad.io's combined datasets (ConcatDataset, ComposeDataset, ChainDataset) and samplers
(SubsetRandomSampler, WeightedRandomSampler), compared with torch.utils.data where it has them,
and read through a DataLoader."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import fluidgrad as fg
from fluidgrad import io

_X = np.arange(12, dtype="float32").reshape(6, 2)
_Y = np.arange(6, dtype="int64") * 10


class _Count(io.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        yield from (np.float32(i) for i in range(self.n))

    def __len__(self):
        return self.n


def test_concat_dataset_indexes_like_torch():
    ours = io.ConcatDataset([io.TensorDataset(_X[:4], _Y[:4]), io.TensorDataset(_X[4:], _Y[4:])])
    theirs = tud.ConcatDataset([tud.TensorDataset(torch.tensor(_X[:4]), torch.tensor(_Y[:4])),
                                tud.TensorDataset(torch.tensor(_X[4:]), torch.tensor(_Y[4:]))])
    assert len(ours) == len(theirs) == 6 and ours.cumulative_sizes == theirs.cumulative_sizes
    for index in [0, 3, 4, 5, -1, -6]:
        for got, want in zip(ours[index], theirs[index]):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(IndexError, match="index 6 is out of range for 6 samples"):
        ours[6]
    batches = [b[1].numpy().tolist() for b in io.DataLoader(ours, batch_size=4)]
    assert batches == [[0, 10, 20, 30], [40, 50]]


def test_compose_dataset_joins_the_fields_of_each_sample():
    images, labels = io.TensorDataset([_X]), io.TensorDataset(_Y)
    composed = io.ComposeDataset([images, labels])
    sample = composed[2]
    assert len(composed) == 6 and len(sample) == 2
    np.testing.assert_array_equal(sample[0].numpy(), _X[2])
    assert int(sample[1].numpy()) == 20
    x, y = next(iter(io.DataLoader(composed, batch_size=3)))
    assert list(x.shape) == [3, 2] and y.numpy().tolist() == [0, 10, 20]
    with pytest.raises(ValueError, match=r"ComposeDataset: the datasets must have one length, got \[6, 3\]"):
        io.ComposeDataset([images, io.TensorDataset([_Y[:3]])])
    with pytest.raises(TypeError, match="ComposeDataset: dataset 1 .* is not a map-style dataset"):
        io.ComposeDataset([images, _Count(6)])


def test_chain_dataset_runs_the_streams_in_turn():
    chain = io.ChainDataset([_Count(3), _Count(2)])
    assert [float(v) for v in chain] == [0, 1, 2, 0, 1] and len(chain) == 5
    assert [b.numpy().tolist() for b in io.DataLoader(chain, batch_size=2)] == [[0, 1], [2, 0], [1]]
    with pytest.raises(TypeError, match="ChainDataset: dataset 0 .* is not an IterableDataset"):
        io.ChainDataset([io.TensorDataset([_X])])


def test_subset_random_sampler_permutes_its_indices_repeatably():
    fg.seed(5)
    first = list(io.SubsetRandomSampler([1, 3, 5, 7]))
    fg.seed(5)
    again = list(io.SubsetRandomSampler([1, 3, 5, 7]))
    assert sorted(first) == [1, 3, 5, 7] and first == again
    loader = io.DataLoader(io.TensorDataset([_X, _Y]), batch_size=2, sampler=io.SubsetRandomSampler([0, 2, 4]))
    assert sorted(v for _, y in loader for v in y.numpy().tolist()) == [0, 20, 40]
    with pytest.raises(ValueError, match="indices must not be empty"):
        io.SubsetRandomSampler([])


def test_weighted_random_sampler_draws_by_weight():
    drawn = np.array(list(io.WeightedRandomSampler([1.0, 3.0, 0.0], num_samples=4000,
                                                   generator=np.random.default_rng(0))))
    assert set(drawn.tolist()) == {0, 1} and abs((drawn == 1).mean() - 0.75) < 0.03
    distinct = list(io.WeightedRandomSampler([1.0, 1.0, 2.0, 0.5], num_samples=4, replacement=False))
    assert sorted(distinct) == [0, 1, 2, 3]
    assert len(io.WeightedRandomSampler([1.0, 2.0], 7)) == 7
    with pytest.raises(ValueError, match="5 samples without replacement, but only 2 weights are positive"):
        io.WeightedRandomSampler([1.0, 0.0, 2.0], num_samples=5, replacement=False)
    with pytest.raises(ValueError, match="weights must be a 1-D sequence of finite, non-negative numbers"):
        io.WeightedRandomSampler([1.0, -1.0], num_samples=2)
    loader = io.DataLoader(io.TensorDataset([_X, _Y]), batch_size=3,
                           sampler=io.WeightedRandomSampler([0, 0, 0, 0, 0, 1.0], num_samples=6))
    assert [y.numpy().tolist() for _, y in loader] == [[50, 50, 50], [50, 50, 50]]


def test_tensor_dataset_takes_torchs_separate_arguments():
    ours = io.TensorDataset(fg.to_tensor(_X), fg.to_tensor(_Y))
    assert len(ours) == 6 and int(ours[5][1].numpy()) == 50
    with pytest.raises(TypeError, match="TensorDataset takes the tensors as one list .* or as separate arguments"):
        io.TensorDataset([_X], _Y)
