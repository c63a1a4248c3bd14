"""pytest hooks for the gradient fuzzer: the `--fuzz-long` option and the example count.

tests/conftest.py imports these two hooks. The count travels in each test report's
`user_properties`, so it is printed by the controlling process under pytest-xdist too.
"""
from __future__ import annotations

FUZZ_PROPERTY = "fuzz_stats"


def pytest_addoption(parser) -> None:
    parser.addoption("--fuzz-long", action="store", type=int, default=0, nargs="?", const=5000,
                     metavar="N", help="run the gradient fuzzer on N random programs (default 5000) "
                                      "instead of the CI budget")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    totals: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key == FUZZ_PROPERTY and getattr(report, "when", "call") == "call":
                    for name, count in value.items():
                        totals[name] = totals.get(name, 0) + count
    if not totals:
        return
    terminalreporter.section("gradient fuzzer")
    if totals.get("programs"):
        terminalreporter.write_line(
            f"fuzzer: {int(totals.get('programs', 0))} random programs in {totals.get('seconds', 0.0):.1f} s; "
            f"static vs numeric on {int(totals.get('numeric', 0))}, vs PyTorch on {int(totals.get('torch', 0))}, "
            f"vs eager on {int(totals.get('eager', 0))}, vs jit.to_static on {int(totals.get('jit', 0))}, "
            f"float32 dtypes and values on {int(totals.get('float32', 0))}, "
            f"with control flow {int(totals.get('control_flow', 0))}, "
            f"skipped at a kink {int(totals.get('kinks', 0))}, overflowing (PyTorch too) "
            f"{int(totals.get('overflow', 0))}")
    if totals.get("second_order_programs"):
        terminalreporter.write_line(
            f"fuzzer, grad of grad: {int(totals['second_order_programs'])} random programs in "
            f"{totals.get('second_order_seconds', 0.0):.1f} s; Hessian-vector "
            f"products checked against numeric and PyTorch on {int(totals.get('second_order', 0))} "
            f"(and eager's create_graph on {int(totals.get('second_order_eager', 0))}), "
            f"{int(totals.get('no_second_order', 0))} used an op whose gradient has no gradient")
