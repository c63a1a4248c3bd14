"""fluidgrad.io: save/load roundtrips, inference models, and every way a file can be bad."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad import io
from fluidgrad.framework import BACKWARD, OPTIMIZE
from fluidgrad.framework.serialize import program_to_dict


def _build(hidden: int = 8, train: bool = True):
    """x -> fc(hidden, relu) -> fc(3) = y; loss = mean(y*y); backward (and an optimizer if present)."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        x = fg.static.data("x", [None, 4])
        h = fg.static.nn.fc(x, hidden, activation="relu")
        y = fg.static.nn.fc(h, 3)
        loss = fg.mean(y * y)
        if train:
            _minimize(loss)
    return main, startup, x, y, loss


def _minimize(loss):
    try:
        from fluidgrad.optimizer import SGD
    except ImportError:  # optimizers land in a parallel change; backward ops alone still test pruning
        fg.append_backward(loss)
    else:
        SGD(learning_rate=0.1).minimize(loss)


def _init(startup, seed=0):
    scope = fg.Scope()
    fg.seed(seed)
    fg.Executor().run(startup, scope=scope)
    return scope


def _snapshot(scope):
    return {name: (value, value.copy()) for name, value in scope.vars.items()}


def _assert_unchanged(scope, snapshot):
    assert set(scope.vars) == set(snapshot)
    for name, (obj, copy) in snapshot.items():
        assert scope.vars[name] is obj, f"{name} was replaced"
        np.testing.assert_array_equal(scope.vars[name], copy)


def test_save_load_roundtrip(tmp_path):
    main, startup, *_ = _build()
    src = _init(startup, seed=1)
    io.save(main, tmp_path / "model", scope=src)
    assert (tmp_path / "model.pdmodel.json").exists() and (tmp_path / "model.pdparams.safetensors").exists()
    dst = _init(startup, seed=2)
    assert any(not np.array_equal(src[n], dst[n]) for n in src.vars)
    io.load(main, tmp_path / "model", fg.Executor(), scope=dst)
    assert set(dst.vars) == set(src.vars)
    for name in src.vars:
        np.testing.assert_array_equal(dst[name], src[name])
        assert dst[name].dtype == src[name].dtype


def test_saved_program_is_sorted_indented_json_and_reads_back(tmp_path):
    main, startup, *_ = _build()
    io.save(main, tmp_path / "m", scope=_init(startup))
    text = (tmp_path / "m.pdmodel.json").read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=1, sort_keys=True) + "\n"
    program, feeds, fetches = io.read_model(tmp_path / "m")
    assert (feeds, fetches) == (None, None)
    canonical = lambda prog: json.dumps(program_to_dict(prog), sort_keys=True)  # noqa: E731 (slot order differs)
    assert canonical(program) == canonical(main)


def test_static_namespace_exports_io():
    assert fg.static.save is io.save and fg.static.load is io.load
    assert fg.static.save_inference_model is io.save_inference_model
    assert fg.static.load_inference_model is io.load_inference_model


def test_inference_model_roundtrip_in_fresh_executor_and_scope(tmp_path):
    main, startup, x, y, _ = _build()
    scope = _init(startup)
    exe = fg.Executor()
    feed = {"x": np.random.default_rng(0).standard_normal((5, 4)).astype("float32")}
    exe.run(main, feed=feed, scope=scope)  # one training step, so the saved weights are trained ones
    expected = exe.run(main.clone(for_test=True), feed=feed, fetch_list=[y], scope=scope)[0]

    io.save_inference_model(tmp_path / "inf", [x], [y], exe, program=main, scope=scope)
    fresh_scope = fg.Scope()
    program, feed_names, fetch_vars = io.load_inference_model(tmp_path / "inf", fg.Executor(), scope=fresh_scope)
    assert feed_names == ["x"] and [v.name for v in fetch_vars] == [y.name]
    roles = {op.role for block in program.blocks for op in block.ops}
    assert BACKWARD not in roles and OPTIMIZE not in roles
    assert not any(n.endswith("@GRAD") for n in program.global_block().vars)
    # only the four fc parameters are saved: no optimizer state, no loss
    assert sorted(fresh_scope.vars) == sorted(p.name for p in main.all_parameters())
    got = fg.Executor().run(program, feed=feed, fetch_list=fetch_vars, scope=fresh_scope)[0]
    np.testing.assert_array_equal(got, expected)


def test_inference_model_via_global_scope(tmp_path):
    main, startup, x, y, _ = _build(train=False)
    with fg.scope_guard(fg.Scope()):
        exe = fg.Executor()
        exe.run(startup)
        fg.static.save_inference_model(str(tmp_path / "g"), x, y, exe, program=main)
        feed = {"x": np.ones((2, 4), "float32")}
        expected = exe.run(main, feed=feed, fetch_list=[y])[0]
    with fg.scope_guard(fg.Scope()):
        program, feeds, fetches = fg.static.load_inference_model(str(tmp_path / "g"), fg.Executor())
        np.testing.assert_array_equal(fg.Executor().run(program, feed=feed, fetch_list=fetches)[0], expected)


def test_prune_drops_ops_the_fetch_does_not_need(tmp_path):
    main, startup, x, y, loss = _build()
    pruned = io.save_inference_model(tmp_path / "p", [x], [y], None, program=main, scope=_init(startup))
    types = [op.type for op in pruned.global_block().ops]
    assert types == ["matmul", "elementwise_add", "relu", "matmul", "elementwise_add"]
    assert loss.name not in pruned.global_block().vars


def test_prune_error_names_an_unfed_input(tmp_path):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4])
        z = fg.static.data("z", [None, 4])
        y = fg.static.nn.fc(x, 2) + fg.static.nn.fc(z, 2)
    with pytest.raises(ValueError, match="need 'z', which is neither fed"):
        io.save_inference_model(tmp_path / "p", [x], [y], None, program=main, scope=_init(startup))
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not hasattr(fg.static.nn, "cond"), reason="control flow (static.nn.cond) not built yet")
def test_prune_keeps_sub_blocks_of_kept_control_flow_ops(tmp_path):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4])
        h = fg.static.nn.fc(x, 4)
        unused = fg.static.nn.cond(fg.mean(x) > 100.0, lambda: h * 3.0, lambda: h - 3.0)
        out = fg.static.nn.cond(fg.mean(x) > 0.0, lambda: h * 2.0, lambda: h + 1.0)
    scope = _init(startup)
    feed = {"x": np.random.default_rng(1).standard_normal((3, 4)).astype("float32")}
    expected = fg.Executor().run(main, feed=feed, fetch_list=[out], scope=scope)[0]
    pruned = io.save_inference_model(tmp_path / "c", [x], [out], None, program=main, scope=scope)
    assert pruned.num_blocks < main.num_blocks and pruned.num_blocks > 1
    program, _, fetches = io.load_inference_model(tmp_path / "c", None, scope=fg.Scope())
    loaded_scope = fg.Scope()
    io.load(program, tmp_path / "c", scope=loaded_scope)
    got = fg.Executor().run(program, feed=feed, fetch_list=fetches, scope=loaded_scope)[0]
    np.testing.assert_allclose(got, expected)
    assert unused.name not in program.global_block().vars


# ---------------------------------------------------------------- bad files leave the scope unchanged

@pytest.fixture
def saved(tmp_path):
    main, startup, *_ = _build()
    io.save(main, tmp_path / "m", scope=_init(startup, seed=1))
    scope = _init(startup, seed=2)
    return main, startup, tmp_path / "m", scope, _snapshot(scope)


def test_truncated_params_file(saved):
    main, _, path, scope, snap = saved
    params = path.with_name("m.pdparams.safetensors")
    params.write_bytes(params.read_bytes()[:-10])
    with pytest.raises(io.ModelFileError, match="m.pdparams.safetensors.*truncated or corrupted"):
        io.load(main, path, scope=scope)
    _assert_unchanged(scope, snap)


def test_corrupted_params_file(saved):
    main, _, path, scope, snap = saved
    params = path.with_name("m.pdparams.safetensors")
    data = bytearray(params.read_bytes())
    data[9:20] = b"\xff" * 11  # inside the JSON header
    params.write_bytes(bytes(data))
    with pytest.raises(io.ModelFileError, match="m.pdparams.safetensors"):
        io.load(main, path, scope=scope)
    _assert_unchanged(scope, snap)


def test_missing_params_file(saved):
    main, _, path, scope, snap = saved
    with pytest.raises(io.ModelFileError, match="does not exist"):
        io.load(main, path.with_name("nope"), scope=scope)
    _assert_unchanged(scope, snap)


def test_wrong_shape_names_var_and_both_shapes(saved):
    _, _, path, scope, snap = saved
    other, other_startup, *_ = _build(hidden=9)
    other_scope = _init(other_startup)
    other_snap = _snapshot(other_scope)
    with pytest.raises(io.ModelFileError) as err:
        io.load(other, path, scope=other_scope)
    msg = str(err.value)
    assert "'fc_0.w_0' has shape [4, 8] in the file but [4, 9] in the program" in msg
    assert "'fc_1.w_0' has shape [8, 3] in the file but [9, 3]" in msg
    _assert_unchanged(other_scope, other_snap)
    _assert_unchanged(scope, snap)


def test_wrong_dtype_and_missing_and_extra_vars(tmp_path):
    from safetensors.numpy import save as st_save
    main, startup, *_ = _build(train=False)
    scope = _init(startup)
    snap = _snapshot(scope)
    tensors = {n: v.astype("float64") if n == "fc_0.w_0" else v for n, v in scope.vars.items() if n != "fc_1.b_0"}
    tensors["stranger"] = np.zeros(2, "float32")
    (tmp_path / "w.pdparams.safetensors").write_bytes(st_save(tensors))
    with pytest.raises(io.ModelFileError) as err:
        io.load(main, tmp_path / "w", scope=scope)
    msg = str(err.value)
    assert "'fc_0.w_0' has dtype float64 in the file but float32" in msg
    assert "'fc_1.b_0' is missing" in msg and "'stranger'" in msg
    _assert_unchanged(scope, snap)


def test_non_strict_load_ignores_extra_tensors(tmp_path):
    trained, startup, *_ = _build(train=True)
    scope = _init(startup)
    io.save(trained, tmp_path / "t", scope=scope)
    plain, plain_startup, *_ = _build(train=False)
    target = _init(plain_startup, seed=5)
    io.load(plain, tmp_path / "t", scope=target, strict=False)
    for p in plain.all_parameters():
        np.testing.assert_array_equal(target[p.name], scope[p.name])


@pytest.mark.parametrize("field", ["fluidgrad_model", "program"])
def test_newer_format_version_is_refused(saved, field):
    main, _, path, scope, snap = saved
    model = path.with_name("m.pdmodel.json")
    doc = json.loads(model.read_text())
    if field == "program":
        doc["program"]["format_version"] += 1
    else:
        doc["fluidgrad_model"] += 1
    model.write_text(json.dumps(doc))
    with pytest.raises(io.ModelFileError, match="m.pdmodel.json.*newer than this fluidgrad"):
        io.read_model(path)


def test_newer_params_version_is_refused(tmp_path):
    from safetensors.numpy import save as st_save
    main, startup, *_ = _build(train=False)
    scope = _init(startup)
    snap = _snapshot(scope)
    data = st_save(dict(scope.vars), metadata={"fluidgrad_params": str(io.FILE_FORMAT_VERSION + 1)})
    (tmp_path / "v.pdparams.safetensors").write_bytes(data)
    with pytest.raises(io.ModelFileError, match="newer"):
        io.load(main, tmp_path / "v", scope=scope)
    _assert_unchanged(scope, snap)


def _program_with_a_0d_parameter():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        x = fg.static.data("x", [None, 2])
        scale = fg.static.create_parameter([], "float32", name="temperature")
        fg.static.create_parameter([1], "float32", name="offset")
        y = x * scale
    return main, y


@pytest.mark.parametrize("legacy", [True, False])
def test_a_0d_parameter_saved_as_1_element_loads_only_from_an_old_file(tmp_path, legacy):
    """Files from before 0-D values were kept 0-D hold them as [1] (and lack the marker): those
    still load; in a current file a [1] tensor for a [] variable is a misfit."""
    from safetensors.numpy import save as st_save
    main, _ = _program_with_a_0d_parameter()
    metadata = {"fluidgrad_params": "1"} if legacy else {"fluidgrad_params": "1", "fluidgrad_0d": "kept"}
    arrays = {"temperature": np.array([2.5], np.float32), "offset": np.array([1.0], np.float32)}
    (tmp_path / "old.pdparams.safetensors").write_bytes(st_save(arrays, metadata=metadata))
    scope = fg.Scope()
    if legacy:
        io.load(main, tmp_path / "old", scope=scope)
        assert scope["temperature"].shape == () and float(scope["temperature"]) == 2.5
        assert scope["offset"].shape == (1,)  # a real [1] variable stays [1]
    else:
        with pytest.raises(io.ModelFileError, match=r"'temperature' has shape \[1\] in the file but \[\]"):
            io.load(main, tmp_path / "old", scope=scope)


def test_a_0d_parameter_is_saved_0d(tmp_path):
    from safetensors.numpy import load as st_load
    main, _ = _program_with_a_0d_parameter()
    scope = fg.Scope()
    scope.vars.update(temperature=np.array(2.5, np.float32), offset=np.array([1.0], np.float32))
    io.save(main, tmp_path / "m", scope=scope)
    saved = st_load((tmp_path / "m.pdparams.safetensors").read_bytes())
    assert saved["temperature"].shape == () and saved["offset"].shape == (1,)


@pytest.mark.parametrize("damage", [lambda t: t[: len(t) // 2], lambda t: "{not json" + t, lambda t: "[1, 2]"])
def test_truncated_or_corrupted_model_file(saved, damage):
    _, _, path, scope, snap = saved
    model = path.with_name("m.pdmodel.json")
    model.write_text(damage(model.read_text()))
    with pytest.raises(io.ModelFileError, match="m.pdmodel.json"):
        io.load_inference_model(path, None, scope=scope)
    _assert_unchanged(scope, snap)


def test_load_inference_model_refuses_a_plain_save(saved):
    _, _, path, scope, snap = saved
    with pytest.raises(io.ModelFileError, match="save_inference_model"):
        io.load_inference_model(path, None, scope=scope)
    _assert_unchanged(scope, snap)


def test_save_needs_every_persistable_in_the_scope(tmp_path):
    main, *_ = _build(train=False)
    with pytest.raises(io.ModelFileError, match="fc_0.w_0.*startup"):
        io.save(main, tmp_path / "empty", scope=fg.Scope())
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------- atomic writes

def test_failed_write_leaves_old_file_intact(saved, monkeypatch):
    main, _, path, scope, _ = saved
    params = path.with_name("m.pdparams.safetensors")
    model = path.with_name("m.pdmodel.json")
    before = params.read_bytes(), model.read_bytes()

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        io.save(main, path, scope=scope)  # different values than the file holds
    assert (params.read_bytes(), model.read_bytes()) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.pdmodel.json", "m.pdparams.safetensors"]


def test_atomic_write_creates_directories_and_replaces(tmp_path):
    target = tmp_path / "a" / "b" / "f.bin"
    io.atomic_write(target, b"one")
    io.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert os.listdir(target.parent) == ["f.bin"]


def test_atomic_write_gives_ordinary_file_permissions(tmp_path):
    target = tmp_path / "f.bin"
    umask = os.umask(0o022)
    try:
        io.atomic_write(target, b"x")
    finally:
        os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o644
    target.chmod(0o600)
    io.atomic_write(target, b"y")
    assert target.stat().st_mode & 0o777 == 0o600  # replacing keeps the file's mode


def test_inference_model_runs_batch_norm_and_dropout_in_inference_mode(tmp_path):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        x = fg.static.data("x", [None, 2, 3, 3])
        h = fg.static.nn.batch_norm(fg.static.nn.conv2d(x, 4, 3, padding=1), activation="relu")
        h = fg.static.nn.dropout(h, 0.5)
        y = fg.static.nn.fc(h, 3)
        _minimize(fg.mean(y * y))
    scope = _init(startup)
    exe = fg.Executor()
    feed = {"x": np.random.default_rng(2).standard_normal((4, 2, 3, 3)).astype("float32")}
    for _ in range(3):  # move the running statistics away from their initial values
        exe.run(main, feed=feed, scope=scope)
    expected = exe.run(main.clone(for_test=True), feed=feed, fetch_list=[y], scope=scope)[0]
    io.save_inference_model(tmp_path / "bn", [x], [y], exe, program=main, scope=scope)
    fresh = fg.Scope()
    program, _, fetches = io.load_inference_model(tmp_path / "bn", fg.Executor(), scope=fresh)
    running = [n for n in fresh.vars if not any(n == p.name for p in program.all_parameters() if p.trainable)]
    assert running, "the batch-norm running mean and variance are saved with the model"
    first = fg.Executor().run(program, feed=feed, fetch_list=fetches, scope=fresh)[0]
    second = fg.Executor().run(program, feed=feed, fetch_list=fetches, scope=fresh)[0]
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(second, first)  # no dropout mask, no running-stat updates at inference


def test_save_load_resumes_training_exactly(tmp_path):
    """Optimizer state (moments, step counters, learning rate) is persistable, so it is saved too."""
    from fluidgrad.optimizer import Adam
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), fg.framework.unique_name_guard():
        x = fg.static.data("x", [None, 4])
        loss = fg.mean(fg.square(fg.static.nn.fc(x, 2)))
        Adam(0.1).minimize(loss)
    feeds = [{"x": np.random.default_rng(i).standard_normal((3, 4)).astype("float32")} for i in range(4)]
    exe, scope = fg.Executor(), _init(startup)
    for feed in feeds[:2]:
        exe.run(main, feed=feed, scope=scope)
    io.save(main, tmp_path / "ckpt", scope=scope)
    assert len(scope.vars) > len(main.all_parameters())  # Adam's accumulators are in the checkpoint
    continued = [exe.run(main, feed=f, fetch_list=[loss], scope=scope)[0] for f in feeds[2:]]

    resumed_scope = _init(startup, seed=9)
    io.load(main, tmp_path / "ckpt", scope=resumed_scope)
    resumed = [fg.Executor().run(main, feed=f, fetch_list=[loss], scope=resumed_scope)[0] for f in feeds[2:]]
    np.testing.assert_array_equal(resumed, continued)


def test_digits_mlp_reaches_95_percent_and_its_inference_model_reloads(tmp_path):
    """Issue 4's user story: an MLP with Adam(0.01).minimize(loss), 15 epochs, then a saved model."""
    pytest.importorskip("sklearn")
    from fluidgrad.demo import load_data
    from fluidgrad.optimizer import Adam
    x_train, y_train, x_test, y_test = load_data()
    x_train, x_test = x_train.reshape(-1, 64), x_test.reshape(-1, 64)
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        image = fg.static.data("image", [None, 64])
        label = fg.static.data("label", [None, 1], "int64")
        logits = fg.static.nn.fc(fg.static.nn.fc(image, 64, activation="relu"), 10)
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(logits, label))
        Adam(0.01).minimize(loss)
    scope, exe = _init(startup), fg.Executor()
    rng = np.random.default_rng(0)
    for _ in range(15):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), 32):
            idx = order[start:start + 32]
            exe.run(main, feed={"image": x_train[idx], "label": y_train[idx]}, scope=scope)
    io.save_inference_model(tmp_path / "mlp", [image], [logits], exe, program=main, scope=scope)
    expected = exe.run(main.clone(for_test=True), feed={"image": x_test, "label": y_test}, fetch_list=[logits],
                       scope=scope)[0]
    assert (expected.argmax(1) == y_test[:, 0]).mean() >= 0.95

    fresh_scope = fg.Scope()
    program, feed_names, fetch_vars = io.load_inference_model(tmp_path / "mlp", fg.Executor(), scope=fresh_scope)
    assert all(op.role not in (BACKWARD, OPTIMIZE) for block in program.blocks for op in block.ops)
    got = fg.Executor().run(program, feed={feed_names[0]: x_test}, fetch_list=fetch_vars, scope=fresh_scope)[0]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("edit, message", [
    (lambda doc: doc.update(fluidgrad_model="2"), "not a valid version number"),
    (lambda doc: doc["program"]["blocks"][0]["ops"][0].update(type="quantum_matmul"),
     "op types this fluidgrad does not have: quantum_matmul"),
    (lambda doc: doc["program"]["blocks"][0].pop("vars"), "malformed program"),
])
def test_model_file_with_bad_contents(saved, edit, message):
    path = saved[2]
    model = path.with_name("m.pdmodel.json")
    doc = json.loads(model.read_text())
    edit(doc)
    model.write_text(json.dumps(doc))
    with pytest.raises(io.ModelFileError, match=message):
        io.read_model(path)


# ---------------------------------------------------------------- issue 10 item 9
def _flip_a_parameter_bit(params_path):
    """Flip one bit in the data section (after the header): a valid file with a wrong value."""
    data = bytearray(params_path.read_bytes())
    header = 8 + int.from_bytes(data[:8], "little")
    data[header + (len(data) - header) // 2] ^= 0x10
    params_path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [lambda t: t[: len(t) // 2], lambda t: "{not json" + t, lambda t: "[1, 2]",
                                    lambda t: t.replace('"params_sha256": "', '"params_sha256": "zz')])
def test_load_refuses_bit_flipped_parameters_when_the_model_file_is_damaged(saved, damage):
    main, _, path, scope, snap = saved
    _flip_a_parameter_bit(path.with_name("m.pdparams.safetensors"))
    model = path.with_name("m.pdmodel.json")
    model.write_text(damage(model.read_text()))
    with pytest.raises(io.ModelFileError, match=r"m.pdmodel.json .*(corrupted|not a fluidgrad model).*refusing"):
        io.load(main, path, scope=scope)
    _assert_unchanged(scope, snap)


def test_load_refuses_bit_flipped_parameters_next_to_an_intact_model_file(saved):
    main, _, path, scope, snap = saved
    _flip_a_parameter_bit(path.with_name("m.pdparams.safetensors"))
    with pytest.raises(io.ModelFileError, match="sha256 differs"):
        io.load(main, path, scope=scope)
    _assert_unchanged(scope, snap)


def test_save_inference_model_outside_program_guard_uses_the_variables_program(tmp_path):
    main, startup, x, y, _ = _build(train=False)
    scope = _init(startup, seed=3)
    assert fg.default_main_program() is not main
    io.save_inference_model(tmp_path / "inf", [x], [y], fg.Executor(), scope=scope)
    program, feeds, fetches = io.load_inference_model(tmp_path / "inf", fg.Executor(), scope=fg.Scope())
    assert feeds == ["x"] and [v.name for v in fetches] == [y.name]


def test_save_inference_model_names_the_program_it_searched(tmp_path):
    main, startup, x, y, _ = _build(train=False)
    with pytest.raises(ValueError, match=r"'nope' is not a variable of the global block of the program that 'x' "
                                         r"belongs to"):
        io.save_inference_model(tmp_path / "inf", [x], ["nope"], scope=_init(startup))
    with pytest.raises(ValueError, match=r"'x' is not a variable of the global block of the default main program"):
        io.save_inference_model(tmp_path / "inf", ["x"], [y.name], scope=_init(startup))
    other, *_ = _build(train=False)
    with pytest.raises(ValueError, match="belong to different programs"):
        io.save_inference_model(tmp_path / "inf", [x], [other.global_block().var(y.name)], scope=_init(startup))
