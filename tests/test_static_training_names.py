"""paddle.static names of Paddle 2 static training scripts: accuracy (with correct= / total=),
name_scope (the ops' op_namescope attribute), Print (prints at run time, forward and backward, and
passes the value and its gradient through), create_global_var (a step counter kept between runs)
and CompiledProgram (run by the Executor as its program)."""
import numpy as np
import pytest

import fluidgrad as fg

_RNG = np.random.default_rng(13)
_SCORES = _RNG.standard_normal((8, 5)).astype("float32")
_LABELS = _RNG.integers(0, 5, (8, 1)).astype("int64")


def _programs():
    return fg.static.Program(), fg.static.Program()


def test_accuracy_counts_the_top_k_as_paddle():
    main, startup = _programs()
    with fg.static.program_guard(main, startup):
        scores = fg.static.data("scores", [-1, 5], "float32")
        label = fg.static.data("label", [-1, 1], "int64")
        correct = fg.static.create_global_var([1], 0, "int64", persistable=True, name="correct")
        total = fg.static.create_global_var([1], 0, "int64", persistable=True, name="total")
        acc = fg.static.accuracy(input=scores, label=label, k=3, correct=correct, total=total)
    exe = fg.static.Executor()
    exe.run(startup)
    got, n_correct, n_total = exe.run(main, feed={"scores": _SCORES, "label": _LABELS},
                                      fetch_list=[acc, correct, total])
    hits = [_LABELS[i, 0] in np.argsort(-_SCORES[i])[:3] for i in range(8)]
    np.testing.assert_allclose(got, [np.mean(hits)], rtol=1e-6)
    assert int(n_correct[0]) == sum(hits) and int(n_total[0]) == 8


def test_name_scope_labels_the_ops_built_inside():
    main, startup = _programs()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [-1, 4], "float32")
        outside = x + 1
        with fg.static.name_scope("encoder"):
            hidden = fg.static.nn.fc(outside, 3)
            with fg.static.name_scope("head"):
                out = fg.tanh(hidden)
        with fg.static.name_scope("encoder"):
            again = out * 2
    scopes = {op.type: op.attr("op_namescope") for op in main.global_block().ops if op.has_attr("op_namescope")}
    assert scopes["matmul"] == "/encoder/" and scopes["tanh"] == "/encoder/head/"
    assert [op.attr("op_namescope") for op in main.global_block().ops if again.name in op.output_arg_names] == \
        ["/encoder_1/"]   # entered again: Paddle's suffix
    assert not [op for op in main.global_block().ops if outside.name in op.output_arg_names][0].has_attr(
        "op_namescope")
    assert "op_namescope='/encoder/head/'" in str(main)
    with pytest.raises(ValueError, match="name_scope: the prefix must be a non-empty string"):
        with fg.static.name_scope(""):
            pass


def _printed_program(**print_args):
    main, startup = _programs()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [-1, 3], "float64")
        x.stop_gradient = False
        shown = fg.static.Print(x * 2, **print_args)
        loss = fg.mean(shown * shown)
        (grad,) = fg.static.gradients([loss], [x])
    return main, loss, grad


def test_print_shows_the_value_and_its_gradient_and_passes_both_through(capsys):
    main, loss, grad = _printed_program(message="the doubled input", summarize=4)
    x = _RNG.standard_normal((2, 3))
    got_loss, got_grad = fg.static.Executor().run(main, feed={"x": x}, fetch_list=[loss, grad])
    np.testing.assert_allclose(got_loss, np.mean((2 * x) ** 2), rtol=1e-12)
    np.testing.assert_allclose(got_grad, 8 * x / x.size, rtol=1e-12)     # the print op's gradient is the identity
    lines = capsys.readouterr().out.splitlines()
    assert lines.count("the doubled input") == 2 and "  - shape: [2, 3]" in lines and "  - dtype: float64" in lines
    forward = lines[lines.index("the doubled input") + 4]
    assert forward.startswith(f"  - data: [{np.float64(2 * x[0, 0])} ") and forward.endswith(" ...]")
    assert any(line.startswith("Variable: ") and line.endswith("@GRAD") for line in lines)


def test_print_phase_and_first_n(capsys):
    main, loss, grad = _printed_program(message="fwd", print_phase="forward", first_n=2)
    exe = fg.static.Executor()
    for _ in range(3):
        exe.run(main, feed={"x": np.ones((1, 3))}, fetch_list=[loss, grad])
    out = capsys.readouterr().out
    assert out.count("fwd") == 2 and "@GRAD" not in out
    with pytest.raises(ValueError, match="Print: print_phase must be one of"):
        _printed_program(print_phase="sideways")


def test_create_global_var_is_a_counter_kept_between_runs():
    main, startup = _programs()
    with fg.static.program_guard(main, startup):
        step = fg.static.create_global_var([1], 10, "int64", persistable=True, name="step")
        fg.assign(step + 1, step)
        scale = fg.static.create_global_var([2, 2], 0.5, "float32")
        x = fg.static.data("x", [2, 2], "float32")
        out = x * scale
    assert step.persistable and step.stop_gradient and not scale.persistable
    exe = fg.static.Executor()
    exe.run(startup)
    seen = [int(exe.run(main, feed={"x": np.ones((2, 2), "float32")}, fetch_list=[step])[0][0]) for _ in range(3)]
    assert seen == [11, 12, 13]
    np.testing.assert_array_equal(exe.run(main, feed={"x": np.ones((2, 2), "float32")}, fetch_list=[out])[0],
                                  np.full((2, 2), 0.5, "float32"))
    with fg.static.program_guard(main, startup), pytest.raises(ValueError, match="already has a variable named 'step'"):
        fg.static.create_global_var([1], 0, "int64", name="step")


def test_compiled_program_runs_as_its_program():
    main, startup = _programs()
    with fg.static.program_guard(main, startup):
        x = fg.static.data("x", [-1, 2], "float32")
        out = fg.static.nn.fc(x, 3)
    exe = fg.static.Executor()
    exe.run(startup)
    compiled = fg.static.CompiledProgram(main).with_data_parallel(loss_name=out.name)
    feed = {"x": np.ones((4, 2), "float32")}
    np.testing.assert_array_equal(exe.run(compiled, feed=feed, fetch_list=[out])[0],
                                  exe.run(main, feed=feed, fetch_list=[out])[0])
    assert compiled.program is main
    with pytest.raises(NotImplementedError, match="DistributedOptimizer"):
        fg.static.CompiledProgram(main).with_data_parallel(places=["cpu:0", "cpu:1"])
    with pytest.raises(TypeError, match="CompiledProgram: expects a Program"):
        fg.static.CompiledProgram("main")
