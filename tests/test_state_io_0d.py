"""fluidgrad.save keeps 0-D values 0-D and [1] values [1], and says so in the file (format
"fluidgrad.state/2"); files of format 1, written before, stored 0-D values as [1]: they still
load into Layers and optimizers whose parameters are 0-D, while a [1] value from a current file
never fills a 0-D parameter."""
from __future__ import annotations

import numpy as np
import pytest
import safetensors
import safetensors.numpy

import fluidgrad as fg


class ScaledLinear(fg.nn.Layer):
    """A 0-D parameter (scale) next to a [1] one (offset)."""

    def __init__(self):
        super().__init__()
        self.linear = fg.nn.Linear(3, 2)
        self.scale = self.create_parameter([], dtype="float32")
        self.offset = self.create_parameter([1], dtype="float32")

    def forward(self, x):
        return self.linear(x) * self.scale + self.offset


def _trained():
    model = ScaledLinear()
    opt = fg.optimizer.Adam(parameters=model.parameters(), learning_rate=0.1)
    fg.mean(model(fg.to_tensor(np.ones((4, 3), "float32")))).backward()
    opt.step()
    return model, opt


def _format_1_copy(path, old_path):
    """The file as fluidgrad.save wrote it before 0-D values were kept 0-D."""
    with safetensors.safe_open(str(path), framework="numpy") as handle:
        metadata = dict(handle.metadata())
        arrays = {k: np.ascontiguousarray(handle.get_tensor(k)) for k in handle.keys()}  # 0-D -> [1]
    metadata["format"] = "fluidgrad.state/1"
    old_path.write_bytes(safetensors.numpy.save(arrays, metadata=metadata))


def test_a_current_file_keeps_0d_and_1_apart_and_names_its_format(tmp_path):
    model, opt = _trained()
    fg.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path / "ck")
    with safetensors.safe_open(str(tmp_path / "ck"), framework="numpy") as handle:
        assert handle.metadata()["format"] == "fluidgrad.state/2"
        shapes = {k: handle.get_slice(k).get_shape() for k in handle.keys()}
    assert shapes["state.model.scale"] == [] and shapes["state.model.offset"] == [1]
    loaded = fg.load(tmp_path / "ck")
    assert type(loaded["model"]) is dict and not hasattr(loaded["model"], "zero_d_as_shape_1")
    assert loaded["model"]["scale"].shape == () and loaded["model"]["offset"].shape == (1,)
    assert sorted(np.ndim(slots["Moment1"]) for slots in loaded["opt"]["state"].values()) == [0, 1, 1, 2]
    again = ScaledLinear()
    again.set_state_dict(loaded["model"])
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(again.state_dict()[name].numpy(), value.numpy())
        assert again.state_dict()[name].shape == value.shape


def test_a_format_1_file_loads_into_0d_parameters_and_accumulators(tmp_path):
    model, opt = _trained()
    opt_state = opt.state_dict()   # 0-D moments as 0-D arrays
    fg.save({"model": model.state_dict(), "opt": opt_state}, tmp_path / "new")
    _format_1_copy(tmp_path / "new", tmp_path / "old")
    loaded = fg.load(tmp_path / "old")
    assert loaded["model"]["scale"].shape == (1,)            # as stored: [1] may mean 0-D here
    assert sorted(np.ndim(slots["Moment1"]) for slots in loaded["opt"]["state"].values()) == [1, 1, 1, 2]
    assert getattr(loaded["model"], "zero_d_as_shape_1", False) and getattr(loaded["opt"], "zero_d_as_shape_1")
    again = ScaledLinear()
    again_opt = fg.optimizer.Adam(parameters=again.parameters(), learning_rate=0.1)
    again.set_state_dict(loaded["model"])
    again_opt.set_state_dict(loaded["opt"])
    assert again.scale.shape == () and again.offset.shape == (1,)
    np.testing.assert_array_equal(again.scale.numpy(), model.scale.numpy())
    np.testing.assert_array_equal(again.offset.numpy(), model.offset.numpy())
    # the next step from the restored state equals the next step of the original
    for m, o in ((model, opt), (again, again_opt)):
        o.clear_grad()
        fg.mean(m(fg.to_tensor(np.full((4, 3), 0.5, "float32")))).backward()
        o.step()
    np.testing.assert_array_equal(again.scale.numpy(), model.scale.numpy())
    np.testing.assert_array_equal(again.linear.weight.numpy(), model.linear.weight.numpy())


def test_a_1_value_from_a_current_dict_does_not_fill_a_0d_parameter(tmp_path):
    model, opt = _trained()
    state = model.state_dict()
    state["scale"] = fg.to_tensor(np.ones(1, "float32"))
    with pytest.raises(ValueError, match=r"scale has shape \[\] in ScaledLinear, the state dict gives \[1\]"):
        ScaledLinear().set_state_dict(state)
    moments = opt.state_dict()
    key = next(k for k, slots in moments["state"].items() if np.shape(slots["Moment1"]) == ())
    moments["state"][key]["Moment1"] = np.zeros(1, "float32")
    with pytest.raises(ValueError, match=rf"state\[{key}\].Moment1 \(parameter .*\) has shape \[1\], expected \[\]"):
        fg.optimizer.Adam(parameters=ScaledLinear().parameters()).set_state_dict(moments)


def test_a_file_of_an_unknown_format_is_refused(tmp_path):
    fg.save({"x": np.zeros(2)}, tmp_path / "ck")
    with safetensors.safe_open(str(tmp_path / "ck"), framework="numpy") as handle:
        metadata = dict(handle.metadata())
    metadata["format"] = "fluidgrad.state/9"
    (tmp_path / "bad").write_bytes(safetensors.numpy.save({"state.x": np.zeros(2)}, metadata=metadata))
    with pytest.raises(fg.serialization.CheckpointError, match="fluidgrad.state/9"):
        fg.load(tmp_path / "bad")
