"""Adapter that lets /work/shared/perf/bench_anchors.py drive funcgrad through its JAX-like API.

Run from the repository root (the module is found through ``PYTHONPATH=.``)::

    PYTHONPATH=. .venv/bin/python /work/shared/perf/bench_anchors.py \\
        --frameworks funcgrad=benchmarks.anchor_shim --workloads dispatch,elementwise

``numpy`` is ``funcgrad.numpy``.  The transformations are taken from ``funcgrad`` where they
exist and are ``None`` otherwise (the yardstick then records an error row for that workload).

``jit`` is ``funcgrad.jit`` when funcgrad has one (the MLIR/IREE work, being built now).
Where it does not, or with ``FUNCGRAD_SHIM_JIT=identity`` in the environment, ``jit`` is the
IDENTITY: nothing is compiled, and every row the yardstick labels ``jit`` for this shim is
an *eager* funcgrad time.  The shim says which on stderr when imported, and
``JIT_IS_IDENTITY`` tells scripts.
"""

from __future__ import annotations

import os
import sys

import funcgrad
import funcgrad.numpy as numpy  # noqa: F401  (the yardstick reads fw.numpy)

__version__ = funcgrad.__version__

JIT_IS_IDENTITY = (not hasattr(funcgrad, "jit")
                   or os.environ.get("FUNCGRAD_SHIM_JIT", "") == "identity")

if JIT_IS_IDENTITY:

    def jit(fun, *args, **kwargs):
        """Identity stand-in for ``fg.jit``: the function runs eagerly, nothing is compiled."""
        return fun

    print("anchor_shim: jit is the IDENTITY here (funcgrad.jit missing or FUNCGRAD_SHIM_JIT="
          "identity), so rows labelled 'jit' for funcgrad are EAGER timings", file=sys.stderr)
else:
    jit = funcgrad.jit
    print("anchor_shim: jit is funcgrad.jit (compiled)", file=sys.stderr)

grad = getattr(funcgrad, "grad", None)
value_and_grad = getattr(funcgrad, "value_and_grad", None)
vmap = getattr(funcgrad, "vmap", None)
hessian = getattr(funcgrad, "hessian", None)
scan = getattr(funcgrad, "scan", None)
clear_caches = getattr(funcgrad, "clear_caches", None)


def block_until_ready(x):
    """Eager funcgrad computes synchronously: there is nothing to wait for."""
    wait = getattr(funcgrad, "block_until_ready", None)
    return x if wait is None else wait(x)
