"""PyTorch and Paddle habits that fluidgrad accepts: Tensor.requires_grad / item / to, one keyword
convention across the static builders (old Fluid names deprecated), Paddle's parameter names."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import fluidgrad as fg


def test_requires_grad_is_the_inverse_of_stop_gradient():
    t = fg.to_tensor(np.ones(3))
    assert t.requires_grad is False
    t.requires_grad = True
    assert t.stop_gradient is False
    fg.sum(t * t).backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * np.ones(3))
    assert fg.to_tensor(np.ones(2)).requires_grad_().requires_grad is True


def test_item_and_to():
    t = fg.to_tensor(np.array([2.5], "float32"))
    assert t.item() == 2.5 and isinstance(t.item(), float)
    with pytest.raises(ValueError, match="only a one-element tensor"):
        fg.to_tensor(np.ones(3)).item()
    assert t.to("float64").dtype == "float64" and t.to("cpu") is t and t.to("float32") is t
    with pytest.raises(ValueError, match="CPU only"):
        t.to(device="cuda")
    x = fg.to_tensor(np.ones(2, "float32"), stop_gradient=False)
    fg.sum(x.to("float64") * 3.0).backward()  # the cast is recorded: gradients flow through it
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_eager_layers_name_parameters_as_paddle():
    layer = fg.nn.Linear(2, 3)
    assert layer.weight.name.endswith(".w_0") and layer.bias.name.endswith(".b_0")


def _image():
    return fg.static.data("img", [None, 1, 4, 4])


@pytest.mark.parametrize("build", [
    lambda: fg.static.nn.conv2d(_image(), 2, 3, activation="relu", weight_attr=fg.ParamAttr(name="w")),
    lambda: fg.static.nn.batch_norm(_image(), activation="relu", weight_attr=fg.ParamAttr(name="w")),
    lambda: fg.static.nn.layer_norm(_image(), activation="relu", weight_attr=fg.ParamAttr(name="w")),
    lambda: fg.static.nn.fc(_image(), 3, activation="relu", weight_attr=fg.ParamAttr(name="w")),
], ids=["conv2d", "batch_norm", "layer_norm", "fc"])
def test_every_builder_takes_activation_and_weight_attr(build):
    main = fg.Program()
    with fg.program_guard(main, fg.Program()), warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn about nothing
        build()
    assert "w" in main.global_block().vars
    assert main.global_block().ops[-1].type == "relu"


@pytest.mark.parametrize("builder, old", [("conv2d", "act"), ("batch_norm", "act"), ("layer_norm", "act"),
                                          ("fc", "act"), ("conv2d", "param_attr"), ("fc", "param_attr")])
def test_old_fluid_keywords_still_work_with_a_deprecation_warning(builder, old):
    value = "relu" if old == "act" else fg.ParamAttr(name="w")
    args = {"conv2d": (2, 3), "fc": (3,)}.get(builder, ())
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        with pytest.warns(DeprecationWarning, match=f"{builder}: {old}= is deprecated, use "):
            getattr(fg.static.nn, builder)(_image(), *args, **{old: value})
        with pytest.raises(TypeError, match="not both"):
            getattr(fg.static.nn, builder)(_image(), *args, **{old: value,
                                                              {"act": "activation", "param_attr": "weight_attr"}[old]: value})


def test_embedding_takes_weight_attr_or_the_contract_param_attr():
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        ids = fg.static.data("ids", [None, 2], "int64")
        fg.static.nn.embedding(ids, [5, 3], weight_attr=fg.ParamAttr(name="table_a"))
        fg.static.nn.embedding(ids, [5, 3], param_attr=fg.ParamAttr(name="table_b"))
        with pytest.raises(TypeError, match="not both"):
            fg.static.nn.embedding(ids, [5, 3], param_attr="x", weight_attr="y")
    assert {"table_a", "table_b"} <= set(main.global_block().vars)
