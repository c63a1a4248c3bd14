"""fluidgrad.testing itself: the numeric gradient every op case relies on."""
from __future__ import annotations

import numpy as np

from fluidgrad.testing import numeric_gradient


def test_numeric_gradient_of_a_transposed_input():
    """Central differences perturb the array the function reads, whatever its memory layout
    (a transposed input used to be perturbed in a copy, giving a zero gradient)."""
    x = np.arange(6.0).reshape(2, 3).T
    grad = numeric_gradient(lambda feeds: float((feeds["x"] ** 2).sum()), {"x": x}, "x")
    np.testing.assert_allclose(grad, 2 * x, rtol=1e-6)
