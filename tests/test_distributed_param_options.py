"""The bucket kernels update a whole bucket with one rate and one decay: a parameter with a rate
of its own (ParamAttr(learning_rate=...)) makes DistributedOptimizer use the optimizer's own
update ops (and sharding fall back, with a warning), so it trains as the plain optimizer does."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fluidgrad as fg
import fluidgrad.distributed as dist


def _train(wrap, sharding=False):
    main, startup = fg.Program(), fg.Program()
    main.random_seed = startup.random_seed = 3
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        y = fg.static.nn.fc(x, 2, weight_attr=fg.ParamAttr(name="own_rate_w", learning_rate=0.0),
                            bias_attr=fg.ParamAttr(name="own_rate_b", learning_rate=0.5))
        opt = fg.optimizer.SGD(1.0)
        (dist.DistributedOptimizer(opt, sharding=sharding) if wrap else opt).minimize(fg.mean(y))
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    before = [np.array(scope[n]) for n in ("own_rate_w", "own_rate_b")]
    exe.run(main, feed={"x": np.ones((2, 3), np.float32)}, scope=scope)
    return before, [np.array(scope[n]) for n in ("own_rate_w", "own_rate_b")]


@pytest.mark.parametrize("sharding", [False, True])
def test_a_parameter_with_its_own_rate_keeps_it_under_distributed_optimizer(sharding):
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        (w0, b0), (w1, b1) = _train(wrap=True, sharding=sharding)
    np.testing.assert_array_equal(w1, w0)                                # learning_rate=0: frozen
    np.testing.assert_allclose(b0 - b1, np.full(2, 0.25), rtol=1e-6)     # half the rate
    _, plain = _train(wrap=False)
    np.testing.assert_array_equal(w1, plain[0])
    np.testing.assert_array_equal(b1, plain[1])


def _train_with_clipping(wrap, sharding=False):
    """One SGD step with a global-norm clip of 0.01, the second layer made with need_clip=False."""
    main, startup = fg.Program(), fg.Program()
    main.random_seed = startup.random_seed = 3
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3], "float32")
        h = fg.static.nn.fc(x, 4, weight_attr=fg.ParamAttr(name="clipped_w"), bias_attr=fg.ParamAttr(name="clipped_b"))
        y = fg.static.nn.fc(h, 2, weight_attr=fg.ParamAttr(name="unclipped_w", need_clip=False),
                            bias_attr=fg.ParamAttr(name="unclipped_b", need_clip=False))
        opt = fg.optimizer.SGD(1.0, grad_clip=fg.nn.ClipGradByGlobalNorm(0.01))
        (dist.DistributedOptimizer(opt, sharding=sharding) if wrap else opt).minimize(fg.mean(y * y))
    scope, exe = fg.Scope(), fg.Executor()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": np.ones((2, 3), np.float32)}, scope=scope)
    return [np.array(scope[n]) for n in ("clipped_w", "clipped_b", "unclipped_w", "unclipped_b")]


@pytest.mark.parametrize("sharding", [False, True])
def test_need_clip_false_is_kept_under_distributed_optimizer(sharding):
    """The shard kernels clip every gradient of a bucket alike: a parameter left out of clipping
    makes DistributedOptimizer fall back to the optimizer's own clip and update ops."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = _train_with_clipping(wrap=True, sharding=sharding)
    for ours, plain in zip(got, _train_with_clipping(wrap=False)):
        np.testing.assert_array_equal(ours, plain)
