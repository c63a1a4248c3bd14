"""append_backward and gradients: what issue 2 says the backward builder must show.

Values are checked against PyTorch in float64 (1e-6 relative); structure (renamed temporaries,
`sum`, `fill_zeros_like`, pruning) is checked on the program's ops.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad import static
from fluidgrad.dispatch import apply_op
from fluidgrad.framework import BACKWARD, GRAD_SUFFIX, NoGradientError, ParamAttr
from fluidgrad.framework.names import RENAME_SUFFIX
from fluidgrad.ops import NO_GRADIENT, register_op
from fluidgrad.ops import registry as op_registry
from fluidgrad.ops.shape_rules import same_as

RTOL = 1e-6


def _run(program, feed, fetch):
    return fg.Executor().run(program, feed=feed, fetch_list=fetch)


def _swce(logits, label):
    """softmax_with_cross_entropy's loss output."""
    _softmax, loss = apply_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label})
    return loss


def _backward_ops(program):
    return [op for op in program.global_block().ops if op.role == BACKWARD]


def _close(got, want, what=""):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-12, err_msg=what)


# ------------------------------------------------------------------ the 3-layer MLP
def test_mlp_parameter_gradients_equal_pytorch(fresh_programs, rng):
    main, startup = fresh_programs
    x = static.data("x", [-1, 6], "float64")
    label = static.data("label", [-1, 1], "int64")
    h1 = static.nn.fc(x, 8, activation="relu")
    h2 = static.nn.fc(h1, 7, activation="tanh")
    logits = static.nn.fc(h2, 4)
    loss = fg.mean(_swce(logits, label))
    pairs = fg.append_backward(loss)

    params = main.all_parameters()
    assert len(params) == 6
    assert {p.name for p, _ in pairs} == {p.name for p in params}
    fg.Executor().run(startup)
    scope = fg.global_scope()
    xs, ys = rng.normal(size=(5, 6)), rng.integers(0, 4, size=(5, 1))
    values = _run(main, {"x": xs, "label": ys}, [loss] + [g for _, g in pairs])

    weights = {p.name: torch.tensor(np.array(scope[p.name]), requires_grad=True) for p in params}
    assert all(w.dtype == torch.float64 for w in weights.values())
    w = [weights[p.name] for p in params]   # w0, b0, w1, b1, w2, b2 in creation order
    t = torch.relu(torch.tensor(xs) @ w[0] + w[1])
    t = torch.tanh(t @ w[2] + w[3])
    t_loss = torch.nn.functional.cross_entropy(t @ w[4] + w[5], torch.tensor(ys[:, 0]))
    t_loss.backward()
    _close(values[0], t_loss.item(), "loss")
    for (param, grad), value in zip(pairs, values[1:]):
        assert grad.name == param.name + GRAD_SUFFIX
        _close(value, weights[param.name].grad.numpy(), f"gradient of {param.name}")


# ------------------------------------------------------------------ shared gradients
def test_variable_read_by_several_ops_sums_renamed_gradients(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [3, 4], "float64")
    x.stop_gradient = False
    y = fg.exp(x) + fg.sin(x) * x
    loss = fg.sum(y + fg.tanh(x))
    (gx,) = fg.gradients(loss, [x])
    assert gx.name == "x@GRAD"

    writers = [op for op in _backward_ops(main) for n in op.output_arg_names
               if n.startswith("x@GRAD" + RENAME_SUFFIX)]
    renamed = [n for op in writers for n in op.output_arg_names if n.startswith("x@GRAD" + RENAME_SUFFIX)]
    assert len(renamed) == 4  # x is read by exp, sin, the multiply and tanh
    assert sorted(renamed) == [f"x@GRAD@RENAME@{k}" for k in range(4)]
    sums = [op for op in _backward_ops(main) if op.type == "sum" and op.output("Out") == ["x@GRAD"]]
    assert len(sums) == 1 and sorted(sums[0].input("X")) == sorted(renamed)
    text = str(main)
    assert "x@GRAD@RENAME@0" in text and "sum(X=[" in text
    # nothing but the sum writes x@GRAD itself
    assert [op.type for op in main.global_block().ops if "x@GRAD" in op.output_arg_names] == ["sum"]

    xs = rng.normal(size=(3, 4))
    (value,) = _run(main, {"x": xs}, [gx])
    xt = torch.tensor(xs, requires_grad=True)
    (torch.exp(xt) + torch.sin(xt) * xt + torch.tanh(xt)).sum().backward()
    _close(value, xt.grad.numpy())


def test_parameter_shared_by_name_appears_once_with_summed_gradient(fresh_programs, rng):
    main, startup = fresh_programs
    x = static.data("x", [-1, 4], "float64")
    h = static.nn.fc(x, 4, weight_attr=ParamAttr(name="shared_w"), bias_attr=False, activation="tanh")
    out = static.nn.fc(h, 4, weight_attr="shared_w", bias_attr=False)
    loss = fg.mean(out * out)
    pairs = fg.append_backward(loss)
    assert [p.name for p, _ in pairs] == ["shared_w"]
    assert len(main.all_parameters()) == 1
    assert any(op.type == "sum" and op.output("Out") == ["shared_w@GRAD"] for op in _backward_ops(main))

    fg.Executor().run(startup)
    xs = rng.normal(size=(3, 4))
    (grad,) = _run(main, {"x": xs}, [pairs[0][1]])
    w = torch.tensor(np.array(fg.global_scope()["shared_w"]), requires_grad=True)
    o = torch.tanh(torch.tensor(xs) @ w) @ w
    (o * o).mean().backward()
    _close(grad, w.grad.numpy())


def test_split_with_unused_output_zero_fills_its_gradient(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [3, 6], "float64")
    x.stop_gradient = False
    first, unused, last = fg.split(x, 3, axis=1)
    loss = fg.sum(first * 2.0) + fg.sum(fg.exp(last))
    (gx,) = fg.gradients(loss, [x])
    fills = [op for op in _backward_ops(main) if op.type == "fill_zeros_like"]
    assert [op.output("Out") for op in fills] == [[unused.name + GRAD_SUFFIX]]
    assert fills[0].input("X") == [unused.name]

    xs = rng.normal(size=(3, 6))
    (value,) = _run(main, {"x": xs}, [gx])
    np.testing.assert_array_equal(value[:, 2:4], 0.0)
    _close(value[:, :2], np.full((3, 2), 2.0))
    _close(value[:, 4:], np.exp(xs[:, 4:]))


# ------------------------------------------------------------------ what is left out
def _two_layer(x_width=4):
    x = static.data("x", [-1, x_width], "float64")
    h = static.nn.fc(x, 5, activation="sigmoid", name="layer1")
    out = static.nn.fc(h, 3, name="layer2")
    return x, h, out


def _forward_ops_with_grads(loss, **kwargs):
    """append_backward, recording (through callbacks) which forward ops got grad ops."""
    seen = []
    pairs = fg.append_backward(loss, callbacks=[lambda block, context: seen.append(context["forward_op"])],
                               **kwargs)
    return pairs, seen


def test_no_grad_set_is_honoured(fresh_programs):
    main, _ = fresh_programs
    _x, _h, out = _two_layer()
    loss = fg.mean(out)
    pairs = fg.append_backward(loss, no_grad_set={"layer1.w_0"})
    names = {p.name for p, _ in pairs}
    assert names == {"layer1.b_0", "layer2.w_0", "layer2.b_0"}
    assert not main.global_block().has_var("layer1.w_0@GRAD")
    assert all("layer1.w_0@GRAD" not in op.output_arg_names for op in main.global_block().ops)


def test_parameter_list_is_honoured(fresh_programs):
    _x, _h, out = _two_layer()
    pairs = fg.append_backward(fg.mean(out), parameter_list=["layer2.w_0", "layer1.b_0"])
    assert [p.name for p, _ in pairs] == ["layer2.w_0", "layer1.b_0"]
    with pytest.raises(ValueError, match="nope"):
        fg.append_backward(fg.mean(out), parameter_list=["nope"])


def test_stop_gradient_cuts_the_path_below(fresh_programs):
    main, _ = fresh_programs
    _x, h, out = _two_layer()
    h.stop_gradient = True
    loss = fg.mean(out)
    pairs, seen = _forward_ops_with_grads(loss)
    assert {p.name for p, _ in pairs} == {"layer2.w_0", "layer2.b_0"}
    layer1_ops = [op for op in main.global_block().ops if any(n.startswith("layer1") for n in op.input_arg_names)]
    assert layer1_ops and not any(op in seen for op in layer1_ops)
    assert not any(v.name.startswith("layer1") and v.name.endswith(GRAD_SUFFIX) for v in main.list_vars())


def test_ops_off_the_path_get_no_grad_op(fresh_programs):
    main, _ = fresh_programs
    x, _h, out = _two_layer()
    side = static.nn.fc(x, 2, name="side")   # parameters of the program, but not of the loss
    side_sum = fg.sum(fg.exp(side))
    loss = fg.mean(out)
    pairs, seen = _forward_ops_with_grads(loss)
    assert not any(p.name.startswith("side") for p, _ in pairs)
    side_ops = [op for op in main.global_block().ops
                if op.role != BACKWARD and (set(op.input_arg_names) & {"side.w_0", "side.b_0", side.name}
                                            or side_sum.name in op.output_arg_names)]
    assert len(side_ops) == 4 and not any(op in seen for op in side_ops)
    assert not any(n.startswith(("side", side.name, side_sum.name)) and GRAD_SUFFIX in n
                   for op in _backward_ops(main) for n in op.input_arg_names + op.output_arg_names)
    # every grad op belongs to an op on the path
    assert len(seen) == len(_backward_ops(main)) - sum(
        op.type in ("fill_constant", "sum", "fill_zeros_like") for op in _backward_ops(main))


def test_callbacks_are_called_with_block_and_ops(fresh_programs):
    main, _ = fresh_programs
    _x, _h, out = _two_layer()
    calls = []
    fg.append_backward(fg.mean(out), callbacks=[lambda block, context: calls.append((block, context))])
    assert calls
    for block, context in calls:
        assert block is main.global_block()
        assert context["op"] in block.ops and context["op"].role == BACKWARD
        assert context["forward_op"].role != BACKWARD


# ------------------------------------------------------------------ gradient variables
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_grad_var_has_the_shape_and_dtype_of_its_variable(fresh_programs, dtype):
    main, _ = fresh_programs
    x = static.data("x", [-1, 3, 4], dtype)
    label = static.data("label", [-1, 1], "int64")
    h = static.nn.fc(x, 5, num_flatten_dims=1, activation="relu")
    parts = fg.split(h, [2, 3], axis=1)
    h2 = fg.concat([fg.tanh(parts[1]), parts[0] * 2.0], axis=1)
    h3 = fg.reshape(fg.transpose(fg.unsqueeze(h2, [1]), [0, 2, 1]), [0, -1])
    loss = fg.mean(_swce(static.nn.fc(h3, 3), label))
    fg.append_backward(loss)
    checked = 0
    for var in main.global_block().vars.values():
        if var.name.endswith(GRAD_SUFFIX):
            fwd = main.global_block().var(var.name[:-len(GRAD_SUFFIX)])
            assert var.shape == fwd.shape, f"{var.name}: {var.shape} vs {fwd.name}: {fwd.shape}"
            assert var.dtype == fwd.dtype == dtype, f"{var.name}: {var.dtype} vs {fwd.name}: {fwd.dtype}"
            checked += 1
    assert checked >= 10
    assert main.global_block().var(h.name + GRAD_SUFFIX).shape == (-1, 5)
    assert main.global_block().var(h3.name + GRAD_SUFFIX).shape == (-1, 5)


def test_gradients_with_target_gradients(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [3, 4], "float64")
    v = static.data("v", [3, 4], "float64")
    w = static.data("w", [3], "float64")
    y = x * x
    z = fg.sum(fg.sin(x), axis=1)
    gx, gv = fg.gradients([y, z], [x, v], target_gradients=[v, w])
    assert gv is None   # v only seeds a gradient; nothing depends on it
    xs, vs, ws = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=3)
    (value,) = _run(main, {"x": xs, "v": vs, "w": ws}, [gx])
    _close(value, 2 * xs * vs + np.cos(xs) * ws[:, None])
    with pytest.raises(ValueError, match="target"):
        fg.gradients([y], [x], target_gradients=[w])


def test_gradients_with_a_none_target_gradient_seeds_ones(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [2, 2], "float64")
    (gx,) = fg.gradients([x * 3.0], [x], target_gradients=[None])
    (value,) = _run(main, {"x": rng.normal(size=(2, 2))}, [gx])
    _close(value, np.full((2, 2), 3.0))


def test_grad_of_grad_of_cube_is_6x(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [5], "float64")
    x.stop_gradient = False
    y = fg.sum(x * x * x)
    (g,) = fg.gradients(y, x)
    (gg,) = fg.gradients(fg.sum(g), x)
    assert g.name != gg.name
    names = [n for op in main.global_block().ops for n in op.output_arg_names if n != "@EMPTY@"]
    assert len(names) == len(set(names)), "a variable is written twice: the two passes collide"
    xs = rng.normal(size=5)
    first, second = _run(main, {"x": xs}, [g, gg])
    _close(first, 3 * xs ** 2)
    _close(second, 6 * xs)


def test_third_order_through_tanh(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [4], "float64")
    x.stop_gradient = False
    (g1,) = fg.gradients(fg.sum(fg.tanh(x)), x)
    (g2,) = fg.gradients(fg.sum(g1), x)
    (g3,) = fg.gradients(fg.sum(g2), x)
    xs = rng.normal(size=4)
    values = _run(main, {"x": xs}, [g1, g2, g3])
    xt = torch.tensor(xs, requires_grad=True)
    grads = []
    out = torch.tanh(xt).sum()
    for _ in range(3):
        (gt,) = torch.autograd.grad(out, xt, create_graph=True)
        grads.append(gt.detach().numpy())
        out = gt.sum()
    for got, want in zip(values, grads):
        _close(got, want)


# ------------------------------------------------------------------ argument types
def test_type_errors_for_wrong_argument_types(fresh_programs):
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    loss = fg.sum(x * x)
    with pytest.raises(TypeError, match="Variable"):
        fg.append_backward(loss.name)
    with pytest.raises(TypeError, match="parameter_list"):
        fg.append_backward(loss, parameter_list="w")
    with pytest.raises(TypeError, match="no_grad_set"):
        fg.append_backward(loss, no_grad_set="x")
    with pytest.raises(TypeError, match="callbacks"):
        fg.append_backward(loss, callbacks=lambda block, context: None)
    with pytest.raises(TypeError):
        fg.gradients(loss.name, [x])
    with pytest.raises(TypeError):
        fg.gradients([loss], "x")
    with pytest.raises(TypeError):
        fg.gradients([loss], ["x"])
    with pytest.raises(TypeError, match="no_grad_set"):
        fg.gradients([loss], [x], no_grad_set="x")


# ------------------------------------------------------------------ errors
def test_non_scalar_loss_is_an_error_naming_it(fresh_programs):
    x = static.data("x", [3, 2], "float64")
    x.stop_gradient = False
    y = fg.exp(x)
    with pytest.raises(ValueError, match=rf"{y.name}.*\[3, 2\]"):
        fg.append_backward(y)
    fg.append_backward(fg.reshape(fg.sum(y), [1]))   # [1] is one element: fine


@pytest.fixture
def no_gradient_op():
    """A float op registered without a gradient, removed again afterwards."""
    name = "test_only_no_grad_double"
    register_op(name, inputs="X", outputs="Out", kernel=lambda x: 2 * x, infer=same_as(), grad=NO_GRADIENT)
    yield name
    del op_registry._REGISTRY[name]


def test_gradient_through_an_op_without_one_is_an_error(fresh_programs, no_gradient_op):
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    y = apply_op(no_gradient_op, {"X": fg.exp(x)})
    with pytest.raises(NoGradientError, match=no_gradient_op):
        fg.gradients(fg.sum(y), [x])


def test_op_without_gradient_is_fine_when_its_input_stops_gradient(fresh_programs, no_gradient_op, rng):
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    w = static.data("w", [3], "float64")   # stop_gradient by default
    loss = fg.sum(apply_op(no_gradient_op, {"X": w}) * x)
    (gx,) = fg.gradients(loss, [x])
    ws = rng.normal(size=3)
    (value,) = _run(main, {"x": ws, "w": ws}, [gx])
    _close(value, 2 * ws)


def test_cast_to_int_gives_no_gradient_rather_than_a_wrong_one(fresh_programs, rng):
    """Integers carry no gradient: x reaches the loss only through an int cast, so it has none."""
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    rounded = fg.cast(fg.cast(x * 4.0, "int64"), "float64")
    assert fg.gradients(fg.sum(rounded), [x]) == [None]
    z = fg.sum(rounded * x)   # x also reaches it directly: that part of the gradient is kept
    (gz,) = fg.gradients(z, [x])
    xs = rng.normal(size=3)
    (value,) = _run(main, {"x": xs}, [gz])
    _close(value, np.trunc(xs * 4.0))


def test_executor_runs_backward_program_repeatedly(fresh_programs, rng):
    main, startup = fresh_programs
    x, _h, out = _two_layer()
    pairs = fg.append_backward(fg.mean(out))
    fg.Executor().run(startup)
    xs = rng.normal(size=(4, 4))
    first = _run(main, {"x": xs}, [g for _, g in pairs])
    second = _run(main, {"x": xs}, [g for _, g in pairs])
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_no_grad_set_with_an_intermediate_variable_cuts_below_it(fresh_programs):
    main, _ = fresh_programs
    _x, h, out = _two_layer()
    pairs, seen = _forward_ops_with_grads(fg.mean(out), no_grad_set=[h])   # a Variable, not a name
    assert {p.name for p, _ in pairs} == {"layer2.w_0", "layer2.b_0"}
    assert not main.global_block().has_var(h.name + GRAD_SUFFIX)
    assert not any(n.startswith("layer1") for op in seen for n in op.input_arg_names)


def test_untrainable_parameter_gets_no_gradient(fresh_programs, rng):
    main, startup = fresh_programs
    x = static.data("x", [-1, 3], "float64")
    frozen = static.nn.fc(x, 4, weight_attr=ParamAttr(name="frozen_w", trainable=False), bias_attr=False)
    out = static.nn.fc(frozen, 2, name="head")
    pairs = fg.append_backward(fg.mean(out))
    assert {p.name for p, _ in pairs} == {"head.w_0", "head.b_0"}
    assert not main.global_block().has_var("frozen_w@GRAD")


def test_loss_independent_of_parameters_gives_no_pairs(fresh_programs):
    main, _ = fresh_programs
    x = static.data("x", [-1, 3], "float64")
    static.nn.fc(x, 2)
    assert fg.append_backward(fg.mean(fg.exp(x))) == []


def test_second_append_backward_does_not_reuse_names(fresh_programs, rng):
    main, startup = fresh_programs
    x = static.data("x", [-1, 3], "float64")
    out = static.nn.fc(x, 2, name="layer")
    first = fg.append_backward(fg.mean(out))
    second = fg.append_backward(fg.sum(out * out))
    assert [p.name for p, _ in first] == [p.name for p, _ in second]
    assert not {g.name for _, g in first} & {g.name for _, g in second}
    fg.Executor().run(startup)
    xs = rng.normal(size=(4, 3))
    values = _run(main, {"x": xs}, [g for _, g in first + second])
    scope = fg.global_scope()
    w = torch.tensor(np.array(scope["layer.w_0"]), requires_grad=True)
    b = torch.tensor(np.array(scope["layer.b_0"]), requires_grad=True)
    o = torch.tensor(xs) @ w + b
    expected = [*torch.autograd.grad(o.mean(), [w, b], retain_graph=True), *torch.autograd.grad((o * o).sum(), [w, b])]
    for got, want in zip(values, expected):
        _close(got, want.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_arrays_at_run_time_match_their_variables(fresh_programs, rng, dtype):
    """Not only declared: every computed X@GRAD array has X's run-time shape and dtype."""
    main, startup = fresh_programs
    x = static.data("x", [-1, 3, 4], dtype)
    label = static.data("label", [-1], "int64")
    h = static.nn.fc(x, 6, activation="sigmoid")
    first, second = fg.split(h, 2, axis=1)
    mixed = fg.concat([fg.maximum(first, second), fg.sqrt(fg.square(second) + 1.0)], axis=1)
    pooled = fg.mean(fg.reshape(mixed, [0, 2, 3]), axis=1) - fg.max(mixed, axis=1, keepdim=True)
    loss = fg.mean(_swce(static.nn.fc(pooled, 4, activation="tanh"), label)) + fg.mean(fg.abs(x)) * 0.1
    fg.append_backward(loss)
    block = main.global_block()
    pairs = [(block.var(n[:-len(GRAD_SUFFIX)]), block.var(n)) for n in block.vars if n.endswith(GRAD_SUFFIX)
             and block.has_var(n[:-len(GRAD_SUFFIX)]) and not block.var(n[:-len(GRAD_SUFFIX)]).persistable]
    params = [(p, block.var(p.name + GRAD_SUFFIX)) for p in main.all_parameters()]
    fg.Executor().run(startup)
    feed = {"x": rng.normal(size=(5, 3, 4)).astype(dtype), "label": rng.integers(0, 4, size=5)}
    fetch = [v for pair in pairs for v in pair] + [g for _, g in params]
    values = dict(zip([v.name for v in fetch], _run(main, feed, fetch)))
    assert len(pairs) >= 10
    for var, grad in pairs:
        assert values[grad.name].shape == values[var.name].shape, grad.name
        assert values[grad.name].dtype == np.dtype(dtype), f"{grad.name}: {values[grad.name].dtype}"
    for param, grad in params:
        assert values[grad.name].shape == param.shape and values[grad.name].dtype == np.dtype(dtype), grad.name


def test_composite_program_gradient_matches_central_differences(rng):
    """Many ops chained, each input read several times: the whole backward pass, numerically."""
    from fluidgrad.testing import check_program_grad

    def build(v):
        a, b, idx = v["a"], v["b"], v["idx"]
        rows = fg.gather(a, idx)                          # repeated indices
        mixed = fg.matmul(rows, b, transpose_y=True) * fg.sigmoid(fg.sum(a))
        first, second = fg.split(mixed, [1, 4], axis=1)
        both = fg.concat([fg.tanh(second), first * first, fg.exp(-first)], axis=1)
        return apply_op("softmax", {"X": both}, {"axis": -1})[:, 1:5] + fg.mean(b, axis=0, keepdim=True) * a[0, :]

    check_program_grad(build, {"a": rng.normal(size=(3, 4)), "b": rng.normal(size=(5, 4)),
                               "idx": np.array([2, 0, 2, 2])})


def test_get_grad_op_desc_contract(fresh_programs, no_gradient_op):
    from fluidgrad.framework import get_grad_op_desc as framework_get_grad_op_desc
    from fluidgrad.ops import get_grad_op_desc
    main, _ = fresh_programs
    x = static.data("x", [2, 3], "float64")
    w = static.data("w", [3, 4], "float64")
    out = fg.matmul(x, w)
    op = main.global_block().ops[-1]
    for fn in (get_grad_op_desc, framework_get_grad_op_desc):
        descs, grad_to_var = fn(op, set(), None)
        assert {n for d in descs for n in d.output_arg_names()} >= {"x@GRAD", "w@GRAD"}
        assert grad_to_var["x@GRAD"] == "x" and grad_to_var["w@GRAD"] == "w"
        assert grad_to_var[out.name + GRAD_SUFFIX] == out.name
        assert all(d.type == "matmul" for d in descs)
    descs, grad_to_var = get_grad_op_desc(op, {"w"}, None)
    assert "w@GRAD" not in {n for d in descs for n in d.output_arg_names()}
    y = apply_op(no_gradient_op, {"X": x})
    with pytest.raises(NoGradientError, match=no_gradient_op):
        get_grad_op_desc(main.global_block().ops[-1], set(), None)
    assert y.shape == (2, 3)


def test_concat_of_batch_sized_inputs_along_the_batch_axis(fresh_programs, rng):
    """Both sizes along the axis are -1 at build time: the gradient splits by run-time sizes."""
    main, _ = fresh_programs
    x = static.data("x", [-1, 3], "float64")
    y = static.data("y", [-1, 3], "float64")
    both = fg.concat([x, fg.exp(y)], axis=0)
    assert both.shape == (-1, 3)
    gx, gy = fg.gradients(fg.sum(both * both), [x, y])
    assert gx.shape == (-1, 3) and gy.shape == (-1, 3)
    xs, ys = rng.normal(size=(2, 3)), rng.normal(size=(4, 3))
    values = _run(main, {"x": xs, "y": ys}, [gx, gy])
    _close(values[0], 2 * xs)
    _close(values[1], 2 * np.exp(2 * ys))


def test_integer_loss_is_an_error(fresh_programs):
    x = static.data("x", [3], "float64")
    w = static.create_parameter([3], "float64", name="w")
    loss = fg.sum(fg.cast(x * w, "int64"))
    with pytest.raises((TypeError, ValueError), match=loss.name):
        fg.append_backward(loss)


@pytest.mark.parametrize("name, build, torch_build", [
    ("concat", lambda x: fg.concat([x, x], 0), lambda x: torch.cat([x, x], 0)),
    ("stack", lambda x: fg.stack([x, x], 1), lambda x: torch.stack([x, x], 1)),
    ("add_n", lambda x: fg.add_n([x, x, fg.exp(x)]), lambda x: x + x + torch.exp(x)),
    ("split-then-concat", lambda x: fg.concat(fg.split(x, 2, 0)[::-1] + [x], 0),
     lambda x: torch.cat(list(torch.split(x, 1, 0))[::-1] + [x], 0)),
    ("mul-self", lambda x: x * x, lambda x: x * x),
])
def test_same_variable_twice_in_one_op(fresh_programs, rng, name, build, torch_build):
    """One grad op writing x@GRAD twice (a duplicable slot holding x twice) still sums both."""
    main, _ = fresh_programs
    x = static.data("x", [2, 3], "float64")
    y = build(x)
    (gx,) = fg.gradients(fg.sum(fg.sin(y)), [x])
    xs = rng.normal(size=(2, 3))
    (value,) = _run(main, {"x": xs}, [gx])
    xt = torch.tensor(xs, requires_grad=True)
    torch.sin(torch_build(xt)).sum().backward()
    _close(value, xt.grad.numpy(), name)


def test_gradients_with_respect_to_an_intermediate_and_the_target_itself(fresh_programs, rng):
    main, _ = fresh_programs
    x = static.data("x", [2, 3], "float64")
    x.stop_gradient = False
    h = fg.exp(x)
    y = fg.sum(h * h)
    gh, gx, gy = fg.gradients(y, [h, x, y])
    xs = rng.normal(size=(2, 3))
    values = _run(main, {"x": xs}, [gh, gx, gy])
    _close(values[0], 2 * np.exp(xs))
    _close(values[1], 2 * np.exp(2 * xs))
    _close(values[2], 1.0)


def test_grad_of_grad_through_concat_with_a_constant_input(fresh_programs, rng):
    """concat's gradient is a split whose piece for the constant input is unused (@EMPTY@);
    differentiating that split again must zero-fill the missing piece."""
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    c = static.data("c", [2], "float64")
    y = fg.concat([fg.exp(x), c], 0)
    (g,) = fg.gradients(fg.sum(y * y), [x])
    (gg,) = fg.gradients(fg.sum(g), [x])
    xs = rng.normal(size=3)
    first, second = _run(main, {"x": xs, "c": rng.normal(size=2)}, [g, gg])
    _close(first, 2 * np.exp(2 * xs))
    _close(second, 4 * np.exp(2 * xs))


def test_overwriting_a_value_that_a_grad_op_needs_is_an_error(fresh_programs):
    """assign(..., output=h) after h was read would make h's readers see the new value."""
    from fluidgrad.static.control_flow import assign
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    h = fg.tanh(x)
    doubled = h * 3.0
    assign(doubled, output=h)
    loss = fg.mean(fg.tanh(h) * h)
    ops_before = len(main.global_block().ops)
    with pytest.raises(ValueError, match=f"{h.name}.*read by op scale.*overwritten by op assign"):
        fg.append_backward(loss)
    assert len(main.global_block().ops) == ops_before  # nothing half-built is left behind


def test_loop_body_reading_an_overwritten_outer_value_is_an_error(fresh_programs):
    from fluidgrad.static.control_flow import assign
    x = static.data("x", [3], "float64")
    x.stop_gradient = False
    acc = fg.zeros([3], "float64")
    limit = fg.full([1], 2, "int64")
    i = fg.zeros([1], "int64")
    cond = fg.less_than(i, limit)
    loop = static.While(cond)
    with loop.block():
        assign(fg.tanh(x), output=x)
        assign(acc + x * x, output=acc)
        assign(i + 1, output=i)
        assign(fg.less_than(i, limit), output=cond)
    with pytest.raises(ValueError, match="read by op tanh and then overwritten by op assign, and op"):
        fg.append_backward(fg.mean(acc))


def test_ops_that_only_transform_data_get_no_grad_op(fresh_programs):
    """Step 1's forward half: nothing differentiable reaches exp(data) * 2, so it is a constant."""
    main, _ = fresh_programs
    x = static.data("x", [2, 3], "float64")
    features = fg.tanh(fg.exp(x) * 2.0)
    loss = fg.mean(static.nn.fc(features, 1))
    fg.append_backward(loss)
    grad_ops = [op for op in main.global_block().ops if op.role == BACKWARD]
    differentiated = {o.type for o in grad_ops}
    assert not differentiated & {"square", "scale", "elementwise_mul"}, sorted(differentiated)
    assert not any(GRAD_SUFFIX in n and n.startswith(features.name) for op in grad_ops for n in op.output_arg_names)


def test_gradients_with_respect_to_a_data_transform_still_work(fresh_programs):
    """Asking for the gradient of an intermediate keeps the ops after it differentiable."""
    main, _ = fresh_programs
    x = static.data("x", [3], "float64")
    h = fg.exp(x)
    (dh,) = fg.gradients([fg.sum(h * h)], [h])
    (value,) = fg.Executor().run(main, feed={"x": np.zeros(3)}, fetch_list=[dh])
    np.testing.assert_allclose(value, 2 * np.ones(3))
