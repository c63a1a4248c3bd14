"""Grad makers that read an input only for its shape and dtype say so (`g.input_like`).

Eager mode then keeps only that input's shape (its value dies with its last user) and an
in-place update of the input after the op (`x[1] = ...`, `set_value`) does not make backward
fail as if the gradient needed the old value (review s5 bugs 4 and 5). The registry-wide test
walks every op case whose grad maker reads some input only through `g.input_like`, updates
that input in place after the op, and checks that the gradients are those of a run without
the update.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.eager import backward, eager_apply, keep_only_what_is_read, to_tensor
from fluidgrad.eager.saved import grad_reads
from fluidgrad.ops import get_op_def
from fluidgrad.testing import _flat_feeds, _has_gradient, _used, _wrt

from test_ops import CASES as OP_CASES


def _shape_only_slots(op_type: str) -> set[str]:
    """The input slots whose value the op's grad maker never reads, only its shape."""
    op_def = get_op_def(op_type)
    if not op_def.has_gradient or op_def.needs_runtime:
        return set()
    reads = grad_reads(op_def.grad)
    if reads is None:
        return set()
    shapes = reads.shapes.union(*reads.shapes_when.values())
    return shapes - reads.inputs.union(*reads.inputs_when.values())


SHAPE_CASES = [(case, slot) for case in OP_CASES if _has_gradient(case)
               for slot in sorted(_shape_only_slots(case.op)) if slot in case.inputs]


def test_the_shape_readers_are_known():
    """The makers fixed in session 5 read their input's shape only (a guard against going back
    to `g.input`, which would keep the value and fail after an in-place update)."""
    ops = {case.op for case, _ in SHAPE_CASES}
    expected = {"slice", "reduce_sum", "reduce_mean", "mean", "expand", "tile", "pad", "reshape", "gather",
                "take_along_axis", "gather_nd", "concat", "stack", "cast", "interpolate", "unfold"}
    assert expected <= ops, sorted(expected - ops)


def _gradients(case, slot: str, update: bool) -> dict[str, np.ndarray]:
    """The case run eagerly (each float input through a `scale` node, so that it may be updated
    in place), its `slot` input(s) overwritten after the op when `update`, then backward."""
    feeds = _flat_feeds(case.inputs)
    wrt = _wrt(case, feeds)
    leaves = {name: to_tensor(value, stop_gradient=name not in wrt) for name, value in feeds.items()}
    used = {name: fg.scale(leaf, 1.0) if name in wrt else leaf for name, leaf in leaves.items()}
    inputs = {s: [used[f"{s}_{i}"] for i in range(len(v))] if isinstance(v, (list, tuple)) else used[s]
              for s, v in case.inputs.items()}
    out = eager_apply(case.op, inputs, dict(case.attrs), case.n_out)
    outs = _used(case, [t for item in (out if isinstance(out, tuple) else (out,))
                        for t in (item if isinstance(item, list) else [item])])
    if update:
        for tensor in inputs[slot] if isinstance(inputs[slot], list) else [inputs[slot]]:
            tensor.set_value(np.full(tensor.shape, 3, tensor.dtype))
    rng = np.random.default_rng(5)
    roots = [o for o in outs if o.dtype.startswith("float") and not o.stop_gradient]
    backward(roots, [rng.standard_normal(o.shape).astype(o.dtype) for o in roots])
    return {name: (np.zeros_like(feeds[name]) if leaves[name].grad is None else leaves[name].grad.numpy())
            for name in wrt}


@pytest.mark.parametrize("keep_only_read", [False, True], ids=["small-values-kept", "shape-only"])
@pytest.mark.parametrize("case, slot", SHAPE_CASES, ids=[f"{c.id}-{s}" for c, s in SHAPE_CASES])
def test_an_input_read_only_for_its_shape_may_be_updated_in_place_before_backward(case, slot, keep_only_read):
    if not any(np.asarray(v).dtype.kind == "f" for v in
               (case.inputs[slot] if isinstance(case.inputs[slot], (list, tuple)) else [case.inputs[slot]])):
        pytest.skip("an integer input (set_value of an index is not a use of this path)")
    if keep_only_read:
        with keep_only_what_is_read():
            expected, got = _gradients(case, slot, False), _gradients(case, slot, True)
    else:
        expected, got = _gradients(case, slot, False), _gradients(case, slot, True)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=f"{case.id}: d/d{name}")


# (an op whose one output is under node.SLIM_BYTES keeps its inputs whatever its backward reads:
# eager's shortcut for chains of small tensors; these outputs are larger. slice and reshape are
# not here: their outputs are NumPy views, which hold the input's buffer themselves; expand's result
# is also a PyTorch view of x, which keeps x as torch's keeps x's storage: the node is checked past it)
@pytest.mark.parametrize("op", [lambda x: x.sum(axis=1), lambda x: fg.mean(x, axis=1),
                                lambda x: fg.expand(x[None], [4, 300, 2]) * 1.0, lambda x: fg.tile(x, [2, 1]),
                                lambda x: fg.nn.functional.pad(x, [1, 1, 0, 0])],
                         ids=["sum", "mean", "expand", "tile", "pad"])
def test_eager_keeps_no_value_the_backward_reads_only_the_shape_of(op):
    a = fg.to_tensor(np.linspace(0, 1, 600).reshape(300, 2), stop_gradient=False)
    x = a * 2.0            # 4800 bytes: large enough that eager drops what is not read
    array = weakref.ref(x._array)
    y = op(x)
    del x
    gc.collect()
    assert array() is None, "the node kept the value of an input whose shape alone its backward reads"
    fg.sum(y * 1.0).backward()
    assert a.grad is not None and np.all(np.isfinite(a.grad.numpy()))
