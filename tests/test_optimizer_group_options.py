"""Parameter groups as torch code uses them: a parameter listed twice, options written into
`optimizer.param_groups`, checked against torch.optim 2.13 step by step."""
import warnings

import numpy as np
import pytest
import torch

import fluidgrad as fg

_RNG = np.random.default_rng(13)


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_a_parameter_listed_twice_warns_as_torch_and_is_updated_once(name, eager):
    w = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters") as caught:
        opt = getattr(fg.optimizer, name)([w, w], lr=0.1)
    assert caught[0].filename == __file__           # the warning names the caller's line
    assert len(opt.param_groups[0]["params"]) == 1
    (w * w).sum().backward()
    opt.step()
    once = fg.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    single = getattr(fg.optimizer, name)([once], lr=0.1)
    (once * once).sum().backward()
    single.step()
    np.testing.assert_array_equal(w.numpy(), once.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(fg.optimizer, name)([w, once], lr=0.1)


def test_a_parameter_in_two_groups_is_refused_as_torch_refuses_it(eager):
    w, v = (fg.to_tensor(np.ones(2), stop_gradient=False) for _ in range(2))
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        fg.optimizer.Adam([{"params": [w]}, {"params": [v, w]}], lr=0.1)
    opt = fg.optimizer.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [v, w]})
    reference = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        torch.optim.Adam([{"params": [reference]}, {"params": [reference]}], lr=0.1)
