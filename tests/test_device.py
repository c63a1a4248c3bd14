"""x.device (fluidgrad/framework/device.py): the CPU, on Tensors, Parameters and Variables, taken
back by every device argument (Executor, set_device, Layer.to, x.to, x.new_zeros), and every one of
them refusing another device the same way."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


@pytest.fixture
def values(monkeypatch):
    """A Tensor, a Layer's Parameter, a static Variable and a static Parameter."""
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)
    layer = fg.nn.Linear(3, 2)
    with fg.program_guard(fg.Program(), fg.Program()):
        variable = fg.static.data("v", [-1, 3], "float32")
        parameter = fg.static.create_parameter([3, 2], "float32")
    return {"tensor": fg.to_tensor(np.ones(3)), "layer weight": layer.weight, "variable": variable,
            "static parameter": parameter}


def test_every_value_is_on_the_cpu(values):
    for what, x in values.items():
        device = x.device
        assert str(device) == "cpu" and repr(device) == "CPUPlace()", what
        assert device == "cpu" and device == "CPU:0" and device == fg.CPUPlace() and device != "cuda", what
        assert hash(device) == hash("cpu") and {device: 1}["cpu"] == 1, what
        assert device.type == "cpu" and device.index is None and x.place == device, what
        assert x.is_cuda is False and x.is_cpu is True and x.get_device() == -1 and x.cpu() is x, what
        assert x.to(device) is x and x.to("cpu") is x and x.to(device=device) is x, what


CPU_NAMES = [None, "cpu", "CPU", "cpu:0", fg.CPUPlace(), torch.device("cpu")]
OTHER_DEVICES = ["cuda", "cuda:0", "gpu", "gpu:1", "mps", 0, torch.device("cuda")]


def _device_arguments():
    """Everything that takes a device, as call(device)."""
    x = fg.to_tensor(np.ones(3))
    return {"Executor": lambda d: fg.Executor(d), "set_device": lambda d: fg.set_device("cpu" if d is None else d),
            "Layer.to": lambda d: fg.nn.Linear(3, 2).to(d), "x.to": lambda d: x.to(d),
            "x.to(device=)": lambda d: x.to(device=d), "x.new_zeros": lambda d: x.new_zeros(2, device=d)}


@pytest.mark.parametrize("call", sorted(_device_arguments()))
@pytest.mark.parametrize("device", CPU_NAMES, ids=repr)
def test_device_arguments_take_the_cpu_and_x_device(call, device, values):
    fn = _device_arguments()[call]
    fn(device)
    fn(values["tensor"].device)


@pytest.mark.parametrize("call", sorted(_device_arguments()))
@pytest.mark.parametrize("device", OTHER_DEVICES, ids=repr)
def test_device_arguments_refuse_other_devices_alike(call, device, values):
    with pytest.raises(ValueError, match=r"fluidgrad runs on the CPU only .*got device"):
        _device_arguments()[call](device)


def test_to_takes_torchs_forms(values):
    x = values["tensor"]
    assert x.to(x.device, "float32").dtype == "float32" and x.to("float32", device="cpu").dtype == "float32"
    assert x.to(values["layer weight"]).dtype == "float32" and x.to(fg.float64) is x
    assert x.to("cpu", non_blocking=True, copy=False) is x and x.to(dtype="float16").dtype == "float16"
    with pytest.raises(TypeError, match="'flaot32' is neither a dtype nor a device"):
        x.to("flaot32")
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['pin'\\]"):
        x.to("cpu", pin=True)
    layer = fg.nn.Linear(3, 2)
    assert layer.to(x.device) is layer and layer.to(x.device, "float64").weight.dtype == "float64"
    with fg.program_guard(fg.Program(), fg.Program()):
        v = fg.static.data("v", [-1, 3], "float32")
        out = v.to(v.device, "float64")
    assert out.dtype == "float64" and out.shape == (-1, 3)
