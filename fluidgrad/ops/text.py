"""tfidf_vectorizer: n-gram counts of integer token sequences, weighted (ONNX TfIdfVectorizer).

The vocabulary of n-grams is an attribute (ONNX's pool: all 1-grams, then all 2-grams, ...);
each row of X is scanned for those n-grams, with up to `max_skip_count` tokens skipped
between the items of an n-gram. Token ids in, float32 counts out: no gradient.
"""
from __future__ import annotations

import numpy as np

from .registry import NO_GRADIENT, register_op


def _vocabulary(pool, ngram_counts, min_len, max_len):
    """{n-gram tuple: output column index position (0-based id)} and the set of their prefixes."""
    grams: dict[tuple, int] = {}
    starts = list(ngram_counts) + [len(pool)]
    next_id = 0
    for size, (begin, end) in enumerate(zip(starts[:-1], starts[1:]), start=1):
        count = (end - begin) // size
        if min_len <= size <= max_len:
            for i in range(count):
                grams.setdefault(tuple(pool[begin + i * size: begin + (i + 1) * size]), next_id + i)
        next_id += count
    prefixes = {gram[:n] for gram in grams for n in range(1, len(gram) + 1)}
    return grams, prefixes


def _count_row(row, grams, prefixes, min_len, max_len, max_skip, counts):
    first_size = min_len
    for skip in range(1, max_skip + 2):
        for start in range(len(row)):
            if start + skip * (first_size - 1) >= len(row):
                break
            for size in range(1, max_len + 1):
                last = start + (size - 1) * skip
                if last >= len(row):
                    break
                gram = tuple(row[start:last + 1:skip])
                if gram not in prefixes:
                    break
                if size >= first_size and gram in grams:
                    counts[grams[gram]] += 1
        if first_size == 1:  # 1-grams are counted once, not once per skip distance
            first_size = 2
            if first_size > max_len:
                break


def _tfidf_kernel(x, mode, min_gram_length, max_gram_length, max_skip_count, ngram_counts, ngram_indexes,
                  pool_int64s, weights):
    grams, prefixes = _vocabulary(list(pool_int64s), ngram_counts, min_gram_length, max_gram_length)
    rows = x.reshape(1, -1) if x.ndim < 2 else x
    width = max(ngram_indexes) + 1
    out = np.zeros((rows.shape[0], width), dtype=np.float32)
    columns = np.asarray(ngram_indexes)
    for r, row in enumerate(rows.tolist()):
        counts = np.zeros(len(ngram_indexes), dtype=np.int64)
        _count_row(row, grams, prefixes, min_gram_length, max_gram_length, max_skip_count, counts)
        frequencies = np.zeros(width, dtype=np.int64)
        np.add.at(frequencies, columns, counts)
        if mode == "TF":
            out[r] = frequencies
        elif mode == "IDF":
            out[r] = np.where(frequencies > 0, np.asarray(weights) if len(weights) else 1.0, 0.0)
        else:  # TFIDF
            out[r] = frequencies * (np.asarray(weights) if len(weights) else 1.0)
    return out if x.ndim == 2 else out[0]


def _tfidf_infer(ctx):
    shape = ctx.shape("X")
    if ctx.dtype("X") not in ("int32", "int64") or len(shape) not in (1, 2):
        raise ctx.dtype_error(f"expects int32 or int64 token ids of shape [C] or [B, C], got {ctx.describe('X')}")
    if ctx.attr("mode") not in ("TF", "IDF", "TFIDF"):
        raise ctx.shape_error(f"mode must be TF, IDF or TFIDF, got {ctx.attr('mode')!r}")
    indexes = ctx.attr("ngram_indexes")
    if not indexes:
        raise ctx.shape_error("ngram_indexes is empty: no output column")
    width = max(indexes) + 1
    ctx.set_output("Out", [shape[0], width] if len(shape) == 2 else [width], "float32")


register_op("tfidf_vectorizer", inputs="X", outputs="Out",
            attrs={"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0,
                   "ngram_counts": [0], "ngram_indexes": [], "pool_int64s": [], "weights": []},
            kernel=_tfidf_kernel, infer=_tfidf_infer, grad=NO_GRADIENT,
            doc="Counts of the pool's n-grams in each row of token ids (skipping up to max_skip_count "
                "tokens between items), weighted as TF, IDF or TFIDF (ONNX TfIdfVectorizer).")
