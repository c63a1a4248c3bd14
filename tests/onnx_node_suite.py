"""Run ONNX's node test cases (those of the installed onnx package) through fluidgrad.onnx.backend.

Used by tests/test_onnx_node_suite.py; also a script:

    PYTHONPATH=. python tests/onnx_node_suite.py --update   # rewrite tests/onnx_expected_failures.txt
    PYTHONPATH=. python tests/onnx_node_suite.py --table    # pass table by op type (docs/onnx.md)
    PYTHONPATH=. python tests/onnx_node_suite.py -k cast_FLOAT -k uint16   # only the cases whose
                                                     # name contains one of these; prints each result
"""
from __future__ import annotations

import collections
import sys
import warnings
from pathlib import Path

import numpy as np

EXPECTED_FAILURES = Path(__file__).with_name("onnx_expected_failures.txt")


def collect_cases() -> list:
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return collect_testcases(None)


def run_case(case) -> str | None:
    """None if the case passes, else a one-line reason (as ONNX's BackendTest compares)."""
    from onnx.backend.test.runner import Runner
    from fluidgrad.onnx import backend
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            rep = backend.prepare(case.model)
            for inputs, ref_outputs in case.data_sets:
                # as ONNX's own runner does: some cases give their data as TensorProtos
                inputs, ref_outputs = _arrays(inputs), _arrays(ref_outputs)
                outputs = list(rep.run(inputs))
                Runner.assert_similar_outputs(ref_outputs, outputs, rtol=case.rtol, atol=case.atol)
    except AssertionError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return "wrong result: " + " ".join(lines[:2])[:150]
    except Exception as exc:  # noqa: BLE001  (every failure is recorded with its reason)
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
    return None


def _arrays(values: list) -> list:
    import onnx
    return [onnx.numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v for v in values]


def read_expected_failures(path: Path = EXPECTED_FAILURES) -> dict[str, str]:
    failures = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        failures[name] = reason.strip().lstrip("#").strip()
    return failures


def run_all(cases) -> dict[str, str | None]:
    return {case.name: run_case(case) for case in cases}


def write_expected_failures(results: dict[str, str | None], path: Path = EXPECTED_FAILURES) -> None:
    failed = {name: reason for name, reason in sorted(results.items()) if reason is not None}
    passed = len(results) - len(failed)
    header = [
        "# ONNX node test cases that fluidgrad.onnx.backend fails, with the reason (one per line:",
        "# `case_name  # reason`). tests/test_onnx_node_suite.py fails when a case not listed here",
        "# fails, and reports listed cases that pass. Regenerate:",
        "#   PYTHONPATH=. python tests/onnx_node_suite.py --update",
        f"# {passed} of {len(results)} cases pass ({100.0 * passed / len(results):.1f}%).",
    ]
    body = [f"{name}  # {reason}" for name, reason in failed.items()]
    path.write_text("\n".join(header + body) + "\n")


def pass_table(cases, results) -> list[tuple[str, int, int]]:
    """(op type, passed, total) per op type of the single-node model (expanded variants count
    with their op)."""
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for case in cases:
        op_type = _tested_op(case)
        counts[op_type][1] += 1
        counts[op_type][0] += results[case.name] is None
    return sorted((op, p, t) for op, (p, t) in counts.items())


def _tested_op(case) -> str:
    nodes = case.model.graph.node
    if len(nodes) == 1 or not case.name.endswith(("_expanded", "_expanded_ver18")):
        return nodes[0].op_type if len(nodes) == 1 else _guess_op(case)
    return _guess_op(case)


def _guess_op(case) -> str:
    """Multi-node cases: the op named by the test (test_<op>_...), matched case-insensitively."""
    import onnx
    names = {s.name.lower(): s.name for s in onnx.defs.get_all_schemas()}
    words = case.name[len("test_"):].split("_")
    for n in range(len(words), 0, -1):
        key = "".join(words[:n]).lower()
        if key in names:
            return names[key]
    return case.model.graph.node[0].op_type


def main(argv: list[str]) -> int:
    cases = collect_cases()
    patterns = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-k"]
    if patterns:
        if "--update" in argv or "--table" in argv:
            raise SystemExit("-k runs a subset: it cannot --update the list or print the --table")
        cases = [c for c in cases if any(p in c.name for p in patterns)]
        results = run_all(cases)
        for name, reason in sorted(results.items()):
            print(f"{'ok  ' if reason is None else 'FAIL'} {name}" + (f"  # {reason}" if reason else ""))
    else:
        results = run_all(cases)
    passed = sum(r is None for r in results.values())
    print(f"{passed} of {len(results)} ONNX node cases pass ({100.0 * passed / len(results):.1f}%)")
    if "--update" in argv:
        write_expected_failures(results)
        print(f"wrote {EXPECTED_FAILURES}")
    if "--table" in argv:
        print("| op type | passed | cases |\n|---|---|---|")
        for op, p, t in pass_table(cases, results):
            print(f"| {op} | {p} | {t} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
