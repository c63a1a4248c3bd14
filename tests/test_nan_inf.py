"""NaN/Inf checking: `Executor(check_nan_inf=True)` stops at the first op whose output is not
finite, and says which op (type, position in its block, inputs, forward or backward).
With the check off, the generated plan holds no check at all."""
from __future__ import annotations

import re

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.framework.errors import NanInfError
from fluidgrad.static import data

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns about the NaNs we make


def _feed_x(shape, dtype="float64"):
    x = data("x", shape, dtype)
    x.stop_gradient = False
    return x


def test_forward_nan_names_the_first_op_its_position_and_inputs(fresh_programs):
    main, _ = fresh_programs
    x = _feed_x([3])
    y = fg.log(x)                # op 0: NaN for a negative input
    z = fg.exp(y)                # op 1: NaN again, but op 0 came first
    fg.mean(z)
    exe = fg.Executor(check_nan_inf=True)
    with pytest.raises(NanInfError) as info:
        exe.run(main, feed={"x": np.array([1.0, -1.0, 2.0])}, fetch_list=[z], scope=fg.Scope())
    message = str(info.value)
    assert re.search(r"NaN in the output of op #0 \(log, forward op, block 0\)", message), message
    assert f"inputs: {x.name}" in message and y.name in message


def test_forward_inf_is_reported_as_inf(fresh_programs):
    main, _ = fresh_programs
    x = _feed_x([2])
    y = fg.exp(fg.scale(x, 1000.0))
    with pytest.raises(NanInfError, match=r"Inf in the output of op #1 \(exp, forward op, block 0\)"):
        fg.Executor(check_nan_inf=True).run(main, feed={"x": np.array([1.0, 0.0])}, fetch_list=[y],
                                            scope=fg.Scope())


def test_backward_inf_names_a_backward_op(fresh_programs):
    """sqrt(0) = 0 is finite; its gradient 0.5 / sqrt(0) is not: the error points into backward."""
    main, _ = fresh_programs
    x = _feed_x([2])
    loss = fg.sum(fg.sqrt(x))
    grad, = fg.gradients([loss], [x])
    with pytest.raises(NanInfError) as info:
        fg.Executor(check_nan_inf=True).run(main, feed={"x": np.array([0.0, 4.0])}, fetch_list=[grad],
                                            scope=fg.Scope())
    message = str(info.value)
    match = re.search(r"Inf in the output of op #(\d+) \((\w+), backward op, block 0\)", message)
    assert match, message
    op = main.global_block().ops[int(match.group(1))]
    assert op.type == match.group(2) and op.role == "backward"
    assert all(name in message for name in op.input_arg_names)


def test_nan_inside_a_while_body_names_the_sub_block(fresh_programs):
    main, _ = fresh_programs
    x = _feed_x([1])
    i = fg.full([1], 0, "int64")
    limit = fg.full([1], 3, "int64")
    _, y = fg.static.nn.while_loop(lambda i, v: fg.less_than(i, limit),
                                   lambda i, v: [i + 1, fg.log(fg.scale(v, 1.0, -1.0))], [i, x])
    with pytest.raises(NanInfError, match=r"NaN in the output of op #\d+ \(log, forward op, block [1-9]\d*\)"):
        fg.Executor(check_nan_inf=True).run(main, feed={"x": np.array([1.5])}, fetch_list=[y], scope=fg.Scope())


def test_the_scope_is_unchanged_and_the_executor_usable_after_the_error(fresh_programs):
    main, startup = fresh_programs
    x = _feed_x([2])
    w = fg.static.create_parameter([2], "float64", name="w")
    counter = fg.static.create_parameter([2], "float64", name="counter")
    # `counter` is persistable: it is written back to the scope only at the end of a run
    main.global_block().append_op("assign", {"X": [fg.add(counter, w)]}, {"Out": [counter]})
    y = fg.log(fg.multiply(x, w))
    scope = fg.Scope()
    scope["w"] = np.array([1.0, 2.0])
    scope["counter"] = np.array([0.0, 0.0])
    exe = fg.Executor(check_nan_inf=True)
    with pytest.raises(NanInfError):
        exe.run(main, feed={"x": np.array([-1.0, 1.0])}, fetch_list=[y], scope=scope)
    np.testing.assert_array_equal(scope["counter"], [0.0, 0.0])
    np.testing.assert_array_equal(scope["w"], [1.0, 2.0])
    out, = exe.run(main, feed={"x": np.array([1.0, 1.0])}, fetch_list=[y], scope=scope)
    np.testing.assert_allclose(out, np.log([1.0, 2.0]))
    np.testing.assert_array_equal(scope["counter"], [1.0, 2.0])


def test_with_the_check_off_nan_flows_through_and_the_plan_has_no_check(fresh_programs):
    main, _ = fresh_programs
    x = _feed_x([2])
    y = fg.log(x)
    exe = fg.Executor()
    out, = exe.run(main, feed={"x": np.array([-1.0, 1.0])}, fetch_list=[y], scope=fg.Scope())
    assert np.isnan(out[0]) and out[1] == 0.0
    plain = exe._plan(main.global_block(), ["x"], [y.name])
    checked = fg.Executor(check_nan_inf=True)._plan(main.global_block(), ["x"], [y.name])
    assert "_chk" not in plain.source
    assert "_chk" in checked.source


def test_integer_and_bool_outputs_are_not_checked(fresh_programs):
    main, _ = fresh_programs
    x = _feed_x([3])
    flags = fg.less_than(x, fg.full([3], 0.0, "float64"))
    out, = fg.Executor(check_nan_inf=True).run(main, feed={"x": np.array([-1.0, 0.0, 1.0])},
                                               fetch_list=[flags], scope=fg.Scope())
    np.testing.assert_array_equal(out, [True, False, False])


# ---------------------------------------------------------------- eager mode

@pytest.fixture
def eager_nan_check():
    fg.set_flags({"check_nan_inf": True})
    try:
        yield
    finally:
        fg.set_flags({"check_nan_inf": False})


def test_eager_forward_nan_names_the_op(eager_nan_check):
    x = fg.to_tensor(np.array([1.0, -1.0]))
    with pytest.raises(NanInfError, match=r"NaN in the output of op log \(forward op, eager mode.*"
                                          r"its inputs: X \(shape \[2\], float64\)"):
        fg.log(x)


def test_eager_backward_inf_names_a_backward_op(eager_nan_check):
    x = fg.to_tensor(np.array([0.0, 4.0]), stop_gradient=False)
    y = fg.sum(fg.sqrt(x))  # finite forward
    with pytest.raises(NanInfError, match=r"Inf in the output of op \w+ \(backward op, eager mode"):
        y.backward()


def test_eager_flag_off_removes_the_hook_and_never_touches_kernels():
    from fluidgrad.eager import apply
    from fluidgrad.eager.node import op_call
    plain = op_call("log").kernel
    fg.set_flags({"FLAGS_check_nan_inf": True})
    assert apply.output_check is not None and op_call("log").kernel is plain
    assert fg.get_flags("check_nan_inf") == {"check_nan_inf": True}
    fg.set_flags({"check_nan_inf": False})
    assert apply.output_check is None and op_call("log").kernel is plain
    out = fg.log(fg.to_tensor(np.array([-1.0])))
    assert np.isnan(out.numpy()).all()


def test_set_flags_rejects_unknown_flags():
    with pytest.raises(ValueError, match="unknown flag 'check_nan'"):
        fg.set_flags({"check_nan": True})
