"""AdamW's decoupled decay per parameter in static programs too: apply_decay_param_fun (Paddle 2)
and a group's own weight_decay become the decay attribute of that parameter's update op."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg


def _static_step(make_optimizer):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 2], "float32")
        out = fg.static.nn.fc(x, 3)
        loss = fg.sum(out) * 0.0                         # zero gradients: only the decay moves
        make_optimizer(main).minimize(loss)
    exe = fg.Executor()
    exe.run(startup)
    weight, bias = (p.name for p in main.global_block().all_parameters())
    scope = fg.global_scope()
    before = {n: np.array(scope.find_var(n)) for n in (weight, bias)}
    exe.run(main, feed={"x": np.ones((2, 2), "float32")}, fetch_list=[loss])
    return weight, bias, before, {n: np.array(scope.find_var(n)) for n in (weight, bias)}


def test_apply_decay_param_fun_in_a_static_program():
    weight, bias, before, after = _static_step(lambda main: fg.optimizer.AdamW(
        0.1, weight_decay=0.5, apply_decay_param_fun=lambda name: name.endswith("w_0")))
    np.testing.assert_allclose(after[weight], before[weight] * (1 - 0.1 * 0.5), rtol=1e-6)
    np.testing.assert_array_equal(after[bias], before[bias])


def test_apply_decay_param_fun_must_be_callable():
    with pytest.raises(TypeError, match="apply_decay_param_fun must be callable"):
        fg.optimizer.AdamW(0.1, apply_decay_param_fun="bias")
