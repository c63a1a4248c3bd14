"""Export of max pooling's mask (`return_mask=True`): ONNX MaxPool's Indices count over the whole
N*C*spatial tensor, fluidgrad's (Paddle's, PyTorch's) within each input plane. onnxruntime runs
the exported model, PyTorch's `return_indices` and fluidgrad give the answer; the file imports
back; a mask nobody reads is not written (onnxruntime's MaxPool is faster without Indices)."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

import fluidgrad as fg  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402
from fluidgrad.onnx import export, import_model  # noqa: E402
from test_onnx_export import _op_program, round_trip  # noqa: E402
from test_ops import CASES  # noqa: E402

MASK_CASES = [c for c in CASES if c.op.endswith("_with_index")
              and (not c.attrs.get("adaptive") or all(k == 1 for k in np.atleast_1d(c.attrs["ksize"])))]


@pytest.mark.parametrize("case", MASK_CASES, ids=[c.id for c in MASK_CASES])
def test_the_mask_of_every_max_pool_case_round_trips(case, tmp_path):
    program, feeds, _ = _op_program(case)
    out, mask = program.global_block().ops[-1].output("Out")[0], program.global_block().ops[-1].output("Mask")[0]
    model = round_trip(program, fg.Scope(), feeds, [out, mask], tmp_path / "pool.onnx", rtol=0, atol=0)
    assert any(node.op_type == "MaxPool" and len(node.output) == 2 for node in model.graph.node)


def _torch_pool(nd, x, **kwargs):
    pool = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
            3: torch.nn.functional.max_pool3d}[nd]
    return [t.numpy() for t in pool(torch.tensor(x), return_indices=True, **kwargs)]


@pytest.mark.parametrize("nd, kwargs", [
    (1, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, dict(kernel_size=2)),
    (2, dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    (2, dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0), ceil_mode=True)),
    (3, dict(kernel_size=2, stride=1, padding=1)),
])
def test_the_mask_follows_a_dynamic_batch_and_matches_torch(tmp_path, nd, kwargs):
    rng = np.random.default_rng(nd)
    spatial = {1: (9,), 2: (7, 6), 3: (4, 5, 3)}[nd]
    example = rng.standard_normal((2, 3) + spatial).astype("float32")
    batch = rng.standard_normal((5, 3) + spatial).astype("float32")
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]

    def pool(x):
        return fn(x, return_mask=True, **kwargs)

    path = os.fspath(tmp_path / "pool.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(pool, path, [fg.to_tensor(example)], dynamic_axes={0: [0]})
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: batch})
    want = _torch_pool(nd, batch, **kwargs)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    scope = fg.Scope()
    program, feed_names, fetches = import_model(path, scope)
    again = fg.Executor().run(program, feed={feed_names[0]: batch}, fetch_list=fetches, scope=scope)
    np.testing.assert_array_equal(again[1], want[1])


def test_the_mask_of_adaptive_pooling_to_one(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4)).astype("float32")

    def pool(v):
        return F.adaptive_max_pool2d(v, 1, return_mask=True)

    path = os.fspath(tmp_path / "pool.onnx")
    export(pool, path, [fg.to_tensor(x)])
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})
    want = [t.numpy() for t in torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), 1, return_indices=True)]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_an_unread_mask_is_not_written(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype("float32")
    model = export(lambda v: F.max_pool2d(v, 2) * 2.0, os.fspath(tmp_path / "pool.onnx"), [fg.to_tensor(x)])
    pools = [node for node in model.graph.node if node.op_type == "MaxPool"]
    assert len(pools) == 1 and len(pools[0].output) == 1
