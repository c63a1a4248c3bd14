"""Data-parallel step time (issue 14): the MLP 784-512-512-10 at per-rank batch 64, SGD.

    python benchmarks/bench_dist.py [--steps 20] [--launches 2] [--block 4]
    python benchmarks/bench_dist.py --phases     # the static step split into its parts

Weak scaling: 1 rank (plain training, no data-parallel wrapper) against 2 ranks (batch 64 on
each), in static mode (DistributedOptimizer) and eager mode (DataParallel), one BLAS thread
per rank (`fluidgrad launch` sets it). On 2 ranks five contenders alternate in the same
processes: each rank training alone (no all-reduce: the 2-rank compute under the same load,
what "vs no all-reduce" divides by), bucketed gradient all-reduce (the default buckets: up to
25 MB, in eager mode 1 MB first) and one all-reduce per parameter (bucket size 0), each
through a shared-memory window (the default when every rank is on one node) and through
MPI's Iallreduce (what runs across nodes). Contenders take turns in blocks of `--block`
consecutive steps, as a training loop runs one model, and the first step of a block is not
timed: it finds its model's parameters evicted by the other contenders' (10 models of 2.7 MB
on each of 2 ranks do not fit in this machine's 32 MB cache; the 1-rank job's 2 do, so
alternating step by step charged the 2-rank steps alone for cache misses). The 1-rank and 2-rank jobs
alternate `--launches` times; each row is the median step over all its steps, with the
25th-75th percentiles and the 10th (the fast steps: on a shared machine, closer to what an
idle one gives). "comm" is a rank's time per step inside collectives (starting them, waiting
for them, reducing shared buckets; in eager mode what the backward pass did not hide); "cpu"
is its CPU time per step (the work, without the time it waited or lost its core).
Goal: 2-rank step <= 1.1x the 1-rank step (90% weak-scaling efficiency); bucketed < per-parameter.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import print_table  # noqa: E402

import fluidgrad as fg  # noqa: E402
import fluidgrad.distributed as dist  # noqa: E402
from fluidgrad.nn import functional as F  # noqa: E402
from fluidgrad.ops import comm_buckets, comm_shards  # noqa: E402
from fluidgrad.ops.comm import get_world  # noqa: E402
from fluidgrad.ops.registry import get_op_def  # noqa: E402

SIZES, BATCH, LR = (784, 512, 512, 10), 64, 0.01
# 2-rank contenders: (bucket_size_mb, all-reduce path); 0 MB = one all-reduce per parameter;
# None = no data parallelism: each rank trains alone (the compute of a step under the same load)
# "shared": buckets reduced through an MPI shared-memory window (the default on one node);
# "mpi": MPI's own Iallreduce (what runs across nodes), see fluidgrad/ops/comm_buckets.py
VARIANTS = {"no all-reduce": (None, "auto"), "bucketed": (25.0, "auto"), "per-parameter": (0.0, "auto"),
            "bucketed, MPI Iallreduce": (25.0, "mpi"), "per-parameter, MPI Iallreduce": (0.0, "mpi"),
            "bucketed, sharded update": (25.0, "auto")}
# static mode only: DistributedOptimizer(sharding=True), each rank sums and updates half of the bucket
SHARDED = {"bucketed, sharded update"}


def data(rank):
    rng = np.random.default_rng(rank)
    return rng.standard_normal((BATCH, SIZES[0])).astype("float32"), rng.integers(0, 10, (BATCH, 1))


def static_stepper(bucket_mb, sharding=False):
    main, startup = fg.Program(), fg.Program()
    with fg.program_guard(main, startup):
        x = fg.static.data("x", [None, SIZES[0]], "float32")
        y = fg.static.data("y", [None, 1], "int64")
        h = x
        for size in SIZES[1:-1]:
            h = fg.static.nn.fc(h, size, activation="relu")
        loss = fg.mean(F.softmax_with_cross_entropy(fg.static.nn.fc(h, SIZES[-1]), y))
        opt = fg.optimizer.SGD(LR)
        (opt if bucket_mb is None else dist.DistributedOptimizer(opt, bucket_size_mb=bucket_mb,
                                                                 sharding=sharding)).minimize(loss)
    exe, scope = fg.Executor(), fg.Scope()
    exe.run(startup, scope=scope)
    x_value, y_value = data(get_world().rank)
    return lambda: exe.run(main, feed={"x": x_value, "y": y_value}, fetch_list=[loss], scope=scope)


def eager_stepper(bucket_mb):
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [fg.nn.Linear(a, b), fg.nn.ReLU()]
    model = fg.nn.Sequential(*layers[:-1])
    if bucket_mb is not None:
        model = fg.DataParallel(model, comm_buffer_size=bucket_mb)
    opt = fg.optimizer.SGD(LR, parameters=model.parameters())
    x_value, y_value = data(get_world().rank)
    x, y = fg.to_tensor(x_value), fg.to_tensor(y_value)

    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
    return step


def on_path(world, path, step):
    """`step` run with gradient buckets reduced through `path` ("auto" or "mpi")."""
    def run():
        world.allreduce_path = path
        step()
    return run


def worker(out_path, steps, block):
    """Runs on every rank: times each contender's steps, contenders taking turns in blocks."""
    dist.init_parallel_env()
    world = get_world()
    variants = {"1 rank": (None, "auto")} if world.size == 1 else VARIANTS
    steppers = {}
    for mode, make in (("static", static_stepper), ("eager", eager_stepper)):
        for name, (mb, path) in variants.items():
            if name in SHARDED and mode != "static":
                continue
            world.allreduce_path = path  # DataParallel chooses at wrap time whether to overlap
            stepper = static_stepper(mb, sharding=True) if name in SHARDED else make(mb)
            steppers[(mode, name)] = on_path(world, path, stepper)
    times = {key: [] for key in steppers}
    comm = {key: [] for key in steppers}
    cpu = {key: [] for key in steppers}
    for _ in range(3):  # warm up
        for step in steppers.values():
            step()
    for _ in range(steps):
        for key, step in steppers.items():
            for k in range(block):
                dist.barrier()
                waited, start, worked = world.comm_seconds, time.perf_counter(), time.thread_time()
                step()
                if k:  # the first step of a block finds its model out of the caches (see above)
                    times[key].append(time.perf_counter() - start)
                    cpu[key].append(time.thread_time() - worked)
                    comm[key].append(world.comm_seconds - waited)
    result = {f"{m}|{n}": [times[(m, n)], comm[(m, n)], cpu[(m, n)]] for m, n in steppers}
    if world.size > 1:
        result["allreduce"] = allreduce_times(world)
    if world.rank == 0:
        Path(out_path).write_text(json.dumps(result))


class PhaseClock:
    """Marks (wall, CPU) times inside a static step: where the bucket op starts, packing ends,
    the barrier is passed and the sums are made (wrapping the op's kernel and the two-rank
    shared bucket's methods: the measurement of `--phases`, not the benchmark's steps)."""

    def __init__(self):
        self.marks = {}
        op = get_op_def("c_bucket_allreduce")
        kernel, start, arrive = op.kernel, comm_buckets.SharedBucket.start, comm_buckets.PairReduce._arrive
        self._time_sharded()

        def timed_kernel(xs, **attrs):
            self.mark("op")
            out = kernel(xs, **attrs)
            self.mark("summed")
            return out

        def timed_start(bucket, what="bucket all_reduce"):
            self.mark("packed")
            return start(bucket, what)

        def timed_arrive(request):
            self.mark("barrier")
            return arrive(request)
        op.kernel, comm_buckets.SharedBucket.start, comm_buckets.PairReduce._arrive = (
            timed_kernel, timed_start, timed_arrive)

    def _time_sharded(self):
        """The sharded SGD op (c_bucket_sgd): packed, barrier passed, half summed and updated, published."""
        op = get_op_def("c_bucket_sgd")
        kernel, pack, exchange, gather = (op.kernel, comm_shards.pack, comm_shards.exchange,
                                          comm_shards.NodeCopy.gather)

        def timed_kernel(*args, **attrs):
            self.mark("op")
            out = kernel(*args, **attrs)
            self.mark("summed")
            return out

        def timed_pack(*args, **kwargs):
            pack(*args, **kwargs)
            self.mark("packed")

        def timed_exchange(*args, **kwargs):
            out = exchange(*args, **kwargs)
            self.mark("barrier")
            return out

        def timed_gather(copy, *args, **kwargs):
            self.mark("updated")
            return gather(copy, *args, **kwargs)
        op.kernel, comm_shards.pack, comm_shards.exchange, comm_shards.NodeCopy.gather = (
            timed_kernel, timed_pack, timed_exchange, timed_gather)

    def mark(self, name):
        self.marks[name] = (time.perf_counter(), time.thread_time())


def phase_worker(out_path, steps, block):
    """Runs on every rank: the static step alone and (2 ranks) bucketed, split into phases."""
    clock = PhaseClock()  # before the programs are built: their plans bind the kernel
    dist.init_parallel_env()
    world = get_world()
    steppers = {"alone": static_stepper(None)}
    if world.size > 1:
        steppers["bucketed"] = static_stepper(25.0)
        steppers["sharded"] = static_stepper(25.0, sharding=True)
    for step in steppers.values():
        for _ in range(3):
            step()
    records = []
    for _ in range(steps):
        for name, step in steppers.items():
            for k in range(block):
                dist.barrier()
                clock.marks.clear()
                clock.mark("start")
                step()
                clock.mark("end")
                if k:
                    records.append((name, dict(clock.marks)))
    every = world.all_gather_object(records, "bench_dist phases") if world.size > 1 else [records]
    if world.rank == 0:
        Path(out_path).write_text(json.dumps(phase_samples(every)))


def phase_samples(every):
    """Per phase, the samples (ms) over steps: CPU time of each part on each rank, the wait at
    the barrier (wall) and the skew between the ranks reaching the op."""
    out = {}
    def add(key, seconds):
        out.setdefault(key, []).append(seconds * 1e3)
    for i, (name, _) in enumerate(every[0]):
        marks = [records[i][1] for records in every]
        add(f"{name}|step wall (slower rank)", max(m["end"][0] for m in marks) - min(m["start"][0] for m in marks))
        for rank, m in enumerate(marks):
            add(f"{name}|cpu, rank {rank}: whole step", m["end"][1] - m["start"][1])
            if "updated" in m:  # the sharded update: the sum and the SGD of half the bucket, in one pass
                add(f"{name}|cpu, rank {rank}: forward and backward", m["op"][1] - m["start"][1])
                add(f"{name}|cpu, rank {rank}: pack the peer's half into the bucket", m["packed"][1] - m["op"][1])
                add(f"{name}|wall, rank {rank}: wait at the barrier", m["barrier"][0] - m["packed"][0])
                add(f"{name}|cpu, rank {rank}: sum and update (SGD) of its half", m["updated"][1] - m["barrier"][1])
                add(f"{name}|wall, rank {rank}: publish (barrier)", m["summed"][0] - m["updated"][0])
                add(f"{name}|cpu, rank {rank}: rest of the step", m["end"][1] - m["summed"][1])
            elif "op" in m:
                add(f"{name}|cpu, rank {rank}: forward and backward", m["op"][1] - m["start"][1])
                add(f"{name}|cpu, rank {rank}: pack into the bucket", m["packed"][1] - m["op"][1])
                add(f"{name}|wall, rank {rank}: wait at the barrier", m["barrier"][0] - m["packed"][0])
                add(f"{name}|cpu, rank {rank}: sum of the two rows", m["summed"][1] - m["barrier"][1])
                add(f"{name}|cpu, rank {rank}: update (SGD)", m["end"][1] - m["summed"][1])
        if "op" in marks[0]:
            add(f"{name}|skew of the ranks at the op (wall)", abs(marks[0]["op"][0] - marks[1]["op"][0]))
    return out


def phases(args):
    """`--phases`: the static step split into its parts, 1 rank against 2 (shared bucket)."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for launch in range(args.launches):
            for nproc in (1, 2):
                out = Path(tmp) / f"{nproc}-{launch}.json"
                subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", str(nproc), __file__,
                                "--steps", str(args.steps), "--block", str(args.block), "--phase-worker", str(out)],
                               check=True, cwd=Path(__file__).resolve().parents[1])
                for key, samples in json.loads(out.read_text()).items():
                    results.setdefault(f"{nproc}|{key}", []).extend(samples)
    rows = []
    for key, samples in results.items():
        nproc, name, what = key.split("|")
        median, fast = percentiles(samples, 50, 10)
        label = "1 rank" if nproc == "1" else f"2 ranks, {'no all-reduce' if name == 'alone' else name}"
        rows.append([label, what, f"{median:.3f}", f"{fast:.3f}"])
    print_table(f"static step in parts, MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, two-rank shared "
                f"bucket (median and 10th percentile of {args.steps * (args.block - 1) * args.launches} steps)",
                ["ranks", "part", "median ms", "p10 ms"], rows)


def allreduce_times(world, repeat=30):
    """Median seconds of one blocking MPI all-reduce (Iallreduce, then wait) of 8 bytes and of
    the whole MLP gradient: the latency (alpha) and bandwidth (beta) terms of the cost model
    in docs/distributed.md; and of the whole gradient through a shared-memory bucket, its
    packing included."""
    n_grad = sum(a * b + b for a, b in zip(SIZES[:-1], SIZES[1:]))
    gradient = np.ones(n_grad, "float32")
    world.allreduce_path = "auto"
    bucket = world.bucket("bench_dist", n_grad, "float32")

    def shared():
        np.copyto(bucket.input, gradient)
        bucket.start().wait()
    def mpi(array):
        return lambda: world.start_all_reduce(array, "sum").wait()
    contenders = {str(n * 4): mpi(np.ones(n, "float32")) for n in (2, n_grad)}
    if bucket.shared:
        contenders["shared"] = shared
    medians = {}
    for name, run in contenders.items():
        samples = []
        for _ in range(repeat):
            world.barrier()
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
        medians[name] = float(np.median(samples))
    return medians


def percentiles(samples, *qs):
    return [float(q) for q in np.percentile(samples, qs)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--launches", type=int, default=2)
    parser.add_argument("--block", type=int, default=4, help="consecutive steps of one contender (the first not timed)")
    parser.add_argument("--phases", action="store_true",
                        help="split the static step into its parts (compute, pack, barrier, sum, update)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--phase-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.block < 2:
        parser.error("--block must be at least 2 (the first step of a block is not timed)")
    if args.worker:
        return worker(args.worker, args.steps, args.block)
    if args.phase_worker:
        return phase_worker(args.phase_worker, args.steps, args.block)
    if args.phases:
        return phases(args)
    results: dict[str, list[list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for launch in range(args.launches):
            for nproc in (1, 2):
                out = Path(tmp) / f"{nproc}-{launch}.json"
                subprocess.run([sys.executable, "-m", "fluidgrad", "launch", "-n", str(nproc), __file__,
                                "--steps", str(args.steps), "--block", str(args.block), "--worker", str(out)], check=True,
                               cwd=Path(__file__).resolve().parents[1])
                found = json.loads(out.read_text())
                for size, seconds in found.pop("allreduce", {}).items():
                    results.setdefault(f"allreduce|{size}", [[], [], []])[0].append(seconds)
                for key, samples in found.items():
                    entry = results.setdefault(key, [[], [], []])
                    for kept, new in zip(entry, samples):
                        kept += new
    rows, versus = [], []
    for mode in ("static", "eager"):
        base, base_fast = percentiles(results[f"{mode}|1 rank"][0], 50, 10)
        alone = float(np.median(results[f"{mode}|no all-reduce"][0]))
        for name in ("1 rank", *VARIANTS):
            if f"{mode}|{name}" not in results:
                continue
            t, c, work = results[f"{mode}|{name}"]
            step, fast, low, high = percentiles(t, 50, 10, 25, 75)
            label = name if name == "1 rank" else f"2 ranks, {name}"
            rows.append([mode, label, f"{step * 1e3:.2f}", f"{low * 1e3:.2f}-{high * 1e3:.2f}", f"{fast * 1e3:.2f}",
                         f"{float(np.median(c)) * 1e3:.2f}", f"{float(np.median(work)) * 1e3:.2f}", f"{step / base:.2f}x", f"{fast / base_fast:.2f}x",
                         f"{step / alone:.2f}x"])
        for path in ("", ", MPI Iallreduce"):
            bucketed = np.array(results[f"{mode}|bucketed{path}"][0])
            per_param = np.array(results[f"{mode}|per-parameter{path}"][0])
            # the two take turns in blocks in the same processes: compare their steps pairwise, in order
            ratio = per_param / bucketed
            versus.append([mode, "shared memory" if not path else "MPI Iallreduce",
                           f"{np.median(bucketed) * 1e3:.2f}", f"{np.median(per_param) * 1e3:.2f}",
                           f"{np.median(ratio):.2f}x", f"{np.mean(ratio > 1):.0%}"])
    fits = []
    sizes = sorted(int(k.split("|")[1]) for k in results if k.startswith("allreduce|") and k[-1].isdigit())
    if len(sizes) == 2:
        small, large = (float(np.median(results[f"allreduce|{n}"][0])) for n in sizes)
        alpha = small / 2  # ring on p ranks: 2 (p - 1) messages; p = 2
        beta = (large - small) / (2 * 0.5 * (sizes[1] - sizes[0]))
        fits = [[f"{n} bytes", f"{float(np.median(results[f'allreduce|{n}'][0])) * 1e3:.3f}"] for n in sizes]
        fits.append(["fit: alpha (s/message), beta (s/byte)", f"{alpha:.2e}, {beta:.2e}"])
        if "allreduce|shared" in results:
            fits.append([f"{sizes[1]} bytes through a shared-memory bucket (packing included)",
                         f"{float(np.median(results['allreduce|shared'][0])) * 1e3:.3f}"])
    print_table(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, SGD, 1 BLAS thread per rank "
                f"(median of {args.steps * (args.block - 1) * args.launches} steps)",
                ["mode", "ranks / all-reduce", "step ms", "p25-p75 ms", "p10 ms", "comm ms", "cpu ms", "vs 1 rank",
                 "vs 1 rank (p10)", "vs no all-reduce"], rows)
    print_table("bucketed vs one all-reduce per parameter (2 ranks, taking turns in blocks; steps paired in order)",
                ["mode", "all-reduce path", "bucketed ms", "per-parameter ms", "per-parameter / bucketed",
                 "steps where bucketed is faster"], versus)
    if fits:
        print_table("one blocking MPI all-reduce on 2 ranks (median)", ["message", "ms"], fits)
        compute = float(np.median(results["static|1 rank"][0]))
        print_cost_model(compute, {"this machine, MPI Iallreduce (measured)": (alpha, beta), **NETWORKS})


# assumed links for the projection: (alpha seconds per message, beta seconds per byte)
NETWORKS = {"10 Gb Ethernet, TCP (assumed)": (30e-6, 0.8e-9), "100 Gb InfiniBand (assumed)": (3e-6, 0.08e-9)}
RANKS = (8, 16, 32, 64, 128, 256)


def ring_allreduce_seconds(p, n_bytes, alpha, beta, buckets):
    """Ring all-reduce: each bucket is 2 (p - 1) steps (reduce-scatter, then all-gather), each
    step one message of n / p bytes: latency 2 (p - 1) alpha per bucket, bandwidth 2 (p - 1) / p n beta."""
    return buckets * 2 * (p - 1) * alpha + 2 * (p - 1) / p * n_bytes * beta


def print_cost_model(compute, networks):
    """Expected weak-scaling step time = 1-rank step + all-reduce (no overlap: an upper bound)."""
    n_bytes = 4 * sum(a * b + b for a, b in zip(SIZES[:-1], SIZES[1:]))
    rows = []
    for name, (alpha, beta) in networks.items():
        for p in RANKS:
            bucketed = ring_allreduce_seconds(p, n_bytes, alpha, beta, 1)  # one bucket: 2.7 MB < 25 MB
            per_param = ring_allreduce_seconds(p, n_bytes, alpha, beta, 2 * (len(SIZES) - 1))
            rows.append([name, p, f"{bucketed * 1e3:.2f}", f"{(compute + bucketed) * 1e3:.1f}",
                         f"{compute / (compute + bucketed):.0%}", f"{(compute + per_param) * 1e3:.1f}"])
    print_table(f"expected step time, ring all-reduce of {n_bytes} bytes, 1-rank step {compute * 1e3:.1f} ms",
                ["link", "ranks", "all-reduce ms", "step ms (bucketed)", "efficiency", "step ms (per-parameter)"],
                rows)


if __name__ == "__main__":
    main()
