"""ONNX's own node test suite (every case of the installed onnx package) through
fluidgrad.onnx.backend. The cases fluidgrad fails are listed with their reason in
tests/onnx_expected_failures.txt: a case that fails and is not listed fails this test (a
regression); a listed case that passes is reported, so that the list gets trimmed."""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("onnx")

from onnx_node_suite import collect_cases, read_expected_failures, run_all  # noqa: E402


@pytest.fixture(scope="module")
def results():
    return run_all(collect_cases())


def test_no_case_fails_that_is_not_expected_to(results):
    expected = read_expected_failures()
    regressions = {name: reason for name, reason in results.items() if reason is not None and name not in expected}
    fixed = sorted(name for name in expected if results.get(name, "missing") is None)
    if fixed:  # reported, not failed: other engineers' new ops make cases pass
        warnings.warn(f"{len(fixed)} ONNX node cases listed as failing now pass; trim "
                      f"tests/onnx_expected_failures.txt (python tests/onnx_node_suite.py --update): {fixed[:30]}")
    assert not regressions, (f"{len(regressions)} ONNX node cases fail that passed before "
                             f"(or are new): " + "; ".join(f"{n}: {r}" for n, r in sorted(regressions.items())[:20]))


def test_expected_failures_are_real_cases(results):
    unknown = sorted(set(read_expected_failures()) - set(results))
    assert not unknown, f"tests/onnx_expected_failures.txt lists cases the installed onnx lacks: {unknown[:10]}"
