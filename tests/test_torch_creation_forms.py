"""PyTorch's creation forms beside Paddle's (fluidgrad/framework/torch_forms.py,
fluidgrad/tensor/from_data.py): sizes as arguments, device= / requires_grad=, fg.tensor(data),
as_tensor / from_numpy sharing memory, manual_seed, inference_mode; torch 2.13.0 the oracle."""
import numpy as np
import pytest
import torch

import fluidgrad as fg


@pytest.fixture
def eager(monkeypatch):
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


_FORMS = {
    "zeros(2, 3)": lambda m: m.zeros(2, 3),
    "zeros((2, 3))": lambda m: m.zeros((2, 3)),
    "ones([2, 3])": lambda m: m.ones([2, 3]),
    "ones(4)": lambda m: m.ones(4),
    "empty(2, 3)": lambda m: m.empty(2, 3),
    "rand(2, 3)": lambda m: m.rand(2, 3),
    "randn(2, 3, dtype=float64)": lambda m: m.randn(2, 3, dtype=m.float64),
    "randn(5)": lambda m: m.randn(5),
    "full((2, 3), 1.5)": lambda m: m.full((2, 3), 1.5),
    "full(3, 1.5)": lambda m: m.full([3], 1.5),
    "randint(0, 10, (2, 3))": lambda m: m.randint(0, 10, (2, 3)),
    "randint(10, (4,))": lambda m: m.randint(10, (4,)),
    "randint(3, 10, size=(2,))": lambda m: m.randint(3, 10, size=(2,)),
    "zeros(2, 3, dtype=int64)": lambda m: m.zeros(2, 3, dtype=m.int64),
    "empty_like(x)": lambda m: m.empty_like(m.ones(2, 3)),
    "zeros_like(x, dtype=float64)": lambda m: m.zeros_like(m.ones(2, 3), dtype=m.float64),
    "arange(5, device='cpu')": lambda m: m.arange(5, device="cpu"),
    "arange(0, 1, 0.25, requires_grad=True)": lambda m: m.arange(0, 1, 0.25, requires_grad=True),
    "linspace(0, 1, steps=5)": lambda m: m.linspace(0, 1, steps=5),
    "linspace(0, 1, 5, dtype=float64)": lambda m: m.linspace(0, 1, 5, dtype=m.float64),
    "eye(3, 2, dtype=float64, device='cpu')": lambda m: m.eye(3, 2, dtype=m.float64, device="cpu"),
}


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "").replace("paddle.", "")


@pytest.mark.parametrize("call", sorted(_FORMS))
def test_creation_forms_give_torchs_shapes_and_dtypes(call, eager):
    got, expected = _FORMS[call](fg), _FORMS[call](torch)
    assert tuple(got.shape) == tuple(expected.shape)
    assert _dtype_name(got) == _dtype_name(expected)
    assert got.stop_gradient != expected.requires_grad
    if "rand" not in call and "empty" not in call:   # (torch.empty is uninitialised memory)
        np.testing.assert_array_equal(got.numpy(), expected.detach().numpy())


def test_randint_draws_in_range_and_paddle_forms_still_work(eager):
    values = fg.randint(3, 10, (1000,)).numpy()
    assert values.min() >= 3 and values.max() < 10
    assert tuple(fg.randint(5, shape=[3]).shape) == (3,)
    assert fg.zeros([2, 3], "float64").dtype == "float64"      # Paddle's positional dtype
    assert fg.zeros(shape=[2], dtype="int32").dtype == "int32"


def test_requires_grad_and_device_keywords(eager):
    x = fg.ones(2, 3, requires_grad=True, device="cpu")
    reference = torch.ones(2, 3, requires_grad=True, device="cpu")
    (x * 3).sum().backward()
    (reference * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), reference.grad.numpy())
    assert not fg.randn(2, requires_grad=True).stop_gradient
    assert fg.zeros(2).stop_gradient
    for cpu in ("cpu", "CPU:0", torch.device("cpu"), fg.CPUPlace(), "Place(cpu)"):
        assert tuple(fg.zeros(2, device=cpu).shape) == (2,)


_BAD = {
    "zeros(2, 'float32')": (lambda: fg.zeros(2, "float32"), TypeError, "sizes must be integers"),
    "zeros([2], dtype twice)": (lambda: fg.zeros([2], "float32", dtype="float64"), TypeError, "dtype given twice"),
    "zeros() without sizes": (lambda: fg.zeros(), TypeError, "give the sizes"),
    "ones(2, device='cuda')": (lambda: fg.ones(2, device="cuda"), ValueError, "CPU only"),
    "ones(2, device=torch.device('meta'))": (lambda: fg.ones(2, device=torch.device("meta")), ValueError, "CPU only"),
    "ones(2, device='cpux')": (lambda: fg.ones(2, device="cpux"), ValueError, "CPU only"),
    "zeros(2, shape=[2])": (lambda: fg.zeros(2, shape=[2]), TypeError, "not both"),
    "randint(10, (2,), size=(2,))": (lambda: fg.randint(10, (2,), size=(2,)), TypeError, "randint"),
    "linspace(0, 1, 5, steps=5)": (lambda: fg.linspace(0, 1, 5, steps=5), TypeError, "not both"),
    "linspace(0, 1)": (lambda: fg.linspace(0, 1), TypeError, "number of values"),
    "arange(3, device='cuda:0')": (lambda: fg.arange(3, device="cuda:0"), ValueError, "arange: fluidgrad runs on the CPU"),
    "zeros(2, dtype=int64, requires_grad)": (lambda: fg.zeros(2, dtype="int64", requires_grad=True), TypeError,
                                             "only float"),
}


@pytest.mark.parametrize("case", sorted(_BAD))
def test_bad_creation_calls_say_what_is_wrong(case, eager):
    fn, error, words = _BAD[case]
    with pytest.raises(error, match=words):
        fn()


def test_sizes_as_arguments_in_a_program():
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        z, r = fg.zeros(2, 3), fg.randn(2, 3)
        out = z + r
    assert isinstance(out, fg.Variable) and list(out.shape) == [2, 3]
    value, = fg.Executor().run(main, fetch_list=[out])
    assert value.shape == (2, 3) and value.dtype == np.float32


# ---------------------------------------------------------------- tensors from data
_DATA = {
    "floats": [[1.0, 2.0], [3.0, 4.0]],
    "ints": [1, 2, 3],
    "bools": [True, False],
    "float64 array": np.arange(3.0),
    "int32 array": np.arange(3, dtype=np.int32),
    "number": 2.5,
}


@pytest.mark.parametrize("kind", sorted(_DATA))
def test_fg_tensor_is_torch_tensor(kind, eager):
    got, expected = fg.tensor(_DATA[kind]), torch.tensor(_DATA[kind])
    assert got.dtype == _dtype_name(expected)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_fg_tensor_keywords_and_the_package_still_works(eager):
    x = fg.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    assert x.dtype == "float64" and not x.stop_gradient
    assert not fg.tensor([1.0], stop_gradient=False).stop_gradient
    with pytest.raises(TypeError, match="contradict"):
        fg.tensor([1.0], requires_grad=True, stop_gradient=True)
    import fluidgrad.tensor.math as tensor_math
    assert fg.tensor.math is tensor_math and callable(fg.tensor.cumsum)
    data = [1.0]
    copy = fg.tensor(np.array(data))
    assert not np.shares_memory(copy.numpy(), np.array(data))


def test_from_numpy_and_as_tensor_share_memory(eager):
    a = np.arange(4.0)
    t, reference = fg.from_numpy(a), torch.from_numpy(a)
    a[0] = 10.0
    assert t.dtype == "float64" and t.numpy()[0] == reference[0].item() == 10.0
    assert fg.as_tensor(a).numpy()[1] == 1.0 and np.shares_memory(fg.as_tensor(a).numpy(), a)
    assert fg.as_tensor(t) is t
    converted = fg.as_tensor(a, dtype="float32")
    assert converted.dtype == "float32" and not np.shares_memory(converted.numpy(), a)
    assert fg.as_tensor([1, 2]).dtype == "int64"
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        fg.from_numpy([1.0, 2.0])


def test_manual_seed_repeats_draws(eager):
    fg.manual_seed(3)
    first = fg.rand(4).numpy()
    fg.manual_seed(3)
    np.testing.assert_array_equal(fg.rand(4).numpy(), first)


def test_inference_mode_as_block_and_decorator(eager):
    x = fg.ones(2, requires_grad=True)
    with fg.inference_mode():
        assert (x * 2).stop_gradient
    with fg.inference_mode(False):
        assert not (x * 2).stop_gradient

    @fg.inference_mode
    def bare(v):
        return v * 2

    @fg.inference_mode()
    def called(v):
        return v * 2

    assert bare(x).stop_gradient and called(x).stop_gradient
    assert not (x * 2).stop_gradient and fg.is_grad_enabled()
