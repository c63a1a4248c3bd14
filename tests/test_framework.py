"""The IR contract of DESIGN §2: Program, Block, Operator, Variable, names, listing, clone,
operators with Python scalars, and build-time shape errors."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad import static
from fluidgrad.framework import (EMPTY_VAR_NAME, BACKWARD, DTypeError, Operator, Parameter,
                                 ShapeError, Variable, default_main_program, default_startup_program,
                                 grad_var_name)
from fluidgrad.framework.names import RENAME_SUFFIX, rename_var_name, unique_name, unique_name_guard


def _nested(main):
    """Block 0 holds an op whose sub_block (block 1) holds an op whose sub_block is block 2."""
    x = static.data("x", [-1, 4], "float64")
    with main._sub_block_guard() as inner:
        y = fg.exp(x)
        with main._sub_block_guard() as innermost:
            z = fg.tanh(y)
        inner.append_op("assign", {"X": y}, {"Out": inner.create_var("inner_out", (-1, 4), "float64")},
                        {"sub_block": innermost})
    out = main.global_block().create_var("outer_out", (-1, 4), "float64")
    main.global_block().append_op("assign", {"X": x}, {"Out": out}, {"sub_block": inner})
    return x, y, z, inner, innermost


# ------------------------------------------------------------------ Program and Block
def test_program_blocks_and_parents(fresh_programs):
    main, _ = fresh_programs
    assert default_main_program() is main
    assert main.num_blocks == 1 and main.global_block() is main.block(0) is main.blocks[0]
    assert main.global_block().parent_idx == -1 and main.global_block().idx == 0
    x, y, z, inner, innermost = _nested(main)
    assert main.num_blocks == 3
    assert (inner.idx, inner.parent_idx) == (1, 0) and (innermost.idx, innermost.parent_idx) == (2, 1)
    assert inner.program is main and main.block(2) is innermost
    assert main.current_block() is main.global_block(), "the guard restores the current block"
    assert x.block is main.global_block() and y.block is inner and z.block is innermost


def test_has_var_recursive_looks_through_ancestors_only(fresh_programs):
    main, _ = fresh_programs
    x, y, z, inner, innermost = _nested(main)
    assert innermost.has_var(z.name) and not innermost.has_var(x.name)
    assert innermost.has_var_recursive(x.name) and innermost.has_var_recursive(y.name)
    assert innermost.var_recursive(x.name) is x
    assert not main.global_block().has_var_recursive(y.name), "a parent does not see its children's vars"
    assert not inner.has_var_recursive(z.name)
    with pytest.raises(KeyError, match=z.name):
        inner.var_recursive(z.name)


def test_var_error_names_the_variable_and_block(fresh_programs):
    main, _ = fresh_programs
    with pytest.raises(KeyError, match=r"no_such_var.*block 0"):
        main.global_block().var("no_such_var")


def test_create_var_and_parameters(fresh_programs):
    main, startup = fresh_programs
    block = main.global_block()
    v = block.create_var("v", (2, -1), np.float32)
    assert (v.name, v.shape, v.dtype, v.persistable, v.stop_gradient) == ("v", (2, -1), "float32", False, False)
    assert v.block is block and block.vars["v"] is v
    w = static.create_parameter([3, 2], "float64", name="w")
    assert isinstance(w, Parameter) and w.persistable and w.trainable and not w.stop_gradient
    assert main.all_parameters() == [w]
    assert [op.type for op in startup.global_block().ops] == ["uniform_random"]
    assert startup.global_block().ops[0].output("Out") == ["w"]
    assert static.create_parameter([3, 2], "float64", name="w") is w
    with pytest.raises(ValueError, match="w"):
        static.create_parameter([4, 2], "float64", name="w")
    with pytest.raises(TypeError, match="dtype"):
        block.create_var("bad", (1,), "float128")  # complex128 is a dtype since session 11


def test_data_is_stop_gradient_with_unknown_dims(fresh_programs):
    x = static.data("x", [None, 3], "int64")
    assert x.shape == (-1, 3) and x.dtype == "int64" and x.stop_gradient


# ------------------------------------------------------------------ Operator
def test_operator_accessors(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2, 3], "float64")
    y = static.data("y", [3, 4], "float64")
    out = fg.matmul(x, y, transpose_y=False)
    op = main.global_block().ops[-1]
    assert isinstance(op, Operator) and op.type == "matmul" and op.block is main.global_block()
    assert op.input("X") == ["x"] and op.input("Y") == ["y"] and op.output("Out") == [out.name]
    assert op.input_names == ["X", "Y"] and op.output_names == ["Out"]
    assert op.input_arg_names == ["x", "y"] and op.output_arg_names == [out.name]
    assert op.attr("transpose_x") is False and op.has_attr("transpose_y") and not op.has_attr("alpha")
    with pytest.raises(KeyError, match="alpha"):
        op.attr("alpha")
    assert op.input("Nope") == []
    assert out.shape == (2, 4) and out.dtype == "float64"


def test_append_op_fills_default_attrs_and_validates_slots(fresh_programs):
    main, _ = fresh_programs
    block = main.global_block()
    x = static.data("x", [2, 3], "float32")
    op = block.append_op("scale", {"X": x}, {"Out": block.create_var("s")}, {"scale": 2.0})
    assert op.attr("bias") == 0.0 and op.attr("bias_after_scale") is True
    with pytest.raises(ValueError, match=r"scale.*'Z'"):
        block.append_op("scale", {"Z": x}, {"Out": block.create_var("s2")})
    with pytest.raises(ValueError, match=r"elementwise_add.*'Y'"):
        block.append_op("elementwise_add", {"X": x}, {"Out": block.create_var("s3")})
    with pytest.raises(KeyError, match="no_such_op"):
        block.append_op("no_such_op", {"X": x}, {"Out": block.create_var("s4")})


# ------------------------------------------------------------------ names
def test_name_conventions(fresh_programs):
    assert grad_var_name("w") == "w@GRAD"
    assert rename_var_name("w@GRAD", 0) == "w@GRAD@RENAME@0" and RENAME_SUFFIX == "@RENAME@"
    assert EMPTY_VAR_NAME == "@EMPTY@"
    with unique_name_guard():
        a, b = unique_name("fc"), unique_name("fc")
    assert a != b
    with unique_name_guard():
        assert unique_name("fc") == a, "a guard restarts numbering"


def test_builders_never_collide_on_names(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2, 3], "float32")
    outs = [fg.exp(x) for _ in range(5)] + [static.nn.fc(x, 2) for _ in range(3)]
    assert len({o.name for o in outs}) == len(outs)
    assert len({p.name for p in main.all_parameters()}) == 6


# ------------------------------------------------------------------ listing
def test_str_program_lists_ops_with_inputs_outputs_attrs_and_indented_sub_blocks(fresh_programs):
    main, _ = fresh_programs
    x, y, z, inner, innermost = _nested(main)
    s = fg.scale(x, 2.5, bias=1.0)
    text = str(main)
    lines = text.splitlines()
    assert lines[0].startswith("block 0")
    scale_line = next(line for line in lines if " scale(" in line)
    assert "X=[x]" in scale_line and f"Out=[{s.name}]" in scale_line and "scale=2.5" in scale_line \
        and "bias=1" in scale_line
    exp_line = next(line for line in lines if " exp(" in line)
    tanh_line = next(line for line in lines if " tanh(" in line)
    indent = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    assert indent(scale_line) < indent(exp_line) < indent(tanh_line)
    sub_line = next(line for line in lines if "sub_block=" in line and "outer_out" in line)
    assert "block[1]" in sub_line or "block 1" in sub_line
    # block 1 is listed right under the op holding it, not at the top level
    assert text.count("block 1 (parent 0)") == 1
    assert lines.index(sub_line) < next(i for i, line in enumerate(lines) if "block 1 (parent 0)" in line)


def test_str_program_marks_backward_ops(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    fg.gradients(fg.sum(x * x), [x])
    text = str(main)
    assert "x@GRAD" in text and BACKWARD in text


# ------------------------------------------------------------------ clone
def test_clone_is_a_deep_copy(fresh_programs, rng):
    main, _ = fresh_programs
    x, y, z, inner, innermost = _nested(main)
    h = static.nn.fc(x, 3, activation="relu")
    loss = fg.mean(h)
    fg.append_backward(loss)
    copy = main.clone()
    assert copy is not main and copy.num_blocks == main.num_blocks
    assert [b.parent_idx for b in copy.blocks] == [b.parent_idx for b in main.blocks]
    for b_orig, b_copy in zip(main.blocks, copy.blocks):
        assert [op.type for op in b_copy.ops] == [op.type for op in b_orig.ops]
        assert list(b_copy.vars) == list(b_orig.vars)
        for name, var in b_copy.vars.items():
            orig = b_orig.vars[name]
            assert var is not orig and var.block is b_copy
            assert (var.shape, var.dtype, var.persistable, var.stop_gradient, type(var)) == \
                (orig.shape, orig.dtype, orig.persistable, orig.stop_gradient, type(orig))
    held = [op for op in copy.global_block().ops if "sub_block" in op.attrs]
    assert held and held[0].attr("sub_block") is copy.block(1)
    assert str(copy) == str(main)
    # changing the copy leaves the original alone
    copy.global_block().ops[0].attrs["x_marker"] = 1
    copy.global_block().create_var("only_in_copy")
    assert "x_marker" not in main.global_block().ops[0].attrs and not main.global_block().has_var("only_in_copy")


def test_clone_for_test_drops_backward_ops(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [-1, 4], "float32")
    loss = fg.mean(static.nn.fc(x, 2))
    fg.append_backward(loss)
    test_program = main.clone(for_test=True)
    assert all(op.role != BACKWARD for op in test_program.global_block().ops)
    assert len(test_program.global_block().ops) < len(main.global_block().ops)


def test_program_guard(fresh_programs):
    main, startup = fresh_programs
    other_main, other_startup = fg.Program(), fg.Program()
    with fg.program_guard(other_main, other_startup):
        assert default_main_program() is other_main and default_startup_program() is other_startup
        static.create_parameter([2], "float32", name="p")
    assert default_main_program() is main and default_startup_program() is startup
    assert other_main.global_block().has_var("p") and not main.global_block().has_var("p")
    assert other_startup.global_block().ops and not startup.global_block().ops
    with pytest.raises(TypeError, match="Program"):
        with fg.program_guard("main"):
            pass


# ------------------------------------------------------------------ operators with Python scalars
SCALAR_CASES = [
    ("x + 2", lambda x: x + 2), ("2 + x", lambda x: 2 + x), ("x - 2", lambda x: x - 2),
    ("2 - x", lambda x: 2 - x), ("x * 3", lambda x: x * 3), ("3 * x", lambda x: 3 * x),
    ("x / 4", lambda x: x / 4), ("4 / x", lambda x: 4 / x), ("x ** 2", lambda x: x ** 2),
    ("2 ** x", lambda x: 2 ** x), ("-x", lambda x: -x), ("x + x", lambda x: x + x),
    ("x * x - x / x", lambda x: x * x - x / x), ("x @ x.T", lambda x: x @ x.T),
    ("x < 1.5", lambda x: x < 1.5), ("1.5 < x", lambda x: 1.5 < x), ("x >= 2", lambda x: x >= 2),
    ("x > 0.5", lambda x: x > 0.5), ("x <= 2", lambda x: x <= 2), ("np2 + x", lambda x: np.float64(2) + x),
    ("x[1]", lambda x: x[1]), ("x[:, 1:3]", lambda x: x[:, 1:3]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("text, fn", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_operators_with_python_scalars_on_both_sides(fresh_programs, text, fn, dtype):
    main, _ = fresh_programs
    xs = np.arange(1.0, 7.0).reshape(2, 3).astype(dtype)
    x = static.data("x", [2, 3], dtype)
    out = fn(x)
    assert isinstance(out, Variable)
    expected = fn(xs)
    assert out.shape == expected.shape, text
    (value,) = fg.Executor().run(main, feed={"x": xs}, fetch_list=[out])
    # a Python or NumPy scalar never promotes the Variable's dtype (as in Paddle and PyTorch)
    want_dtype = np.dtype(bool) if expected.dtype == bool else np.dtype(dtype)
    assert value.dtype == want_dtype and out.dtype == want_dtype.name, f"{text}: {value.dtype}"
    np.testing.assert_allclose(value, expected, rtol=1e-6, err_msg=text)


def test_variables_cannot_be_used_as_python_booleans(fresh_programs):
    x = static.data("x", [1], "float32")
    with pytest.raises(TypeError, match="truth value"):
        bool(x > 0)


# ------------------------------------------------------------------ build-time errors
def test_shape_mismatch_at_build_time_names_op_and_both_shapes(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [-1, 4], "float32")
    y = static.data("y", [3, 5], "float32")
    n_ops = len(main.global_block().ops)
    with pytest.raises(ShapeError, match=r"elementwise_add.*x.*\[-1, 4\].*y.*\[3, 5\]"):
        x + y
    with pytest.raises(ShapeError, match=r"matmul.*x.*\[-1, 4\].*y.*\[3, 5\]"):
        fg.matmul(x, y)
    with pytest.raises(ShapeError, match=r"concat.*\[-1, 4\].*\[3, 5\]"):
        fg.concat([x, y], axis=0)
    with pytest.raises(ShapeError, match=r"reshape.*x.*\[-1, 4\]"):
        fg.reshape(x, [3, -1, -1])
    assert len(main.global_block().ops) == n_ops, "a rejected op is not appended"


def test_dtype_mismatch_at_build_time_names_op_and_dtypes(fresh_programs):
    x = static.data("x", [3], "float32")
    y = static.data("y", [3], "float64")
    with pytest.raises(DTypeError, match=r"elementwise_mul.*float32.*float64"):
        x * y
    i = static.data("i", [3], "int64")
    with pytest.raises(DTypeError, match=r"exp.*i.*int64"):
        fg.exp(i)


def test_shape_inference_keeps_unknown_batch(fresh_programs):
    x = static.data("x", [-1, 3, 4], "float32")
    assert fg.exp(x).shape == (-1, 3, 4)
    assert fg.sum(x, axis=1).shape == (-1, 4)
    assert fg.matmul(x, static.data("w", [4, 5], "float32")).shape == (-1, 3, 5)
    assert fg.transpose(x, [1, 0, 2]).shape == (3, -1, 4)
    assert fg.concat([x, x], axis=0).shape == (-1, 3, 4)
    assert fg.concat([x, x], axis=1).shape == (-1, 6, 4)
    assert [p.shape for p in fg.split(x, [1, 3], axis=2)] == [(-1, 3, 1), (-1, 3, 3)]
    assert static.nn.fc(x, 2, num_flatten_dims=2).shape == (-1, 3, 2)
    assert static.nn.fc(x, 2).shape == (-1, 2)
    ids = static.data("ids", [-1, 7], "int64")
    assert static.nn.embedding(ids, (10, 6)).shape == (-1, 7, 6)


# A Python float mixed with an integer Variable computes in float64; division is true division.
def test_integer_variable_compared_with_a_fraction(fresh_programs):
    main, _ = fresh_programs
    i = static.data("i", [3], "int64")
    (value,) = fg.Executor().run(main, feed={"i": np.array([1, 2, 3])}, fetch_list=[i < 1.5])
    np.testing.assert_array_equal(value, [True, False, False])


def test_integer_variable_divided_by_a_python_int_is_true_division(fresh_programs):
    main, _ = fresh_programs
    i = static.data("i", [3], "int64")
    (value,) = fg.Executor().run(main, feed={"i": np.array([1, 2, 3])}, fetch_list=[i / 2])
    np.testing.assert_allclose(value, [0.5, 1.0, 1.5])


def test_rejected_op_leaves_no_variables_behind(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [2, 4], "float32")
    y = static.data("y", [3, 5], "float32")
    names = set(main.global_block().vars)
    with pytest.raises(ShapeError):
        x + y
    assert set(main.global_block().vars) == names
