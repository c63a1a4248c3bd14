"""Op cases of fluidgrad/ops/text.py: tfidf_vectorizer against ONNX's reference implementation."""
from __future__ import annotations

import numpy as np

from fluidgrad.testing import OpCase

from .common import ints


def _onnx_reference(**attrs):
    """ONNX's own TfIdfVectorizer (onnx.reference), an independent implementation (a trie)."""
    def fn(X):
        from onnx import TensorProto, helper
        from onnx.reference import ReferenceEvaluator
        given = {k: v for k, v in attrs.items() if v != []}  # an empty list is an unset attribute
        node = helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **given)
        graph = helper.make_graph([node], "tfidf", [helper.make_tensor_value_info("X", TensorProto.INT64, X.shape)],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
        return [ReferenceEvaluator(model).run(None, {"X": np.asarray(X, np.int64)})[0]]
    return fn


# 1-grams 2, 3, 5, 4; 2-grams (5, 6), (7, 8), (6, 7), (2, 3); one 3-gram (2, 3, 4)
_POOL = dict(ngram_counts=[0, 4, 12], ngram_indexes=[0, 1, 2, 3, 4, 5, 6, 7, 8], pool_int64s=[
    2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 3, 2, 3, 4])


def _case(op_id, x, reference_weights=None, **attrs):
    """`reference_weights`: what the reference is given instead (it cannot take IDF without weights;
    weights of one are the same)."""
    attrs = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0, **_POOL, **attrs}
    reference = dict(attrs, weights=reference_weights) if reference_weights is not None else attrs
    return OpCase("tfidf_vectorizer", {"X": x}, attrs, numpy_fn=_onnx_reference(**reference), grad=False, id=op_id)


_TOKENS = ints(9, 2, 12)
CASES = [
    _case("tfidf_vectorizer", _TOKENS, max_gram_length=2),
    _case("tfidf_vectorizer-skips", _TOKENS, min_gram_length=2, max_gram_length=3, max_skip_count=3),
    _case("tfidf_vectorizer-1d-uni-and-bigrams", _TOKENS[0], max_gram_length=2, max_skip_count=2),
    _case("tfidf_vectorizer-idf", _TOKENS, mode="IDF", max_gram_length=3, max_skip_count=1,
          weights=[0.5 + 0.25 * i for i in range(9)]),
    _case("tfidf_vectorizer-tfidf", _TOKENS, mode="TFIDF", max_gram_length=2, max_skip_count=4,
          weights=[1.0 + i for i in range(9)]),
    _case("tfidf_vectorizer-idf-unweighted", _TOKENS, [1.0] * 9, mode="IDF", max_gram_length=2),
]
