"""funcgrad's benchmarks: time ratios against NumPy, PyTorch and JAX, all taken in one run.

PyTorch and JAX are optional: each is measured when it imports, skipped otherwise (they are
never dependencies of funcgrad).  Every framework is measured in the same process and the
repeats are interleaved (one batch of each framework per pass), so slow phases of this noisy
machine hit every framework alike; the figures are medians over the passes (dispatch takes
four short samples per pass, import at most five passes).

Workloads (targets from /work/shared/PERF.md):

- ``dispatch``: eager ``a + b`` on two 2x3 float32 tensors, microseconds per op
  (target <= 1.5 us).  Informational rows: ``x * 2.0`` (a weak Python scalar),
  ``tanh(x)``, the function ``add(a, b)``, ``a / b``, the basic index ``a[0]`` and the
  10-op chain of ``bench_anchors.py``.
- ``elementwise``: eager ``tanh(x) * x + 0.5 * x**2 - exp(-x)`` on 16M float32
  (target <= 1.1x NumPy).  The ``numpy (ufunc calls)`` row is the same chain written with
  ``np.multiply(...)`` calls, which NumPy cannot compute in place (see RESULTS.md).
- ``import``: ``import <framework>`` in a new process, seconds (target <= 0.2 s;
  informational for the others).

Usage::

    python benchmarks/run.py                       # everything installed, 11 passes
    python benchmarks/run.py --quick               # smoke test, a few seconds
    python benchmarks/run.py --workloads dispatch --frameworks numpy,funcgrad
    python benchmarks/run.py --json results.jsonl  # also append one JSON line per row
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import statistics
import sys
import time

import numpy as np

DISPATCH_TARGET_US = 1.5
ELEMENTWISE_TARGET_RATIO = 1.1
IMPORT_TARGET_S = 0.2
ALL_FRAMEWORKS = ("numpy", "funcgrad", "torch", "jax")


# --- frameworks ------------------------------------------------------------------------


class Framework:
    """What a workload needs from one framework: conversion, its namespace, a sync."""

    def __init__(self, name, version, to_array, ns, sync=None, threads=None):
        self.name = name
        self.version = version
        self.to_array = to_array
        self.ns = ns  # exposes tanh, exp, sqrt, log, maximum
        self.sync = sync or (lambda r: r)
        self.threads = threads


def _load(name: str) -> Framework | None:
    if name == "numpy":
        return Framework("numpy", np.__version__, lambda a: a, np, threads=1)
    if name == "funcgrad":
        import funcgrad as fg
        import funcgrad.numpy as fnp

        return Framework("funcgrad", fg.__version__, fg.tensor, fnp, threads=1)
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    if name == "torch":
        return Framework("torch", module.__version__, lambda a: module.from_numpy(a.copy()),
                         module, threads=module.get_num_threads())
    if name == "jax":
        import jax.numpy as jnp

        module.config.update("jax_enable_x64", False)
        device = module.devices("cpu")[0]
        return Framework("jax", module.__version__,
                         lambda a: module.device_put(a, device), jnp,
                         sync=lambda r: r.block_until_ready(), threads=os.cpu_count())
    raise ValueError(f"unknown framework {name!r}; choose from {', '.join(ALL_FRAMEWORKS)}")


# --- measuring ---------------------------------------------------------------------------


def _interleaved(candidates: dict, passes: int, warmup: int = 1) -> dict:
    """Median seconds per call of each ``candidates[label]() -> seconds``, interleaved."""
    for fn in candidates.values():
        for _ in range(warmup):
            fn()
    samples = {label: [] for label in candidates}
    order = list(candidates.items())
    shuffle = random.Random(0).shuffle
    for _ in range(passes):
        # a fresh order every pass: a candidate run right after another framework's pays for
        # that framework's still-spinning worker threads (measured: ~300 us on a 0.6 ms
        # jitted Hessian run right after JAX), so no candidate may always follow the same one
        shuffle(order)
        for label, fn in order:
            samples[label].append(fn())
    return {label: {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts),
                    "n": len(ts)} for label, ts in samples.items()}


def _timed_loop(op, sync, inner: int):
    """A callable timing ``inner`` calls of ``op`` and returning seconds per call."""

    def run():
        start = time.perf_counter()
        result = None
        for _ in range(inner):
            result = op()
        sync(result)
        return (time.perf_counter() - start) / inner

    return run


def _timed_once(fn, sync):
    def run():
        start = time.perf_counter()
        sync(fn())
        return time.perf_counter() - start

    return run


def _steal_seconds():
    """Hypervisor steal time of all CPUs (from /proc/stat), or None where unavailable."""
    try:
        with open("/proc/stat") as f:
            return int(f.readline().split()[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


# --- workloads -----------------------------------------------------------------------------


def dispatch(frameworks: list, passes: int, inner: int) -> list:
    """Eager per-op overhead on tiny (2x3 float32) tensors, microseconds per op."""
    rng = np.random.default_rng(0)
    a_np = rng.uniform(1, 2, (2, 3)).astype(np.float32)
    b_np = rng.uniform(1, 2, (2, 3)).astype(np.float32)
    rows = []
    variants = {
        "a+b 2x3": (1, lambda ns, a, b: (lambda: a + b)),
        "x*2.0 2x3": (1, lambda ns, a, b: (lambda: a * 2.0)),
        "tanh(x) 2x3": (1, lambda ns, a, b: (lambda: ns.tanh(a))),
        "add(a, b) 2x3": (1, lambda ns, a, b: (lambda: ns.add(a, b))),
        "a/b 2x3": (1, lambda ns, a, b: (lambda: a / b)),
        "a[0] 2x3": (1, lambda ns, a, b: (lambda: a[0])),
        "10-op chain 2x3": (10, lambda ns, a, b: (lambda: _ten_op_chain(ns, a, b))),
    }
    for variant, (ops, make) in variants.items():
        candidates = {}
        for fw in frameworks:
            a, b = fw.to_array(a_np), fw.to_array(b_np)
            loop_inner = max(inner // ops, 50)
            candidates[fw.name] = _timed_loop(make(fw.ns, a, b), fw.sync, loop_inner)
        stats = _interleaved(candidates, passes)
        for fw in frameworks:
            s = {k: (v / ops if k.endswith("_s") else v) for k, v in stats[fw.name].items()}
            rows.append(_row("dispatch", variant, fw, "eager", s, stats, unit="us/op"))
    return rows


def _ten_op_chain(ns, a, b):
    # the same ten ops as bench_anchors.py's dispatch workload
    y = a + b
    y = y * a
    y = y - b
    y = ns.tanh(y)
    y = ns.exp(y)
    y = y * 0.5
    y = ns.maximum(y, a)
    y = ns.sqrt(y)
    y = y + 1.0
    return ns.log(y)


def elementwise(frameworks: list, passes: int, n: int) -> list:
    """Eager ``tanh(x) * x + 0.5 * x**2 - exp(-x)`` on ``n`` float32 values.

    Two interleaved phases, each with NumPy as its reference: NumPy and funcgrad first
    (the target ratio), then PyTorch and JAX.  Multi-threaded frameworks allocating
    64 MiB buffers in between perturb NumPy's own timing, which would blur the ratio
    funcgrad is judged by.
    """
    x_np = np.random.default_rng(0).uniform(-3, 3, n).astype(np.float32)
    variant = f"{n // (1024 * 1024)}M f32" if n >= 1024 * 1024 else f"{n} f32"
    by_name = {fw.name: fw for fw in frameworks}
    rows = []
    for first, phase in ((True, ("numpy", "funcgrad")), (False, ("numpy", "torch", "jax"))):
        present = [name for name in phase if name in by_name]
        if not any(name != "numpy" for name in present) and not (first and present):
            continue
        candidates, labels = {}, {}
        for name in present:
            fw = by_name[name]
            x, ns = fw.to_array(x_np), fw.ns
            candidates[name] = _timed_once(
                lambda x=x, ns=ns: ns.tanh(x) * x + 0.5 * x**2 - ns.exp(-x), fw.sync)
            labels[name] = name if first or name != "numpy" else "numpy (beside torch, jax)"
            if name == "numpy" and first:
                # the chain as ufunc calls: what NumPy costs without temporary elision
                candidates["numpy (ufunc calls)"] = _timed_once(
                    lambda: np.subtract(np.add(np.multiply(np.tanh(x_np), x_np),
                                               np.multiply(0.5, np.square(x_np))),
                                        np.exp(np.negative(x_np))), fw.sync)
                labels["numpy (ufunc calls)"] = "numpy (ufunc calls)"
        stats = _interleaved(candidates, passes)
        for key, label in labels.items():
            fw = by_name.get(key, by_name.get("numpy"))
            row = _row("elementwise", variant, fw, "eager", stats[key], stats, unit="ms",
                       label=key)
            row["framework"] = label
            rows.append(row)
    return rows


def import_time(frameworks: list, passes: int) -> list:
    """Seconds to ``import`` each framework in a fresh interpreter (informational)."""
    import subprocess

    code = ("import time; t = time.perf_counter(); import {m}; "
            "print(time.perf_counter() - t)")
    candidates = {}
    for fw in frameworks:
        def run(module=fw.name):
            out = subprocess.run([sys.executable, "-c", code.format(m=module)],
                                 capture_output=True, text=True, check=True)
            return float(out.stdout.strip().splitlines()[-1])

        candidates[fw.name] = run
    stats = _interleaved(candidates, passes, warmup=1)
    return [_row("import", "new process", fw, "cold", stats[fw.name], stats, unit="s")
            for fw in frameworks]


def _row(workload, variant, fw, mode, stats, all_stats, *, unit, label=None):
    label = label or fw.name
    base = all_stats.get("numpy", {}).get("median_s")
    row = {"workload": workload, "variant": variant, "framework": label,
           "version": fw.version, "mode": mode, "threads": fw.threads, "unit": unit,
           **{k: round(v, 10) if isinstance(v, float) else v for k, v in stats.items()}}
    if base:
        row["x_numpy"] = round(all_stats[label]["median_s"] / base, 3)
        row["x_numpy_min"] = round(all_stats[label]["min_s"] / all_stats["numpy"]["min_s"], 3)
    return row


# --- report --------------------------------------------------------------------------------


_SCALES = {"us/op": (1e6, "us"), "ms": (1e3, "ms"), "s": (1.0, "s")}


def _fmt_time(row) -> str:
    scale, unit = _SCALES[row["unit"]]
    digits = 3 if unit != "ms" else 1
    return f"{row['median_s'] * scale:.{digits}f} {row['unit']}"


def _verdict(row) -> str:
    if row["framework"] != "funcgrad":
        return ""
    if row["workload"] == "dispatch" and row["variant"] == "a+b 2x3":
        us = row["median_s"] * 1e6
        ok = us <= DISPATCH_TARGET_US
        return f"target <= {DISPATCH_TARGET_US} us: {'met' if ok else 'MISSED'}"
    if row["workload"] == "import":
        ok = row["median_s"] <= IMPORT_TARGET_S
        return f"target <= {IMPORT_TARGET_S} s: {'met' if ok else 'MISSED'}"
    if row["workload"] == "elementwise" and "x_numpy" in row:
        ok = row["x_numpy"] <= ELEMENTWISE_TARGET_RATIO
        return f"target <= {ELEMENTWISE_TARGET_RATIO}x NumPy: {'met' if ok else 'MISSED'}"
    return ""


def print_table(rows: list) -> None:
    print("| workload | variant | framework | threads | median | min..max | x NumPy (median) "
          "| x NumPy (min) | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        scale, unit = _SCALES[r["unit"]]
        spread = f"{r['min_s'] * scale:.3g}..{r['max_s'] * scale:.3g} {unit}"
        ratio = f"{r['x_numpy']:.2f} | {r['x_numpy_min']:.2f}" if "x_numpy" in r else " | "
        print(f"| {r['workload']} | {r['variant']} | {r['framework']} | {r['threads']} | "
              f"{_fmt_time(r)} | {spread} | {ratio} | {_verdict(r)} |")


def machine_notes(frameworks: list) -> str:
    env = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")}
    versions = ", ".join(f"{fw.name} {fw.version}" for fw in frameworks)
    return (f"python {platform.python_version()}, {platform.machine()}, "
            f"{os.cpu_count()} CPUs; {versions}; OPENBLAS env: {env or 'unset'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frameworks", default=",".join(ALL_FRAMEWORKS),
                        help="comma-separated subset of numpy,funcgrad,torch,jax "
                             "(missing optional ones are skipped)")
    parser.add_argument("--workloads", default="dispatch,elementwise,import")
    parser.add_argument("--passes", type=int, default=11, help="interleaved repeats (median)")
    parser.add_argument("--inner", type=int, default=2500, help="ops per dispatch sample")
    parser.add_argument("--size", type=int, default=16 * 1024 * 1024,
                        help="elements of the elementwise chain")
    parser.add_argument("--quick", action="store_true", help="few small repeats (smoke test)")
    parser.add_argument("--json", help="append one JSON line per row to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.passes, args.inner, args.size = 3, 1000, 1024 * 1024

    frameworks, skipped = [], []
    for name in filter(None, args.frameworks.split(",")):
        fw = _load(name.strip())
        (frameworks if fw is not None else skipped).append(fw or name)
    print(f"# funcgrad benchmarks: {machine_notes(frameworks)}")
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"# load average before (1, 5, 15 min): {load}")
    if skipped:
        print(f"# not installed, skipped: {', '.join(skipped)}")

    steal0, wall0 = _steal_seconds(), time.perf_counter()
    rows = []
    for workload in filter(None, args.workloads.split(",")):
        if workload == "dispatch":
            # short samples, many of them: a median that skips other processes' bursts
            rows += dispatch(frameworks, 4 * args.passes, args.inner)
        elif workload == "elementwise":
            rows += elementwise(frameworks, args.passes, args.size)
        elif workload == "import":
            rows += import_time(frameworks, min(args.passes, 5))
        else:
            parser.error(f"unknown workload {workload!r}; choose from dispatch, "
                         "elementwise, import")
    steal1, wall1 = _steal_seconds(), time.perf_counter()

    print_table(rows)
    finish(rows, args.json, (steal0, wall0), (steal1, wall1),
           f"medians of {args.passes} interleaved passes")
    return 0


def finish(rows, json_path, start, end, what: str) -> None:
    """The closing line (wall time, hypervisor steal) and the JSON lines, if asked for;
    shared with benchmarks/transforms.py."""
    (steal0, wall0), (steal1, wall1) = start, end
    if steal0 is not None:
        frac = (steal1 - steal0) / max(wall1 - wall0, 1e-9) / (os.cpu_count() or 1)
        print(f"# {wall1 - wall0:.1f} s wall, hypervisor steal {frac:.1%} of CPU time; {what}")
    if json_path:
        with open(json_path, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    sys.exit(main())
