"""Session 11's everyday functions of Paddle 2 and PyTorch (fluidgrad/tensor/special.py,
products.py, pieces.py, counting.py, dtype_info.py) against PyTorch: values and gradients in
eager and static mode, integer dtypes of the counting functions, the SciPy-free gamma kernels,
and the refusals of bad arguments."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.ops.special import lgamma_fallback, polygamma_fallback

from both_modes import compare_with_torch

RNG = np.random.default_rng(11)
A = RNG.uniform(-2, 2, (3, 4))
B = RNG.uniform(-2, 2, (4, 5))
V = RNG.uniform(-2, 2, (4,))
C = RNG.uniform(-2, 2, (2, 3, 4))
TIES = np.array([[1.0, 3.0, 3.0, 2.0, 1.0], [4.0, 4.0, 1.0, 4.0, 0.0]])
ROWS = np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [3.0, -1.0, 0.5], [1.0, 1.0, 1.0]])   # a repeated row


@pytest.fixture
def eager(monkeypatch):
    """Eager mode inside a test (conftest guards every test with a program)."""
    import fluidgrad.framework.program as program_module
    monkeypatch.setattr(program_module, "_guard_depth", 0)


def _t(array):
    return torch.tensor(np.asarray(array))


DIFFERENTIABLE = {
    "take": (lambda x: fg.take(x, fg.to_tensor(np.array([[0, 5], [-1, 11]]))),
             lambda x: torch.take(x, _t([[0, 5], [-1, 11]])), A),
    "take of a 3-D x": (lambda x: fg.take(x, fg.to_tensor(np.array([23, 0, 7, 7]))),
                        lambda x: torch.take(x, _t([23, 0, 7, 7])), C),
    "cummin axis 1": (lambda x: fg.cummin(x, axis=1)[0], lambda x: torch.cummin(x, 1)[0], A),
    "cummin axis 0": (lambda x: fg.cummin(x, 0)[0], lambda x: torch.cummin(x, 0)[0], A),
    "cummin ties": (lambda x: fg.cummin(x, axis=1)[0], lambda x: torch.cummin(x, 1)[0], TIES),
    "cummin flat": (lambda x: fg.cummin(x)[0], lambda x: torch.cummin(x.reshape(-1), 0)[0], A),
    "addmm": (lambda x: fg.addmm(x[:, :2] * 0 + x[0, :2], x, fg.transpose(x, [1, 0])[:, :2], beta=0.5, alpha=2.0),
              lambda x: torch.addmm(x[:, :2] * 0 + x[0, :2], x, x.T[:, :2], beta=0.5, alpha=2.0), A),
    "addmm broadcast input": (lambda x: fg.addmm(x[0, :3], x, fg.transpose(x, [1, 0])),
                              lambda x: torch.addmm(x[0, :3], x, x.T), A),
    "tensor_split in 3": (lambda x: fg.concat([p * (i + 1) for i, p in enumerate(fg.tensor_split(x, 3, axis=1))], 1),
                          lambda x: torch.cat([p * (i + 1) for i, p in enumerate(torch.tensor_split(x, 3, 1))], 1), A),
    "tensor_split at indices": (lambda x: fg.tensor_split(x, [1, -1, 3], axis=1)[2] * 3,
                                lambda x: torch.tensor_split(x, [1, -1, 3], 1)[2] * 3, A),
    "lgamma": (lambda x: fg.lgamma(x * 2), lambda x: torch.lgamma(x * 2), A + 0.01),
    "digamma": (lambda x: fg.digamma(x + 2.5), lambda x: torch.digamma(x + 2.5), A),
    "polygamma paddle order": (lambda x: fg.polygamma(x + 2.5, 2), lambda x: torch.polygamma(2, x + 2.5), A),
    "polygamma torch order": (lambda x: fg.polygamma(3, x + 2.5), lambda x: torch.polygamma(3, x + 2.5), A),
    "vstack": (lambda x: fg.vstack([x, x[0] * 2]), lambda x: torch.vstack([x, x[0] * 2]), A),
    "row_stack": (lambda x: fg.row_stack([x[0], x[1]]), lambda x: torch.vstack([x[0], x[1]]), A),
    "hstack": (lambda x: fg.hstack([x, x * 3]), lambda x: torch.hstack([x, x * 3]), A),
    "hstack of vectors": (lambda x: fg.hstack([x[0], x[1] * 2]), lambda x: torch.hstack([x[0], x[1] * 2]), A),
    "dstack": (lambda x: fg.dstack([x, x * 2]), lambda x: torch.dstack([x, x * 2]), A),
    "dstack of vectors": (lambda x: fg.dstack([x[0], x[1] * 2]), lambda x: torch.dstack([x[0], x[1] * 2]), A),
    "column_stack": (lambda x: fg.column_stack([x[0], x[1:].T * 2]),
                     lambda x: torch.column_stack([x[0], x[1:].T * 2]), A),
    "diag_embed": (lambda x: fg.diag_embed(x), lambda x: torch.diag_embed(x), A),
    "diag_embed above": (lambda x: fg.diag_embed(x, offset=2), lambda x: torch.diag_embed(x, 2), A),
    "diag_embed below, other axes": (lambda x: fg.diag_embed(x, -1, dim1=0, dim2=2),
                                     lambda x: torch.diag_embed(x, -1, 0, 2), C),
    "diag_embed axes swapped": (lambda x: fg.diag_embed(x, 1, dim1=-1, dim2=0),
                                lambda x: torch.diag_embed(x, 1, -1, 0), A),
    "cdist": (lambda x: fg.cdist(x, x[:2] * 2), lambda x: torch.cdist(x, x[:2] * 2), ROWS),
    "cdist with zero distances": (lambda x: fg.cdist(x, x), lambda x: torch.cdist(x, x), ROWS),
    "cdist p=1": (lambda x: fg.cdist(x, x[1:] * 3, p=1.0), lambda x: torch.cdist(x, x[1:] * 3, p=1.0), ROWS),
    "cdist p=3": (lambda x: fg.cdist(x, x[1:] * 3, p=3), lambda x: torch.cdist(x, x[1:] * 3, p=3), ROWS),
    "cdist p=inf": (lambda x: fg.cdist(x, x[1:] * 3, p=math.inf), lambda x: torch.cdist(x, x[1:] * 3, p=math.inf),
                    A),   # (no tied largest differences: torch's cdist gives each tie the whole gradient)
    "cdist batched": (lambda x: fg.cdist(x, x[:, 1:] * 2), lambda x: torch.cdist(x, x[:, 1:] * 2), C),
    "inner": (lambda x: fg.inner(x, x[1:] * 2), lambda x: torch.inner(x, x[1:] * 2), A),
    "inner of vectors": (lambda x: fg.inner(x[0], x[1]), lambda x: torch.inner(x[0], x[1]), A),
    "inner 3-D with 2-D": (lambda x: fg.inner(x, x[0] * 2), lambda x: torch.inner(x, x[0] * 2), C),
    "inner 2-D with 1-D": (lambda x: fg.inner(x, x[0] * 2), lambda x: torch.inner(x, x[0] * 2), A),
    "inner 1-D with 2-D": (lambda x: fg.inner(x[0] * 2, x), lambda x: torch.inner(x[0] * 2, x), A),
    "frac": (lambda x: fg.frac(x * 1.7), lambda x: torch.frac(x * 1.7), A),
    "nanmedian min": (lambda x: fg.nanmedian(fg.log(x), axis=1, mode="min"),
                      lambda x: torch.nanmedian(torch.log(x), 1)[0], np.abs(A) * [1, -1, 1, 1]),
    "nanmedian keepdim": (lambda x: fg.nanmedian(fg.log(x), axis=0, keepdim=True, mode="min"),
                          lambda x: torch.nanmedian(torch.log(x), 0, keepdim=True)[0], np.abs(A) * [1, -1, 1, 1]),
    "nanmedian flat": (lambda x: fg.nanmedian(fg.log(x), mode="min"), lambda x: torch.nanmedian(torch.log(x)),
                       np.abs(A) * [1, -1, 1, 1]),
}


@pytest.mark.parametrize("name", list(DIFFERENTIABLE))
def test_values_and_gradients_match_torch_in_both_modes(name):
    ours, theirs, x = DIFFERENTIABLE[name]
    compare_with_torch(ours, theirs, {"x": x}, wrt=["x"])


def test_nanmedian_average_of_the_two_middle_values_and_all_nan_slices(eager):
    x = np.array([[1.0, np.nan, 4.0, 2.0, 3.0], [np.nan] * 5, [5.0, 1.0, np.nan, np.nan, 2.0]])
    np.testing.assert_allclose(fg.nanmedian(fg.to_tensor(x), axis=1).numpy(), np.nanmedian(x, axis=1))
    assert float(fg.nanmedian(fg.to_tensor(x)).numpy()) == np.nanmedian(x)
    ints = fg.to_tensor(np.array([3, 1, 2, 7]))
    assert fg.nanmedian(ints, mode="min").numpy() == torch.nanmedian(torch.tensor([3, 1, 2, 7])).item()


def test_cummin_indices_match_torch_for_floats_ints_and_bools(eager):
    for data in (TIES, np.array([[3, -128, 5, -128, 127]], dtype=np.int8), np.array([[2, 0, 7, 0]], dtype=np.uint8),
                 np.array([[True, False, True, False]]), np.array([[1.0, np.nan, 0.0, np.nan, -1.0]])):
        values, index = fg.cummin(fg.to_tensor(data), axis=1)
        expected = torch.cummin(torch.tensor(data), 1)
        np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
        np.testing.assert_array_equal(index.numpy(), expected.indices.numpy())
        assert values.dtype == str(data.dtype) and index.dtype == "int64"
    assert fg.cummin(fg.to_tensor(TIES), 1, dtype="int32")[1].dtype == "int32"


def test_take_wrap_and_clip_modes_and_out_of_range(eager):
    x = fg.to_tensor(A)
    index = np.array([13, -15, 2, 40])
    np.testing.assert_array_equal(fg.take(x, fg.to_tensor(index), mode="wrap").numpy(), np.take(A, index, mode="wrap"))
    np.testing.assert_array_equal(fg.take(x, fg.to_tensor(index), mode="clip").numpy(), np.take(A, index, mode="clip"))
    with pytest.raises(Exception, match="out of range"):
        fg.take(x, fg.to_tensor(np.array([12])))
    with pytest.raises(TypeError, match="take: index must be an integer"):
        fg.take(x, fg.to_tensor(np.array([1.0])))


def test_heaviside_values_and_the_gradient_of_the_values_at_zero(eager):
    x0 = np.array([[-1.0, -0.0, 2.0], [0.0, np.nan, 3.0]])
    y0 = np.array([0.25, 0.5, 0.75])
    x, y = fg.to_tensor(x0), fg.to_tensor(y0, stop_gradient=False)
    out = fg.heaviside(x, y)
    np.testing.assert_array_equal(out.numpy(), torch.heaviside(_t(x0), _t(y0)).numpy())
    (dy,) = fg.grad([fg.sum(out)], [y])
    np.testing.assert_array_equal(dy.numpy(), [1.0, 1.0, 0.0])    # Paddle's: where x == 0 (torch has none)


def test_bucketize_keeps_integer_dtypes_and_matches_torch(eager):
    boundaries = np.array([1, 3, 5, 7])
    values = np.array([[0, 1, 4], [5, 7, 9]])
    for right in (False, True):
        for out_int32 in (False, True):
            got = fg.bucketize(fg.to_tensor(values), fg.to_tensor(boundaries), out_int32=out_int32, right=right)
            expected = torch.bucketize(_t(values), _t(boundaries), out_int32=out_int32, right=right)
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
            assert got.dtype == ("int32" if out_int32 else "int64")
    with pytest.raises(ValueError, match="bucketize: sorted_sequence must be 1-D"):
        fg.bucketize(fg.to_tensor(values), fg.to_tensor(values))


def test_bucketize_and_histogram_in_a_program():
    x = fg.static.data("x", [-1, 3], "float64")
    buckets = fg.bucketize(x, fg.linspace(0.0, 1.0, 2, dtype="float64"))
    counts = fg.histogram(x, bins=3, min=-1, max=2)
    x0 = np.array([[-1.0, 0.5, 0.6], [2.0, 5.0, 1.9]])
    got_buckets, got_counts = fg.Executor().run(feed={"x": x0}, fetch_list=[buckets, counts])
    np.testing.assert_array_equal(got_buckets, torch.bucketize(_t(x0), _t([0.0, 1.0])).numpy())
    np.testing.assert_array_equal(got_counts, [1, 2, 2])
    assert got_counts.dtype == np.int64 and tuple(counts.shape) == (3,)


@pytest.mark.parametrize("bins, low, high", [(4, 0, 6), (5, 0, 0), (3, -1.0, 1.0), (7, 2.5, 2.5)])
def test_histc_and_histogram_match_torch(eager, bins, low, high):
    x0 = np.concatenate([RNG.uniform(-2, 7, 40), [0.0, 6.0, -1.0, 1.0, 2.5]])
    expected = torch.histc(_t(x0), bins, low, high).numpy()
    got = fg.histc(fg.to_tensor(x0), bins, low, high)
    np.testing.assert_array_equal(got.numpy(), expected)
    assert got.dtype == "float64"
    counts = fg.histogram(fg.to_tensor(x0.astype("float32")), bins=bins, min=low, max=high)
    np.testing.assert_array_equal(counts.numpy(), torch.histc(_t(x0.astype("float32")), bins, low, high).numpy())
    assert counts.dtype == "int64"


def test_histogram_weights_and_density_match_numpy(eager):
    x0, w0 = RNG.uniform(0, 4, 30), RNG.uniform(0.5, 1.5, 30)
    w = fg.to_tensor(w0, stop_gradient=False)
    weighted = fg.histogram(fg.to_tensor(x0), bins=4, min=0, max=4, weight=w)
    np.testing.assert_allclose(weighted.numpy(), np.histogram(x0, 4, (0, 4), weights=w0)[0])
    density = fg.histogram(fg.to_tensor(x0), bins=4, min=0, max=4, density=True)
    np.testing.assert_allclose(density.numpy(), np.histogram(x0, 4, (0, 4), density=True)[0])
    (dw,) = fg.grad([fg.sum(weighted * fg.to_tensor(np.arange(4.0)))], [w])
    np.testing.assert_array_equal(dw.numpy(), np.floor(x0))     # each weight reaches its own bin
    with pytest.raises(ValueError, match="histogram: bins must be > 0"):
        fg.histogram(fg.to_tensor(x0), bins=0)
    with pytest.raises(ValueError, match="max must be >= min"):
        fg.histc(fg.to_tensor(x0), 3, 2, 1)


@pytest.mark.parametrize("row, col, offset", [(3, 3, 0), (4, 2, 1), (2, 5, -1), (3, 4, 2), (0, 3, 0)])
def test_tril_and_triu_indices_match_torch(eager, row, col, offset):
    for ours, theirs in ((fg.tril_indices, torch.tril_indices), (fg.triu_indices, torch.triu_indices)):
        got = ours(row, col, offset)
        np.testing.assert_array_equal(got.numpy(), theirs(row, col, offset).numpy())
        assert got.dtype == "int64" and ours(row, col, offset, dtype="int32").dtype == "int32"
    np.testing.assert_array_equal(fg.triu_indices(3).numpy(), torch.triu_indices(3, 3).numpy())   # Paddle: col=row


def test_tril_indices_and_logspace_in_a_program():
    indices, spaced = fg.tril_indices(3, 3), fg.logspace(0, 3, 4, base=2.0, dtype="float64")
    got_indices, got_spaced = fg.Executor().run(fetch_list=[indices, spaced])
    np.testing.assert_array_equal(got_indices, torch.tril_indices(3, 3).numpy())
    np.testing.assert_allclose(got_spaced, [1.0, 2.0, 4.0, 8.0])


@pytest.mark.parametrize("start, stop, num, base", [(0, 2, 5, 10.0), (-1.5, 3, 7, 2.0), (1, 1, 1, 3.0), (2, 0, 4, 0.5)])
def test_logspace_matches_torch(eager, start, stop, num, base):
    got = fg.logspace(start, stop, num, base=base, dtype="float64")
    np.testing.assert_allclose(got.numpy(), torch.logspace(start, stop, num, base=base, dtype=torch.float64).numpy(),
                               rtol=1e-14)
    assert fg.logspace(0, 1, 3).dtype == "float32"


def test_cdist_p0_counts_differing_entries(eager):
    x0, y0 = np.array([[1.0, 2.0, 3.0], [0.0, 2.0, 0.0]]), np.array([[1.0, 0.0, 3.0]])
    got = fg.cdist(fg.to_tensor(x0), fg.to_tensor(y0), p=0)
    np.testing.assert_array_equal(got.numpy(), torch.cdist(_t(x0), _t(y0), p=0).numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(dtype):
    ours, theirs = fg.finfo(dtype), torch.finfo(getattr(torch, dtype))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert fg.finfo(getattr(fg, dtype)).dtype == dtype


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_iinfo_matches_torch(dtype):
    ours, theirs = fg.iinfo(dtype), torch.iinfo(getattr(torch, dtype))
    assert (ours.bits, ours.min, ours.max) == (theirs.bits, theirs.min, theirs.max)


def test_dtype_questions(eager):
    floats, ints = fg.to_tensor(A), fg.to_tensor(np.arange(3))
    assert fg.is_tensor(floats) and not fg.is_tensor(A) and not fg.is_tensor(3.0)
    assert fg.is_floating_point(floats) and not fg.is_floating_point(ints)
    assert fg.is_integer(ints) and not fg.is_integer(floats) and not fg.is_integer(fg.to_tensor(np.array([True])))
    with pytest.raises(TypeError, match="is_floating_point: expects a Tensor"):
        fg.is_floating_point(A)
    with pytest.raises(TypeError, match="finfo: needs a floating-point dtype"):
        fg.finfo("int32")
    with pytest.raises(TypeError, match="iinfo: needs an integer dtype"):
        fg.iinfo("float32")


def test_is_tensor_of_a_variable():
    assert fg.is_tensor(fg.static.data("x", [2], "float32"))


def test_frac_of_integers_is_zero_and_bool_is_refused(eager):
    np.testing.assert_array_equal(fg.frac(fg.to_tensor(np.array([3, -2]))).numpy(), [0, 0])
    with pytest.raises(TypeError, match="frac: needs a floating-point or integer input"):
        fg.frac(fg.to_tensor(np.array([True])))


def test_gamma_kernels_without_scipy_match_scipy():
    special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-7.9, 40, 601), [1e-8, 1e-3, 0.0, -1.0, -3.0, 1e5, -2.5, -1000.3]])
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(lgamma_fallback(x), special.gammaln(x), rtol=1e-13, atol=1e-14)
        for n in range(5):
            expected = special.psi(x) if n == 0 else special.polygamma(n, x)
            np.testing.assert_allclose(polygamma_fallback(n, x), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call, error, words", [
    (lambda: fg.addmm(fg.to_tensor(A), fg.to_tensor(A), fg.to_tensor(A.T)), ValueError, "addmm: input"),
    (lambda: fg.addmm(fg.to_tensor(A), fg.to_tensor(A), fg.to_tensor(A)), ValueError, "addmm: x .* cannot be multiplied"),
    (lambda: fg.addmm(fg.to_tensor(V), fg.to_tensor(V), fg.to_tensor(A)), ValueError, "addmm: x and y must be matrices"),
    (lambda: fg.inner(fg.to_tensor(A), fg.to_tensor(B)), ValueError, "inner: the last axes"),
    (lambda: fg.cdist(fg.to_tensor(A), fg.to_tensor(B)), ValueError, "cdist: x"),
    (lambda: fg.cdist(fg.to_tensor(A), fg.to_tensor(A), p=-1), ValueError, "cdist: p must be >= 0"),
    (lambda: fg.diag_embed(fg.to_tensor(A), dim1=1, dim2=-2), ValueError, "diag_embed: dim1=1 and dim2=-2"),
    (lambda: fg.polygamma(fg.to_tensor(A), -1), ValueError, "polygamma: the order n"),
    (lambda: fg.tensor_split(fg.to_tensor(A), 0), ValueError, "tensor_split: needs a number of parts"),
    (lambda: fg.vstack(fg.to_tensor(A)), TypeError, "vstack: expects a list of tensors"),
    (lambda: fg.tril_indices(-1, 3), ValueError, "tril_indices: row and col must be >= 0"),
    (lambda: fg.heaviside(fg.to_tensor(A), fg.to_tensor(A.astype("float32"))), TypeError, "heaviside: x"),
    (lambda: fg.nanmedian(fg.to_tensor(A), mode="max"), ValueError, "nanmedian: mode"),
    (lambda: fg.histc(fg.to_tensor(np.arange(3)), 3), TypeError, "histc: needs a floating-point input"),
])
def test_bad_arguments_are_refused_by_name(eager, call, error, words):
    with pytest.raises(error, match=words):
        call()


_EXPORTED = {
    "cdist": lambda x, i: fg.cdist(x, x * 2),
    "diag_embed": lambda x, i: fg.diag_embed(x, 1),
    "take": lambda x, i: fg.take(x, i),
    "addmm": lambda x, i: fg.addmm(x[:, :3], x, fg.transpose(x, [1, 0])[:, :3], beta=0.5),
    "inner": lambda x, i: fg.inner(x, x),
    "frac": lambda x, i: fg.frac(x * 1.5),
    "cummin": lambda x, i: fg.cummin(x, 1)[0],
    "nanmedian": lambda x, i: fg.nanmedian(x, 1),
    "vstack": lambda x, i: fg.vstack([x, x]),
    "tensor_split": lambda x, i: fg.tensor_split(x, 3, axis=1)[1],
    "bucketize": lambda x, i: fg.bucketize(x, fg.linspace(0.0, 1.0, 3, dtype="float64")),
    "heaviside": lambda x, i: fg.heaviside(x, x),
}


@pytest.mark.parametrize("name", sorted(_EXPORTED))
def test_composed_functions_export_to_onnx(tmp_path, name):
    """Composed of registered ops, these export with a run-time batch axis (onnxruntime runs them)."""
    ort = pytest.importorskip("onnxruntime")
    from fluidgrad.onnx import export_program
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, i = fg.static.data("x", [None, 4], "float64"), fg.static.data("i", [3], "int64")
        out = _EXPORTED[name](x, i)
    feeds = {"x": RNG.normal(size=(3, 4)), "i": np.array([0, 11, -1])}
    want, = fg.Executor().run(main, feed=feeds, fetch_list=[out])
    model = export_program(tmp_path / "f.onnx", [x, i], [out], program=main, scope=fg.Scope())
    session = ort.InferenceSession(str(tmp_path / "f.onnx"), providers=["CPUExecutionProvider"])
    got, = session.run(None, {v.name: feeds[v.name] for v in model.graph.input})
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_torch_keyword_spellings(eager):
    x, tx = fg.to_tensor(A), torch.tensor(A)
    checks = [
        (fg.cummin(x, dim=0)[0], torch.cummin(tx, dim=0)[0]),
        (fg.tensor_split(x, indices_or_sections=[1, 3], dim=1)[1], torch.tensor_split(tx, [1, 3], dim=1)[1]),
        (fg.tensor_split(x, sections=3, dim=1)[2], torch.tensor_split(tx, sections=3, dim=1)[2]),
        (fg.tensor_split(x, indices=[2], dim=0)[0], torch.tensor_split(tx, indices=[2], dim=0)[0]),
        (fg.nanmedian(x, dim=1, mode="min").values, torch.nanmedian(tx, dim=1)[0]),
        (fg.bucketize(x, boundaries=fg.to_tensor(np.array([-1.0, 0.0, 1.0]))),
         torch.bucketize(tx, boundaries=torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64))),
        (fg.addmm(x[:, :3], mat1=x, mat2=fg.transpose(x, [1, 0])), torch.addmm(tx[:, :3], mat1=tx, mat2=tx.T)),
        (fg.inner(x, other=x), torch.inner(tx, other=tx)),
        (fg.cdist(x1=x, x2=x * 2), torch.cdist(x1=tx, x2=tx * 2)),
        (fg.heaviside(x, values=x * 2), torch.heaviside(tx, values=tx * 2)),
        (fg.logspace(0, end=2, steps=3, dtype="float64"), torch.logspace(0, end=2, steps=3, dtype=torch.float64)),
    ]
    for got, expected in checks:
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match="cummin: give axis= or dim=, not both"):
        fg.cummin(x, axis=1, dim=0)
    with pytest.raises(TypeError, match="addmm: missing the matrices"):
        fg.addmm(x, x)
