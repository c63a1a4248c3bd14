"""fluidgrad.save / fluidgrad.load of eager state, PyTorch habits of optimizers and layers,
and the Executor's place (DESIGN.md section 13)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.framework import unique_name_guard
from fluidgrad.serialization import CheckpointError


def _model():
    return fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 3))


def _batch(step):
    rng = np.random.default_rng(step)
    return (fg.to_tensor(rng.standard_normal((16, 4)).astype("float32")),
            fg.to_tensor(rng.integers(0, 3, (16, 1))))


def _train(model, opt, steps, first=0):
    losses = []
    for step in range(first, first + steps):
        x, y = _batch(step)
        loss = fg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.numpy()))
    return losses


@pytest.mark.parametrize("make_opt", [
    lambda ps: fg.optimizer.Adam(ps, lr=0.01),
    lambda ps: fg.optimizer.Momentum(learning_rate=0.05, momentum=0.9, parameters=ps),
    lambda ps: fg.optimizer.AdamW(ps, lr=0.01, weight_decay=0.1),
], ids=["adam", "momentum", "adamw"])
def test_checkpoint_and_resume_continue_exactly(tmp_path, make_opt):
    """Train 3 steps, save model and optimizer, train 3 more; a fresh model and optimizer loaded
    from the checkpoint (names counted afresh, as in a new process) train the same 3 steps to
    bit-identical losses and parameters."""
    with unique_name_guard():
        model = _model()
        opt = make_opt(model.parameters())
        _train(model, opt, 3)
        fg.save(model.state_dict(), tmp_path / "model.safetensors")
        fg.save(opt.state_dict(), tmp_path / "opt.safetensors")
        expected = _train(model, opt, 3, first=3)
        expected_params = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with unique_name_guard():
        resumed = _model()
        resumed_opt = make_opt(resumed.parameters())
        missing, unexpected = resumed.load_state_dict(fg.load(tmp_path / "model.safetensors"))
        assert missing == [] and unexpected == []
        resumed_opt.set_state_dict(fg.load(tmp_path / "opt.safetensors"))
        assert _train(resumed, resumed_opt, 3, first=3) == expected
    for name, value in resumed.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), expected_params[name])


def test_nested_structures_round_trip(tmp_path):
    state = {"epoch": 7, "lr": 0.5, "name": "run-1", "nothing": None, "flag": True,
             "weights": fg.to_tensor(np.arange(6.0).reshape(2, 3), stop_gradient=False),
             "mask": np.array([True, False]), "ids": np.array([1, 2, 3], dtype=np.int32),
             "scalar": np.float64(2.5), "history": [1.0, 2.0, {"deep": np.zeros((0, 2))}], "pair": (1, 2)}
    fg.save(state, tmp_path / "s")
    back = fg.load(tmp_path / "s")
    assert {k: back[k] for k in ("epoch", "lr", "name", "nothing", "flag", "scalar", "pair")} == \
        {"epoch": 7, "lr": 0.5, "name": "run-1", "nothing": None, "flag": True, "scalar": 2.5, "pair": (1, 2)}
    assert isinstance(back["weights"], fg.Tensor) and back["weights"].stop_gradient is False
    np.testing.assert_array_equal(back["weights"].numpy(), np.arange(6.0).reshape(2, 3))
    assert back["mask"].dtype == np.bool_ and back["ids"].dtype == np.int32
    assert back["history"][2]["deep"].shape == (0, 2)
    back["ids"][0] = 9  # loaded arrays are owned and writable


def test_save_is_atomic_and_keeps_the_old_file_on_failure(tmp_path):
    path = tmp_path / "ckpt"
    fg.save({"w": np.ones(3)}, path)
    with pytest.raises(CheckpointError, match=r"state\.bad is a object"):
        fg.save({"w": np.zeros(3), "bad": object()}, path)
    np.testing.assert_array_equal(fg.load(path)["w"], np.ones(3))
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]  # no temp file left behind


@pytest.mark.parametrize("content, pattern", [
    (b"", "not a readable fluidgrad state file"),
    (b"not a checkpoint at all", "not a readable fluidgrad state file"),
])
def test_unreadable_files_are_clear_errors(tmp_path, content, pattern):
    path = tmp_path / "x"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=pattern):
        fg.load(path)


def test_truncated_and_foreign_files_are_refused(tmp_path):
    fg.save({"w": np.ones((64, 64))}, tmp_path / "good")
    raw = (tmp_path / "good").read_bytes()
    (tmp_path / "cut").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CheckpointError, match="not a readable"):
        fg.load(tmp_path / "cut")
    import safetensors.numpy
    (tmp_path / "foreign").write_bytes(safetensors.numpy.save({"w": np.ones(2)}, metadata={"format": "fluidgrad.state/9"}))
    with pytest.raises(CheckpointError, match="not one written by fluidgrad.save"):
        fg.load(tmp_path / "foreign")
    for metadata in (None, {"format": "pt"}):     # plain safetensors (PyTorch / Hugging Face): tensors by name
        (tmp_path / "plain").write_bytes(safetensors.numpy.save({"w": np.ones(2), "b": np.zeros(3, "int32")},
                                                                metadata=metadata))
        plain = fg.load(tmp_path / "plain")
        assert sorted(plain) == ["b", "w"] and isinstance(plain["w"], fg.Tensor) and plain["b"].dtype == "int32"
        np.testing.assert_array_equal(plain["w"].numpy(), np.ones(2))
    with pytest.raises(CheckpointError, match="does not exist"):
        fg.load(tmp_path / "missing")


def test_keys_json_cannot_keep_and_object_arrays_are_refused(tmp_path):
    """Number, bool and None keys round trip (review s13); a tuple key is refused by name."""
    fg.save({1: np.ones(2), 2.5: "x", None: 0}, tmp_path / "k")
    loaded = fg.load(tmp_path / "k")
    assert list(loaded) == [1, 2.5, None] and loaded[2.5] == "x" and loaded[None] == 0
    with pytest.raises(CheckpointError, match="keys must be strings, numbers"):
        fg.save({(1, 2): np.ones(2)}, tmp_path / "t")
    with pytest.raises(CheckpointError, match="dtype object"):
        fg.save({"a": np.array([None])}, tmp_path / "o")


def test_optimizer_accepts_pytorch_and_paddle_spellings():
    params = _model().parameters()
    assert fg.optimizer.Adam(params, lr=0.02).get_lr() == 0.02
    assert fg.optimizer.Adam(learning_rate=0.03, parameters=params).get_lr() == 0.03
    assert fg.optimizer.SGD(params).get_lr() == 0.001
    assert fg.optimizer.Adam(iter(params))._parameter_list == params
    with pytest.raises(TypeError, match="learning rate once"):
        fg.optimizer.SGD(learning_rate=0.1, lr=0.2, parameters=params)
    with pytest.raises(TypeError, match="parameters given twice"):
        fg.optimizer.SGD(params, parameters=params)


def test_zero_grad_set_to_none_false_keeps_zeroed_arrays():
    model = _model()
    opt = fg.optimizer.SGD(model.parameters(), lr=0.1)
    x, y = _batch(0)
    fg.nn.functional.cross_entropy(model(x), y).backward()
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("place", [None, "cpu", "CPU", fg.CPUPlace()])
def test_executor_runs_on_the_cpu(place):
    fg.Executor(place)


@pytest.mark.parametrize("place", ["gpu", "cuda:0", "xpu", 3])
def test_executor_refuses_other_places(place):
    with pytest.raises(ValueError, match="runs on the CPU only"):
        fg.Executor(place)


def test_paths_that_spell_alike_keep_their_own_arrays(tmp_path):
    state = {"a.b": np.full(2, 1.0), "a": {"b": np.full(2, 2.0)}, "a.b#1": np.full(2, 3.0),
             "x": [np.full(1, 4.0)], "x[0]": np.full(1, 5.0)}
    fg.save(state, tmp_path / "s")
    back = fg.load(tmp_path / "s")
    for got, want in [(back["a.b"], 1.0), (back["a"]["b"], 2.0), (back["a.b#1"], 3.0),
                      (back["x"][0], 4.0), (back["x[0]"], 5.0)]:
        np.testing.assert_array_equal(got, np.full_like(got, want))


def test_a_file_written_before_collision_suffixes_still_loads(tmp_path):
    import safetensors.numpy
    structure = {"dict": [["w", {"tensor": "state.w", "stop_gradient": False}],
                          ["opt", {"dict": [["m", {"array": "state.opt.m"}], ["step", {"value": 3}]]}]]}
    metadata = {"format": "fluidgrad.state/1", "fluidgrad.structure": json.dumps(structure)}
    arrays = {"state.w": np.arange(3.0), "state.opt.m": np.ones((2, 2), np.float32)}
    (tmp_path / "old").write_bytes(safetensors.numpy.save(arrays, metadata=metadata))
    back = fg.load(tmp_path / "old")
    np.testing.assert_array_equal(back["w"].numpy(), np.arange(3.0))
    assert back["w"].stop_gradient is False and back["opt"]["step"] == 3
    np.testing.assert_array_equal(back["opt"]["m"], np.ones((2, 2), np.float32))
