"""DataLoader's torch keywords (pin_memory, pin_memory_device, prefetch_factor, timeout,
worker_init_fn, generator): the no-ops change nothing, the checked ones fail as torch's do, and
`generator` makes the shuffled order repeatable."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fluidgrad import io

_FEATURES = np.arange(20, dtype="float32").reshape(10, 2)


def _labels(loader):
    return [row for x, in loader for row in x.numpy()[:, 0].tolist()]


def _dataset():
    return io.TensorDataset([_FEATURES])


def test_pinning_and_prefetching_keywords_change_nothing():
    plain = _labels(io.DataLoader(_dataset(), batch_size=3))
    keyed = io.DataLoader(_dataset(), batch_size=3, num_workers=2, pin_memory=True, pin_memory_device="cuda",
                          prefetch_factor=4, timeout=5.0, persistent_workers=True)
    assert _labels(keyed) == plain and keyed.pin_memory and keyed.timeout == 5.0


@pytest.mark.parametrize("keyword, value", [("timeout", -1), ("prefetch_factor", 0), ("prefetch_factor", 1.5)])
def test_bad_worker_keywords_are_errors(keyword, value):
    with pytest.raises(ValueError, match=keyword):
        io.DataLoader(_dataset(), **{keyword: value})


@pytest.mark.parametrize("make", [lambda: np.random.default_rng(7), lambda: 7,
                                  lambda: torch.Generator().manual_seed(7)])
def test_a_generator_makes_the_shuffle_repeatable(make):
    first = _labels(io.DataLoader(_dataset(), batch_size=4, shuffle=True, generator=make()))
    second = _labels(io.DataLoader(_dataset(), batch_size=4, shuffle=True, generator=make()))
    assert first == second and sorted(first) == _FEATURES[:, 0].tolist() and first != _FEATURES[:, 0].tolist()


def test_generator_epochs_differ_and_the_worker_seed_comes_from_it():
    seeds = []
    loader = io.DataLoader(_dataset(), batch_size=4, shuffle=True, num_workers=1, generator=3,
                           worker_init_fn=lambda i: seeds.append(io.get_worker_info().seed))
    assert _labels(loader) != _labels(loader)
    other = []
    list(io.DataLoader(_dataset(), batch_size=4, num_workers=1, generator=3,
                       worker_init_fn=lambda i: other.append(io.get_worker_info().seed)))
    assert seeds[0] == other[0]


def test_a_bad_generator_is_an_error():
    with pytest.raises(TypeError, match="generator"):
        io.DataLoader(_dataset(), shuffle=True, generator="seven")
