"""fluidgrad.Model (paddle.Model) and fluidgrad.metric's classes: training by fit() matches
torch on the same batches, evaluate() and the metrics match NumPy, files round-trip."""
import os

import numpy as np
import pytest
import torch

import fluidgrad as fg

RNG = np.random.default_rng(3)
FEATURES = RNG.standard_normal((24, 4))
LABELS = (FEATURES[:, :1] + 0.5 * FEATURES[:, 1:2] > 0).astype("int64")


def _net(seed=0):
    rng = np.random.default_rng(seed)
    net = fg.nn.Sequential(fg.nn.Linear(4, 6), fg.nn.Tanh(), fg.nn.Linear(6, 2)).to(dtype="float64")
    for param in net.parameters():
        param.set_value(rng.standard_normal(param.shape) * 0.5)
    return net


def _dataset():
    return fg.io.TensorDataset([fg.to_tensor(FEATURES), fg.to_tensor(LABELS)])


def _model(net=None, metrics=None, lr=0.05, **kwargs):
    net = net or _net()
    model = fg.Model(net, **kwargs)
    model.prepare(fg.optimizer.Adam(learning_rate=lr, parameters=net.parameters()), fg.nn.CrossEntropyLoss(),
                  metrics if metrics is not None else fg.metric.Accuracy())
    return model


def _torch_twin(net):
    twin = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double()
    with torch.no_grad():
        for layer, ours in ((twin[0], net[0]), (twin[2], net[2])):
            layer.weight.copy_(torch.tensor(ours.weight.numpy().T))
            layer.bias.copy_(torch.tensor(ours.bias.numpy()))
    return twin


def _numpy_accuracy(scores, labels, k):
    best = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return float(np.mean(np.any(best == labels.reshape(-1, 1), axis=1)))


# ---------------------------------------------------------------- metrics
def test_accuracy_accumulates_top_k_over_batches_as_numpy():
    scores, labels = RNG.standard_normal((30, 5)), RNG.integers(0, 5, (30, 1))
    metric = fg.metric.Accuracy(topk=(1, 3))
    assert metric.name() == ["acc_top1", "acc_top3"]
    for rows in (slice(0, 7), slice(7, 20), slice(20, 30)):
        correct = metric.compute(fg.to_tensor(scores[rows]), fg.to_tensor(labels[rows]))
        batch = metric.update(correct)
        assert batch == pytest.approx([_numpy_accuracy(scores[rows], labels[rows], k) for k in (1, 3)])
    assert metric.accumulate() == pytest.approx([_numpy_accuracy(scores, labels, k) for k in (1, 3)])
    metric.reset()
    assert metric.accumulate() == [0.0, 0.0]


def test_accuracy_takes_one_hot_labels_and_a_name():
    scores, labels = RNG.standard_normal((12, 4)), RNG.integers(0, 4, 12)
    metric = fg.metric.Accuracy(name="top")
    assert metric.name() == ["top"]
    metric.update(metric.compute(fg.to_tensor(scores), fg.to_tensor(np.eye(4)[labels])))
    assert metric.accumulate() == pytest.approx(_numpy_accuracy(scores, labels, 1))
    with pytest.raises(ValueError, match="topk"):
        fg.metric.Accuracy(topk=(5,)).compute(fg.to_tensor(scores), fg.to_tensor(labels))


def test_precision_and_recall_as_numpy():
    probs, labels = RNG.random(40), RNG.integers(0, 2, 40)
    precision, recall = fg.metric.Precision(), fg.metric.Recall()
    for rows in (slice(0, 15), slice(15, 40)):
        precision.update(probs[rows].reshape(-1, 1), labels[rows].reshape(-1, 1))
        recall.update(fg.to_tensor(probs[rows]), fg.to_tensor(labels[rows]))
    predicted = probs >= 0.5
    assert precision.accumulate() == pytest.approx(np.sum(predicted & (labels == 1)) / np.sum(predicted))
    assert recall.accumulate() == pytest.approx(np.sum(predicted & (labels == 1)) / np.sum(labels == 1))
    assert (precision.name(), recall.name()) == ("precision", "recall")
    with pytest.raises(ValueError, match="one value per sample"):
        precision.update(probs[:3], labels[:4])


def test_a_metric_subclass_needs_the_four_methods():
    class Half(fg.metric.Metric):
        def reset(self):
            pass

    with pytest.raises(TypeError):
        Half()


# ---------------------------------------------------------------- training
@pytest.mark.parametrize("data", ["dataset", "dataloader"])
def test_fit_trains_as_torch_on_the_same_batches(data):
    net = _net()
    twin = _torch_twin(net)
    model = _model(net, lr=0.05)
    train = _dataset() if data == "dataset" else fg.io.DataLoader(_dataset(), batch_size=8)
    model.fit(train, batch_size=8, epochs=3, shuffle=False, verbose=0)
    opt = torch.optim.Adam(twin.parameters(), lr=0.05)
    for _ in range(3):
        for start in range(0, 24, 8):
            x, y = torch.tensor(FEATURES[start:start + 8]), torch.tensor(LABELS[start:start + 8, 0])
            torch.nn.functional.cross_entropy(twin(x), y).backward()
            opt.step()
            opt.zero_grad()
    np.testing.assert_allclose(net[0].weight.numpy(), twin[0].weight.detach().numpy().T, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(net[2].bias.numpy(), twin[2].bias.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_evaluate_reports_the_mean_loss_and_accuracy_of_the_predictions():
    model = _model()
    model.fit(_dataset(), batch_size=5, epochs=2, verbose=0)
    result = model.evaluate(_dataset(), batch_size=5, verbose=0)
    scores, = model.predict(_dataset(), batch_size=5, stack_outputs=True, verbose=0)
    expected_loss = torch.nn.functional.cross_entropy(torch.tensor(scores), torch.tensor(LABELS[:, 0])).item()
    assert set(result) == {"loss", "acc"}
    assert result["loss"] == pytest.approx([expected_loss], rel=1e-10)
    assert result["acc"] == pytest.approx(_numpy_accuracy(scores, LABELS, 1))


def test_fit_learns_the_quick_start_task():
    model = _model(lr=0.05)
    model.fit(_dataset(), _dataset(), batch_size=4, epochs=15, verbose=0)
    assert model.evaluate(_dataset(), batch_size=8, verbose=0)["acc"] > 0.9


def test_predict_gives_each_batchs_outputs_and_ignores_labels():
    model = _model()
    batches, = model.predict(_dataset(), batch_size=10, verbose=0)
    assert [b.shape for b in batches] == [(10, 2), (10, 2), (4, 2)]
    expected = model.network(fg.to_tensor(FEATURES)).numpy()
    np.testing.assert_allclose(np.concatenate(batches), expected, rtol=1e-12)
    only_inputs = fg.io.TensorDataset([fg.to_tensor(FEATURES)])
    stacked, = model.predict(only_inputs, batch_size=7, stack_outputs=True, verbose=0)
    np.testing.assert_allclose(stacked, expected, rtol=1e-12)


def test_batch_methods():
    model = _model()
    x, y = FEATURES[:6], LABELS[:6]
    before = model.network[0].weight.numpy().copy()
    losses, metrics = model.eval_batch([x], [y])
    assert np.array_equal(model.network[0].weight.numpy(), before)
    scores = model.predict_batch([x])[0]
    expected = torch.nn.functional.cross_entropy(torch.tensor(scores), torch.tensor(y[:, 0])).item()
    assert float(losses[0]) == pytest.approx(expected, rel=1e-10)
    assert metrics[0] == pytest.approx(_numpy_accuracy(scores, y, 1))
    model.train_batch([x], [y], update=False)        # gradients kept, parameters unchanged
    assert np.array_equal(model.network[0].weight.numpy(), before)
    assert model.network[0].weight.grad is not None
    model.train_batch([x], [y])
    assert not np.array_equal(model.network[0].weight.numpy(), before)
    assert model.network[0].weight.grad is None


def test_accumulated_gradients_match_a_hand_written_loop():
    model = _model(metrics=[])
    model.fit(_dataset(), batch_size=6, epochs=1, shuffle=False, verbose=0, accumulate_grad_batches=2)
    net = _net()
    opt = fg.optimizer.Adam(learning_rate=0.05, parameters=net.parameters())
    for step, start in enumerate(range(0, 24, 6)):
        loss = fg.nn.functional.cross_entropy(net(fg.to_tensor(FEATURES[start:start + 6])),
                                              fg.to_tensor(LABELS[start:start + 6]))
        loss.backward()
        if step % 2 == 1:
            opt.step()
            opt.clear_grad()
    np.testing.assert_allclose(model.network[0].weight.numpy(), net[0].weight.numpy(), rtol=1e-12)


def test_a_network_of_two_inputs():
    class Pair(fg.nn.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = fg.nn.Linear(4, 2).to(dtype="float64"), fg.nn.Linear(4, 2).to(dtype="float64")

        def forward(self, x, y, scale=1.0):
            return (self.a(x) + self.b(y)) * scale

    model = fg.Model(Pair())
    model.prepare(fg.optimizer.SGD(learning_rate=0.1, parameters=model.parameters()), fg.nn.CrossEntropyLoss())
    data = fg.io.TensorDataset([fg.to_tensor(FEATURES), fg.to_tensor(FEATURES * 2), fg.to_tensor(LABELS)])
    model.fit(data, batch_size=8, epochs=1, verbose=0)
    result = model.evaluate(data, batch_size=8, verbose=0)
    assert set(result) == {"loss"} and np.isfinite(result["loss"][0])


# ---------------------------------------------------------------- callbacks
def test_callbacks_see_every_run_epoch_and_batch():
    calls = []

    class Recorder(fg.callbacks.Callback):
        def __getattribute__(self, name):
            if name.startswith("on_"):
                return lambda *args: calls.append(name)
            return object.__getattribute__(self, name)

    model = _model()
    model.fit(_dataset(), _dataset(), batch_size=12, epochs=2, verbose=0, callbacks=[Recorder()])
    epoch = ["on_epoch_begin"] + ["on_train_batch_begin", "on_train_batch_end"] * 2 + ["on_epoch_end",
             "on_eval_begin"] + ["on_eval_batch_begin", "on_eval_batch_end"] * 2 + ["on_eval_end"]
    assert calls == ["on_train_begin"] + epoch * 2 + ["on_train_end"]


def test_early_stopping_and_num_iters_end_training():
    model = _model(lr=0.0)                           # nothing improves
    epochs = []

    class Count(fg.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            epochs.append(epoch)

    stop = fg.callbacks.EarlyStopping(monitor="loss", patience=1, verbose=0)
    model.fit(_dataset(), _dataset(), batch_size=8, epochs=10, verbose=0, callbacks=[stop, Count()])
    assert epochs == [0, 1, 2]                        # best at 0, two evaluations without improvement
    steps = []

    class Steps(fg.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            steps.append(step)

    model.fit(_dataset(), batch_size=8, epochs=10, verbose=0, num_iters=4, callbacks=[Steps()])
    assert steps == [0, 1, 2, 0]


def test_a_scheduler_steps_after_every_batch():
    net = _net()
    scheduler = fg.optimizer.lr.StepDecay(0.1, step_size=2, gamma=0.5)
    model = fg.Model(net)
    model.prepare(fg.optimizer.SGD(learning_rate=scheduler, parameters=net.parameters()), fg.nn.CrossEntropyLoss())
    model.fit(_dataset(), batch_size=4, epochs=1, verbose=0)            # 6 batches
    assert scheduler() == pytest.approx(0.1 * 0.5 ** 3)


def test_verbose_prints_progress(capsys):
    model = _model()
    model.fit(_dataset(), batch_size=8, epochs=1, verbose=2, log_freq=1)
    out = capsys.readouterr().out
    assert "Epoch 1/1" in out and "step 3/3" in out and "loss:" in out and "acc:" in out
    model.fit(_dataset(), batch_size=8, epochs=1, verbose=0)
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------- files
def test_save_and_load_resume_training_identically(tmp_path):
    model = _model()
    model.fit(_dataset(), batch_size=8, epochs=2, shuffle=False, verbose=0)
    path = str(tmp_path / "ckpt" / "model")
    model.save(path)
    assert os.path.exists(path + ".pdparams") and os.path.exists(path + ".pdopt")
    restored = fg.Model(_net(seed=1))
    restored.load(path + ".pdparams")                  # before prepare: the optimizer's state waits for it
    restored.prepare(fg.optimizer.Adam(learning_rate=0.05, parameters=restored.parameters()),
                     fg.nn.CrossEntropyLoss(), fg.metric.Accuracy())
    assert restored.evaluate(_dataset(), batch_size=8, verbose=0) == model.evaluate(_dataset(), batch_size=8,
                                                                                      verbose=0)
    for m in (model, restored):
        m.fit(_dataset(), batch_size=8, epochs=1, shuffle=False, verbose=0)
    for ours, theirs in zip(model.parameters(), restored.parameters()):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_load_refuses_a_mismatch_unless_told_to_skip(tmp_path):
    model = _model()
    path = str(tmp_path / "m")
    model.save(path)
    other = fg.Model(fg.nn.Sequential(fg.nn.Linear(4, 6), fg.nn.Tanh(), fg.nn.Linear(6, 3)).to(dtype="float64"))
    with pytest.raises(ValueError, match="shape"):
        other.load(path)
    with pytest.warns(UserWarning, match="skipped"):
        other.load(path, skip_mismatch=True, reset_optimizer=True)
    np.testing.assert_array_equal(other.network[0].weight.numpy(), model.network[0].weight.numpy())
    with pytest.raises(FileNotFoundError):
        other.load(str(tmp_path / "nothing"))


def test_save_for_inference_and_summary(tmp_path):
    spec = fg.static.InputSpec([None, 4], "float64", "x")
    model = _model(inputs=[spec], labels=[fg.static.InputSpec([None, 1], "int64", "label")])
    path = str(tmp_path / "infer")
    model.save(path, training=False)
    loaded = fg.jit.load(path)
    np.testing.assert_allclose(loaded(fg.to_tensor(FEATURES)).numpy(), model.predict_batch([FEATURES])[0],
                               rtol=1e-12)
    assert model.summary()["total_params"] == 4 * 6 + 6 + 6 * 2 + 2
    with pytest.raises(ValueError, match="inputs"):
        _model().save(path, training=False)


def test_bad_configuration_gets_clear_errors():
    model = fg.Model(_net())
    with pytest.raises(RuntimeError, match="prepare"):
        model.fit(_dataset(), verbose=0)
    with pytest.raises(TypeError, match="Metric"):
        model.prepare(metrics=[lambda x: x])
    with pytest.raises(TypeError, match="Layer"):
        fg.Model(lambda x: x)
    with pytest.raises(TypeError, match="Callback"):
        _model().fit(_dataset(), verbose=0, callbacks=[print])
