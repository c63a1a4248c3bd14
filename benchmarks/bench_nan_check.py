"""check_nan_inf costs nothing when off (issue 6): executor run time, before vs after.

    python benchmarks/bench_nan_check.py [--quick]

"Before" is fluidgrad/executor/plan.py as it was when the issue started (commit fe7ea49, read
with `git show`), compiled into the same process next to today's; both compile the same
blocks and run them on the same Executor, interleaved, best of N. Workloads: a chain of 1000
elementwise ops on 1-element arrays, forward + backward (the one most sensitive to per-op
overhead), and an MLP 784-512-512-10 training step at batch 64. The last column is the price
of turning the check on.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import fluidgrad as fg  # noqa: E402
from common import best_time, print_table  # noqa: E402
from fluidgrad.executor import plan as plan_now  # noqa: E402

BEFORE_COMMIT = "fe7ea49"


def plan_before() -> types.ModuleType | None:
    """The executor's plan compiler as of BEFORE_COMMIT, as a module (None without git)."""
    try:
        source = subprocess.run(["git", "show", f"{BEFORE_COMMIT}:fluidgrad/executor/plan.py"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("fluidgrad.executor._plan_before")
    module.__package__ = "fluidgrad.executor"
    exec(compile(source, "plan_before.py", "exec"), module.__dict__)
    return module


def chain(n_ops: int):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [1], "float64")
        x.stop_gradient = False
        a = fg.static.data("a", [1], "float64")
        h = x
        for i in range(n_ops):
            h = h * a if i % 2 == 0 else h + a
        loss = fg.sum(h)
        grad, = fg.gradients([loss], [x])
    feed = {"x": np.array([1.0]), "a": np.array([0.999])}
    return main, startup, feed, [loss, grad]


def mlp(batch: int = 64):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, 784])
        label = fg.static.data("label", [None, 1], "int64")
        h = fg.static.nn.fc(x, 512, activation="relu")
        h = fg.static.nn.fc(h, 512, activation="relu")
        logits = fg.static.nn.fc(h, 10)
        loss = fg.mean(fg.nn.functional.softmax_with_cross_entropy(logits, label))
        fg.append_backward(loss)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((batch, 784)).astype("float32"),
            "label": rng.integers(0, 10, (batch, 1)).astype("int64")}
    return main, startup, feed, [loss]


def runner(module, program, feed, fetch, scope, check: bool):
    exe = fg.Executor(check_nan_inf=check)
    block = program.global_block()
    names = [v.name for v in fetch]
    compiled = module.compile_block(block, feed.keys(), names, False, check)
    return lambda: exe._call(compiled, scope, feed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    before = plan_before()
    repeat = 5 if args.quick else 15
    rows = []
    for name, build in (("chain of 1000 ops, fwd+bwd", lambda: chain(1000)), ("MLP step, batch 64", mlp)):
        program, startup, feed, fetch = build()
        scope = fg.Scope()
        fg.Executor().run(startup, scope=scope)
        now_off = runner(plan_now, program, feed, fetch, scope, False)
        now_on = runner(plan_now, program, feed, fetch, scope, True)
        then_off = runner(before, program, feed, fetch, scope, False) if before else None
        times = {"now": [], "before": [], "on": []}
        for _ in range(3):  # interleave, so drift of the machine hits both alike
            times["now"].append(best_time(now_off, repeat=repeat))
            times["on"].append(best_time(now_on, repeat=repeat))
            if then_off:
                times["before"].append(best_time(then_off, repeat=repeat))
        now, on = min(times["now"]), min(times["on"])
        then = min(times["before"]) if then_off else float("nan")
        rows.append([name, f"{then * 1e3:.3f}", f"{now * 1e3:.3f}", f"{(now / then - 1) * 100:+.1f}%",
                     f"{on * 1e3:.3f}", f"x{on / now:.2f}"])
    print_table(f"Executor run time, check_nan_inf off: before issue 6 ({BEFORE_COMMIT}) vs now",
                ["workload", "before, ms", "now (off), ms", "now vs before", "check on, ms", "on vs off"], rows)


if __name__ == "__main__":
    main()
