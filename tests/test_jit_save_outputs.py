"""jit.load gives the outputs back nested as the saved function returned them (tuples, lists,
dicts, named tuples, None, to any depth: kept in the model file), and jit.save's output_spec
(Paddle 2's config) keeps only the outputs it names, the program pruned to them."""
from __future__ import annotations

import collections
import json

import numpy as np
import pytest

import fluidgrad as fg
from fluidgrad.jit import InputSpec

Pair = collections.namedtuple("Pair", ["low", "high"])
_RNG = np.random.default_rng(0)


class _Heads(fg.nn.Layer):
    def __init__(self):
        super().__init__()
        self.body = fg.nn.Linear(4, 6)
        self.head = fg.nn.Linear(6, 3)

    def forward(self, x):
        hidden = fg.tanh(self.body(x))
        logits = self.head(hidden)
        return {"logits": logits, "parts": (hidden, [fg.nn.functional.softmax(logits), None]),
                "pair": Pair(fg.min(logits, axis=1), fg.max(logits, axis=1)), 7: logits * 2.0}


def _assert_same_nesting(got, want):
    assert type(got).__name__ == type(want).__name__
    if isinstance(want, fg.Tensor):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    elif want is None:
        assert got is None
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _assert_same_nesting(got[key], want[key])
    else:
        assert len(got) == len(want)
        if hasattr(want, "_fields"):
            assert got._fields == want._fields
        for g, w in zip(got, want):
            _assert_same_nesting(g, w)


def test_nested_outputs_come_back_nested(tmp_path):
    layer = _Heads()
    fg.jit.save(layer, str(tmp_path / "heads"), input_spec=[InputSpec([None, 4], "float32")])
    loaded = fg.jit.load(str(tmp_path / "heads"))
    x = fg.to_tensor(_RNG.standard_normal((5, 4)).astype("float32"))
    got, want = loaded(x), layer(x)
    _assert_same_nesting(got, want)
    assert isinstance(got["parts"], tuple) and isinstance(got["parts"][1], list)
    got["logits"].sum().backward()  # still differentiable into the loaded parameters
    assert all(p.grad is not None for p in loaded.parameters())


@pytest.mark.parametrize("result, kind", [(lambda a, b: (a, b), tuple), (lambda a, b: [a, [b]], list),
                                          (lambda a, b: a, fg.Tensor), (lambda a, b: (a,), tuple)])
def test_a_function_s_outputs_keep_their_container(tmp_path, result, kind):
    fg.jit.save(lambda x: result(x * 2.0, x + 1.0), str(tmp_path / "fn"), input_spec=[InputSpec([2], "float64")])
    got = fg.jit.load(str(tmp_path / "fn"))(np.array([1.0, 2.0]))
    assert isinstance(got, kind)
    _assert_same_nesting(got, result(fg.to_tensor(np.array([2.0, 4.0])), fg.to_tensor(np.array([2.0, 3.0]))))


def test_output_spec_keeps_the_named_outputs_and_prunes(tmp_path):
    layer = _Heads()
    static = fg.jit.to_static(layer)
    x = fg.to_tensor(_RNG.standard_normal((2, 4)).astype("float32"))
    out = static(x)
    want = layer.forward.dygraph_function(x)
    variables = layer.forward.concrete_program.outputs
    for spec, picks in [([out["pair"].high], ["pair.high"]), ([variables[0], out[7]], ["logits", 7]),
                        ([1], ["parts.0"]), ((-1, 0), [7, "logits"])]:
        fg.jit.save(static, str(tmp_path / "m"), input_spec=[InputSpec([None, 4], "float32")], output_spec=spec)
        got = fg.jit.load(str(tmp_path / "m"))(x)
        expected = [want["pair"].high if p == "pair.high" else want["parts"][0] if p == "parts.0" else want[p]
                    for p in picks]
        if len(expected) == 1:
            assert isinstance(got, fg.Tensor)
            got = [got]
        assert isinstance(got, list) and len(got) == len(expected)
        for g, w in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-7)
    fg.jit.save(static, str(tmp_path / "m"), input_spec=[InputSpec([None, 4], "float32")], output_spec=[0])
    ops = {op.type for op in fg.jit.load(str(tmp_path / "m")).program().global_block().ops}
    assert "softmax" not in ops and "reduce_max" not in ops  # pruned to the logits


def test_bad_output_specs_and_nestings_are_clear_errors(tmp_path):
    layer = fg.nn.Linear(4, 2)
    spec = [InputSpec([None, 4], "float32")]
    with pytest.raises(ValueError, match="output_spec entry 3 is none of the function's 1 outputs"):
        fg.jit.save(layer, str(tmp_path / "m"), input_spec=spec, output_spec=[3])
    with pytest.raises(ValueError, match="output_spec entry"):
        fg.jit.save(layer, str(tmp_path / "m"), input_spec=spec, output_spec=[fg.to_tensor([1.0])])
    with pytest.raises(TypeError, match="unknown configs"):
        fg.jit.save(layer, str(tmp_path / "m"), input_spec=spec, combine_params=True)
    with pytest.raises(TypeError, match="dict keys must be"):
        fg.jit.save(lambda x: {(1, 2): x}, str(tmp_path / "m"), input_spec=spec)


def test_files_without_the_nesting_load_flat_and_a_damaged_one_is_refused(tmp_path):
    fg.jit.save(lambda x: (x * 2.0, x * 3.0), str(tmp_path / "m"), input_spec=[InputSpec([2], "float64")])
    path = tmp_path / "m.pdmodel.json"
    doc = json.loads(path.read_text())
    assert doc["metadata"]["jit_output_tree"] == {"tuple": ["tensor", "tensor"]}
    del doc["metadata"]  # as files saved before the nesting was kept
    path.write_text(json.dumps(doc))
    got = fg.jit.load(str(tmp_path / "m"))(np.array([1.0, 2.0]))
    assert isinstance(got, list) and [g.numpy().tolist() for g in got] == [[2.0, 4.0], [3.0, 6.0]]
    doc["metadata"] = {"jit_output_tree": {"tuple": ["tensor"]}}
    path.write_text(json.dumps(doc))
    with pytest.raises(fg.io.ModelFileError, match="does not hold its 2 outputs"):
        fg.jit.load(str(tmp_path / "m"))
