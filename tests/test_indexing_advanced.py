"""NumPy / PyTorch advanced indexing in both modes, against PyTorch (review s6): several integer
arrays paired up (logp[arange(n), labels]), boolean masks on later axes, and x[mask] = v /
x[arrays] = v with PyTorch's index_put semantics, gradients to x and v included."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidgrad as fg
from fluidgrad.executor import Executor, Scope
from fluidgrad.static import data

from both_modes import compare_with_torch

RNG = np.random.default_rng(5)
X345 = RNG.uniform(-1, 1, (3, 4, 5))
I2, J2 = np.array([2, 0, 2]), np.array([1, 3, 3])
MASK4 = np.array([True, False, True, True])
MASK45 = RNG.uniform(size=(4, 5)) > 0.4
MASK34 = RNG.uniform(size=(3, 4)) > 0.5


def _torch_item(item):
    return tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i for i in item)


GETITEM = {  # NumPy's placement rules: adjacent arrays stay in place, separated ones go first
    "pairs-leading": (I2, J2),
    "pairs-later": (slice(None), J2, np.array([4, 0, 1])),
    "pairs-separated": (I2, slice(None), np.array([4, 0, 1])),
    "broadcast": (I2[:, None], slice(None), J2[None, :2]),
    "array-and-int": (I2, 1),
    "int-between": (I2, 1, np.array([0, 4, 4])),
    "negative": (np.array([-1, 0]), np.array([-4, 3])),
    "mask-later-axis": (slice(None), MASK4),
    "mask-with-int": (1, MASK4),
    "mask-2d-later": (slice(None), MASK45),
    "mask-and-array": (MASK34, np.array([0, 4, 2, 1, 3, 0, 1, 2, 3, 4, 0, 1])[:MASK34.sum()]),
}


@pytest.mark.parametrize("name", list(GETITEM))
def test_getitem_with_arrays_and_masks_matches_torch_with_gradient(name):
    item = GETITEM[name]
    compare_with_torch(lambda x: x[item], lambda x: x[_torch_item(item)], {"x": X345}, wrt=["x"])


def test_index_arrays_given_as_tensors_and_variables_pair_up():
    """The NLL idiom logp[arange(n), labels] with the indices as inputs (Variables in a Program)."""
    logp = np.log(RNG.dirichlet(np.ones(5), size=4))
    compare_with_torch(lambda logp, rows, labels: logp[rows, labels],
                       lambda logp, rows, labels: logp[rows, labels],
                       {"logp": logp, "rows": np.arange(4), "labels": np.array([4, 0, 2, 2])}, wrt=["logp"])
    compare_with_torch(lambda x, i, j: x[i[:, None], :, j], lambda x, i, j: x[i[:, None], :, j],
                       {"x": X345, "i": I2, "j": np.array([0, 4])}, wrt=["x"])


def test_a_tensor_mask_on_a_later_axis_in_both_modes():
    want = torch.tensor(X345)[:, torch.tensor(MASK45)].numpy()
    np.testing.assert_array_equal(fg.to_tensor(X345)[:, fg.to_tensor(MASK45)].numpy(), want)
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, m = data("x", [3, 4, 5], "float64"), data("m", [4, 5], "bool")
        out = x[:, m]
    got = Executor().run(main, feed={"x": X345, "m": MASK45}, fetch_list=[out], scope=Scope())[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("item, message", [
    ((slice(None), np.array([True, False])), r"boolean mask of shape \[2\] does not match .* \[4\]"),
    ((np.array([0, 3]), np.array([0, 1])), r"index 3 is out of range for axis 0 of size 3"),
    ((I2, np.array([0, 1])), r"shape mismatch|broadcast"),
])
def test_bad_advanced_indices_are_refused(item, message):
    with pytest.raises((IndexError, ValueError), match=message):
        fg.to_tensor(X345)[item]


# ---------------------------------------------------------------- x[mask] = v, x[arrays] = v
SETITEM = {  # (item, value shape or None for a number)
    "row-mask-number": (MASK34[:, 0], None),
    "row-mask-one-value-per-row": (np.array([True, False, True]), (4, 5)),
    "mask-one-value-per-element": (MASK34, (int(MASK34.sum()), 5)),
    "mask-broadcast-row": (MASK34, (5,)),
    "full-mask-number": (X345 > 0, None),
    "full-mask-values": (X345 > 0, (int((X345 > 0).sum()),)),
    "pairs": ((I2, J2), (3, 5)),
    "pairs-number": ((I2, J2), None),
    "pairs-then-slice": ((I2, J2, slice(None)), (5,)),
}


def _set(x, item, v):
    y = x * 2.0
    y[item] = v
    return y


@pytest.mark.parametrize("name", list(SETITEM))
def test_setitem_with_masks_and_arrays_matches_torch_with_gradients(name):
    item, vshape = SETITEM[name]
    titem = torch.tensor(item) if isinstance(item, np.ndarray) else _torch_item(item)
    if vshape is None:
        compare_with_torch(lambda x: _set(x, item, 7.5), lambda x: _set(x, titem, 7.5), {"x": X345}, wrt=["x"])
        return
    v = RNG.uniform(-1, 1, vshape)
    compare_with_torch(lambda x, v: _set(x, item, v), lambda x, v: _set(x, titem, v), {"x": X345, "v": v},
                       wrt=["x", "v"])


def test_setitem_with_a_tensor_mask_in_both_modes():
    mask = X345[:, :, 0] > 0
    want = torch.tensor(X345).clone()
    want[torch.tensor(mask)] = torch.arange(5.0, dtype=torch.float64)
    y = fg.to_tensor(X345) * 1.0
    y[fg.to_tensor(mask)] = fg.to_tensor(np.arange(5.0))
    np.testing.assert_array_equal(y.numpy(), want.numpy())
    main = fg.Program()
    with fg.program_guard(main, fg.Program()):
        x, m = data("x", [-1, 4, 5], "float64"), data("m", [-1, 4], "bool")
        y = x * 1.0
        y[m] = np.arange(5.0)
    got = Executor().run(main, feed={"x": X345, "m": mask}, fetch_list=[y], scope=Scope())[0]
    np.testing.assert_array_equal(got, want.numpy())


def test_setitem_refuses_a_value_of_the_wrong_size():
    y = fg.to_tensor(X345) * 1.0
    with pytest.raises(ValueError, match=r"value of shape \[2\] cannot be broadcast to the indexed places of "
                                         r"shape \[3, 5\]"):
        y[I2, J2] = np.ones(2)
    with pytest.raises(ValueError, match=r"value of shape \[2\] cannot be broadcast to the indexed places of "
                                         r"shape \[3, 3, 5\]"):
        y[:, I2] = np.ones(2)
