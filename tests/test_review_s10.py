"""Session-10 review: wrong answers, crashes and unclear errors a PyTorch or Paddle 2 user meets,
each a strict xfail until its fix lands (then the mark goes and the test stays as a regression
test). PyTorch 2.13.0 is the oracle; where Paddle 2 documents another rule, the reason says so.

Found by probing the areas the earlier reviews left alone: writes into the result of an indexing
expression (PyTorch's views), matrix norms, arrays handed to set_value, the `.data` idioms of
PyTorch code, in-place buffer updates inside jit.to_static and the errors of torch-style calls."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


@pytest.fixture
def eager(monkeypatch):
    """Eager mode inside a test (the suite's conftest guards every test with a program, where
    functions without inputs such as `zeros` append ops)."""
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


# ================================================================ wrong answers
# ---------------------------------------------------------------- writes into x[...] (PyTorch's views)
_WRITES_THROUGH_AN_INDEX = {
    "x[0][1] = 9.0": lambda x: x[0].__setitem__(1, 9.0),
    "x[:, 0].zero_()": lambda x: x[:, 0].zero_(),
    "x[1].add_(1.0)": lambda x: x[1].add_(torch.ones(3, dtype=torch.float64) if isinstance(x, torch.Tensor)
                                         else fg.to_tensor(np.ones(3))),
    "x[0][x[0] > 1] = 0.0": lambda x: x[0].__setitem__(x[0] > 1, 0.0),
}


@pytest.mark.parametrize("write", sorted(_WRITES_THROUGH_AN_INDEX))
def test_write_into_an_indexing_result_reaches_the_tensor(write):
    x0 = np.arange(6.0).reshape(2, 3)
    expected = torch.tensor(x0)
    with torch.no_grad():
        _WRITES_THROUGH_AN_INDEX[write](expected)
    x = fg.to_tensor(x0)
    try:
        with fg.no_grad():
            _WRITES_THROUGH_AN_INDEX[write](x)
    except (TypeError, ValueError, RuntimeError) as error:     # a clear refusal is fine too
        assert "view" in str(error) or "copy" in str(error)
        return
    np.testing.assert_array_equal(x.numpy(), expected.numpy())


# ---------------------------------------------------------------- matrix norms over two axes
@pytest.mark.xfail(strict=True, reason="linalg.norm(A, p, axis=[0, 1]) flattens A and gives the vector p-norm for "
                   "p = 2, 1, inf (9.0 instead of the spectral norm 8.47, 21 instead of the largest column sum 6); "
                   "torch.linalg.norm(A, p, dim=(0, 1)) and Paddle's linalg.norm with two axes give the matrix "
                   "norm; 'nuc' and p = -1 / -2 are refused")
@pytest.mark.parametrize("p", [2, 1, float("inf"), -1, "nuc"])
def test_linalg_norm_over_two_axes_is_the_matrix_norm(p):
    a0 = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 4.0, 5.0]])
    expected = torch.linalg.norm(torch.tensor(a0), p, dim=(0, 1)).numpy()
    got = fg.linalg.norm(fg.to_tensor(a0), p, axis=[0, 1]).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10)


# ---------------------------------------------------------------- set_value keeps the caller's array
@pytest.mark.xfail(strict=True, reason="Tensor.set_value(array) keeps the caller's ndarray as the parameter's "
                   "storage, so loading weights through one reused buffer (buf[...] = read(); "
                   "layer.weight.set_value(buf)) leaves every layer with the last values written; Paddle's "
                   "set_value and torch's p.copy_(torch.from_numpy(a)) copy")
def test_set_value_copies_the_callers_array():
    first, second = fg.nn.Linear(2, 2), fg.nn.Linear(2, 2)
    buffer = np.empty((2, 2), "float32")
    buffer[...] = 1.0
    first.weight.set_value(buffer)
    buffer[...] = 2.0
    second.weight.set_value(buffer)
    buffer[...] = 0.0                               # the buffer is reused for something else
    np.testing.assert_array_equal(first.weight.numpy(), np.ones((2, 2), "float32"))
    np.testing.assert_array_equal(second.weight.numpy(), np.full((2, 2), 2.0, "float32"))


# ================================================================ crashes on common code
# ---------------------------------------------------------------- PyTorch's `.data` idioms
_DATA_IDIOMS = {
    "p.data = t": lambda p, t: setattr(p, "data", t),
    "p.data.copy_(t)": lambda p, t: p.data.copy_(t),
    "p.data.mul_(0.0).add_(t)": lambda p, t: p.data.mul_(0.0).add_(t),
}


@pytest.mark.xfail(strict=True, reason="Tensor.data is the raw NumPy array: PyTorch's target-network and EMA "
                   "updates p.data.copy_(q) / p.data.mul_(a).add_(q) fail with \"'numpy.ndarray' object has no "
                   "attribute 'copy_'\", and p.data = t is accepted and breaks the parameter (its next use fails "
                   "with a ShapeError from reshape); in PyTorch p.data is a Tensor sharing p's storage")
@pytest.mark.parametrize("idiom", sorted(_DATA_IDIOMS))
def test_pytorch_data_idioms_update_the_parameter(idiom):
    layer = fg.nn.Linear(2, 2)
    target = fg.to_tensor(np.full((2, 2), 0.5, "float32"))
    _DATA_IDIOMS[idiom](layer.weight, target)
    np.testing.assert_array_equal(layer.weight.numpy(), np.full((2, 2), 0.5, "float32"))
    out = layer(fg.to_tensor(np.ones((1, 2), "float32")))
    np.testing.assert_allclose(out.numpy(), 1.0 + layer.bias.numpy()[None, :], rtol=1e-6)


# ---------------------------------------------------------------- in-place buffer updates inside to_static
class _StepCounter(fg.nn.Layer):
    def __init__(self, how):
        super().__init__()
        self.how = how
        self.register_buffer("count", fg.to_tensor(np.array(0.0)))

    def forward(self, x):
        with fg.no_grad():
            if self.how == "count += 1":
                self.count += 1.0
            elif self.how == "count.add_(1)":
                self.count.add_(fg.to_tensor(np.array(1.0)))
            else:
                self.count.copy_(self.count + 1.0)
        return x * 2.0


@pytest.mark.xfail(strict=True, reason="an in-place update of a buffer inside a traced forward (self.count += 1, "
                   "add_, copy_: a step counter, a running statistic) crashes jit.to_static with the internal "
                   "\"AttributeError: 'Variable' object has no attribute 'data'\" (indexing.py); "
                   "count.set_value(count + 1) works. Expected the eager result (count 3 after 3 calls) or an "
                   "error naming the buffer and set_value")
@pytest.mark.parametrize("how", ["count += 1", "count.add_(1)", "count.copy_(count + 1)"])
def test_in_place_buffer_update_inside_to_static(how):
    layer = _StepCounter(how)
    traced = fg.jit.to_static(layer)
    x = fg.to_tensor(np.ones(2))
    try:
        for _ in range(3):
            out = traced(x)
    except AttributeError:
        raise
    except (TypeError, ValueError, RuntimeError) as error:
        assert "count" in str(error) and "set_value" in str(error)
        return
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
    assert float(layer.count) == 3.0


# ================================================================ unclear errors
# ---------------------------------------------------------------- torch's positional spellings of transpose / max / min
_TORCH_POSITIONAL = {
    "fg.transpose(x, 0, 1)": (lambda m, x: m.transpose(x, 0, 1), ("transpose", "perm")),
    "fg.max(x, y)": (lambda m, x: m.max(x, x * 0.5 + 1.0), ("max", "maximum")),
    "fg.min(x, y)": (lambda m, x: m.min(x, x * 0.5 + 1.0), ("min", "minimum")),
}


@pytest.mark.xfail(strict=True, reason="torch's positional calls fail with messages that name neither the function "
                   "nor the argument: fg.transpose(x, 0, 1) raises \"'int' object is not iterable\", fg.max(x, y) "
                   "\"int() takes a tensor of one element\"; expected torch's result or an error naming the "
                   "function and what it wants (a perm list; fg.maximum for two tensors)")
@pytest.mark.parametrize("call", sorted(_TORCH_POSITIONAL))
def test_torch_positional_calls_work_or_say_what_is_wrong(call):
    fn, words = _TORCH_POSITIONAL[call]
    x0 = np.array([[3.0, -1.0, 2.0], [0.5, 5.0, -4.0]])
    expected = fn(torch, torch.tensor(x0)).numpy()
    try:
        got = fn(fg, fg.to_tensor(x0)).numpy()
    except (TypeError, ValueError) as error:
        message = str(error)
        assert words[0] in message and words[1] in message
        return
    np.testing.assert_array_equal(got, expected)


# ================================================================ batch 2: wrong answers
# ---------------------------------------------------------------- where with a Python float on integer / bool tensors
_WHERE_WITH_A_SCALAR = {
    "where(c, int, 0.5)": lambda m, c, i: m.where(c, i, 0.5),
    "where(c, 0.5, int)": lambda m, c, i: m.where(c, 0.5, i),
    "where(c, bool, 0.5)": lambda m, c, i: m.where(c, c, 0.5),
}


@pytest.mark.xfail(strict=True, reason="where(cond, x, 0.5) with an integer or bool x casts the float to x's dtype: "
                   "0.5 becomes 0 (or True), giving int64 [0, 1, 2, 0] where torch.where gives float32 "
                   "[0.5, 1, 2, 0.5] (static programs too); expected type promotion as in PyTorch (x + 0.5 here "
                   "already promotes), or a refusal")
@pytest.mark.parametrize("call", sorted(_WHERE_WITH_A_SCALAR))
def test_where_with_a_float_scalar_on_an_integer_tensor(call):
    fn = _WHERE_WITH_A_SCALAR[call]
    i0 = np.array([0, 1, 2, -1])
    expected = fn(torch, torch.tensor(i0 > 0), torch.tensor(i0)).numpy()
    try:
        got = fn(fg, fg.to_tensor(i0 > 0), fg.to_tensor(i0)).numpy()
    except (TypeError, ValueError):                 # a refusal is fine too
        return
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------- bfloat16 softmax and cross-entropy
_BF16_FUNCTIONS = {
    "softmax": (lambda x: fg.nn.functional.softmax(x, -1), lambda x: torch.softmax(x, -1)),
    "cross_entropy": (lambda x: fg.nn.functional.cross_entropy(x, fg.to_tensor(np.arange(4))),
                      lambda x: torch.nn.functional.cross_entropy(x, torch.arange(4))),
}


@pytest.mark.xfail(strict=True, reason="bfloat16 softmax and cross_entropy over 1000 classes accumulate in bfloat16: "
                   "softmax is off by 0.0197 on values up to 0.23 (8%, 57x PyTorch's error, which computes in "
                   "float32 inside the kernel and rounds once), cross_entropy by 0.14 (11x PyTorch's); "
                   "docs/dtypes.md promises a few units in the last place. float16 is fine")
@pytest.mark.parametrize("name", sorted(_BF16_FUNCTIONS))
def test_bfloat16_softmax_and_cross_entropy_are_as_accurate_as_torch(name):
    ours, theirs = _BF16_FUNCTIONS[name]
    logits = torch.tensor(np.random.default_rng(0).standard_normal((4, 1000)) * 3).to(torch.bfloat16)
    exact = theirs(logits.double()).numpy()
    torch_error = np.abs(theirs(logits).float().numpy() - exact).max()
    got = ours(fg.to_tensor(logits.float().numpy()).astype("bfloat16")).astype("float32").numpy()
    assert np.abs(got - exact).max() <= 3 * torch_error


# ================================================================ batch 2: crashes on common code
# ---------------------------------------------------------------- PyTorch's own quick start and everyday Tensor methods
_TORCH_TENSOR_METHODS = {
    "(pred.argmax(1) == y).type(torch.float)": lambda m, x: (x.argmax(1) == x.argmax(1)).type(m.float32),
    "x.new_zeros((2, 3))": lambda m, x: x.new_zeros((2, 3)),
    "x.new_full((2,), 7.0)": lambda m, x: x.new_full((2,), 7.0),
    "x.repeat(2, 1)": lambda m, x: x.repeat(2, 1),
    "x.type_as(y)": lambda m, x: x.argmax(1).type_as(x),
    "x.view_as(y)": lambda m, x: x.reshape([-1]).view_as(x),
    "x.softmax(dim=-1)": lambda m, x: x.softmax(dim=-1),
    "x.clamp(min=0)": lambda m, x: x.clamp(min=0),
    "x.eq(y)": lambda m, x: x.eq(x[0]),
    "x.mm(y)": lambda m, x: x.mm(x.t()),
    "x.relu()": lambda m, x: x.relu(),
}


@pytest.mark.xfail(strict=True, reason="PyTorch's quick start fails on its test loop: "
                   "(pred.argmax(1) == y).type(torch.float) is an AttributeError (no Tensor.type); so are other "
                   "everyday Tensor methods: new_zeros / new_full, repeat (torch's tile), type_as, view_as, "
                   "softmax(dim=), clamp, eq, mm, relu")
@pytest.mark.parametrize("method", sorted(_TORCH_TENSOR_METHODS))
def test_everyday_pytorch_tensor_methods(method):
    x0 = np.array([[3.0, -1.0, 2.0, 0.5], [0.0, 5.0, -4.0, 1.0]])
    fn = _TORCH_TENSOR_METHODS[method]
    expected = fn(torch, torch.tensor(x0)).numpy()
    got = fn(fg, fg.to_tensor(x0)).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.astype(float), expected.astype(float))


# ---------------------------------------------------------------- a Paddle static user's way to read and set a parameter
@pytest.mark.xfail(strict=True, reason="Paddle static code reads and sets parameters with "
                   "paddle.static.global_scope().find_var(name).get_tensor() (np.array(t), t.set(value, place)); "
                   "here find_var returns the bare ndarray, and get_tensor() fails with \"'numpy.ndarray' object has "
                   "no attribute 'get_tensor'\"")
def test_scope_find_var_get_tensor_reads_and_sets_a_parameter():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 4], "float32")
        out = fg.static.nn.fc(x, 3, weight_attr=fg.ParamAttr(name="review10_w"), bias_attr=False)
    exe = fg.Executor()
    exe.run(startup)
    tensor = fg.static.global_scope().find_var("review10_w").get_tensor()
    assert np.array(tensor).shape == (4, 3)
    tensor.set(np.ones((4, 3), "float32"), fg.CPUPlace())
    got, = exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[out])
    np.testing.assert_array_equal(got, np.full((2, 3), 4.0, "float32"))


# ---------------------------------------------------------------- ONNX files from torch.onnx.export's default (dynamo) exporter
class _TorchCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
        self.pool, self.fc = torch.nn.AdaptiveAvgPool2d((2, 2)), torch.nn.Linear(16, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(x.view(x.size(0), -1))


class _TorchGRU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru, self.fc = torch.nn.GRU(4, 5, batch_first=True), torch.nn.Linear(5, 2)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(out[:, -1])


class _TorchDecoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x, x, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1]))


_TORCH_MODELS = {"cnn with batch norm": (_TorchCNN, (1, 6, 6)), "gru": (_TorchGRU, (5, 4)),
                 "transformer decoder layer": (_TorchDecoder, (5, 8))}


@pytest.mark.xfail(strict=True, reason="models exported by torch.onnx.export's default exporter (dynamo=True) with a "
                   "dynamic batch do not import: x.view(x.size(0), -1) is refused (\"Reshape ... a shape "
                   "[x.shape[0], -1] with unknown dimensions under allowzero=1\", though entry 0 is the input's own "
                   "batch), nn.GRU's Slice (\"ends depends on dimensions unknown when the program is built\"), the "
                   "decoder layer's view; the same models from the TorchScript exporter import and match")
@pytest.mark.parametrize("name", sorted(_TORCH_MODELS))
def test_torch_dynamo_exported_model_with_a_dynamic_batch_imports(tmp_path, name):
    import warnings
    pytest.importorskip("onnx", reason="the `onnx` extra is not installed")
    pytest.importorskip("onnxscript", reason="torch's dynamo exporter needs onnxscript")
    from fluidgrad.onnx import import_model
    make, sample_shape = _TORCH_MODELS[name]
    torch.manual_seed(0)
    net = make().eval()
    path = str(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.randn(2, *sample_shape),), path, dynamo=True, optimize=False, verbose=False,
                          dynamic_shapes=({0: torch.export.Dim("batch")},))
    x3 = torch.randn(3, *sample_shape)
    scope = fg.Scope()
    program, feed_names, fetch_vars = import_model(path, scope)
    got, = fg.Executor().run(program, feed={feed_names[0]: x3.numpy()}, fetch_list=fetch_vars[:1], scope=scope)
    np.testing.assert_allclose(got, net(x3).detach().numpy(), rtol=1e-4, atol=1e-5)
