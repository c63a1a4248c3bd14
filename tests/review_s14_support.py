"""One computation run four ways for the session-14 differential review: fluidgrad eager, fluidgrad
static (a Program of `static.data` feeds with `gradients`, run by the Executor, and the same code
traced by `jit.to_static`), fluidgrad's ONNX export run by onnxruntime (forward values), and torch.

A case is a function `fn(m, *xs)` written once against both fluidgrad and torch (`m` is the module:
`fluidgrad` or `torch`), or a pair (fluidgrad function, torch function). Outputs may be one tensor
or a tuple; the gradients are those of sum(out_i * w_i) over the floating outputs, with fixed
weights w_i, with respect to the floating inputs.
"""
from __future__ import annotations

import contextlib
import io
from typing import Any, Callable, Sequence

import numpy as np
import torch

import fluidgrad as fg

FLOATS = ("float32", "float64")


@contextlib.contextmanager
def eager_mode():
    """Eager mode even inside the suite's per-test program_guard (where functions without tensor
    inputs, such as `zeros`, would append ops instead of computing)."""
    import fluidgrad.framework.program as program_module
    saved = program_module._guard_depth
    program_module._guard_depth = 0
    try:
        yield
    finally:
        program_module._guard_depth = saved


def _as_list(out: Any) -> list:
    """Outputs flattened: tuples, lists and (values, indices) pairs (torch's return_types, fluidgrad's
    named pairs) become their parts."""
    if isinstance(out, (tuple, list)):
        return [part for item in out for part in _as_list(item)]
    if type(out).__name__ != "Tensor" and hasattr(out, "values") and hasattr(out, "indices") \
            and not callable(out.values):
        return _as_list(out.values) + _as_list(out.indices)
    return [out]


def _is_float(dtype: Any) -> bool:
    return str(dtype).split(".")[-1] in ("float16", "float32", "float64", "bfloat16")


def cotangent(shape: Sequence[int], k: int, dtype: str) -> np.ndarray:
    """Fixed weights of output k (no ties, no zeros: every element's gradient is seen)."""
    rng = np.random.default_rng(1000 + k)
    return rng.uniform(0.5, 1.5, size=tuple(shape)).astype(dtype)


def split_fns(fn: Any) -> tuple[Callable, Callable]:
    if isinstance(fn, tuple):
        return fn
    return (lambda *xs: fn(fg, *xs)), (lambda *xs: fn(torch, *xs))


def run_torch(fn: Any, arrays: Sequence[np.ndarray], grads: bool = True):
    """(outputs, input gradients or None per input) from torch."""
    theirs = split_fns(fn)[1]
    tensors = [torch.tensor(a, requires_grad=grads and _is_float(a.dtype)) for a in arrays]
    outs = _as_list(theirs(*tensors))
    values = [o.detach().numpy() if isinstance(o, torch.Tensor) else np.asarray(o) for o in outs]
    if not grads:
        return values, None
    wanted = [t for t in tensors if t.requires_grad]
    terms = [(o * torch.tensor(cotangent(o.shape, k, str(o.dtype).split(".")[-1]))).sum()
             for k, o in enumerate(outs) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not wanted or not terms:
        return values, [None] * len(arrays)
    got = iter(torch.autograd.grad(sum(terms), wanted, allow_unused=True))
    result = []
    for t in tensors:
        g = next(got) if t.requires_grad else None
        result.append(None if g is None else g.detach().numpy())
    return values, result


def _loss(outs: list, m: Any) -> Any:
    terms = [m.sum(o * m.to_tensor(cotangent(o.shape, k, str(o.dtype))))
             for k, o in enumerate(outs) if _is_float(o.dtype) and not o.stop_gradient]
    return sum(terms[1:], terms[0]) if terms else None


def run_eager(fn: Any, arrays: Sequence[np.ndarray], grads: bool = True, traced: bool = False):
    """(outputs, gradients) from fluidgrad eager, or from the same code under jit.to_static."""
    with eager_mode():
        return _run_eager(fn, arrays, grads, traced)


def _run_eager(fn: Any, arrays: Sequence[np.ndarray], grads: bool, traced: bool):
    ours = split_fns(fn)[0]
    if traced:
        ours = fg.jit.to_static(ours)
    tensors = [fg.to_tensor(a, stop_gradient=not (grads and _is_float(a.dtype))) for a in arrays]
    outs = _as_list(ours(*tensors))
    values = [np.asarray(o.numpy()) for o in outs]
    if not grads:
        return values, None
    wanted = [t for t in tensors if not t.stop_gradient]
    loss = _loss(outs, fg)
    if not wanted or loss is None:
        return values, [None] * len(arrays)
    got = iter(fg.grad([loss], wanted, allow_unused=True))
    result = []
    for t in tensors:
        g = next(got) if not t.stop_gradient else None
        result.append(None if g is None else np.asarray(g.numpy()))
    return values, result


def run_static(fn: Any, arrays: Sequence[np.ndarray], grads: bool = True, shapes: Sequence[tuple] | None = None):
    """(outputs, gradients) from a static Program with `gradients`, run by the Executor; `shapes`: the
    outputs' shapes (torch's), for outputs whose size is known only at run time (masked_select)."""
    ours = split_fns(fn)[0]
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        feeds = []
        for i, a in enumerate(arrays):
            v = fg.static.data(f"x{i}", list(a.shape), str(a.dtype))
            v.stop_gradient = not (grads and _is_float(a.dtype))
            feeds.append(v)
        outs = _as_list(ours(*feeds))
        fetch = list(outs)
        grad_vars = []
        if grads:
            wanted = [v for v in feeds if not v.stop_gradient]
            terms = []
            for k, o in enumerate(outs):
                if _is_float(o.dtype) and not o.stop_gradient:
                    w = fg.static.data(f"w{k}", [-1 if d < 0 else d for d in o.shape], str(o.dtype))
                    terms.append(fg.sum(o * w))
            if wanted and terms:
                grad_vars = fg.gradients([sum(terms[1:], terms[0])], wanted)
    feed = {f"x{i}": a for i, a in enumerate(arrays)}
    for k, o in enumerate(outs):
        if grads and _is_float(o.dtype) and not o.stop_gradient:
            feed[f"w{k}"] = cotangent(_shape_of(o, k, shapes), k, str(o.dtype))
    fetch += [g for g in grad_vars if g is not None]
    values = fg.Executor().run(main, feed=feed, fetch_list=fetch)
    outs_np, grad_np = values[:len(outs)], iter(values[len(outs):])
    if not grads:
        return outs_np, None
    result, k = [], 0
    for v in feeds:
        if v.stop_gradient or not grad_vars:
            result.append(None)
        else:
            g = grad_vars[k]
            k += 1
            result.append(None if g is None else next(grad_np))
    return outs_np, result


def _shape_of(var: Any, k: int, shapes: Sequence[tuple] | None) -> tuple:
    shape = tuple(var.shape)
    if all(s >= 0 for s in shape):
        return shape
    if shapes is None or k >= len(shapes):
        raise AssertionError(f"static output {var.name} has an unknown size {shape}")
    return tuple(shapes[k])


def run_onnx(fn: Any, arrays: Sequence[np.ndarray]):
    """Forward values from fluidgrad's ONNX export run by onnxruntime."""
    import onnxruntime as ort
    ours = split_fns(fn)[0]
    buffer = io.BytesIO()
    with eager_mode():
        fg.onnx.export(lambda *xs: ours(*xs), [fg.to_tensor(a) for a in arrays], buffer)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {n: a for n, a in zip(names, arrays)})


def assert_close(got: Any, expected: Any, what: str, rtol: float, atol: float) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != torch's {expected.shape}"
    if expected.dtype == bool or np.issubdtype(expected.dtype, np.integer):
        assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != torch's {expected.dtype}"
        np.testing.assert_array_equal(got, expected, err_msg=what)
    else:
        assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != torch's {expected.dtype}"
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=what)


def tolerance(arrays: Sequence[np.ndarray]) -> tuple[float, float]:
    if any(a.dtype == np.float32 for a in arrays):
        return 2e-5, 2e-5
    return 1e-10, 1e-12


def compare(fn: Any, arrays: Sequence[np.ndarray], ways: Sequence[str] = ("eager", "static", "to_static", "onnx"),
            grads: bool = True, rtol: float | None = None, atol: float | None = None) -> None:
    """Every way in `ways` gives torch's outputs (values, shapes, dtypes) and input gradients."""
    arrays = [np.asarray(a) for a in arrays]
    default = tolerance(arrays)
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    want, want_grads = run_torch(fn, arrays, grads)
    for way in ways:
        if way == "onnx":
            got, got_grads = run_onnx(fn, arrays), None
        elif way == "static":
            got, got_grads = run_static(fn, arrays, grads, [np.shape(w) for w in want])
        else:
            got, got_grads = run_eager(fn, arrays, grads, traced=way == "to_static")
        assert len(got) == len(want), f"{way}: {len(got)} outputs, torch {len(want)}"
        for k, (g, e) in enumerate(zip(got, want)):
            assert_close(g, e, f"{way} output {k}", rtol, atol)
        if got_grads is None or want_grads is None:
            continue
        for i, (g, e) in enumerate(zip(got_grads, want_grads)):
            if e is None:
                continue
            g = np.zeros_like(e) if g is None else g
            assert_close(g, e, f"{way} gradient of input {i}", rtol, atol)


def _second_weights(shape: Sequence[int], k: int) -> np.ndarray:
    return np.random.default_rng(2000 + k).uniform(0.5, 1.5, size=tuple(shape))


def second_order(fn: Any, arrays: Sequence[np.ndarray], way: str):
    """(first gradients, second gradients) of float64 inputs: g = d sum(out * w) / dx with the graph kept,
    then d sum(g * v) / dx, in torch, fluidgrad eager (grad with create_graph) or static (gradients twice)."""
    ours, theirs = split_fns(fn)
    if way == "torch":
        xs = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = theirs(*xs)
        first = torch.autograd.grad((out * torch.tensor(cotangent(out.shape, 0, "float64"))).sum(), xs,
                                    create_graph=True)
        total = sum((g * torch.tensor(_second_weights(g.shape, k))).sum() for k, g in enumerate(first))
        second = torch.autograd.grad(total, xs, allow_unused=True)
        return [g.detach().numpy() for g in first], [None if h is None else h.numpy() for h in second]
    if way == "eager":
        with eager_mode():
            xs = [fg.to_tensor(a, stop_gradient=False) for a in arrays]
            out = ours(*xs)
            first = fg.grad([fg.sum(out * fg.to_tensor(cotangent(out.shape, 0, "float64")))], xs, create_graph=True)
            total = sum(fg.sum(g * fg.to_tensor(_second_weights(g.shape, k))) for k, g in enumerate(first))
            second = fg.grad([total], xs, allow_unused=True)
            return [g.numpy() for g in first], [None if h is None else h.numpy() for h in second]
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        xs = []
        for i, a in enumerate(arrays):
            v = fg.static.data(f"x{i}", list(a.shape), "float64")
            v.stop_gradient = False
            xs.append(v)
        out = ours(*xs)
        w = fg.static.data("w", list(out.shape), "float64")
        first = fg.gradients([fg.sum(out * w)], xs)
        vs = [fg.static.data(f"v{k}", list(g.shape), "float64") for k, g in enumerate(first)]
        second = fg.gradients([sum(fg.sum(g * v) for g, v in zip(first, vs))], xs)
    feed = {f"x{i}": a for i, a in enumerate(arrays)}
    feed["w"] = cotangent(tuple(out.shape), 0, "float64")
    feed.update({f"v{k}": _second_weights(tuple(g.shape), k) for k, g in enumerate(first)})
    present = [h for h in second if h is not None]
    values = fg.Executor().run(main, feed=feed, fetch_list=list(first) + present)
    rest = iter(values[len(first):])
    return values[:len(first)], [None if h is None else next(rest) for h in second]
