"""PyTorch's dim= (start_dim= / end_dim=, dims=) on every public function taking Paddle's axis=
(fluidgrad/framework/torch_forms.py), and torch's forms whose dim= changes what comes back
(fluidgrad/tensor/torch_returns.py: max / min / sort pairs, split sizes): torch 2.13.0 the oracle,
values and gradients in eager and static mode."""
import inspect

import numpy as np
import pytest
import torch

import fluidgrad as fg
from both_modes import compare_with_torch

_X = np.random.default_rng(12).standard_normal((3, 4, 5))
_PADDLE_AXES = ("axis", "axes", "start_axis", "stop_axis")
# public functions with an axis parameter that torch has no function for (so no dim= to accept)
_NO_TORCH_FORM = {"slice", "strided_slice"}


def _public_functions():
    for prefix, module in (("fg", fg), ("F", fg.nn.functional)):
        for name in sorted(getattr(module, "__all__", dir(module))):
            value = getattr(module, name, None)
            if name.startswith("_") or isinstance(value, type) or not callable(value) or inspect.ismodule(value):
                continue
            try:
                params = inspect.signature(value, follow_wrapped=False).parameters
            except (TypeError, ValueError):
                continue
            if any(p in params for p in _PADDLE_AXES) and name not in _NO_TORCH_FORM:
                yield f"{prefix}.{name}", params


def test_every_function_taking_axis_takes_torchs_dim():
    missing = [name for name, params in _public_functions()
               if not ("dim" in params or "dims" in params or ("start_dim" in params and "end_dim" in params))]
    assert not missing, f"functions taking axis= but not torch's dim=: {missing}"


def test_the_search_sees_the_functions():
    names = {name for name, _ in _public_functions()}
    assert {"fg.sum", "fg.cumsum", "fg.flatten", "fg.max", "F.normalize", "F.cosine_similarity"} <= names


# call -> (the same call on fluidgrad and on torch, differentiable)
_CALLS = {
    "sum(x, dim=1)": lambda m, x: m.sum(x, dim=1),
    "sum(x, dim=(0, 2), keepdim=True)": lambda m, x: m.sum(x, dim=(0, 2), keepdim=True),
    "mean(x, dim=-1)": lambda m, x: m.mean(x, dim=-1),
    "prod(x, dim=1)": lambda m, x: m.prod(x, dim=1),
    "amax(x, dim=2)": lambda m, x: m.amax(x, dim=2),
    "logsumexp(x, dim=1)": lambda m, x: m.logsumexp(x, dim=1),
    "cumsum(x, dim=2)": lambda m, x: m.cumsum(x, dim=2),
    "logcumsumexp(x, dim=0)": lambda m, x: m.logcumsumexp(x, dim=0),
    "std(x, dim=1)": lambda m, x: m.std(x, dim=1),
    "var(x, dim=1, keepdim=True)": lambda m, x: m.var(x, dim=1, keepdim=True),
    "norm(x, dim=1)": lambda m, x: m.norm(x, dim=1),
    "max(x, dim=1).values": lambda m, x: m.max(x, dim=1).values,
    "min(x, dim=2, keepdim=True)[0]": lambda m, x: m.min(x, dim=2, keepdim=True)[0],
    "sort(x, dim=1, descending=True).values": lambda m, x: m.sort(x, dim=1, descending=True).values,
    "topk(x, 2, dim=1)[0]": lambda m, x: m.topk(x, 2, dim=1)[0],
    "kthvalue(x, 2, dim=2)[0]": lambda m, x: m.kthvalue(x, 2, dim=2)[0],
    "cummax(x, dim=1)[0]": lambda m, x: m.cummax(x, dim=1)[0],
    "unsqueeze(x, dim=1)": lambda m, x: m.unsqueeze(x, dim=1),
    "squeeze(x[:, :1], dim=1)": lambda m, x: m.squeeze(x[:, :1], dim=1),
    "flatten(x, start_dim=1)": lambda m, x: m.flatten(x, start_dim=1),
    "flatten(x, start_dim=0, end_dim=1)": lambda m, x: m.flatten(x, start_dim=0, end_dim=1),
    "stack([x, x], dim=2)": lambda m, x: m.stack([x, x], dim=2),
    "concat([x, x], dim=1)": lambda m, x: (m.concat if m is fg else m.cat)([x, x], dim=1),
    "split(x, 2, dim=2)[2]": lambda m, x: m.split(x, 2, dim=2)[2],
    "chunk(x, 2, dim=1)[1]": lambda m, x: m.chunk(x, 2, dim=1)[1],
    "unbind(x, dim=1)[3]": lambda m, x: m.unbind(x, dim=1)[3],
    "flip(x, dims=[0, 2])": lambda m, x: m.flip(x, dims=[0, 2]),
    "roll(x, 2, dims=1)": lambda m, x: m.roll(x, 2, dims=1),
    "rot90(x, 1, dims=[1, 2])": lambda m, x: m.rot90(x, 1, dims=[1, 2]),
    "tensordot(x, x, dims=([1, 2], [1, 2]))": lambda m, x: m.tensordot(x, x, dims=([1, 2], [1, 2])),
    "repeat_interleave(x, 2, dim=1)": lambda m, x: m.repeat_interleave(x, 2, dim=1),
    "diff(x, dim=1)": lambda m, x: m.diff(x, dim=1),
    "cross(x[:, :3], x[:, 1:], dim=1)": lambda m, x: m.cross(x[:, :3], x[:, 1:], dim=1),
    "quantile(x, 0.3, dim=1)": lambda m, x: m.quantile(x, 0.3, dim=1),
    "nansum(x, dim=1)": lambda m, x: m.nansum(x, dim=1),
    "nanmean(x, dim=1)": lambda m, x: m.nanmean(x, dim=1),
    "median(x, dim=1).values": lambda m, x: m.median(x, dim=1).values,
    "var(x, dim=2, correction=0)": lambda m, x: m.var(x, dim=2, correction=0),
    "F.normalize(x, dim=2)": lambda m, x: m.nn.functional.normalize(x, dim=2),
    "F.cosine_similarity(x, 2x + 1, dim=2)": lambda m, x: m.nn.functional.cosine_similarity(x, x * 2 + 1, dim=2),
    "F.glu(x, dim=1)": lambda m, x: m.nn.functional.glu(x, dim=1),
}


@pytest.mark.parametrize("call", sorted(_CALLS))
def test_dim_keyword_matches_torch_in_both_modes(call):
    fn = _CALLS[call]
    compare_with_torch(lambda x: fn(fg, x), lambda x: fn(torch, x), {"x": _X}, wrt=["x"])


_INTEGER_CALLS = {
    "argmax(x, dim=1)": lambda m, x: m.argmax(x, dim=1),
    "argmin(x, dim=2, keepdim=True)": lambda m, x: m.argmin(x, dim=2, keepdim=True),
    "argsort(x, dim=1)": lambda m, x: m.argsort(x, dim=1),
    "max(x, dim=1).indices": lambda m, x: m.max(x, dim=1).indices,
    "sort(x, dim=0)[1]": lambda m, x: m.sort(x, dim=0)[1],
    "median(x, dim=1).indices": lambda m, x: m.median(x, dim=1).indices,
    "count_nonzero(x > 0, dim=1)": lambda m, x: m.count_nonzero(x > 0, dim=1),
    "any(x > 1, dim=1)": lambda m, x: m.any(x > 1, dim=1),
    "all(x > -2, dim=1)": lambda m, x: m.all(x > -2, dim=1),
}


@pytest.mark.parametrize("call", sorted(_INTEGER_CALLS))
def test_dim_keyword_of_index_and_bool_results(call):
    fn = _INTEGER_CALLS[call]
    compare_with_torch(lambda x: fn(fg, x), lambda x: fn(torch, x), {"x": _X})


def test_paddle_forms_keep_paddles_meaning(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    x = fg.to_tensor(_X)
    assert tuple(fg.max(x, axis=1).shape) == (3, 5)          # Paddle's: the values alone
    assert tuple(fg.sort(x, axis=1).shape) == (3, 4, 5)
    assert [tuple(p.shape) for p in fg.split(x, 2, axis=1)] == [(3, 2, 5), (3, 2, 5)]   # 2 parts
    assert [tuple(p.shape) for p in fg.split(x, 3, dim=1)] == [(3, 3, 5), (3, 1, 5)]    # parts of 3
    assert tuple(fg.max(x, x * 2).shape) == (3, 4, 5)
    # the method is the function
    assert fg.Tensor.max is fg.max and fg.Tensor.sort is fg.sort and fg.Tensor.split is fg.split
    assert fg.Tensor.median is fg.median and fg.Tensor.var is fg.var


_BOTH = {
    "sum(x, 1, dim=1)": lambda x: fg.sum(x, 1, dim=1),
    "sum(x, axis=1, dim=1)": lambda x: fg.sum(x, axis=1, dim=1),
    "cumsum(x, axis=0, dim=0)": lambda x: fg.cumsum(x, axis=0, dim=0),
    "flatten(x, 1, start_dim=1)": lambda x: fg.flatten(x, 1, start_dim=1),
    "max(x, 1, dim=1)": lambda x: fg.max(x, 1, dim=1),
    "sort(x, axis=0, dim=0)": lambda x: fg.sort(x, axis=0, dim=0),
    "F.normalize(x, axis=1, dim=1)": lambda x: fg.nn.functional.normalize(x, axis=1, dim=1),
    "flip(x, axis=0, dims=0)": lambda x: fg.flip(x, axis=0, dims=0),
}


@pytest.mark.parametrize("call", sorted(_BOTH))
def test_an_axis_given_both_ways_is_an_error_naming_both(call, monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    with pytest.raises(TypeError, match=r"give (axis|start_axis)= (\(Paddle\) )?or (dim|start_dim|dims)=( \(PyTorch\))?, not both"):
        _BOTH[call](fg.to_tensor(_X))


def test_signatures_show_dim():
    assert "dim" in inspect.signature(fg.sum).parameters
    assert "start_dim" in inspect.signature(fg.flatten).parameters
    assert "dims" in inspect.signature(fg.flip).parameters
