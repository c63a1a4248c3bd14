"""The op registry's cases: `tests/op_cases/*.py` (one module per family, `CASES: list[OpCase]`),
each run through every check of `fluidgrad.testing.check_op` (one test per case and check).

Each case is one op with float64 inputs and attributes. For each case:
  * the forward values equal PyTorch's (or an explicit NumPy reference where PyTorch lacks the op);
  * the gradient (when the op has one) equals central differences and PyTorch's, through
    `fluidgrad.testing.check_grad`;
  * the same op run on float32 inputs keeps float32.
A meta-test checks that every registered op has a kernel, a shape rule, a gradient or an
explicit NO_GRADIENT, and a case here (or a named test file elsewhere).
"""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluidgrad as fg
from fluidgrad.executor import Executor, Scope
from fluidgrad.ops import NO_GRADIENT, get_op_def, registered_ops
from fluidgrad.static import data
from op_cases import collect_cases
from op_cases.common import probs, rand
from fluidgrad.testing import CHECKS, OpCase, build_single_op, check_grad, check_op, run_case

Case = OpCase




# the cases of tests/op_cases/*.py (one module per op family) join the table
CASES = collect_cases()

# Ops registered by other parts of fluidgrad and tested in their own files (name -> test file).
# The meta-test below checks that each such file exists and mentions the op by name.
_NN, _CONTROL, _OPTIM = "test_nn_ops.py", "test_control_flow.py", "test_optimizer.py"
TESTED_ELSEWHERE: dict[str, str] = {
    **dict.fromkeys(["dropout", "clip", "clip_mask", "log_softmax"], _NN),
    **dict.fromkeys(["while", "while_grad", "conditional_block", "conditional_block_grad", "select_input",
                     "select_input_grad", "increment"], _CONTROL),
    **dict.fromkeys(["sgd", "momentum", "adam"], _OPTIM),
    **dict.fromkeys(["rmsprop", "adagrad", "adamax", "adadelta", "adam_amsgrad", "nadam", "radam",
                     "rprop"], "test_optimizer_adaptive.py"),
    "adagrad_decay": "test_optimizer_state_groups.py",
    "nonzero": "test_indexing.py",  # its output size is known only at run time
    "bincount": "test_bincount_static.py",  # its output size is known only at run time
    "pylayer": "test_pylayer_static.py",  # its gradient is a recorded block of the user's backward
    **dict.fromkeys(["unique", "non_max_suppression", "decode_image", "arange"], "test_data_dependent_ops.py"),
    # complex values: the op cases' sum(v * out) loss and real perturbations do not cover them
    **dict.fromkeys(["fft_c2c", "fft_r2c", "fft_c2r", "fft_resize", "fft_hermitian_weight", "real", "imag", "complex",
                     "conj"], "test_fft.py"),
}

_TESTS_DIR = pathlib.Path(__file__).parent


# ------------------------------------------------------------------ every check of fluidgrad.testing.check_op, per case
@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_case(case: Case, check):
    """One registered op, one declared case, one check (see `fluidgrad.testing.check_op`)."""
    reason = check(case)
    if reason is not None:
        pytest.skip(reason)


def run_forward(case: Case, float_dtype=np.float64):
    return run_case(case, float_dtype)
















GRAD_CASES = [c for c in CASES if c.grad and get_op_def(c.op).has_gradient]




def test_random_ops_repeat_with_seed():
    def draw():
        main, startup = fg.Program(), fg.Program()
        with fg.program_guard(main, startup):
            out = build_single_op("uniform_random", {}, {"shape": [5], "dtype": "float64"})({})[0]
        return Executor().run(main, fetch_list=[out], scope=Scope())[0]
    fg.seed(3)
    first = draw()
    fg.seed(3)
    np.testing.assert_array_equal(draw(), first)
    assert not np.array_equal(draw(), first)


# ------------------------------------------------------------------ the meta-test
def test_every_registered_op_is_complete_and_covered():
    """Kernel, shape rule, gradient (or NO_GRADIENT) and a test case for every registered op."""
    covered = {c.op for c in CASES}
    problems = []
    for name, op_def in sorted(registered_ops().items()):
        if not callable(op_def.kernel):
            problems.append(f"{name}: no kernel")
        if not callable(op_def.infer):
            problems.append(f"{name}: no shape/dtype rule")
        if op_def.grad is not NO_GRADIENT and not callable(op_def.grad):
            problems.append(f"{name}: grad is neither a grad maker nor NO_GRADIENT")
        if name in covered:
            continue
        elsewhere = TESTED_ELSEWHERE.get(name)
        if elsewhere is None:
            problems.append(f"{name}: no case in tests/test_ops.py and not listed in TESTED_ELSEWHERE")
            continue
        path = _TESTS_DIR / elsewhere
        if not path.exists() or not re.search(rf"\b{re.escape(name)}\b", path.read_text()):
            problems.append(f"{name}: TESTED_ELSEWHERE says {elsewhere}, which does not mention it")
    for name in TESTED_ELSEWHERE:
        if name in covered:
            problems.append(f"{name}: listed in TESTED_ELSEWHERE but also has a case here; drop one")
    assert not problems, "\n".join(problems)


def test_every_gradient_op_has_a_gradient_case():
    gradient_cases = {c.op for c in GRAD_CASES}
    missing = [n for n, d in registered_ops().items()
               if d.has_gradient and n not in gradient_cases and n not in TESTED_ELSEWHERE]
    assert not missing, f"ops with a gradient but no gradient case: {missing}"


@pytest.mark.parametrize("in_shape, shape, expected", [
    ([-1, 5, 1], [0, -1], (-1, 5)),
    ([-1, 3, 4], [0, 2, -1], (-1, 2, 6)),
    ([-1, 3, 4], [-1, 12], (-1, 12)),
    ([2, 3, 4], [0, -1], (2, 12)),
    ([-1, 3, 4], [0, 0, -1], (-1, 3, 4)),
])
def test_reshape_infers_sizes_around_an_unknown_batch(in_shape, shape, expected):
    x = data("x", in_shape, "float64")
    assert fg.reshape(x, shape).shape == expected


def test_reshape_rejects_impossible_shapes_at_build_time():
    x = data("x", [-1, 3, 4], "float64")
    with pytest.raises(ValueError, match=r"reshape.*\[0, 5, -1\]"):
        fg.reshape(x, [0, 5, -1])






# ------------------------------------------------------------------ declared vs computed dtype and shape
_A = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
_B = np.array([2, 3, 4], dtype=np.int64)
INT_CASES = [
    ("elementwise_add", {"X": _A, "Y": _B}, {}), ("elementwise_sub", {"X": _A, "Y": _B}, {}),
    ("elementwise_mul", {"X": _A, "Y": _B}, {}), ("elementwise_div", {"X": _A, "Y": _B}, {}),
    ("elementwise_pow", {"X": _A, "Y": _B}, {}), ("elementwise_max", {"X": _A, "Y": _B}, {}),
    ("elementwise_min", {"X": _A, "Y": _B}, {}), ("scale", {"X": _A}, {"scale": 2.0, "bias": 1.0}),
    ("scale", {"X": _A}, {"scale": 3.0, "bias": -2.0}), ("sum", {"X": [_A, _A]}, {}), ("assign", {"X": _A}, {}),
    ("reduce_sum", {"X": _A}, {"axis": [1]}), ("reduce_max", {"X": _A}, {"axis": [0]}),
    ("reshape", {"X": _A}, {"shape": [-1]}), ("transpose", {"X": _A}, {}), ("concat", {"X": [_A, _A]}, {}),
    ("slice", {"X": _A}, {}), ("gather", {"X": _A, "Index": _B - 2}, {"axis": 1}),
    ("unsqueeze", {"X": _B}, {"axes": [-1, -2]}), ("unsqueeze", {"X": _B}, {"axes": [2, 0]}),
    ("stack", {"X": [_A, _A]}, {"axis": 1}), ("fill_zeros_like", {"X": _A}, {}),
    ("fill_any_like", {"X": _A}, {"value": 2.0}), ("expand_as", {"X": _B, "Target": _A}, {}),
    ("reduce_as", {"X": _A, "Target": _B}, {}), ("cast", {"X": _A}, {"dtype": "bool"}),
    ("squeeze", {"X": _A[None]}, {"axes": [0]}), ("one_hot", {"X": _B}, {"depth": 5}),
    ("split", {"X": _A}, {"num_or_sections": [1, 2], "axis": 1}),
]


@pytest.mark.parametrize("op, inputs, attrs", INT_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(INT_CASES)])
def test_integer_inputs_compute_what_the_shape_rule_declares(op, inputs, attrs):
    case = Case(op, inputs, attrs, n_out=2 if op == "split" else None)
    values, variables = run_forward(case)
    for value, var in zip(values, variables):
        assert value.dtype.name == var.dtype and value.shape == var.shape, \
            f"{op}: declared {var.dtype}{list(var.shape)}, computed {value.dtype}{list(value.shape)}"




@pytest.mark.parametrize("op, inputs", [
    ("softmax_with_cross_entropy", {"Logits": rand(3, 4), "Label": np.array([[0], [-1], [2]])}),
    ("softmax_with_cross_entropy", {"Logits": rand(3, 4), "Label": np.array([0, 4, 2])}),
    ("cross_entropy", {"X": probs(3, 4), "Label": np.array([[0], [-1], [2]])}),
    ("cross_entropy", {"X": probs(3, 4), "Label": np.array([1, 1, 9])}),
    ("gather", {"X": rand(3, 4), "Index": np.array([0, 3])}),
    ("one_hot", {"X": np.array([0, 5])}),
])
def test_out_of_range_labels_and_indices_are_errors_not_wraparound(op, inputs):
    """NumPy would wrap -1 to the last class; the kernel must refuse, naming the op."""
    with pytest.raises(fg.framework.ExecutionError, match=rf"{op}.*out of range"):
        run_forward(Case(op, inputs, {"depth": 5} if op == "one_hot" else {}))




# ------------------------------------------------------------------ build-time errors name the op
F64 = "float64"
BAD_BUILDS = [
    ("split", {"X": ((3, 5), F64)}, {"num_or_sections": 2, "axis": 1}, 2, r"split.*\[3, 5\]"),
    ("split", {"X": ((3, 5), F64)}, {"num_or_sections": [2, 2], "axis": 1}, 2, r"split.*\[2, 2\].*\[3, 5\]"),
    ("reshape", {"X": ((3, 5), F64)}, {"shape": [4, -1]}, None, r"reshape.*\[3, 5\]"),
    ("reshape", {"X": ((3, 5), F64)}, {"shape": [-1, -1]}, None, r"reshape.*more than one -1"),
    ("transpose", {"X": ((3, 5), F64)}, {"perm": [0, 0]}, None, r"transpose.*\[0, 0\].*\[3, 5\]"),
    ("concat", {"X": [((3, 5), F64), ((3,), F64)]}, {"axis": 0}, None, r"concat.*\[3, 5\].*\[3\]"),
    ("concat", {"X": [((3, 5), F64), ((3, 5), "float32")]}, {"axis": 0}, None, r"concat.*float64.*float32"),
    ("gather", {"X": ((3, 5), F64), "Index": ((2,), F64)}, {}, None, r"gather.*Index.*float64"),
    ("softmax_with_cross_entropy", {"Logits": ((3, 5), F64), "Label": ((3, 1), F64)}, {}, None,
     r"softmax_with_cross_entropy.*Label.*float64"),
    ("softmax_with_cross_entropy", {"Logits": ((3, 5), F64), "Label": ((4, 1), "int64")}, {}, None,
     r"softmax_with_cross_entropy.*\[4, 1\].*\[3, 5\]"),
    ("softmax", {"X": ((3, 5), "int64")}, {}, None, r"softmax.*int64"),
    ("reduce_sum", {"X": ((3, 5), F64)}, {"axis": [2]}, None, r"reduce_sum.*axis 2.*\[3, 5\]"),
    ("squeeze", {"X": ((3, 5), F64)}, {"axes": [1]}, None, r"squeeze.*size 5.*\[3, 5\]"),
    ("unsqueeze", {"X": ((3, 5), F64)}, {"axes": [0, 0]}, None, r"unsqueeze.*\[0, 0\].*\[3, 5\]"),
    ("stack", {"X": [((3, 5), F64), ((5, 3), F64)]}, {}, None, r"stack.*\[3, 5\].*\[5, 3\]"),
    ("matmul", {"X": ((3, 5), F64), "Y": ((5, 2), "float32")}, {}, None, r"matmul.*float64.*float32"),
    ("matmul", {"X": ((3, 5), F64), "Y": ((3, 2), F64)}, {"transpose_y": True}, None, r"matmul.*\[3, 5\].*\[3, 2\]"),
    ("sum", {"X": [((3, 5), F64), ((3, 4), F64)]}, {}, None, r"sum.*\[3, 5\].*\[3, 4\]"),
    ("elementwise_sub", {"X": ((2, 3), F64), "Y": ((3, 2), F64)}, {}, None, r"elementwise_sub.*\[2, 3\].*\[3, 2\]"),
    ("logical_and", {"X": ((2,), F64), "Y": ((2,), "bool")}, {}, None, r"logical_and.*float64"),
    ("slice", {"X": ((3, 5), F64)}, {"axes": [3], "starts": [0], "ends": [1]}, None, r"slice.*axis 3.*\[3, 5\]"),
    ("cross_entropy", {"X": ((3, 5), F64), "Label": ((3, 1), F64)}, {}, None, r"cross_entropy.*Label.*float64"),
    ("mean", {"X": ((3, 5), "int64")}, {}, None, r"mean.*cast.*int64"),
    ("reduce_mean", {"X": ((3, 5), "int64")}, {"axis": [0]}, None, r"reduce_mean.*cast.*int64"),
]


@pytest.mark.parametrize("op, inputs, attrs, n_out, pattern", BAD_BUILDS,
                         ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_BUILDS)])
def test_bad_input_is_rejected_at_build_time_naming_op_and_shapes(op, inputs, attrs, n_out, pattern):
    variables = {}
    for slot, spec in inputs.items():
        if isinstance(spec, list):
            for i, (shape, dtype) in enumerate(spec):
                variables[f"{slot}_{i}"] = data(f"{slot}_{i}", shape, dtype)
        else:
            variables[slot] = data(slot, *spec)
    fake_inputs = {slot: ([0] * len(spec) if isinstance(spec, list) else 0) for slot, spec in inputs.items()}
    with pytest.raises((ValueError, TypeError), match=pattern):
        build_single_op(op, fake_inputs, attrs, n_out)(variables)


# ------------------------------------------------------------------ property: any broadcast pair
@st.composite
def _broadcast_pair(draw):
    """Two shapes NumPy can broadcast: each dim of the shorter one is equal, 1, or the other 1."""
    out = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    def operand():
        keep = draw(st.integers(0, len(out)))
        return tuple(d if draw(st.booleans()) else 1 for d in out[len(out) - keep:])
    return operand(), operand()


_TORCH_BINARY = {"elementwise_add": torch.add, "elementwise_sub": torch.sub, "elementwise_mul": torch.mul,
                 "elementwise_div": torch.div, "elementwise_max": torch.maximum, "elementwise_min": torch.minimum,
                 "elementwise_pow": torch.pow}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(sorted(_TORCH_BINARY)), shapes=_broadcast_pair(), seed=st.integers(0, 2**16))
def test_elementwise_ops_broadcast_any_compatible_shapes(op, shapes, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, size=shapes[0])
    y = rng.uniform(0.5, 2.0, size=shapes[1]) + (0.03 if op in ("elementwise_max", "elementwise_min") else 0.0)
    fn = _TORCH_BINARY[op]
    check_grad(op, {"X": x, "Y": y}, torch_fn=lambda X, Y: fn(X, Y))


_TORCH_REDUCE = {"reduce_sum": torch.sum, "reduce_mean": torch.mean, "reduce_max": torch.amax,
                 "reduce_min": torch.amin}


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(sorted(_TORCH_REDUCE)), shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       data_=st.data(), keepdim=st.booleans(), seed=st.integers(0, 2**16))
def test_reductions_over_any_axes(op, shape, data_, keepdim, seed):
    axes = data_.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape),
                               unique_by=lambda a: a % len(shape)))
    x = np.random.default_rng(seed).normal(size=shape)
    fn = _TORCH_REDUCE[op]
    check_grad(op, {"X": x}, {"axis": axes, "keepdim": keepdim},
               torch_fn=lambda X: fn(X, dim=tuple(axes), keepdim=keepdim))


# ------------------------------------------------------------------ check_op on a user's own op
@pytest.fixture
def cube_op():
    """A user's op, declared the way fluidgrad's own are: one registration, one case."""
    from fluidgrad.ops import registry
    from fluidgrad.ops.shape_rules import same_as

    def grad(g):
        x = g.input("X")
        slope = g.op("scale", {"X": g.op("elementwise_mul", {"X": x, "Y": x})}, scale=3.0)
        g.set_input_grad("X", g.op("elementwise_mul", {"X": g.output_grad("Out"), "Y": slope}))

    def wrong_grad(g):
        g.set_input_grad("X", g.op("scale", {"X": g.output_grad("Out")}, scale=3.0))

    made = []

    def register(maker):
        name = f"user_cube_{len(made)}"
        registry.register_op(name, inputs="X", outputs="Out", kernel=lambda x: x * x * x, infer=same_as(),
                             grad=maker)
        made.append(name)
        return name
    yield register, grad, wrong_grad
    for name in made:
        del registry._REGISTRY[name]


def test_check_op_runs_every_check_on_a_users_op(cube_op):
    register, grad, wrong_grad = cube_op
    case = OpCase(register(grad), {"X": rand(3, 4)}, torch_fn=lambda X: X ** 3)
    results = check_op(case)
    assert set(results) == {c.__name__ for c in CHECKS} and set(results.values()) == {"ok"}, results
    with pytest.raises(AssertionError, match="central differences"):
        check_op(OpCase(register(wrong_grad), {"X": rand(3, 4)}, torch_fn=lambda X: X ** 3))
