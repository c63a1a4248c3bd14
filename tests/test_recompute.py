"""Recompute: checkpoints in backward building and `fluidgrad.recompute` in eager mode give the
same gradients, bit for bit, as no checkpoints; and keep fewer activations alive."""
from __future__ import annotations

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.framework import unique_name_guard
from fluidgrad.recompute_pass import AUTO_KEEP, RECOMPUTE_SUFFIX, RecomputeError

_RNG = np.random.default_rng(7)


def _run(build, checkpoints, feed, scope=None, optimizer=None):
    """Build with `checkpoints`; return (fetched loss and gradients, stats, program)."""
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup), unique_name_guard():
        loss, cks = build()
        if isinstance(checkpoints, fg.RecomputePolicy):  # the policy's checkpoints by the build's names
            checkpoints = fg.RecomputePolicy(cks(checkpoints.checkpoints), checkpoints.keep)
        elif callable(cks):
            checkpoints = cks(checkpoints)
        if optimizer is not None:
            _, pairs = optimizer().minimize(loss, checkpoints=checkpoints)
        else:
            pairs = fg.append_backward(loss, checkpoints=checkpoints)
    fresh = scope is None
    scope = scope if scope is not None else fg.Scope()
    exe = fg.Executor()
    if fresh:
        exe.run(startup, scope=scope)
    fg.seed(1234)  # the same dropout masks in every variant's forward
    values, stats = exe.run(main, feed=feed, fetch_list=[loss] + [g for _, g in pairs], scope=scope,
                            return_stats=True)
    return values, stats, main, scope


def _compare(build, feed, variants, optimizer=None):
    """Every variant of checkpoints gives exactly the values of no checkpoints."""
    reference, ref_stats, _, scope = _run(build, None, feed)
    snapshot = {name: np.array(scope[name]) for name in list(scope.vars)}
    results = {}
    for checkpoints in variants:
        for name, value in snapshot.items():  # same parameters for every variant
            scope[name] = np.array(value)
        values, stats, program, _ = _run(build, checkpoints, feed, scope=scope)
        assert len(values) == len(reference)
        for got, want in zip(values, reference):
            np.testing.assert_array_equal(got, want)
        results[str(checkpoints)] = (stats, program)
    return ref_stats, results


def _mlp(depth=8, width=16, dropout=False):
    def build():
        x = fg.static.data("x", [None, width], "float64")
        h, hidden = x, []
        for i in range(depth):
            h = fg.static.nn.fc(h, width, activation="tanh", weight_attr=fg.ParamAttr(name=f"w{i}"),
                                bias_attr=fg.ParamAttr(name=f"b{i}"))
            if dropout:
                h = fg.nn.functional.dropout(h, p=0.2)
            hidden.append(h)
        return fg.mean(h * h), lambda which: which if which in (None, "auto") else [hidden[i] for i in which]
    return build


def test_mlp_gradients_are_bit_identical_and_activations_shrink():
    feed = {"x": _RNG.standard_normal((32, 16))}
    ref, results = _compare(_mlp(depth=16), feed, [[3, 7, 11], "auto", [5]])
    manual_stats, program = results["[3, 7, 11]"]
    assert any(RECOMPUTE_SUFFIX in name for name in program.global_block().vars)
    assert manual_stats.peak_activation_bytes < 0.5 * ref.peak_activation_bytes
    assert results["auto"][0].peak_activation_bytes < 0.5 * ref.peak_activation_bytes
    assert program.recompute_checkpoints  # the checkpoints used are recorded on the program


def _recomputed(program, op_type=None):
    return [op for op in program.global_block().ops if any(RECOMPUTE_SUFFIX in n for n in op.output_arg_names)
            and op_type in (None, op.type)]


def _fc_stack(depth=8, width=16):
    """fc layers (matmul, bias add, relu) and a mean: the bias add's grad reads the matmul's
    output and its own for their shapes only (reduce_as Target)."""
    def build():
        h = fg.static.data("x", [None, width], "float64")
        hidden = []
        for _ in range(depth):
            h = fg.static.nn.fc(h, width, activation="relu")
            hidden.append(h)
        return fg.mean(h), lambda which: which if which in (None, "auto") else [hidden[i] for i in which]
    return build


def test_values_read_for_their_shape_only_are_not_recomputed():
    """Segments of 4 fc layers: the grad ops read the outputs of the first 3 layers' relu, so 3
    matmuls per segment are recomputed, not the 4th (its output is read only for its shape)."""
    feed = {"x": _RNG.standard_normal((8, 16))}
    _, results = _compare(_fc_stack(depth=12), feed, [[3, 7]])
    program = results["[3, 7]"][1]
    assert len(_recomputed(program, "matmul")) == 2 * 3


def test_selective_keeping_recomputes_less_within_its_budget():
    """RecomputePolicy(checkpoints, keep): the same gradients bit for bit; the larger the share
    of the activation bytes it may keep, the fewer ops it recomputes and the more it keeps;
    keep=0 is plain checkpointing, and "auto" keeps selectively by default."""
    feed = {"x": _RNG.standard_normal((128, 16))}  # activations outweigh the weights' gradients
    policies = [fg.RecomputePolicy([3, 7], keep) for keep in (0.0, 0.15, 0.4)]
    autos = [fg.RecomputePolicy("auto", keep) for keep in (0.0, AUTO_KEEP, 0.3)]
    ref, results = _compare(_fc_stack(depth=12), feed, [[3, 7], "auto"] + policies + autos)
    plain_stats, plain = results["[3, 7]"]
    counts = [len(_recomputed(results[str(p)][1])) for p in policies]
    peaks = [results[str(p)][0].peak_activation_bytes for p in policies]
    assert counts[0] == len(_recomputed(plain)) and peaks[0] == plain_stats.peak_activation_bytes
    assert counts[0] > counts[1] > counts[2] > 0
    assert peaks[0] <= peaks[1] <= peaks[2] < ref.peak_activation_bytes
    auto_counts = [len(_recomputed(results[str(p)][1])) for p in autos]
    assert len(_recomputed(results["auto"][1])) == auto_counts[1]
    assert auto_counts[0] >= auto_counts[1] > auto_counts[2]


def test_selective_keeping_on_dropout_cnn_and_loop_is_bit_identical():
    _compare(_mlp(depth=6, dropout=True), {"x": _RNG.standard_normal((8, 16))}, [fg.RecomputePolicy([1, 3], 0.3)])
    _compare(_cnn(), {"img": _RNG.standard_normal((4, 2, 8, 8)), "label": _RNG.integers(0, 3, (4, 1))},
             [fg.RecomputePolicy(["manual"], 0.3)])
    _compare(_loop(), {"x": _RNG.standard_normal((4, 6))}, [fg.RecomputePolicy(["manual"], 0.3)])


def test_bad_keep_share_is_a_clear_error():
    with pytest.raises(RecomputeError, match="keep must be a share"):
        fg.RecomputePolicy("auto", 1.5)


def test_auto_names_about_sqrt_n_checkpoints():
    feed = {"x": _RNG.standard_normal((4, 16))}
    _, results = _compare(_mlp(depth=16), feed, ["auto"])
    chosen = results["auto"][1].recompute_checkpoints
    n_forward = sum(op.role == "forward" for op in results["auto"][1].global_block().ops)
    assert 0.5 * n_forward ** 0.5 <= len(chosen) <= 1.5 * n_forward ** 0.5


def test_dropout_masks_are_reused_not_redrawn():
    feed = {"x": _RNG.standard_normal((8, 16))}
    _compare(_mlp(depth=6, dropout=True), feed, [[1, 3], "auto"])


def _cnn():
    def build():
        x = fg.static.data("img", [None, 2, 8, 8], "float64")
        h = fg.static.nn.conv2d(x, 4, 3, padding=1)
        h = fg.static.nn.batch_norm(h)
        first = fg.nn.functional.relu(h)
        h = fg.static.nn.conv2d(first, 4, 3, padding=1)
        h = fg.nn.functional.dropout(fg.nn.functional.relu(h), p=0.3)
        second = fg.nn.functional.max_pool2d(h, 2)
        logits = fg.static.nn.fc(fg.reshape(second, [-1, 64]), 3)
        label = fg.static.data("label", [None, 1], "int64")
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(logits, label))
        return loss, lambda which: which if which in (None, "auto") else [first, second]
    return build


def test_cnn_with_batch_norm_and_dropout():
    feed = {"img": _RNG.standard_normal((4, 2, 8, 8)), "label": _RNG.integers(0, 3, (4, 1))}
    _compare(_cnn(), feed, [["manual"], "auto"])


def _loop():
    def build():
        x = fg.static.data("x", [4, 6], "float64")
        w = fg.static.create_parameter([6, 6], "float64", name="w_loop")
        a = fg.tanh(fg.matmul(x, w))
        i = fg.full([], 0, "int64")
        _, b = fg.static.nn.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, fg.tanh(fg.matmul(h, w))), [i, a])
        c = fg.tanh(fg.matmul(b, w))
        d = fg.tanh(fg.matmul(c, w))
        return fg.mean(d * d), lambda which: which if which in (None, "auto") else [a, c]
    return build


def test_program_with_a_while_loop():
    feed = {"x": _RNG.standard_normal((4, 6))}
    _compare(_loop(), feed, [["manual"], "auto"])


def test_optimizer_minimize_passes_checkpoints_through():
    """One Adam step with and without checkpoints updates the parameters identically."""
    feed = {"x": _RNG.standard_normal((8, 16))}
    build, updated = _mlp(depth=4), []
    for checkpoints in (None, [1]):
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup), unique_name_guard():
            loss, cks = build()
            fg.optimizer.Adam(0.1).minimize(loss, checkpoints=cks(checkpoints))
        recomputed = [n for n in main.global_block().vars if RECOMPUTE_SUFFIX in n]
        assert bool(recomputed) == (checkpoints is not None)
        scope, exe = fg.Scope(), fg.Executor()
        fg.seed(5)
        exe.run(startup, scope=scope)
        exe.run(main, feed=feed, scope=scope)
        updated.append({f"w{i}": np.array(scope[f"w{i}"]) for i in range(4)})
    for name, value in updated[0].items():
        np.testing.assert_array_equal(updated[1][name], value)


def test_grad_of_grad_through_recomputed_segments():
    x_value = _RNG.standard_normal((3, 4))
    results = []
    for checkpoints in (None, "manual"):
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup), unique_name_guard():
            x = fg.static.data("x", [3, 4], "float64")
            x.stop_gradient = False
            a = fg.tanh(x * 2.0)
            b = fg.sin(a) * a
            c = fg.exp(b * 0.5)
            y = fg.sum(c * c)
            (dx,) = fg.gradients([y], [x], checkpoints=None if checkpoints is None else [b])
            (ddx,) = fg.gradients([fg.sum(dx * dx)], [x])
        exe = fg.Executor()
        exe.run(startup)
        results.append(exe.run(main, feed={"x": x_value}, fetch_list=[dx, ddx]))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    # the second pass differentiates the recomputed copies too: the same terms, summed in
    # another order, so equal to the last bits of float64, not bit for bit
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-14, atol=1e-14)


def test_bad_checkpoints_are_clear_errors():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4], "float64")
        off_path = fg.exp(x)
        loss = fg.mean(fg.static.nn.fc(x, 3))
        ops_before = len(main.global_block().ops)
        with pytest.raises(RecomputeError, match="'nope' is not a variable"):
            fg.append_backward(loss, checkpoints=["nope"])
        with pytest.raises(RecomputeError, match=f"{off_path.name!r} is not computed by a forward op on the path"):
            fg.append_backward(loss, checkpoints=[off_path])
        with pytest.raises(RecomputeError, match="'x' is not computed by a forward op"):
            fg.append_backward(loss, checkpoints=[x])
        assert len(main.global_block().ops) == ops_before  # a refused pass leaves nothing behind
        with pytest.raises(TypeError, match="checkpoints must be a list"):
            fg.append_backward(loss, checkpoints=off_path)
    with pytest.raises(TypeError, match="to_static: checkpoints must be None, 'auto' or a list"):
        fg.jit.to_static(lambda t: t * 2.0, checkpoints=3)


# ------------------------------------------------------------------ eager
def _eager_grads(use_recompute, make_block, x_value):
    fg.seed(11)
    with unique_name_guard():
        block, head = make_block()
    x = fg.to_tensor(x_value, stop_gradient=False)
    fg.seed(3)
    h = fg.recompute(block, x) if use_recompute else block(x)
    loss = fg.mean(head(h) ** 2)
    loss.backward()
    return [loss.numpy()] + [p.grad.numpy() for p in block.parameters() + head.parameters()] + [x.grad.numpy()]


@pytest.mark.parametrize("make_block", [
    lambda: (fg.nn.Sequential(fg.nn.Linear(8, 16), fg.nn.Tanh(), fg.nn.Dropout(0.3), fg.nn.Linear(16, 8)),
             fg.nn.Linear(8, 2)),
    lambda: (fg.nn.Sequential(fg.nn.Conv2D(2, 3, 3, padding=1), fg.nn.BatchNorm2D(3), fg.nn.ReLU(),
                              fg.nn.Dropout(0.2)), fg.nn.Conv2D(3, 1, 1)),
], ids=["mlp-dropout", "cnn-batchnorm-dropout"])
def test_eager_recompute_gives_identical_gradients(make_block):
    block, _ = make_block()
    shape = (4, 8) if isinstance(block[0], fg.nn.Linear) else (2, 2, 5, 5)
    x_value = _RNG.standard_normal(shape).astype("float32")
    plain = _eager_grads(False, make_block, x_value)
    recomputed = _eager_grads(True, make_block, x_value)
    for got, want in zip(recomputed, plain):
        np.testing.assert_array_equal(got, want)


def test_eager_recompute_keeps_no_intermediates_and_checks_its_argument():
    layer = fg.nn.Linear(4, 4)
    x = fg.to_tensor(np.ones((2, 4), "float32"), stop_gradient=False)
    out = fg.recompute(lambda t: fg.tanh(layer(t)) * 2.0, x)
    np.testing.assert_allclose(out.numpy(), np.tanh(layer(x).numpy()) * 2.0, rtol=1e-6)
    fg.sum(out).backward()
    assert x.grad is not None and layer.weight.grad is not None
    with pytest.raises(TypeError, match="must be callable"):
        fg.recompute(3, x)


def _batch_norm_block(features=3):
    return fg.nn.Sequential(fg.nn.Linear(features, 4), fg.nn.BatchNorm1D(4), fg.nn.ReLU(),
                            fg.nn.Linear(4, 4), fg.nn.BatchNorm1D(4))


def _train_batch_norm_blocks(mode, steps=3):
    """Train two BatchNorm blocks (plainly, each recomputed, or nested: the second recomputed
    inside the recompute of the first) and return every parameter and running statistic."""
    fg.seed(5)
    first, second = _batch_norm_block(), _batch_norm_block(4)
    params = first.parameters() + second.parameters()
    opt = fg.optimizer.SGD(0.1, parameters=params)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = fg.to_tensor(rng.standard_normal((6, 3)).astype("float32") * 2 + 1, stop_gradient=False)
        if mode == "plain":
            out = second(first(x))
        elif mode == "each":
            out = fg.recompute(second, fg.recompute(first, x))
        else:
            out = fg.recompute(lambda t: fg.recompute(second, first(t)), x)
        fg.mean(out ** 2).backward()
        opt.step()
        opt.clear_grad()
    return [t.numpy() for t in params + first.buffers() + second.buffers()]


@pytest.mark.parametrize("mode", ["each", "nested"])
def test_eager_recompute_moves_batch_norm_statistics_once_per_step(mode):
    for got, want in zip(_train_batch_norm_blocks(mode), _train_batch_norm_blocks("plain")):
        np.testing.assert_array_equal(got, want)


def test_after_a_failed_recompute_backward_batch_norm_updates_again():
    norm = fg.nn.BatchNorm1D(2)
    calls = []

    def fails_the_second_time(t):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("second run")
        return norm(t)

    x = fg.to_tensor(np.arange(8, dtype="float32").reshape(4, 2), stop_gradient=False)
    out = fg.recompute(fails_the_second_time, x)
    with pytest.raises(RuntimeError, match="second run"):
        fg.sum(out).backward()
    assert not fg.eager.mode.is_recomputing()
    before = norm._mean.numpy().copy()
    norm(x)
    assert not np.array_equal(norm._mean.numpy(), before)


def test_traced_recompute_moves_batch_norm_statistics_once():
    fg.seed(2)
    plain, traced_block = _batch_norm_block(), _batch_norm_block()
    traced_block.set_state_dict(plain.state_dict())
    x = np.random.default_rng(1).standard_normal((6, 3)).astype("float32")
    traced = fg.jit.to_static(lambda t: fg.mean(fg.recompute(traced_block, t) ** 2))
    traced(fg.to_tensor(x, stop_gradient=False)).backward()
    fg.mean(plain(fg.to_tensor(x, stop_gradient=False)) ** 2).backward()
    for got, want in zip(traced_block.buffers(), plain.buffers()):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_run_stats_follow_the_plans_liveness():
    """exp(exp(exp(x))) with a [4, 16] float64 feed: two 512-byte values alive at once at most."""
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x = fg.static.data("x", [None, 16], "float64")
        out = fg.exp(fg.exp(fg.exp(x)))
    values, stats = fg.Executor().run(main, feed={"x": np.zeros((4, 16))}, fetch_list=[out], return_stats=True)
    np.testing.assert_allclose(values[0], np.exp(np.exp(np.e ** 0)))
    assert stats.live_bytes == [512, 1024, 1024] and stats.peak_live_bytes == 1024
    assert stats.peak_activation_bytes == 1024 and stats.peak_op == 1


def test_eager_recompute_of_every_gpt_block_gives_identical_gradients():
    """The character-level GPT of examples/char_gpt.py in float64: recomputing each transformer
    block in the backward gives the loss and every parameter gradient bit for bit."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import char_gpt

    data, chars = char_gpt.encode()
    x, y = next(char_gpt.batches(data, 1, batch=4, block=16))
    results = []
    for use_recompute in (False, True):
        fg.seed(0)
        with unique_name_guard():
            model = char_gpt.CharGPT(char_gpt.Config(len(chars), block_size=16, n_embd=16, n_head=2, n_layer=2))
        model.to("float64")
        idx = fg.to_tensor(x)
        h = model.tok_emb(idx) + fg.slice(model.pos_emb, [0], [0], [idx.shape[1]])
        for block in model.blocks:
            h = fg.recompute(block, h) if use_recompute else block(h)
        logits = model.head(model.ln_f(h))
        loss = fg.nn.functional.cross_entropy(fg.reshape(logits, [-1, len(chars)]),
                                               fg.reshape(fg.to_tensor(y), [-1]))
        loss.backward()
        results.append([loss.numpy()] + [p.grad.numpy() for p in model.parameters()])
    assert len(results[0]) > 10 and results[0][1].dtype == np.float64
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


def _static_gpt_grads(checkpoints):
    """The GPT of examples/char_gpt.py in float64, its loss traced with jit.to_static; "blocks"
    wraps each transformer block in `fluidgrad.recompute`, which marks checkpoints while tracing."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import char_gpt

    data, chars = char_gpt.encode()
    x, y = next(char_gpt.batches(data, 1, batch=4, block=16))
    fg.seed(0)
    with unique_name_guard():
        model = char_gpt.CharGPT(char_gpt.Config(len(chars), block_size=16, n_embd=16, n_head=2, n_layer=3))
    model.to("float64")

    def loss_fn(idx, targets):
        h = model.tok_emb(idx) + fg.slice(model.pos_emb, [0], [0], [idx.shape[1]])
        for block in model.blocks:
            h = fg.recompute(block, h) if checkpoints == "blocks" else block(h)
        logits = model.head(model.ln_f(h))
        return fg.nn.functional.cross_entropy(fg.reshape(logits, [-1, len(chars)]), fg.reshape(targets, [-1]))

    traced = fg.jit.to_static(loss_fn, checkpoints="auto" if checkpoints == "auto" else None)
    loss = traced(fg.to_tensor(x), fg.to_tensor(y))
    loss.backward()
    assert model.parameters()[0].grad.dtype == "float64"
    return [loss.numpy()] + [p.grad.numpy() for p in model.parameters()], traced, (x, y)


def test_static_gpt_gradients_with_checkpoints_are_bit_identical():
    """jit.to_static's backward program with checkpoints ("auto", or one per block marked by
    `recompute` calls while tracing) gives the loss and every gradient of the GPT bit for bit."""
    reference, plain, _ = _static_gpt_grads(None)
    assert not any(RECOMPUTE_SUFFIX in n for n in plain.backward_program.global_block().vars)
    for checkpoints in ("blocks", "auto"):
        got, traced, _ = _static_gpt_grads(checkpoints)
        program = traced.backward_program
        assert any(RECOMPUTE_SUFFIX in n for n in program.global_block().vars)
        if checkpoints == "blocks":  # the embedding sum, then each block's output
            assert program.recompute_checkpoints == traced.concrete_program.checkpoints
            assert len(program.recompute_checkpoints) == 4
        assert len(got) == len(reference) > 30
        for value, want in zip(got, reference):
            np.testing.assert_array_equal(value, want)


def test_static_copy_of_a_traced_gpt_trains_identically_with_checkpoints():
    """The benchmark's path: an SGD step appended to a copy of the trace (ConcreteProgram) with
    the marked checkpoints updates every parameter as without them, and keeps fewer activations."""
    _, traced, batch = _static_gpt_grads("blocks")
    concrete = traced.concrete_program
    results = []
    for checkpoints in (None, concrete.checkpoints, fg.RecomputePolicy(concrete.checkpoints, 0.1)):
        main, startup = concrete.main_program.clone(), fg.Program()
        with fg.program_guard(main, startup):
            loss = main.global_block().var(concrete.outputs[0].name)
            fg.optimizer.SGD(0.1).minimize(loss, checkpoints=checkpoints)
        scope, exe = fg.Scope(), fg.Executor()
        exe.run(startup, scope=scope)
        for name, tensor in concrete.parameters:
            scope[name] = np.array(tensor.numpy())
        feed = {v.name: value for v, value in zip(concrete.inputs, batch)}
        _, stats = exe.run(main, feed=feed, fetch_list=[loss], scope=scope, return_stats=True)
        results.append(({name: np.array(scope[name]) for name, _ in concrete.parameters}, stats))
    (plain, plain_stats), (recomputed, stats), (selective, selective_stats) = results
    for name, value in plain.items():
        np.testing.assert_array_equal(recomputed[name], value)
        np.testing.assert_array_equal(selective[name], value)
    assert stats.peak_activation_bytes < 0.6 * plain_stats.peak_activation_bytes
    assert selective_stats.peak_activation_bytes < 0.6 * plain_stats.peak_activation_bytes


# ------------------------------------------------------------------ recompute's own options
def test_recompute_of_a_layer_on_an_input_without_gradient_trains_its_parameters():
    """The Layer's parameters are inputs of the checkpoint (PyTorch's use_reentrant=False): the
    output needs a gradient even though x does not, and the weights get the plain gradients."""
    block = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Tanh(), fg.nn.Linear(4, 2))
    x = fg.to_tensor(_RNG.standard_normal((5, 3)).astype("float32"))
    fg.sum(block(x) ** 2).backward()
    plain = [p.grad.numpy().copy() for p in block.parameters()]
    for p in block.parameters():
        p.clear_grad()
    for reentrant in (True, False):
        out = fg.recompute(block, x, use_reentrant=reentrant)
        assert not out.stop_gradient
        fg.sum(out ** 2).backward()
        for p, want in zip(block.parameters(), plain):
            np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-6)
            p.clear_grad()


@pytest.mark.parametrize("preserve", [True, False])
def test_recompute_preserve_rng_state(preserve):
    """True: the recomputation draws the forward's dropout mask, so the gradient of sum(dropout(x))
    is 1/(1-p) exactly where the output is kept; False: it draws a fresh mask, which differs."""
    x = fg.to_tensor(np.ones((400,), "float32"), stop_gradient=False)
    fg.seed(17)
    out = fg.recompute(lambda t: fg.nn.functional.dropout(t, 0.5), x, preserve_rng_state=preserve)
    fg.sum(out).backward()
    same_mask = np.array_equal(x.grad.numpy() != 0, out.numpy() != 0)
    assert same_mask == preserve
    if preserve:
        np.testing.assert_array_equal(x.grad.numpy(), out.numpy())


def test_recompute_options_must_be_booleans():
    with pytest.raises(TypeError, match="use_reentrant"):
        fg.recompute(fg.nn.Tanh(), fg.to_tensor(np.ones(2)), use_reentrant="no")
