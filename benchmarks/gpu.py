"""funcgrad's jit on an NVIDIA GPU (IREE's cuda driver) against JAX, PyTorch and CuPy.

No PERF.md target covers the GPU; this records where funcgrad stands there.  Every
framework runs the same float32 workloads in one process, on the same GPU, interleaved
(one sample of each per pass), medians over the passes:

- ``gemm``: ``a @ b``, N^3 for each ``--sizes`` N, in GFLOP/s.  JAX runs twice: with
  its default matmul precision (TF32 tensor cores on Ampere and later) and ``highest``
  (true float32); PyTorch's default is true float32 (``allow_tf32`` off).
- ``elementwise``: ``tanh(x)*x + 0.5*x**2 - exp(-x)`` on 16M elements.
- ``mlp_step``: SGD step of the 784-512-512-10 ReLU MLP, batch 128, params fed back.
- ``pe_grads``: per-example gradients of that MLP (``vmap(grad)``), batch 128.

Each sample is ``inner`` calls followed by one synchronisation (``block_until_ready``,
``torch.cuda.synchronize``, CuPy's stream sync).  Needs a GPU; ``--device cpu`` runs the
funcgrad rows on the CPU (a smoke test of this script).

Usage::

    python benchmarks/gpu.py                       # all workloads, 9 passes
    python benchmarks/gpu.py --workloads gemm --sizes 1024,4096
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp


def _median_seconds(candidates: dict, passes: int, inner: int) -> dict:
    """Median seconds per call of each ``name -> (call, sync)``, interleaved passes."""
    samples = {name: [] for name in candidates}
    for call, sync in candidates.values():  # warm-up (and compile)
        for _ in range(2):
            call()
        sync()
    for _ in range(passes):
        for name, (call, sync) in candidates.items():
            start = time.perf_counter()
            for _ in range(inner):
                out = call()
            sync(out)
            samples[name].append((time.perf_counter() - start) / inner)
    return {name: statistics.median(s) for name, s in samples.items()}


def _frameworks(device: str):
    """The rival frameworks present: name -> module (JAX on its GPU, torch on cuda)."""
    found = {}
    try:
        import jax

        if device != "cpu" and not any(d.platform == "gpu" for d in jax.devices()):
            raise ImportError
        found["jax"] = jax
    except (ImportError, RuntimeError):
        pass
    try:
        import torch

        if device == "cpu" or torch.cuda.is_available():
            found["torch"] = torch
    except ImportError:
        pass
    if device != "cpu":
        try:
            import cupy

            found["cupy"] = cupy
        except ImportError:
            pass
    return found


def _fg_sync(out=None):
    if out is not None:
        fg.tree.map(lambda t: t.block_until_ready(), out)


def _jax_sync(jax):
    """Waits for a JAX result (any pytree of arrays)."""
    def sync(out=None):
        if out is not None:
            jax.block_until_ready(out)
    return sync


def _torch_sync(torch, device):
    """Waits for PyTorch's queued GPU work (nothing to wait for on the CPU)."""
    def sync(out=None):
        if device != "cpu":
            torch.cuda.synchronize()
    return sync


def gemm(device, rivals, n, passes):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    cands = {}
    x, y = fg.tensor(a, device=device), fg.tensor(b, device=device)
    mm = fg.jit(lambda x, y: x @ y)
    cands["funcgrad jit"] = (lambda: mm(x, y), _fg_sync)
    if "jax" in rivals:
        jax = rivals["jax"]
        ja, jb = jax.device_put(a), jax.device_put(b)
        jmm = jax.jit(lambda x, y: x @ y)
        jmm_hi = jax.jit(lambda x, y: jax.numpy.matmul(x, y, precision="highest"))
        cands["jax (default precision)"] = (lambda: jmm(ja, jb), _jax_sync(jax))
        cands["jax (highest)"] = (lambda: jmm_hi(ja, jb), _jax_sync(jax))
    if "torch" in rivals:
        torch = rivals["torch"]
        dev = "cpu" if device == "cpu" else "cuda"
        ta, tb = torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev)
        cands["torch"] = (lambda: ta @ tb, _torch_sync(torch, dev))
    if "cupy" in rivals:
        cp = rivals["cupy"]
        ca, cb = cp.asarray(a), cp.asarray(b)
        cands["cupy"] = (lambda: ca @ cb,
                         lambda out=None: cp.cuda.get_current_stream().synchronize())
    inner = max(1, int(2e10 // (2 * n ** 3)))
    times = _median_seconds(cands, passes, inner)
    return [(f"gemm {n}^3", name, t, f"{2 * n ** 3 / t / 1e9:,.0f} GFLOP/s")
            for name, t in times.items()]


def _chain(ns, x):
    return ns.tanh(x) * x + 0.5 * x ** 2 - ns.exp(-x)


def elementwise(device, rivals, passes, n=1 << 24):
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    cands = {}
    x = fg.tensor(a, device=device)
    f = fg.jit(lambda x: _chain(fnp, x))
    cands["funcgrad jit"] = (lambda: f(x), _fg_sync)
    if "jax" in rivals:
        jax = rivals["jax"]
        ja = jax.device_put(a)
        jf = jax.jit(lambda x: _chain(jax.numpy, x))
        cands["jax"] = (lambda: jf(ja), _jax_sync(jax))
    if "torch" in rivals and device != "cpu":
        torch = rivals["torch"]
        ta = torch.from_numpy(a).cuda()
        tf = torch.compile(lambda x: _chain(torch, x))
        cands["torch.compile"] = (lambda: tf(ta), _torch_sync(torch, "cuda"))
    times = _median_seconds(cands, passes, inner=20)
    return [("elementwise 16M", name, t, f"{n * 4 * 2 / t / 1e9:,.0f} GB/s moved")
            for name, t in times.items()]


def mlp_step(device, rivals, passes, batch=128, sizes=(784, 512, 512, 10)):
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((m, k)) / np.sqrt(m)).astype(np.float32)
          for m, k in zip(sizes[:-1], sizes[1:], strict=True)]
    bs = [np.zeros(k, np.float32) for k in sizes[1:]]
    xs = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    ys = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]

    def make_step(ns, grad, relu):
        def loss(params, x, y):
            h = x
            for i, (w, b) in enumerate(params):
                h = h @ w + b
                if i < len(params) - 1:
                    h = relu(h)
            logp = h - ns.log(ns.sum(ns.exp(h - h.max(-1, keepdims=True)), -1,
                                     keepdims=True)) - h.max(-1, keepdims=True)
            return -ns.mean(ns.sum(logp * y, -1))

        def step(params, x, y):
            g = grad(loss)(params, x, y)
            return [(w - 0.01 * gw, b - 0.01 * gb)
                    for (w, b), (gw, gb) in zip(params, g, strict=True)]
        return step

    cands = {}
    put = lambda v: fg.tensor(v, device=device)  # noqa: E731
    state = {"fg": [(put(w), put(b)) for w, b in zip(ws, bs, strict=True)]}
    fx, fy = put(xs), put(ys)
    fstep = fg.jit(make_step(fnp, fg.grad, lambda h: fnp.maximum(h, 0.0)))

    def fg_call():
        state["fg"] = fstep(state["fg"], fx, fy)
        return state["fg"]
    cands["funcgrad jit"] = (fg_call, _fg_sync)
    if "jax" in rivals:
        jax = rivals["jax"]
        state["jax"] = [(jax.device_put(w), jax.device_put(b)) for w, b in zip(ws, bs, strict=True)]
        jx, jy = jax.device_put(xs), jax.device_put(ys)
        jstep = jax.jit(make_step(jax.numpy, jax.grad, jax.nn.relu))

        def jax_call():
            state["jax"] = jstep(state["jax"], jx, jy)
            return state["jax"]
        cands["jax"] = (jax_call, _jax_sync(jax))
    times = _median_seconds(cands, passes, inner=50)
    return [("mlp_step b128", name, t, "") for name, t in times.items()]


def pe_grads(device, rivals, passes, batch=128, sizes=(784, 512, 512, 10)):
    """Per-example gradients of the ReLU MLP: ``vmap(grad(loss))`` over the batch."""
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((m, k)) / np.sqrt(m)).astype(np.float32)
          for m, k in zip(sizes[:-1], sizes[1:], strict=True)]
    xs = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    ys = rng.standard_normal((batch, sizes[-1])).astype(np.float32)

    def make(ns, relu):
        def loss(ws, x, y):
            h = x
            for i, w in enumerate(ws):
                h = h @ w
                if i < len(ws) - 1:
                    h = relu(h)
            return ns.sum((h - y) ** 2)
        return loss

    cands = {}
    put = lambda v: fg.tensor(v, device=device)  # noqa: E731
    fws, fx, fy = [put(w) for w in ws], put(xs), put(ys)
    f = fg.jit(fg.vmap(fg.grad(make(fnp, lambda h: fnp.maximum(h, 0.0))), in_axes=(None, 0, 0)))
    cands["funcgrad jit"] = (lambda: f(fws, fx, fy), _fg_sync)
    if "jax" in rivals:
        jax = rivals["jax"]
        jws, jx, jy = [jax.device_put(w) for w in ws], jax.device_put(xs), jax.device_put(ys)
        jf = jax.jit(jax.vmap(jax.grad(make(jax.numpy, jax.nn.relu)), in_axes=(None, 0, 0)))
        cands["jax"] = (lambda: jf(jws, jx, jy), _jax_sync(jax))
    times = _median_seconds(cands, passes, inner=20)
    return [("pe_grads b128", name, t, "") for name, t in times.items()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--workloads", default="gemm,elementwise,mlp_step,pe_grads")
    parser.add_argument("--sizes", default="1024,4096")
    parser.add_argument("--passes", type=int, default=9)
    args = parser.parse_args(argv)
    rivals = _frameworks(args.device)
    rows = []
    for workload in args.workloads.split(","):
        if workload == "gemm":
            for n in map(int, args.sizes.split(",")):
                rows += gemm(args.device, rivals, n, args.passes)
        else:
            rows += {"elementwise": elementwise, "mlp_step": mlp_step,
                     "pe_grads": pe_grads}[workload](
                args.device, rivals, args.passes)
    print(f"device {args.device}; rivals: "
          + ", ".join(f"{k} {getattr(m, '__version__', '?')}" for k, m in rivals.items()))
    base = {workload: t for workload, name, t, _ in rows if name == "funcgrad jit"}
    for workload, name, t, extra in rows:
        ratio = t / base[workload] if workload in base else float("nan")
        print(f"{workload:16s} {name:26s} {t * 1e3:9.3f} ms  {ratio:5.2f}x fg  {extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
