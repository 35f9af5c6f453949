"""funcgrad's transformation and jit benchmarks: ratios against NumPy, PyTorch and JAX in one run.

The companion of ``benchmarks/run.py`` (eager dispatch, eager chain, import), whose helpers
(``_interleaved``, ``_timed_loop``, ``_steal_seconds``, ``machine_notes``) this file imports.
Every framework is measured in the same process, with interleaved repeats (one sample of
every candidate per pass) and medians over the passes.  Shapes, dtypes (float32) and
seeds are those of ``/work/shared/perf/bench_anchors.py`` (the yardstick).

Workloads (targets from /work/shared/PERF.md):

EAGER transformation baselines (no ``fg.jit``; recorded, no target):

- ``eager_pe_grads``: per-example gradients of the 784-512-512-10 ReLU MLP, batch 128,
  ``fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))``.
- ``eager_hessian``: ``fg.hessian`` of ``sum(tanh(W @ x))``, n = 256.
- ``eager_rnn``: ``fg.scan`` of ``h = tanh(W @ h + x_t)``, 1000 steps, hidden 128.

JIT (``fg.jit``), each with its target:

- ``gemm``: 1024^3 float32 matmul, GFLOP/s >= 0.95x JAX.
- ``elementwise``: ``tanh(x)*x + 0.5*x**2 - exp(-x)``, 16M float32, <= 1.0x JAX.
- ``mlp_step``: SGD step (value_and_grad + update), params fed back, <= 1.0x JAX.
- ``pe_grads``: ``jit(vmap(grad))`` of the MLP, <= 0.85x torch.func.
- ``hessian``: ``jit(hessian)``, n = 256, <= 1.0x JAX.
- ``rnn``: ``jit(scan)``, 1000 steps, hidden 128, <= 1.0x JAX.
- ``linalg``: ``jit`` of cholesky, qr and solve of a 128 x 128 float32 matrix (no target).
- ``first_call``: the jitted MLP step's first call in a NEW process, import excluded:
  cold (fresh empty ``FUNCGRAD_CACHE_DIR``) <= 1 s, and from the disk cache (a second new
  process on the same directory) <= 100 ms.

Besides the user-facing row (``funcgrad`` / ``jit``: host ``fg.tensor`` inputs, the full
``fg.jit`` wrapper), funcgrad's jit workloads have two diagnostic rows that split the time:

- ``jit, device inputs``: the same ``fg.jit`` call on tensors whose buffers already live in
  the executable's IREE run-time (what ``jax.device_put`` gives JAX), so no input copy;
- ``kernel``: the compiled executable called directly
  (``funcgrad.transforms.jit.executable_for(program)(buffers)``) on device buffers: no
  Python wrapper, no copies.  ``jit`` minus ``jit, device inputs`` is the input copies;
  ``jit, device inputs`` minus ``kernel`` is fg.jit's per-call Python overhead.

jit results stay on the device: the SGD step feeds its parameters back; every timed batch
ends with one ``np.asarray`` of a result (funcgrad's jit calls are synchronous anyway),
``block_until_ready`` for JAX.  The in-process first calls (``1st`` column) compile into a
fresh temporary ``FUNCGRAD_CACHE_DIR`` (unless ``--keep-cache``), so they are cold.

Usage::

    python benchmarks/transforms.py                 # everything installed, 9 passes
    python benchmarks/transforms.py --quick         # smoke test (2 passes, short samples)
    python benchmarks/transforms.py --workloads gemm,rnn --frameworks funcgrad,jax
    python benchmarks/transforms.py --json out.jsonl  # also append one JSON line per row
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import _interleaved, _steal_seconds, _timed_loop, finish, machine_notes  # noqa: E402

ALL_FRAMEWORKS = ("numpy", "funcgrad", "torch", "jax")
EAGER_WORKLOADS = ("eager_pe_grads", "eager_hessian", "eager_rnn")
JIT_WORKLOADS = ("gemm", "elementwise", "mlp_step", "pe_grads", "hessian", "rnn", "linalg",
                 "first_call")
MLP_SIZES = [(784, 512), (512, 512), (512, 10)]
BATCH, LR = 128, 0.01
CFG = {"sample_s": 0.05, "torch_compile": True}
ERRORS: list = []  # rows for candidates that failed


# --- frameworks ------------------------------------------------------------------------------


class FW:
    """One framework: its module(s), version and how to wait for a result."""

    def __init__(self, name, module, version, sync, threads):
        self.name, self.m, self.version, self.sync, self.threads = (
            name, module, version, sync, threads)


def _np_threads():
    n = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    return int(n) if n else os.cpu_count()


def _load(name):
    if name == "numpy":
        return FW("numpy", np, np.__version__, lambda r: r, _np_threads())
    if name == "funcgrad":
        import funcgrad as fg

        def sync(r):
            leaves = fg.tree.leaves(r) if not isinstance(r, fg.Tensor) else [r]
            if leaves:
                np.asarray(leaves[0])
            return r
        return FW("funcgrad", fg, fg.__version__, sync, None)
    try:
        module = __import__(name)
    except ImportError:
        return None
    if name == "torch":
        return FW("torch", module, module.__version__, lambda r: r, module.get_num_threads())
    if name == "jax":
        module.config.update("jax_enable_x64", False)
        return FW("jax", module, module.__version__, module.block_until_ready, os.cpu_count())
    raise ValueError(f"unknown framework {name!r}; choose from {', '.join(ALL_FRAMEWORKS)}")


# --- data (same as bench_anchors.py) -----------------------------------------------------------


def _rng():
    return np.random.default_rng(0)


def mlp_init():
    g = _rng()
    p = {}
    for i, (fi, fo) in enumerate(MLP_SIZES, 1):
        p[f"W{i}"] = (g.standard_normal((fi, fo)) * np.sqrt(2.0 / fi)).astype(np.float32)
        p[f"b{i}"] = np.zeros((fo,), np.float32)
    x = g.standard_normal((BATCH, 784)).astype(np.float32)
    y = g.integers(0, 10, BATCH)
    return p, x, y, np.eye(10, dtype=np.float32)[y]


def mlp_train_flops():
    s = sum(a * b for a, b in MLP_SIZES)
    return 2.0 * BATCH * (2 * s + sum(a * b for a, b in MLP_SIZES[1:]))


def jl_mlp_loss(jnp):
    def loss(p, x, y1h):
        h = jnp.maximum(x @ p["W1"] + p["b1"], 0.0)
        h = jnp.maximum(h @ p["W2"] + p["b2"], 0.0)
        z = h @ p["W3"] + p["b3"]
        m = jnp.max(z, axis=-1, keepdims=True)
        logz = m + jnp.log(jnp.sum(jnp.exp(z - m), axis=-1, keepdims=True))
        return -jnp.mean(jnp.sum(y1h * (z - logz), axis=-1))
    return loss


def torch_mlp_loss(torch):
    def loss(p, x, y1h):
        h = torch.relu(x @ p["W1"] + p["b1"])
        h = torch.relu(h @ p["W2"] + p["b2"])
        z = h @ p["W3"] + p["b3"]
        return -(y1h * torch.log_softmax(z, -1)).sum(-1).mean()
    return loss


def hessian_data(n=256):
    g = _rng()
    return ((g.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32),
            g.standard_normal(n).astype(np.float32))


def rnn_data(steps=1000, hid=128):
    g = _rng()
    return ((g.standard_normal((hid, hid)) / np.sqrt(hid)).astype(np.float32),
            g.standard_normal((steps, hid)).astype(np.float32), np.zeros(hid, np.float32))


def _jnp(fw):
    return __import__("jax.numpy").numpy if fw.name == "jax" else __import__(
        "funcgrad.numpy").numpy


def _to(fw, a):
    if fw.name == "numpy":
        return a
    if fw.name == "torch":
        return fw.m.from_numpy(a.copy())
    if fw.name == "jax":
        return fw.m.device_put(a)
    return fw.m.tensor(a)


# --- funcgrad diagnostics: the executable behind a jitted call ---------------------------------


def _fg_entry(jitted, args):
    entry, flat = jitted._entry(args, {})
    return entry, flat


def _fg_driver(jitted, args):
    """'local-task' or 'local-sync': the IREE driver fg.jit chose for this signature."""
    from funcgrad.lowering.runtime import runtime
    from funcgrad.transforms.jit import executable_for

    entry, _ = _fg_entry(jitted, args)
    exe = executable_for(entry.program)
    return "local-task" if exe.rt is runtime("local-task") else "local-sync"


def _fg_threads(driver):
    return os.cpu_count() if driver == "local-task" else 1


def _fg_kernel(jitted, args, feedback=None):
    """(op, sync, device_args): the compiled executable called directly on device buffers.

    ``feedback(outs, buffers) -> buffers`` threads outputs into the next call's inputs
    (the SGD step's parameters).  ``device_args`` are ``args`` rebuilt as Tensors over the
    same device buffers, for the ``jit, device inputs`` row.
    """
    import funcgrad as fg
    from funcgrad.core.tensor import Tensor, wrap_device
    from funcgrad.lowering.runtime import DeviceBuffer
    from funcgrad.transforms.jit import executable_for

    entry, flat = _fg_entry(jitted, args)
    exe = executable_for(entry.program)

    def upload(t):
        a = np.ascontiguousarray(np.asarray(t))
        return DeviceBuffer(exe.rt, exe.to_device(a), a.shape, a.dtype)

    consts = [upload(c) for c in entry.consts]
    state = {"bufs": [upload(t) for t in flat]}

    def op():
        outs = exe(consts + state["bufs"])
        if feedback is not None:
            state["bufs"] = feedback(outs, state["bufs"])
        return outs

    leaves, tree = fg.tree.flatten(args)
    it = iter([upload(t) for t in flat])
    dev_leaves = [wrap_device(next(it), getattr(leaf, "_weak", False))
                  if isinstance(leaf, Tensor) else leaf for leaf in leaves]
    return op, (lambda outs: outs[0].to_numpy()), fg.tree.unflatten(tree, dev_leaves)


# --- measuring ---------------------------------------------------------------------------------


class Cand:
    """A candidate row: label, framework, mode, threads, ``op`` and its sync."""

    def __init__(self, framework, mode, op, sync, threads, note=""):
        self.framework, self.mode, self.op, self.sync = framework, mode, op, sync
        self.threads, self.note = threads, note
        self.first_call_s = None

    @property
    def key(self):
        return f"{self.framework} | {self.mode}"


def _prepare(c: Cand):
    """First call (timed: compile for jit), a warm-up, then a loop sized to ~sample_s."""
    start = time.perf_counter()
    c.sync(c.op())
    if c.first_call_s is None:
        c.first_call_s = time.perf_counter() - start
    start = time.perf_counter()
    c.sync(c.op())
    one = max(time.perf_counter() - start, 1e-7)
    inner = max(1, min(10_000, round(CFG["sample_s"] / one)))
    return _timed_loop(c.op, c.sync, inner)


def measure(workload, variant, cands, passes, *, ref, target=None, rate=None):
    """Time ``cands`` interleaved; rows with ratios against the ``ref`` candidate key.

    ``target``: (candidate key, max time ratio, text) judged on that row.
    ``rate``: (work, unit): rate = work / seconds.
    """
    runs, ok = {}, []
    for c in cands:
        try:
            runs[c.key] = _prepare(c)
            ok.append(c)
        except Exception as err:  # keep going: report the failure as a row
            print(f"# {workload}: {c.key} failed: {type(err).__name__}: {str(err)[:300]}",
                  file=sys.stderr)
            ERRORS.append({"workload": workload, "variant": variant, "framework": c.framework,
                           "mode": c.mode, "error": f"{type(err).__name__}: {str(err)[:300]}"})
    stats = _interleaved(runs, passes, warmup=0)
    base = stats.get(ref, {}).get("median_s")
    rows = []
    for c in ok:
        s = stats[c.key]
        row = {"workload": workload, "variant": variant, "framework": c.framework,
               "mode": c.mode, "threads": c.threads,
               **{k: round(v, 9) if isinstance(v, float) else v for k, v in s.items()},
               "first_call_s": round(c.first_call_s, 4), "ref": ref}
        if rate:
            row["rate"] = rate[0] / s["median_s"]
            row["rate_unit"] = rate[1]
        if base:
            row["x_ref"] = round(s["median_s"] / base, 3)
        if c.note:
            row["note"] = c.note
        if target and c.key == target[0] and base:
            row["target"] = target[2]
            row["met"] = s["median_s"] / base <= target[1]
        rows.append(row)
    return rows


# --- EAGER transformation baselines ------------------------------------------------------------


def _pe_cands(fws, jit):
    p_np, x_np, _, y1h_np = mlp_init()
    return [c for fw in fws for c in _pe_one(fw, jit, p_np, x_np, y1h_np)]


def _pe_one(fw, jit, p_np, x_np, y1h_np):
    cands = []
    if fw.name == "numpy" and not jit:
        p, x, y1h = p_np, x_np, y1h_np

        def pe():
            a1 = x @ p["W1"] + p["b1"]; h1 = np.maximum(a1, 0)  # noqa: E702
            a2 = h1 @ p["W2"] + p["b2"]; h2 = np.maximum(a2, 0)  # noqa: E702
            z = h2 @ p["W3"] + p["b3"]
            z = z - z.max(-1, keepdims=True)
            e = np.exp(z)
            dz = e / e.sum(-1, keepdims=True) - y1h
            d2 = (dz @ p["W3"].T) * (a2 > 0)
            d1 = (d2 @ p["W2"].T) * (a1 > 0)
            return {"W3": h2[:, :, None] * dz[:, None, :], "b3": dz,
                    "W2": h1[:, :, None] * d2[:, None, :], "b2": d2,
                    "W1": x[:, :, None] * d1[:, None, :], "b1": d1}
        cands.append(Cand("numpy", "hand-batched", pe, fw.sync, fw.threads))
    elif fw.name == "torch":
        from torch.func import grad, vmap
        torch = fw.m
        loss = torch_mlp_loss(torch)
        P = {k: _to(fw, v) for k, v in p_np.items()}
        X, Y = _to(fw, x_np), _to(fw, y1h_np)
        f = vmap(grad(lambda p, x, y: loss(p, x[None], y[None])), in_dims=(None, 0, 0))
        cands.append(Cand("torch", "func.vmap(grad)", lambda: f(P, X, Y), fw.sync,
                          fw.threads))
    elif fw.name == "jax":
        jnp = _jnp(fw)
        loss = jl_mlp_loss(jnp)
        P = {k: _to(fw, v) for k, v in p_np.items()}
        X, Y = _to(fw, x_np), _to(fw, y1h_np)
        f = fw.m.jit(fw.m.vmap(fw.m.grad(lambda p, x, y: loss(p, x[None], y[None])),
                               in_axes=(None, 0, 0)))
        cands.append(Cand("jax", "jit(vmap(grad))", lambda: f(P, X, Y), fw.sync,
                          fw.threads))
    elif fw.name == "funcgrad":
        fg = fw.m
        loss = jl_mlp_loss(_jnp(fw))
        P = {k: _to(fw, v) for k, v in p_np.items()}
        X, Y = _to(fw, x_np), _to(fw, y1h_np)
        vg = fg.vmap(fg.grad(lambda p, x, y: loss(p, x[None], y[None])),
                     in_axes=(None, 0, 0))
        if not jit:
            cands.append(Cand("funcgrad", "eager vmap(grad)", lambda: vg(P, X, Y),
                              fw.sync, _np_threads(), "NumPy backend, BLAS threads"))
        else:
            cands += _fg_jit_cands(fg.jit(vg), (P, X, Y), fw.sync, "jit(vmap(grad))")
    return cands


def _fg_jit_cands(jitted, args, sync, mode, feedback=None, fg_feedback=None):
    """funcgrad's jit row plus its two diagnostic rows (device inputs, kernel)."""
    state = {"args": args}

    def call(a):
        out = jitted(*a)
        if fg_feedback is not None:
            a = fg_feedback(out, a)
        return out, a

    def user():
        out, state["args"] = call(state["args"])
        return out
    try:
        start = time.perf_counter()
        sync(jitted(*args))  # compile first: the rows below need the executable
        compile_call = time.perf_counter() - start
    except Exception as err:
        print(f"# funcgrad {mode} failed: {type(err).__name__}: {str(err)[:300]}",
              file=sys.stderr)
        ERRORS.append({"workload": "?", "framework": "funcgrad", "mode": mode,
                       "error": f"{type(err).__name__}: {str(err)[:300]}"})
        return []
    driver = _fg_driver(jitted, args)
    thr = _fg_threads(driver)
    kop, ksync, dev_args = _fg_kernel(jitted, args, feedback)
    dstate = {"args": dev_args}

    def dev():
        out, dstate["args"] = call(dstate["args"])
        return out
    cands = [Cand("funcgrad", mode, user, sync, thr, driver),
             Cand("funcgrad", f"{mode}, device inputs", dev, sync, thr, driver),
             Cand("funcgrad", "kernel (executable_for)", kop, ksync, thr, driver)]
    cands[0].first_call_s = compile_call  # trace + lower + compile + run
    return cands


def eager_pe_grads(fws, passes):
    return measure("eager_pe_grads", "MLP 784-512-512-10 b128", _pe_cands(fws, jit=False),
                   passes, ref="torch | func.vmap(grad)")


def _hessian_cands(fws, jit):
    W_np, x_np = hessian_data()
    return [c for fw in fws for c in _hessian_one(fw, jit, W_np, x_np)]


def _hessian_one(fw, jit, W_np, x_np):
    cands = []
    if fw.name == "numpy":
        def h():
            t = np.tanh(W_np @ x_np)
            return (W_np.T * (-2.0 * t * (1 - t * t))) @ W_np
        cands.append(Cand("numpy", "closed form", h, fw.sync, fw.threads,
                          "W^T diag(-2t(1-t^2)) W, no autodiff"))
    elif fw.name == "torch":
        from torch.func import hessian
        W, X = _to(fw, W_np), _to(fw, x_np)
        hf = hessian(lambda x, w: fw.m.tanh(w @ x).sum())
        cands.append(Cand("torch", "func.hessian", lambda: hf(X, W), fw.sync, fw.threads))
    elif fw.name == "jax":
        jnp = _jnp(fw)
        W, X = _to(fw, W_np), _to(fw, x_np)
        hf = fw.m.jit(fw.m.hessian(lambda x, w: jnp.sum(jnp.tanh(w @ x))))
        cands.append(Cand("jax", "jit(hessian)", lambda: hf(X, W), fw.sync, fw.threads))
    elif fw.name == "funcgrad":
        jnp, fg = _jnp(fw), fw.m
        W, X = _to(fw, W_np), _to(fw, x_np)
        hf = fg.hessian(lambda x, w: jnp.sum(jnp.tanh(w @ x)))
        if not jit:
            cands.append(Cand("funcgrad", "eager hessian", lambda: hf(X, W), fw.sync,
                              _np_threads(), "NumPy backend"))
        else:
            cands += _fg_jit_cands(fg.jit(hf), (X, W), fw.sync, "jit(hessian)")
    return cands


def eager_hessian(fws, passes):
    return measure("eager_hessian", "sum(tanh(Wx)) n=256", _hessian_cands(fws, jit=False),
                   passes, ref="jax | jit(hessian)")


def _rnn_cands(fws, jit):
    W_np, xs_np, h0_np = rnn_data()
    return [c for fw in fws for c in _rnn_one(fw, jit, W_np, xs_np, h0_np)]


def _rnn_one(fw, jit, W_np, xs_np, h0_np):
    cands = []
    if fw.name in ("numpy", "torch") and (not jit or fw.name == "numpy"):
        ns = np if fw.name == "numpy" else fw.m
        W, xs, h0 = _to(fw, W_np), _to(fw, xs_np), _to(fw, h0_np)

        def loop(ns=ns, W=W, xs=xs, h0=h0):
            h = h0
            for t in range(xs.shape[0]):
                h = ns.tanh(W @ h + xs[t])
            return h
        cands.append(Cand(fw.name, "python loop", loop, fw.sync, fw.threads))
    elif fw.name in ("jax", "funcgrad"):
        jnp = _jnp(fw)
        W, xs, h0 = _to(fw, W_np), _to(fw, xs_np), _to(fw, h0_np)
        scan = fw.m.lax.scan if fw.name == "jax" else fw.m.scan

        def run(W, xs, h0, scan=scan, jnp=jnp):
            def body(h, x):
                return jnp.tanh(W @ h + x), None
            return scan(body, h0, xs)[0]
        if fw.name == "jax":
            jr = fw.m.jit(run)
            cands.append(Cand("jax", "jit(scan)", lambda: jr(W, xs, h0), fw.sync,
                              fw.threads))
        elif not jit:
            cands.append(Cand("funcgrad", "eager scan", lambda: run(W, xs, h0), fw.sync,
                              _np_threads(), "Python loop over steps (_scan_python)"))
        else:
            cands += _fg_jit_cands(fw.m.jit(run), (W, xs, h0), fw.sync, "jit(scan)")
    return cands


def eager_rnn(fws, passes):
    return measure("eager_rnn", "1000 steps h=128", _rnn_cands(fws, jit=False), passes,
                   ref="jax | jit(scan)", rate=(2.0 * 128 * 128 * 1000 / 1e9, "GFLOP/s"))


# --- JIT ---------------------------------------------------------------------------------------


def gemm(fws, passes, n=1024):
    g = _rng()
    a_np = g.standard_normal((n, n), dtype=np.float32)
    b_np = g.standard_normal((n, n), dtype=np.float32)
    cands = [c for fw in fws for c in _gemm_one(fw, a_np, b_np)]
    return measure("gemm", f"{n}^3 f32", cands, passes, ref="jax | jit",
                   target=("funcgrad | jit", 1 / 0.95, ">= 0.95x JAX GFLOP/s"),
                   rate=(2.0 * n ** 3 / 1e9, "GFLOP/s"))


def _gemm_one(fw, a_np, b_np):
    cands = []
    A, B = _to(fw, a_np), _to(fw, b_np)
    if fw.name == "numpy":
        cands.append(Cand("numpy", "eager", lambda A=A, B=B: A @ B, fw.sync, fw.threads,
                          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}"))
    elif fw.name == "torch":
        cands.append(Cand("torch", "eager", lambda A=A, B=B: fw.m.mm(A, B), fw.sync,
                          fw.threads))
    elif fw.name == "jax":
        mm = fw.m.jit(lambda x, y: x @ y)
        cands.append(Cand("jax", "jit", lambda A=A, B=B, mm=mm: mm(A, B), fw.sync,
                          fw.threads))
    elif fw.name == "funcgrad":
        cands += _fg_jit_cands(fw.m.jit(lambda x, y: x @ y), (A, B), fw.sync, "jit")
    return cands


def elementwise(fws, passes, n=16 * 1024 * 1024):
    x_np = _rng().uniform(-3, 3, n).astype(np.float32)
    cands = [c for fw in fws for c in _elementwise_one(fw, x_np)]
    return measure("elementwise", f"{n // 2 ** 20}M f32", cands, passes, ref="jax | jit",
                   target=("funcgrad | jit", 1.0, "<= 1.0x JAX"),
                   rate=(8.0 * n / 1e9, "GB/s (8 B/elem)"))


def _elementwise_one(fw, x_np):
    cands = []
    X = _to(fw, x_np)
    if fw.name == "numpy":
        cands.append(Cand("numpy", "eager", lambda X=X: np.tanh(X) * X + 0.5 * X ** 2
                          - np.exp(-X), fw.sync, 1))
    elif fw.name == "torch":
        if CFG["torch_compile"]:
            torch = fw.m
            cf = torch.compile(lambda x: torch.tanh(x) * x + 0.5 * x ** 2 - torch.exp(-x))
            cands.append(Cand("torch", "compile", lambda X=X, cf=cf: cf(X), fw.sync,
                              fw.threads))
    else:
        jnp = _jnp(fw)
        f = lambda x, jnp=jnp: jnp.tanh(x) * x + 0.5 * x ** 2 - jnp.exp(-x)  # noqa: E731
        if fw.name == "jax":
            jf = fw.m.jit(f)
            cands.append(Cand("jax", "jit", lambda X=X, jf=jf: jf(X), fw.sync, fw.threads))
        else:
            cands += _fg_jit_cands(fw.m.jit(f), (X,), fw.sync, "jit")
    return cands


def _sgd(vg):
    def upd(p, x, y):
        loss, g = vg(p, x, y)
        return loss, {k: p[k] - LR * g[k] for k in p}
    return upd


def mlp_step(fws, passes):
    cands = [c for fw in fws for c in _mlp_one(fw) if fw.name != "numpy"]
    return measure("mlp_step", "784-512-512-10 b128", cands, passes, ref="jax | jit",
                   target=("funcgrad | jit", 1.0, "<= 1.0x JAX"),
                   rate=(mlp_train_flops() / 1e9, "GFLOP/s"))


def _mlp_one(fw):
    p_np, x_np, y_np, y1h_np = mlp_init()
    cands = []
    if fw.name != "numpy":  # (no autodiff in NumPy)
        if fw.name == "torch":
            torch = fw.m
            nn, F = torch.nn, torch.nn.functional
            x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

            def build():
                model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                                      nn.ReLU(), nn.Linear(512, 10))
                with torch.no_grad():
                    for i, li in enumerate([0, 2, 4], 1):
                        model[li].weight.copy_(torch.from_numpy(p_np[f"W{i}"].T.copy()))
                        model[li].bias.copy_(torch.from_numpy(p_np[f"b{i}"]))
                return model, torch.optim.SGD(model.parameters(), lr=LR)

            def make_step(loss_fn, model, opt):
                def step():
                    opt.zero_grad(set_to_none=True)
                    loss = loss_fn(x, y)
                    loss.backward()
                    opt.step()
                    return loss
                return step
            model, opt = build()
            cands.append(Cand("torch", "eager", make_step(lambda a, b: F.cross_entropy(
                model(a), b), model, opt), fw.sync, fw.threads))
            if CFG["torch_compile"]:
                cm, copt = build()
                closs = torch.compile(lambda a, b: F.cross_entropy(cm(a), b))
                cands.append(Cand("torch", "compile", make_step(closs, cm, copt), fw.sync,
                                  fw.threads, "compiled fwd+loss (+AOT bwd), eager SGD"))
            return cands
        jnp = _jnp(fw)
        upd = _sgd(fw.m.value_and_grad(jl_mlp_loss(jnp)))
        P = {k: _to(fw, v) for k, v in p_np.items()}
        X, Y = _to(fw, x_np), _to(fw, y1h_np)
        if fw.name == "jax":
            jstep = fw.m.jit(upd)
            st = {"p": P}

            def step(jstep=jstep, st=st):
                loss, st["p"] = jstep(st["p"], X, Y)
                return loss, st["p"]
            cands.append(Cand("jax", "jit", step, fw.sync, fw.threads))
        else:
            # the executable's inputs: consts, then the flattened (p, x, y); outputs: loss, p
            n_p = len(P)

            def kernel_feedback(outs, bufs):
                return list(outs[1:1 + n_p]) + bufs[n_p:]
            cands += _fg_jit_cands(fw.m.jit(upd), (P, X, Y), fw.sync, "jit",
                                   feedback=kernel_feedback,
                                   fg_feedback=lambda out, a: (out[1], a[1], a[2]))
    return cands


def pe_grads(fws, passes):
    return measure("pe_grads", "MLP 784-512-512-10 b128",
                   [c for c in _pe_cands(fws, jit=True)], passes, ref="torch | func.vmap(grad)",
                   target=("funcgrad | jit(vmap(grad))", 0.85, "<= 0.85x torch.func"))


def hessian(fws, passes):
    return measure("hessian", "sum(tanh(Wx)) n=256", _hessian_cands(fws, jit=True), passes,
                   ref="jax | jit(hessian)",
                   target=("funcgrad | jit(hessian)", 1.0, "<= 1.0x JAX"))


def rnn(fws, passes):
    return measure("rnn", "1000 steps h=128", _rnn_cands(fws, jit=True), passes,
                   ref="jax | jit(scan)", target=("funcgrad | jit(scan)", 1.0, "<= 1.0x JAX"),
                   rate=(2.0 * 128 * 128 * 1000 / 1e9, "GFLOP/s"))


# --- first call in a new process -----------------------------------------------------------------


def linalg(fws, passes, n=128):
    """Decompositions under jit (no target): funcgrad lowers them as column algorithms in
    loops, XLA calls LAPACK-like kernels; NumPy calls LAPACK."""
    g = _rng()
    x = g.standard_normal((n, n)).astype(np.float32)
    a_np = (x @ x.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)
    b_np = g.standard_normal((n, 4)).astype(np.float32)
    rows = []
    for name in ("cholesky", "qr", "solve"):
        cands = [c for fw in fws for c in _linalg_one(fw, name, a_np, b_np)]
        rows += measure("linalg", f"{name} {n}x{n} f32", cands, passes, ref="jax | jit")
    return rows


def _linalg_one(fw, name, a_np, b_np):
    A, B = _to(fw, a_np), _to(fw, b_np)
    if fw.name == "torch":
        return []
    la = np.linalg if fw.name == "numpy" else _jnp(fw).linalg
    f = {"cholesky": lambda a, b: la.cholesky(a), "qr": lambda a, b: la.qr(a),
         "solve": lambda a, b: la.solve(a, b)}[name]
    if fw.name == "numpy":
        return [Cand("numpy", "eager", lambda A=A, B=B: f(A, B), fw.sync, fw.threads)]
    if fw.name == "jax":
        jf = fw.m.jit(f)
        return [Cand("jax", "jit", lambda A=A, B=B, jf=jf: jf(A, B), fw.sync, fw.threads)]
    return _fg_jit_cands(fw.m.jit(f), (A, B), fw.sync, "jit")


def _child_first_call(name):
    """Runs in a new interpreter: import, build the MLP step, time its first two calls."""
    t0 = time.perf_counter()
    fw = _load(name)
    t_import = time.perf_counter() - t0
    p_np, x_np, _, y1h_np = mlp_init()
    jnp = _jnp(fw)
    P = {k: _to(fw, v) for k, v in p_np.items()}
    X, Y = _to(fw, x_np), _to(fw, y1h_np)
    fw.sync((P, X, Y))
    jstep = fw.m.jit(_sgd(fw.m.value_and_grad(jl_mlp_loss(jnp))))
    t0 = time.perf_counter()
    loss, P = jstep(P, X, Y)
    fw.sync((loss, P))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    fw.sync(jstep(P, X, Y))
    second = time.perf_counter() - t0
    print(json.dumps({"import_s": t_import, "first_call_s": first, "second_call_s": second}))


def _spawn(name, cache_dir=None):
    env = dict(os.environ)
    if cache_dir is not None:
        env["FUNCGRAD_CACHE_DIR"] = cache_dir
        env["FUNCGRAD_LOG_COMPILES"] = "1"
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child-first-call",
                          name], capture_output=True, text=True, env=env, timeout=600)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        raise RuntimeError(f"child {name} failed: {out.stderr[-500:]}")
    res = json.loads(lines[-1])
    res["compile_s"] = sum(float(m) for m in re.findall(r"compiled .* in ([0-9.]+) s",
                                                         out.stderr))
    return res


def first_call(fws, passes):
    """Cold (fresh cache dir) and warm (same dir, new process) first calls, interleaved."""
    names = [fw.name for fw in fws if fw.name in ("funcgrad", "jax")]
    samples = {}
    for _ in range(passes):
        for name in names:
            try:
                if name == "funcgrad":
                    d = tempfile.mkdtemp(prefix="fg_cache_")
                    try:
                        cold, warm = _spawn(name, d), _spawn(name, d)
                    finally:
                        shutil.rmtree(d, ignore_errors=True)
                    samples.setdefault("funcgrad | jit, cold cache", []).append(cold)
                    samples.setdefault("funcgrad | jit, disk cache", []).append(warm)
                else:
                    samples.setdefault("jax | jit (no persistent cache)", []).append(
                        _spawn(name))
            except Exception as err:
                print(f"# first_call: {name}: {err}", file=sys.stderr)
    rows = []
    import statistics
    targets = {"funcgrad | jit, cold cache": (1.0, "<= 1 s"),
               "funcgrad | jit, disk cache": (0.1, "<= 100 ms")}
    ref = statistics.median(s["first_call_s"] for s in samples.get(
        "jax | jit (no persistent cache)", [{"first_call_s": float("nan")}]))
    for key, ss in samples.items():
        fwname, mode = key.split(" | ")
        ts = sorted(s["first_call_s"] for s in ss)
        med = statistics.median(ts)
        row = {"workload": "first_call", "variant": "MLP step, new process",
               "framework": fwname, "mode": mode,
               "threads": os.cpu_count() if fwname == "funcgrad" else next(
                   fw.threads for fw in fws if fw.name == fwname),
               "median_s": round(med, 4), "min_s": round(ts[0], 4), "max_s": round(ts[-1], 4),
               "n": len(ts), "ref": "jax | jit (no persistent cache)",
               "import_s": round(statistics.median(s["import_s"] for s in ss), 3),
               "second_call_s": round(statistics.median(s["second_call_s"] for s in ss), 5),
               "note": "import excluded"}
        if fwname == "funcgrad":
            row["compile_s"] = round(statistics.median(s["compile_s"] for s in ss), 3)
            row["note"] += f"; IREE compile {row['compile_s']:.3f} s of it"
        if ref == ref:
            row["x_ref"] = round(med / ref, 3)
        if key in targets:
            row["target"] = targets[key][1]
            row["met"] = med <= targets[key][0]
        rows.append(row)
    return rows


# --- report ------------------------------------------------------------------------------------


def _fmt_s(t):
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def print_table(rows):
    print("| workload | framework | mode | threads | median | min..max | rate | x ref "
          "| 1st call | target |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            err = " ".join(r["error"].split())[:160]
            print(f"| {r['workload']} | {r['framework']} | {r['mode']} | | ERROR: {err} "
                  "| | | | | |")
            continue
        rate = f"{r['rate']:.3g} {r['rate_unit']}" if "rate" in r else ""
        xref = f"{r['x_ref']:.2f}" if "x_ref" in r else ""
        if "note" in r and r["mode"].startswith(("jit", "kernel")):
            thr = f"{r['threads']} ({r['note']})"
        else:
            thr = str(r["threads"])
        first = _fmt_s(r["first_call_s"]) if "first_call_s" in r else ""
        if r["workload"] == "first_call":
            first = f"import {r['import_s']:.2f} s; 2nd call {_fmt_s(r['second_call_s'])}"
            if "compile_s" in r:
                first += f"; compile {r['compile_s']:.2f} s"
        verdict = ""
        if "target" in r:
            verdict = f"{r['target']}: {'met' if r['met'] else 'MISSED'}"
        label = f"{r['workload']} {r.get('variant', '')}".strip()
        print(f"| {label} | {r['framework']} | {r['mode']} | {thr} | "
              f"{_fmt_s(r['median_s'])} | {_fmt_s(r['min_s'])}..{_fmt_s(r['max_s'])} | {rate} "
              f"| {xref} | {first} | {verdict} |")


WORKLOADS = {"eager_pe_grads": eager_pe_grads, "eager_hessian": eager_hessian,
             "eager_rnn": eager_rnn, "gemm": gemm, "elementwise": elementwise,
             "mlp_step": mlp_step, "pe_grads": pe_grads, "hessian": hessian, "rnn": rnn,
             "linalg": linalg, "first_call": first_call}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frameworks", default=",".join(ALL_FRAMEWORKS),
                        help="comma-separated subset of numpy,funcgrad,torch,jax "
                             "(missing optional ones are skipped)")
    parser.add_argument("--workloads", default=",".join(EAGER_WORKLOADS + JIT_WORKLOADS),
                        help=f"comma-separated subset of {', '.join(WORKLOADS)}")
    parser.add_argument("--passes", type=int, default=9, help="interleaved repeats (median)")
    parser.add_argument("--first-call-passes", type=int, default=3,
                        help="new-process pairs (cold + disk cache) for first_call")
    parser.add_argument("--sample-ms", type=float, default=50.0,
                        help="target length of one timed sample (calls are batched)")
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--keep-cache", action="store_true",
                        help="use the configured FUNCGRAD_CACHE_DIR instead of a fresh one")
    parser.add_argument("--quick", action="store_true", help="2 passes, short samples")
    parser.add_argument("--json", help="append one JSON line per row to this file")
    parser.add_argument("--child-first-call", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_first_call:
        _child_first_call(args.child_first_call)
        return 0
    if args.quick:
        args.passes, args.sample_ms, args.first_call_passes = 2, 10.0, 1
    CFG.update(sample_s=args.sample_ms / 1e3, torch_compile=not args.no_torch_compile)
    tmp_cache = None
    if not args.keep_cache:
        tmp_cache = tempfile.mkdtemp(prefix="fg_bench_cache_")
        os.environ["FUNCGRAD_CACHE_DIR"] = tmp_cache

    fws, skipped = [], []
    for name in filter(None, args.frameworks.split(",")):
        fw = _load(name.strip())
        (fws if fw is not None else skipped).append(fw or name)
    print(f"# funcgrad transformation/jit benchmarks: {machine_notes(fws)}")
    print(f"# load average before (1, 5, 15 min): "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if skipped:
        print(f"# not installed, skipped: {', '.join(skipped)}")
    steal0, wall0 = _steal_seconds(), time.perf_counter()
    rows, errors = [], ERRORS
    try:
        for w in filter(None, args.workloads.split(",")):
            if w not in WORKLOADS:
                parser.error(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")
            t0 = time.perf_counter()
            if w == "first_call":
                new = first_call(fws, args.first_call_passes)
            else:
                new = WORKLOADS[w](fws, args.passes)
            rows += new
            for e in ERRORS:
                e["workload"] = w if e["workload"] == "?" else e["workload"]
            print(f"# {w}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    finally:
        if tmp_cache:
            shutil.rmtree(tmp_cache, ignore_errors=True)
    steal1, wall1 = _steal_seconds(), time.perf_counter()
    print_table(rows + errors)
    print(f"# load average after (1, 5, 15 min): "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    finish(rows, args.json, (steal0, wall0), (steal1, wall1),
           f"medians of {args.passes} interleaved passes "
           f"(first_call: {args.first_call_passes} new-process pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
