"""The `fluidgrad` command: demo, show, draw (run as `python -m fluidgrad`, as a user would)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad import cli, io

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "fluidgrad", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, env=env, timeout=300)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    return _run("demo", "--epochs", "1", "--out", str(out)), out


def test_demo_one_epoch_prints_accuracy_and_saves(demo_run):
    proc, out = demo_run
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"^test accuracy: (\d\.\d{3})$", proc.stdout, re.M)
    assert match, proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("test accuracy:")
    assert float(match.group(1)) > 0.5  # one epoch of Adam already learns most digits
    assert "epoch 1/1" in proc.stderr and "loss=" in proc.stderr and "acc=" in proc.stderr  # the tqdm bar
    assert (out / "digits.pdmodel.json").exists() and (out / "digits.pdparams.safetensors").exists()
    assert re.search(r"^epoch  1/1: train loss \d\.\d{4} accuracy \d\.\d{3} \| test loss \d\.\d{4} "
                     r"accuracy (\d\.\d{3})$", proc.stdout, re.M), proc.stdout
    assert (out / "training.png").read_bytes().startswith(b"\x89PNG")
    assert f"saved the training curves (loss and accuracy per epoch) to {out / 'training.png'}" in proc.stdout


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_demo_picture_parses_and_names_the_ops(demo_run):
    _, out = demo_run
    root = ET.parse(out / "train_program.svg").getroot()
    texts = {t.text for t in root.iter() if t.tag.endswith("text")}
    assert {"conv2d", "relu", "softmax_with_cross_entropy", "adam"} <= texts


def test_demo_inference_model_reloads_and_classifies(demo_run):
    from fluidgrad.demo import load_data
    _, out = demo_run
    scope = fg.Scope()
    program, feeds, fetches = io.load_inference_model(out / "digits", fg.Executor(), scope=scope)
    assert feeds == ["image"]
    assert {op.role for op in program.global_block().ops} <= {"forward"}
    _, _, x_test, y_test = load_data()
    (logits,) = fg.Executor().run(program, feed={"image": x_test}, fetch_list=fetches, scope=scope)
    assert logits.shape == (len(x_test), 10)
    assert (logits.argmax(1) == y_test[:, 0]).mean() > 0.5


def test_show_prints_the_saved_program(demo_run):
    _, out = demo_run
    proc = _run("show", str(out / "digits"))
    assert proc.returncode == 0, proc.stderr
    assert "# feeds: image" in proc.stdout
    assert "conv2d(" in proc.stdout and "param " in proc.stdout
    assert "adam" not in proc.stdout and "@GRAD" not in proc.stdout


def test_draw_command_writes_svg(demo_run, tmp_path):
    _, out = demo_run
    target = tmp_path / "model.svg" if shutil.which("dot") else tmp_path / "model.dot"
    proc = _run("draw", str(out / "digits.pdmodel.json"), "-o", str(target))
    assert proc.returncode == 0, proc.stderr
    assert str(target) in proc.stdout
    if target.suffix == ".svg":
        texts = {t.text for t in ET.parse(target).getroot().iter() if t.tag.endswith("text")}
        assert "conv2d" in texts
    else:
        assert "conv2d" in target.read_text()


# ---------------------------------------------------------------- in-process: errors and the small commands

def _saved_model(tmp_path):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3])
        y = fg.static.nn.fc(x, 2, activation="sigmoid")
    scope = fg.Scope()
    fg.Executor().run(startup, scope=scope)
    io.save_inference_model(tmp_path / "tiny", [x], [y], None, program=main, scope=scope)
    return tmp_path / "tiny", y


def test_show_in_process(tmp_path, capsys):
    prefix, y = _saved_model(tmp_path)
    assert cli.main(["show", str(prefix)]) == 0
    text = capsys.readouterr().out
    assert f"# fetches: {y.name}" in text and "sigmoid(" in text
    assert "# 2 parameters, 8 values; 1 block(s), 3 ops" in text


def test_draw_dot_source_in_process(tmp_path, capsys):
    prefix, _ = _saved_model(tmp_path)
    assert cli.main(["draw", str(prefix), "-o", str(tmp_path / "tiny.dot")]) == 0
    assert (tmp_path / "tiny.dot").read_text().startswith("digraph")


def test_missing_or_corrupted_model_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["show", str(tmp_path / "absent")]) == 1
    assert "absent.pdmodel.json does not exist" in capsys.readouterr().err
    (tmp_path / "bad.pdmodel.json").write_text('{"fluidgrad_model": 1, "program": {"blo')
    assert cli.main(["draw", str(tmp_path / "bad"), "-o", str(tmp_path / "x.svg")]) == 1
    assert "truncated or corrupted" in capsys.readouterr().err
    assert not (tmp_path / "x.svg").exists()


def test_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        cli.main(["demo", "--mode", "quantum"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse refuses it, like every demo argument
        cli.main(["demo", "--epochs", "0"])
    assert exit_info.value.code == 2
    assert "--epochs: must be at least 1" in capsys.readouterr().err


def test_mlp_demo_in_process_without_output_dir(capsys):
    from fluidgrad.demo import train_static
    result = train_static(2, model="mlp", out_dir=None)
    assert result.model_path is None and 0.0 <= result.test_accuracy <= 1.0
    assert result.test_accuracy > 0.8
    assert np.isfinite(result.seconds)


def test_eager_demo_matches_static_and_saves_a_loadable_model(tmp_path):
    """Same seed, same initializers, same registered ops: both modes learn the same network."""
    from fluidgrad.demo import load_data, train_eager, train_static
    static = train_static(2, model="cnn")
    eager = train_eager(2, model="cnn", out_dir=tmp_path)
    assert eager.test_accuracy == static.test_accuracy > 0.8
    assert eager.picture_path is not None and eager.picture_path.exists()
    scope = fg.Scope()
    program, _, fetches = io.load_inference_model(tmp_path / "digits", None, scope=scope)
    _, _, x_test, y_test = load_data()
    (logits,) = fg.Executor().run(program, feed={"image": x_test}, fetch_list=fetches, scope=scope)
    assert (logits.argmax(1) == y_test[:, 0]).mean() == eager.test_accuracy


def test_demo_eager_mode_command(tmp_path):
    proc = _run("demo", "--mode", "eager", "--model", "mlp", "--epochs", "1", "--no-progress", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^test accuracy: 0\.\d{3}$", proc.stdout, re.M)
    assert "eager mode" in proc.stdout and (tmp_path / "digits.pdparams.safetensors").exists()


def test_show_a_checkpoint_written_by_save(tmp_path, capsys):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 3])
        fg.append_backward(fg.mean(fg.static.nn.fc(x, 2)))
    scope = fg.Scope()
    fg.Executor().run(startup, scope=scope)
    io.save(main, tmp_path / "ckpt", scope=scope)
    assert cli.main(["show", str(tmp_path / "ckpt.pdmodel.json")]) == 0
    text = capsys.readouterr().out
    assert "# feeds" not in text and "# backward" in text  # the whole training program, roles marked


def _run_example(name: str, cwd: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")  # tiny matrices: one BLAS thread is fastest
    proc = subprocess.run([sys.executable, str(REPO / "examples" / name), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_linear_regression_example_recovers_the_line(tmp_path):
    out = _run_example("linear_regression.py", tmp_path)
    w = [float(v) for v in re.search(r"learned w: \[\s*(\S+)\s+(\S+)\s*\]", out).groups()]
    b = float(re.search(r"learned b: \[\s*(\S+)\s*\]", out).group(1))
    np.testing.assert_allclose(w + [b], [2.0, -3.4, 4.2], atol=0.01)


def test_digits_cnn_example_trains_and_saves(tmp_path):
    out = _run_example("digits_cnn.py", tmp_path, str(tmp_path / "out"))
    final = float(re.findall(r"test accuracy (\d\.\d+)", out)[-1])
    assert final >= 0.97
    assert (tmp_path / "out" / "digits_cnn.pdmodel.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing written into the current folder
    assert f"saved the inference model in {tmp_path / 'out'}" in out


@pytest.mark.parametrize("args, message", [
    (["--batch-size", "0"], "argument --batch-size: must be at least 1, got 0"),
    (["--batch-size", "two"], "argument --batch-size: 'two' is not an integer"),
    (["--lr", "-1"], "argument --lr: must be a positive finite number, got -1"),
    (["--lr", "nan"], "argument --lr: must be a positive finite number, got nan"),
    (["--epochs", "0"], "argument --epochs: must be at least 1, got 0"),
    (["--seed", "-3"], "argument --seed: must be 0 or more, got -3"),
])
def test_demo_arguments_are_validated_with_a_clear_message(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_show_and_draw_accept_the_folder_and_either_file(tmp_path, capsys):
    prefix, _ = _saved_model(tmp_path)
    for given in (prefix, f"{prefix}{io.MODEL_SUFFIX}", f"{prefix}{io.PARAMS_SUFFIX}", tmp_path):
        assert cli.main(["show", str(given)]) == 0, given
        assert f"# {prefix}{io.MODEL_SUFFIX}" in capsys.readouterr().out
    assert cli.main(["draw", str(tmp_path), "-o", str(tmp_path / "view.html")]) == 0
    assert (tmp_path / "view.html").read_text().startswith("<!DOCTYPE html>")


def test_show_explains_what_it_expected(tmp_path, capsys):
    assert cli.main(["show", str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err
    assert "no saved model at" in err and "nothing.pdmodel.json" in err
    (tmp_path / "a.pdmodel.json").write_text("{}")
    (tmp_path / "b.pdmodel.json").write_text("{}")
    assert cli.main(["show", str(tmp_path)]) == 1
    assert "must hold exactly one saved model" in capsys.readouterr().err


def test_eager_demo_checkpoint_resumes_the_trained_model(tmp_path):
    """The eager demo saves model and optimizer with fluidgrad.save; loading them into a fresh
    network gives back the trained network's test accuracy, and the history has every epoch."""
    from fluidgrad.demo import accuracy, eager_network, load_data, train_eager
    epochs_seen = []
    result = train_eager(2, model="mlp", out_dir=tmp_path, on_epoch=epochs_seen.append)
    assert [h.epoch for h in result.history] == [1, 2] and epochs_seen == result.history
    assert result.history[-1].test_accuracy == result.test_accuracy
    state = fg.load(result.checkpoint_path)
    net = eager_network("mlp")
    assert net.load_state_dict(state["model"]) == ([], [])
    opt = fg.optimizer.Adam(net.parameters(), lr=0.01)
    opt.set_state_dict(state["optimizer"])
    _, _, x_test, y_test = load_data(0)
    with fg.no_grad():
        logits = net(fg.to_tensor(x_test)).numpy()
    assert accuracy(logits, y_test) == result.test_accuracy
    assert result.curves_path == tmp_path / "training.png" and result.curves_path.exists()


def test_pytorch_habits_example_trains_saves_and_restores(tmp_path):
    out = _run_example("pytorch_habits.py", tmp_path, str(tmp_path / "out"))
    assert float(re.search(r"final loss (\d+\.\d+)", out).group(1)) < 0.3
    assert float(re.search(r"restored model accuracy (\d\.\d+)", out).group(1)) > 0.9
    assert (tmp_path / "out" / "model.safetensors").exists()
