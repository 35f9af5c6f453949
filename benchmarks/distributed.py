"""Benchmarks of funcgrad.distributed: data-parallel scaling of the digits MLP step, and
the cost of all_reduce on 1 MB and 100 MB pytrees.

    python benchmarks/distributed.py            # launches itself under mpiexec -n 1 and 2

A step is grad (jitted) + all_reduce(mean) of the gradients + update (jitted) on a fixed
global batch, so more ranks means a smaller slice per rank (strong scaling).  all_reduce
is timed against a bare mpi4py Allreduce of the same bytes, to show what the pytree
handling (agreement check, packing, unpacking) adds.  Times are medians, measured after
a barrier so every rank starts together.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _median_seconds(fn, repeats: int, warmup: int = 3) -> float:
    from funcgrad import distributed as dist

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    # the slowest rank decides how long a synchronous step takes
    return float(dist.all_reduce(np.float64(statistics.median(times)), op="max"))


def _mlp_step_seconds(global_batch: int, repeats: int) -> float:
    import runpy

    import funcgrad as fg
    from funcgrad import distributed as dist
    from funcgrad import optim

    example = runpy.run_path(str(HERE.parent / "examples" / "train_data_parallel.py"))
    x_train, y_train, _, _ = example["load_digits"]()
    model = dist.broadcast(example["make_model"](fg.random.key(0)))
    optimizer = optim.adam(1e-3)
    state = {"model": model, "opt": optimizer.init(model)}
    grad_step, update_step = example["make_steps"](optimizer, use_jit=True)
    mine = np.array_split(np.arange(global_batch), dist.world_size())[dist.rank()]
    x, y = fg.tensor(x_train[mine]), fg.tensor(y_train[mine])

    def step():
        _, grads = grad_step(state["model"], x, y)
        grads = dist.all_reduce(grads, op="mean")
        state["model"], state["opt"] = update_step(state["model"], grads, state["opt"])
        np.asarray(fg.tree.leaves(state["model"])[0])  # wait for the result

    return _median_seconds(step, repeats)


def _pytree(total_bytes: int, n_leaves: int = 8) -> dict:
    import funcgrad as fg

    per_leaf = total_bytes // 4 // n_leaves
    return {f"layer{i}": fg.ones(per_leaf) for i in range(n_leaves)}


def worker() -> None:
    from mpi4py import MPI

    from funcgrad import distributed as dist

    dist.init()
    results = {"world_size": dist.world_size()}
    for batch in (64, 256):
        results[f"mlp_step_ms_batch{batch}"] = 1e3 * _mlp_step_seconds(batch, repeats=200)
    for label, size, repeats in (("1MB", 1 << 20, 50), ("100MB", 100 << 20, 5)):
        tree = _pytree(size)
        results[f"all_reduce_ms_{label}"] = 1e3 * _median_seconds(
            lambda tree=tree: dist.all_reduce(tree, op="mean"), repeats)
        flat = np.ones(size // 4, np.float32)
        results[f"raw_Allreduce_ms_{label}"] = 1e3 * _median_seconds(
            lambda flat=flat: MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, flat), repeats)
    if dist.rank() == 0:
        print("RESULTS " + json.dumps(results), flush=True)


def main() -> None:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    runs = []
    for n in (1, 2):
        done = subprocess.run([str(mpiexec), "-n", str(n), sys.executable, __file__,
                               "--worker"], capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, PYTHONPATH=str(HERE.parent)))
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULTS ")]
        if done.returncode or not lines:
            sys.exit(f"mpiexec -n {n} failed:\n{done.stdout}\n{done.stderr}")
        runs.append(json.loads(lines[0][len("RESULTS "):]))
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    print(f"{'measure':<28}" + "".join(f"{'n=' + str(r['world_size']):>12}" for r in runs))
    for key in runs[0]:
        if key != "world_size":
            print(f"{key:<28}" + "".join(f"{r[key]:>12.3f}" for r in runs))
    for batch in (64, 256):
        key = f"mlp_step_ms_batch{batch}"
        print(f"speed-up of a step, global batch {batch}: "
              f"{runs[0][key] / runs[1][key]:.2f}x on 2 processes")
    for label, size in (("1MB", 1 << 20), ("100MB", 100 << 20)):
        ms = runs[1][f"all_reduce_ms_{label}"]
        print(f"all_reduce {label} on 2 processes: {ms:.2f} ms "
              f"({size / ms / 1e6:.2f} GB/s of pytree)")


if __name__ == "__main__":
    worker() if "--worker" in sys.argv else main()
