"""jit: trace once per signature, lower to MLIR, compile with IREE, run compiled.

``jit(f)(*args)`` traces ``f`` to an IR the first time it sees an input signature (tree
structure, each leaf's shape/dtype/weak type, static arguments' values), caches the IR
and its compiled executable, and afterwards only runs the executable.  Under another
transformation the traced program is bound as a ``jit_call`` primitive, whose JVP,
batching, partial-evaluation and transpose rules transform the IR and bind ``jit_call``
again, so ``grad(jit(f))``, ``vmap(jit(f))`` and ``jit(grad(f))`` all run compiled code.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import os
import re
import threading
import types
import weakref

import numpy as np
import optree

from funcgrad.core import dtypes
from funcgrad.core import interpreter as _interp
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.devices import CPU
from funcgrad.core.ir import IR, Literal, eval_ir, live_equations, pretty_print, subprograms
from funcgrad.core.primitive import Primitive, UndefinedPrimal
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims import structural
from funcgrad.core.prims.elementwise import at_default_width
from funcgrad.core.tensor import Tensor, aligned_copy, device_buffer, wrap_device
from funcgrad.lowering.runtime import DeviceBuffer, importable
from funcgrad.transforms.ad import as_tensor, tree_flatten, tree_unflatten, zeros_for
from funcgrad.transforms.ir_transforms import batch_ir, jvp_ir, partial_eval_ir, transpose_ir
from funcgrad.transforms.tracing import check_callable, hoist_consts, trace_to_ir

logger = logging.getLogger("funcgrad.jit")
jit_p = Primitive("jit_call", multiple_results=True)
jit_p.takes_tensors = True

# functions with an operation heavier than this run on all cores (local-task); below it the
# thread wake-up of local-task costs more than it saves (DESIGN.md: 8-28 us vs 1.7 us)
_PARALLEL_WORK = 2_000_000


# programs with a matmul of at least _data_tiling_work() multiply-adds are compiled with
# data tiling (operands packed into the microkernel's tile layout); below it the packs cost
# more than the faster kernel saves.  Where that lies depends on the vector width.
# Measured (one matmul, ratio of times without/with):
# - AVX-512: 1024^3 1.41, 1024x1024x512 1.32, 2048x128x2048 1.15 (each 2^29 or more); 768^3
#   1.00, 512^3 0.95, 128x784x512 0.94, 2048x256x512 0.60, 2048x2048x64 0.57; the MLP step
#   of the benchmarks (largest 128x784x512) 2.5 -> 2.2 ms without
# - AVX2 only (Zen 3): IREE's matmuls without data tiling are far slower: 1024^3 2.55,
#   1024x1024x512 1.7, 768^3 1.5, 512^3 1.7, 128x784x512 1.2, 2048x256x512 ~1.0; the MLP
#   step 7.0-7.6 -> 6.4-6.7 ms with it (iree-benchmark-module and paired runs)
@functools.cache
def _data_tiling_work() -> int:
    from funcgrad.lowering import compiler

    return 1 << 29 if compiler.cpu_has_avx512() else 1 << 25


class DonatedBufferError(RuntimeError):
    """A tensor donated to a jit call was used again."""


class _Donated:
    """Stands in for the buffer of a donated tensor: its shape and dtype stay readable
    (as JAX's deleted arrays), its values raise."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, shape, dtype

    def to_numpy(self):
        raise DonatedBufferError(f"{self.name}: this tensor was donated to a jit call "
                                 "(donate_argnums) and its buffer may have been reused; "
                                 "use the call's result instead")

    eager_buffer = to_numpy


# elements a transcendental function is worth, in multiply-adds (its compiled expansion:
# float32 sin/cos/tan reduce and evaluate in float64, about 100 operations a value; exp,
# log, tanh... are float32 polynomials of 10-20); other operations count one per element.
# 1M float32 sines: 9.5 ms on one thread, 5.3 ms on two (JAX 4.1 ms)
_ELEMENT_COST = {"sin": 50, "cos": 50, "tan": 50, "atan2": 30, "exp": 10, "expm1": 10,
                 "log": 10, "log1p": 10, "tanh": 10, "logistic": 10, "erf": 10,
                 "erf_inv": 10, "pow": 20, "atan": 20, "asin": 20, "acos": 20,
                 "sinh": 20, "cosh": 20, "asinh": 20, "acosh": 20, "atanh": 20}


def _largest_step(program: IR, dots_only: bool = False) -> int:
    """The work of the heaviest single operation (elements written, times the cost of a
    transcendental function, or multiply-adds for dot_general), looking inside loop bodies
    and branches: threads only pay off when individual kernels are big, not when a loop
    runs many small ones.  ``dots_only``: the heaviest dot_general's multiply-adds (0
    without one).  A nested jit's call is no step of its own: its body's steps count."""
    return max((_step_work(eqn, dots_only) for eqn in _equations(program)
                if eqn.prim.name != "jit_call"), default=0)


def _step_work(eqn, dots_only: bool) -> int:
    """The work of one equation, not counting the programs nested in it (_largest_step)."""
    is_dot = eqn.prim.name == "dot_general"
    if dots_only and not is_dot:
        return 0
    work = sum(v.aval.size for v in eqn.outputs) * _ELEMENT_COST.get(eqn.prim.name, 1)
    if is_dot:
        (lc, _), _ = eqn.params["dimension_numbers"]
        work *= max(math.prod([eqn.inputs[0].aval.shape[a] for a in lc]), 1)
    return work


def _cpu_plan(program: IR) -> tuple[str, str]:
    """The compiler session and run-time driver for ``program`` on the CPU: data tiling
    only with a matmul big enough to repay packing its operands, all cores only with an
    operation big enough to repay waking them, aggressive fusion for float64 math."""
    heavy = _largest_step(program) > _PARALLEL_WORK
    if _fuses_aggressively(program):
        return ("cpu-fused-task", "local-task") if heavy else ("cpu-fused", "local-sync")
    if not heavy:
        return "cpu-plain", "local-sync"
    tiled = _largest_step(program, dots_only=True) >= _data_tiling_work()
    return ("cpu" if tiled else "cpu-plain-task"), "local-task"


# the functions math64 expands in float64 and complex (fmod besides the transcendental ones)
_EXPANDED_MATH = frozenset(_ELEMENT_COST) | {"rem"}


def _primitive_names(*modules) -> frozenset:
    return frozenset(v.name for m in modules for v in vars(m).values()
                     if isinstance(v, Primitive))


# What a program compiled with aggressive fusion may hold: elementwise and data-movement
# operations, reductions, and calls whose bodies hold only those.  IREE 3.13 miscompiles
# reductions fused with their consumers under the flag (a column sum feeding an
# elementwise op that feeds a total came out 4x: the sum was accumulated once per row
# tile), so such modules have their reductions' results behind barriers
# (rules.isolate_reductions); it never finished compiling a fused matvec of indices
# (indexing, matmuls and loops stay out); deep elementwise graphs are what the flag is for
_FUSIBLE = _primitive_names(ew, structural) | {
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "jit_call", "custom_jvp_call", "custom_vjp_call", "checkpoint", "stop_gradient"}


def _fuses_aggressively(program: IR) -> bool:
    """Whether ``program`` computes float64 or complex transcendental functions (deep
    graphs of elementwise operations when compiled, funcgrad.lowering.math64) and nothing
    but elementwise, data-movement and reduction operations (_FUSIBLE: no matmul, which
    lost 5-15% to aggressive fusion, compiler.FUSION_FLAG; no indexing or loop)."""
    found = False
    for eqn in _equations(program):
        if eqn.prim.name not in _FUSIBLE:
            return False
        found = found or (eqn.prim.name in _EXPANDED_MATH and any(
            v.aval.dtype.itemsize >= 8 and v.aval.dtype.kind in "fc" for v in eqn.outputs))
    return found


def _equations(program: IR):
    """The live equations of ``program`` and of the programs nested in their parameters
    (what the lowering compiles: a dead ``sin`` must not pick the session)."""
    for eqn in live_equations(program):
        yield eqn
        for sub in subprograms(eqn):
            yield from _equations(sub)


def _cpu_build(program: IR):
    """How ``program`` is built for the CPU: its compiler session, run-time driver, the
    results written into storage passed in, and the cache key of the compiled module."""
    from funcgrad.lowering import compiler
    from funcgrad.lowering.runtime import output_storage_for

    session, driver = _cpu_plan(program)
    holder = compiler.session_for(session)
    storage = output_storage_for([v.aval.strip_weak() for v in program.outputs])
    return holder, driver, storage, _cpu_cache_key(program, holder.flags, storage)


def executable_for(program: IR, device=CPU):
    """The compiled executable of ``program`` on ``device`` (built and cached on first
    use)."""
    if device != CPU:
        return _gpu_executable(program, device)
    exe = getattr(program, "_executable", None)
    if exe is not None:
        return exe
    from funcgrad.lowering import compiler, parts
    from funcgrad.lowering.runtime import Executable

    pieces = parts.plan(program, _compile_workers())
    if pieces is not None:  # compiled side by side, one iree-compile per core
        threads = [_BackgroundCompile(piece) for piece in pieces]
        for thread in threads:
            thread.done.wait()
        for thread in threads:
            if thread.error is not None:
                raise thread.error
        exe = parts.PipelineExecutable(program, pieces, [executable_for(p) for p in pieces])
        program._executable = exe
        return exe

    # keyed by the IR itself first: a disk-cache hit then needs no compiler session and
    # no MLIR (creating them is most of a warm first call)
    holder, driver, storage, ir_key = _cpu_build(program)
    vmfb = _cached_module(program, ir_key) or _compile_for_cpu(program, holder, storage, ir_key)
    exe = Executable(vmfb, [v.aval.strip_weak() for v in program.outputs], driver=driver,
                     output_storage=storage, asynchronous=compiler.ASYNC_FLAG in holder.flags)
    program._executable = exe
    return exe


def _compile_workers() -> int:
    """How many parts a large program may compile in at once (``FUNCGRAD_COMPILE_WORKERS``,
    default 1: in one piece).  Parts compile about 30% sooner on two cores, but the
    program they make runs about 7% slower (funcgrad.lowering.parts), so it is opt-in."""
    env = os.environ.get("FUNCGRAD_COMPILE_WORKERS", "").strip()
    try:
        return max(1, int(env or 1))
    except ValueError:
        raise ValueError(f"FUNCGRAD_COMPILE_WORKERS={env!r}: expected a whole number of "
                         "compiles to run at once (1 to compile in one piece)") from None


# IREE 3.13's analysis of a module's async timepoints gives up on some programs of loops
# (1 in ~150 fuzzed loop programs with mixed-dtype carries, under jit(grad)); the same
# program compiled with aggressive fusion schedules fewer dispatches and gets through
_TIMEPOINT_FAILURE = "failed to solve for timepoint coverage"


def _compile_for_cpu(program: IR, holder, storage, ir_key: str) -> bytes:
    """Lower and compile ``program`` for the CPU (``_lower_and_compile``); a program IREE
    cannot schedule (``_TIMEPOINT_FAILURE``) is compiled again with aggressive fusion, its
    reductions behind barriers as for every program compiled so (logged at INFO)."""
    from funcgrad.lowering import compiler

    try:
        return _lower_and_compile(program, holder, storage, ir_key)
    except compiler.CompileError as err:
        if _TIMEPOINT_FAILURE not in str(err) or compiler.FUSION_FLAG in holder.flags:
            raise
        logger.info("jit: IREE could not schedule %s (%s); compiling it with aggressive "
                    "fusion", getattr(program, "_name", "main"), _TIMEPOINT_FAILURE)
    fused = compiler.session_for(
        "cpu-fused-task" if compiler.ASYNC_FLAG in holder.flags else "cpu-fused")
    return _lower_and_compile(program, fused, storage, ir_key)


def _lower_and_compile(program: IR, holder, storage, ir_key: str) -> bytes:
    """Lower and compile ``program`` for the CPU, its fitting scans as single kernels
    (``funcgrad.lowering.fused_scan``); if IREE refuses a module holding such kernels, the
    program is lowered again with host loops (logged at INFO with IREE's reason)."""
    from funcgrad.lowering.compiler import CompileError, compile_module
    from funcgrad.lowering.mlir import lower_module

    name = getattr(program, "_name", "main")
    isolate = _isolates_reductions(holder.flags)
    # the session's MLIR context is built under its lock; the iree-compile subprocess runs
    # outside it, so the parts of a program (funcgrad.lowering.parts) compile side by side
    with holder.lock, holder.session.context:
        module, fused = lower_module(program, holder.session.context,
                                     output_storage=storage, fuse_scans=True,
                                     isolate_reductions=isolate)
    if not fused:
        return compile_module(module, holder, name, ir_key)
    try:
        return compile_module(module, holder, name, ir_key, retry=False)
    except CompileError as err:
        logger.info("jit: %s with %d fused scan(s) did not compile; lowering its scans "
                    "as host loops instead: %s", name, fused, str(err)[:2000])
    with holder.lock, holder.session.context:
        module, _ = lower_module(program, holder.session.context, output_storage=storage,
                                 isolate_reductions=isolate)
    return compile_module(module, holder, name, ir_key)


def _isolates_reductions(flags) -> bool:
    """Whether modules compiled with ``flags`` have their reductions behind barriers
    (rules.isolate_reductions): those compiled with aggressive fusion."""
    from funcgrad.lowering import compiler

    return compiler.FUSION_FLAG in flags


def _cpu_cache_key(program: IR, flags, storage) -> str:
    """The cache key of ``program`` compiled for the CPU with ``flags``, taking the
    results listed in ``storage`` in memory the caller passes in (``output_storage_for``)."""
    from funcgrad.lowering import compiler

    # not the entries written under the same flags before rules.isolate_reductions
    isolated = "\nreductions isolated" if _isolates_reductions(flags) else ""
    return compiler.cache_key(f"{_ir_key_text(program)}\noutput storage {storage}{isolated}",
                              flags)


def _gpu_executable(program: IR, device):
    """The executable of ``program`` for a CUDA GPU, compiled for its architecture."""
    executables = program.__dict__.setdefault("_gpu_executables", {})
    exe = executables.get(device)
    if exe is not None:
        return exe
    from funcgrad.core import gpu
    from funcgrad.lowering import compiler
    from funcgrad.lowering.runtime import Executable

    arch = gpu.compute_arch(device)
    holder = compiler.session_for_target("cuda", arch)
    ir_key = compiler.cache_key(_ir_key_text(program), holder.flags + (arch,))
    vmfb = _cached_module(program, ir_key) or compile_artifact(program, "cuda", arch, ir_key)
    exe = Executable(vmfb, [v.aval.strip_weak() for v in program.outputs],
                     driver=f"cuda:{device.id}")
    executables[device] = exe
    return exe


def _cached_module(program: IR, ir_key: str):
    """The compiled module under ``ir_key``, or None.  A module compiled earlier (maybe in
    another process) was not lowered here, so its prints' handlers are registered now."""
    from funcgrad.debug import register_prints
    from funcgrad.lowering import compiler

    vmfb = compiler.lookup(ir_key)
    if vmfb is not None:
        register_prints(program)
    return vmfb


def _ir_key_text(program: IR) -> str:
    """The IR's text plus what it leaves out (literal dtypes) and the lowering code's
    fingerprint, so a cache entry is reused only for the same program and compiler."""
    literal_dtypes = []

    def walk(p):
        for eqn in p.equations:
            literal_dtypes.extend(x.aval.dtype.name for x in eqn.inputs if isinstance(x, Literal))
            for value in eqn.params.values():
                for sub in (value if isinstance(value, tuple) else (value,)):
                    if isinstance(sub, IR):
                        walk(sub)

    walk(program)
    from funcgrad.lowering import host_calls

    outs = ",".join(v.aval.strip_weak().str_short() for v in program.outputs)
    # without memory addresses: a custom_jvp/custom_vjp rule is a closure printed as
    # "<function ... at 0x7f...>", new in every process, so programs using F.relu were
    # compiled again in each one; the rules only differentiate, they are not compiled
    text = re.sub(r" at 0x[0-9a-fA-F]+>", ">", pretty_print(program))
    return (f"{text}\n{literal_dtypes}\n{outs}\n{_source_fingerprint()}"
            f"\nhost calls {host_calls.enabled()}")


_FINGERPRINT = None


def _source_fingerprint() -> str:
    """A hash of funcgrad's sources: any change to a lowering rule invalidates the cache."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        import hashlib
        from pathlib import Path

        h = hashlib.sha256()
        root = Path(__file__).resolve().parents[1]
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def compile_artifact(program: IR, target: str, arch: str | None = None,
                     key: str | None = None) -> bytes:
    """The IREE module (VM flatbuffer bytes) of ``program`` for another target."""
    from funcgrad.lowering.compiler import attach_device_target, compile_module, session_for_target
    from funcgrad.lowering.mlir import lower_module

    holder = session_for_target(target, arch)
    with holder.lock:
        with holder.session.context:
            module, _ = lower_module(program, holder.session.context, platform=target)
            attach_device_target(module, holder)
        return compile_module(module, holder, getattr(program, "_name", "main"), key)


class _BackgroundCompile:
    """A compile running on a daemon thread (never joined at exit, unlike a pool)."""

    def __init__(self, program):
        self.done = threading.Event()
        self.error = None
        threading.Thread(target=self._run, args=(program,), daemon=True,
                         name="funcgrad-compile").start()

    def _run(self, program):
        try:
            executable_for(program)
        except BaseException as err:  # reported on the next call
            self.error = err
        finally:
            self.done.set()


def _ready_executable(program: IR):
    """The executable, or None while a background compile is still running."""
    exe = getattr(program, "_executable", None)
    if exe is not None:
        return exe
    if not _interp.config.jit_background_compile:
        return executable_for(program)
    job = getattr(program, "_background", None)
    if job is None:
        from funcgrad.lowering import compiler

        if compiler.lookup(_cpu_build(program)[3]):
            return executable_for(program)  # cached: loading is quick
        program._background = job = _BackgroundCompile(program)
    if not job.done.is_set():
        return None
    if job.error is not None:
        raise job.error
    return executable_for(program)


# A host array the run-time cannot use in place (not 64-byte aligned, e.g. one wrapped by
# fnp.asarray without a copy) is copied on every call; from this size on the Tensor keeps
# an aligned copy instead (the yardstick's 16M float32 elementwise chain: 96 -> 27 ms)
_REALIGN_BYTES = 1 << 16


def _run_compiled(program: IR, tensors):
    buffers = []
    on_gpu = False
    for t in tensors:
        if type(t) is not Tensor:
            t = as_tensor(t)
        dev = t._dev
        if dev is None:
            buf = t._buf
            if (type(buf) is np.ndarray and buf.nbytes >= _REALIGN_BYTES
                    and not importable(buf)):
                # copied into memory the run-time can use once, not on every call
                buf = t._buf = aligned_copy(buf)
            buffers.append(buf)
            on_gpu = on_gpu or type(buf) is not np.ndarray
        elif type(dev) is DeviceBuffer:
            buffers.append(dev)
            on_gpu = on_gpu or dev.device is not CPU
        else:
            buffers.append(dev.to_numpy())  # a donated tensor raises DonatedBufferError
    if on_gpu:  # runs where its GPU operands live (a placement error names the devices)
        from funcgrad.core import gpu

        device = gpu.placement([as_tensor(t) for t in tensors], f"jit({program._name})"
                               if hasattr(program, "_name") else "jit")
        return _results(program, executable_for(program, device)(buffers))
    exe = _ready_executable(program)
    if exe is None:  # still compiling: run the traced program eagerly meanwhile
        with _interp.using(_interp.EAGER):
            return eval_ir(program, *[as_tensor(t) for t in tensors])
    outs = _results(program, exe(buffers))
    if _interp.config.debug_nans:
        _find_nans(program, tensors, outs)
    return outs


def _results(program: IR, buffers) -> list:
    """Tensors over a call's result buffers, weakly typed where the traced outputs are
    (as JAX's: ``jit(lambda s: 0.1 * s)(x) * float16_tensor`` stays float16, as eagerly)."""
    try:
        weak = program._weak_outputs
    except AttributeError:
        weak = program._weak_outputs = [v.aval.weak_type for v in program.outputs]
    return [wrap_device(b, w) for b, w in zip(buffers, weak, strict=True)]


def _find_nans(program: IR, tensors, outs):
    """debug_nans under jit: when a compiled result holds a NaN, run the program again
    operation by operation (as JAX does), so the error names the primitive that made it."""
    if not any(dtypes.is_inexact(o.dtype) and np.isnan(o.numpy()).any() for o in outs):
        return
    with _interp.using(_interp.EAGER):
        eval_ir(program, *[as_tensor(t) for t in tensors])  # raises at the first NaN
    name = getattr(program, "_name", "jit")
    raise FloatingPointError(f"debug_nans: jit({name}) produced a NaN in its compiled "
                             "code, but not when run operation by operation (the compiled "
                             "math differs, e.g. in fused or approximated functions)")


def _jit_impl(*args, program, name):
    return _run_compiled(program, args)


def _jit_abstract_eval(*args, program, name):
    return [v.aval for v in program.outputs]


def _jit_jvp(primals, tangents, *, program, name):
    nonzero = [t is not None for t in tangents]
    new, out_nonzero = jvp_ir(program, nonzero, instantiate=False)
    new = _closed(new, f"jvp_{name}")
    n_out = len(program.outputs)
    outs = jit_p.bind(*new.consts, *primals, *[t for t in tangents if t is not None],
                      program=new.program, name=f"jvp_{name}")
    it = iter(outs[n_out:])
    return outs[:n_out], [next(it) if nz else None for nz in out_nonzero]


def _jit_batch(axis_size, args, dims, *, program, name):
    from funcgrad.core.prims.structural import moveaxis

    moved = [
        a if d is None else (a if d == 0 else moveaxis(a, d, 0))
        for a, d in zip(args, dims, strict=False)
    ]
    new, out_batched = batch_ir(program, axis_size, [d is not None for d in dims],
                                instantiate=False)
    new = _closed(new, f"vmap_{name}")
    outs = jit_p.bind(*new.consts, *moved, program=new.program, name=f"vmap_{name}")
    return outs, [0 if b else None for b in out_batched]


def _jit_partial_eval(trace, args, params):
    program, name = params["program"], params["name"]
    unknowns = [trace.is_own(a) for a in args]
    (known_ir, known_consts), unknown_ir, out_unknowns, _ = partial_eval_ir(program, unknowns)
    n_known = out_unknowns.count(False)
    known_args = [a for a, u in zip(args, unknowns, strict=False) if not u]
    known = _Closed(known_ir, [], f"{name}_known")
    with _interp.using(trace.parent):
        known_results = jit_p.bind(*known_consts, *known_args, program=known.program,
                                   name=known.name)
    known_outs, residuals = known_results[:n_known], known_results[n_known:]
    unknown_args = [a for a, u in zip(args, unknowns, strict=False) if u]
    unknown_avals = [
        v.aval.strip_weak() for v, u in zip(program.outputs, out_unknowns, strict=False) if u
    ]
    unknown_outs = trace.stage(jit_p, [*residuals, *unknown_args],
                               dict(program=unknown_ir, name=f"{name}_lin"), unknown_avals)
    known_it, unknown_it = iter(known_outs), iter(unknown_outs)
    return [next(unknown_it) if u else next(known_it) for u in out_unknowns]


def _jit_transpose(cts, *args, program, name):
    linear = [isinstance(a, UndefinedPrimal) for a in args]
    cts = [zeros_for(v.aval.strip_weak()) if c is None else c
           for c, v in zip(cts, program.outputs, strict=False)]
    new = _closed(transpose_ir(program, linear), f"transpose_{name}")
    res = [a for a in args if not isinstance(a, UndefinedPrimal)]
    outs = iter(jit_p.bind(*new.consts, *res, *cts, program=new.program, name=new.name))
    return [next(outs) if lin else None for lin in linear]


def _jit_lower(ctx, args, in_avals, out_avals, *, program, name):
    return ctx.lower_ir(program, args)


class _Closed:
    """An IR with its constants hoisted into leading inputs, and those constants."""

    def __init__(self, program, consts, name):
        self.program, self.consts, self.name = program, consts, name


def _closed(program: IR, name: str) -> _Closed:
    hoisted, consts = hoist_consts(program)
    return _Closed(hoisted, consts, name)


jit_p.impl = _jit_impl
jit_p.abstract_eval = _jit_abstract_eval
jit_p.jvp = _jit_jvp
jit_p.batch = _jit_batch
jit_p.partial_eval = _jit_partial_eval
jit_p.transpose = _jit_transpose
jit_p.lower = _jit_lower
jit_p.linear = True


# --- the user-facing wrapper ------------------------------------------------------------------


def _hashable(value, what):
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"jit: static argument {what} of type {type(value).__name__} is not "
                        "hashable; static arguments must be hashable (use a tuple instead of "
                        "a list, or pass it as a regular argument)") from None
    return value


class _Entry:
    __slots__ = ("program", "consts", "out_tree", "name")

    def __init__(self, program, consts, out_tree, name):
        self.program, self.consts, self.out_tree, self.name = program, consts, out_tree, name


class Lowered:
    """``jit(f).lower(*args)``: the MLIR of one signature; ``.as_text()``, ``.compile()``."""

    def __init__(self, entry: _Entry, key):
        self._entry, self._key = entry, key

    def as_text(self) -> str:
        """The StableHLO module: ``@main`` takes the function's own arguments (static ones
        left out) and holds the values it closes over as constants, as JAX's does.  (The
        compiled module takes those values as leading arguments instead, so that they do
        not weigh on compiling or on the cache's keys.)"""
        from funcgrad.lowering.compiler import session_for
        from funcgrad.lowering.mlir import lower_module

        program, n = self._entry.program, len(self._entry.consts)
        closed = IR(program.in_vars[n:], program.equations, program.outputs,
                    const_vars=program.in_vars[:n], consts=self._entry.consts)
        holder = session_for("cpu")
        with holder.lock, holder.session.context:
            # the StableHLO program without CPU-only fused scans (host calls stay: as
            # JAX's text holds its LAPACK custom calls)
            return str(lower_module(closed, holder.session.context, inline_consts=True)[0])

    def compile(self, target: str = "cpu", arch: str | None = None):
        """Compile for the CPU (a callable ``Compiled``), or for ``target="cuda"`` with a GPU
        ``arch`` such as ``"sm_80"``/``"sm_90"`` (the module bytes, which need a GPU to run;
        compiling needs none)."""
        if target == "cpu":
            executable_for(self._entry.program)
            return Compiled(self._entry, self._key)
        return compile_artifact(self._entry.program, target, arch)


class Compiled:
    """A compiled signature of a jitted function; call it with the arguments it was
    lowered for, static ones left out (as JAX's)."""

    def __init__(self, entry: _Entry, key):
        self._entry, self._key = entry, key

    def as_text(self) -> str:
        """The StableHLO module this was compiled from (as ``Lowered.as_text()``)."""
        return Lowered(self._entry, self._key).as_text()

    def __call__(self, *args, **kwargs):
        flat, in_tree, avals = _flat_signature((args, kwargs))
        key = (in_tree, avals, *self._key[2:])
        if key[:2] != self._key[:2]:
            raise TypeError(f"{self._entry.name}: compiled for other arguments (static ones are "
                            f"left out when calling it): "
                            f"{_why_retrace(self._key, key, (args, kwargs))}")
        outs = _run_compiled(self._entry.program, [*self._entry.consts, *flat])
        return tree_unflatten(self._entry.out_tree, outs)


# traces of each Python function, by jit options, shared by all its jit wrappers: as in
# JAX, ``fg.jit(f)(x)`` written inside a loop traces ``f`` once (weak keys: a function
# that goes away takes its traces with it)
_TRACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _shared_traces(fun, options) -> dict:
    if not isinstance(fun, types.FunctionType):  # callables with their own equality
        return {}
    return _TRACES.setdefault(fun, {}).setdefault(options, {})


class Jitted:
    """The callable ``jit`` returns (see ``jit``)."""

    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
                 donate_argnames=()):
        check_callable("jit", fun)
        functools.update_wrapper(self, fun)
        self.fun = fun
        # what errors and logs call it: a module or other callable object by its class
        self._name = getattr(fun, "__name__", None) or type(fun).__name__
        as_tuple = lambda x: (x,) if isinstance(x, (int, str)) else tuple(x)
        self.static_argnums = as_tuple(static_argnums)
        self.static_argnames = as_tuple(static_argnames)
        self.donate_argnums = as_tuple(donate_argnums)
        self.donate_argnames = as_tuple(donate_argnames)
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        if self._signature is not None:
            self._infer_static(self._signature)
        overlap = set(self.static_argnums) & set(self.donate_argnums)
        if overlap:
            raise ValueError(f"jit({self._name}): argument(s) "
                             f"{sorted(overlap)} are both static and donated; a static "
                             "argument is a Python value with no buffer to donate")
        self._cache = _shared_traces(fun, (self.static_argnums, self.static_argnames,
                                           self.donate_argnums))
        self._last_key = None
        self._simple = not self.static_argnums and not self.static_argnames

    def _infer_static(self, signature):
        """As JAX: a static argument is static whether passed by position or by name, so
        static_argnames give their positions and static_argnums their names."""
        params = list(signature.parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
        name = f"jit({self._name})"
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            known = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
            for option in ("static_argnames", "donate_argnames"):
                unknown = sorted(set(getattr(self, option)) - known)
                if unknown:
                    raise ValueError(f"{name}: {option} names {unknown}, which the function "
                                     f"does not take (its parameters: {sorted(known)})")
        self.donate_argnums = tuple(sorted(
            {*self.donate_argnums, *(positional.index(n) for n in self.donate_argnames
                                     if n in positional)}))
        nums = set(self.static_argnums)
        if not any(p.kind is p.VAR_POSITIONAL for p in params):
            for option in ("static_argnums", "donate_argnums"):
                for i in getattr(self, option):
                    if not -len(positional) <= i < len(positional):
                        raise ValueError(f"{name}: {option}={getattr(self, option)} but the "
                                         f"function takes {len(positional)} positional "
                                         "argument(s)")
            # a negative number counts from the last argument passed, as in JAX (a
            # defaulted parameter left out moves it), so it is resolved at each call
            required = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)
                           and p.default is p.empty)
            if required == len(positional):
                nums = {i % len(positional) for i in nums}
            self.donate_argnums = tuple(sorted({i % len(positional)
                                                for i in self.donate_argnums}))
            self.donate_argnames = tuple(sorted({*self.donate_argnames, *(
                positional[i] for i in self.donate_argnums
                if params[i].kind is not params[i].POSITIONAL_ONLY)}))
        names = set(self.static_argnames)
        for i, name in enumerate(positional):
            if name in names:
                nums.add(i)
            elif i in nums and params[i].kind is not params[i].POSITIONAL_ONLY:
                names.add(name)
        self.static_argnums = tuple(sorted(nums))
        self.static_argnames = tuple(sorted(names))

    def __get__(self, obj, objtype=None):
        """Jitted functions are methods too: ``self`` becomes the first argument."""
        if obj is None:
            return self
        return functools.partial(self, obj)

    def _split(self, args, kwargs):
        nargs = len(args)
        static_pos = {i % nargs for i in self.static_argnums if -nargs <= i < nargs}
        static = tuple((i, _hashable(args[i], f"#{i}")) for i in sorted(static_pos))
        static_kw = tuple(sorted((k, _hashable(v, repr(k))) for k, v in kwargs.items()
                                 if k in self.static_argnames))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return static, static_kw, dyn_args, dyn_kwargs, static_pos

    def _entry(self, args, kwargs):
        static, static_kw, dyn_args, dyn_kwargs, static_pos = self._split(args, kwargs)
        try:
            flat, in_tree, avals = _flat_signature((dyn_args, dyn_kwargs))
        except (TypeError, ValueError) as err:
            raise self._not_an_array(args, kwargs, static_pos, err) from None
        key = (in_tree, avals, static, static_kw)
        entry = self._cache.get(key)
        if entry is None:
            if self._last_key is not None:
                logger.info("jit(%s): retracing because %s", self._name,
                            _why_retrace(self._last_key, key, (dyn_args, dyn_kwargs)))
            entry = self._trace(args, kwargs, static_pos, in_tree, avals)
            self._cache[key] = entry
        self._last_key = key
        return entry, flat

    def _not_an_array(self, args, kwargs, static_pos, err) -> TypeError:
        """The error for an argument that is not an array: which one, and the fix."""
        named = [(f"argument {i}", f"static_argnums=({i},) or static_argnames", a)
                 for i, a in enumerate(args) if i not in static_pos]
        named += [(f"argument {k!r}", f"static_argnames=({k!r},)", v)
                  for k, v in kwargs.items() if k not in self.static_argnames]
        for where, fix, arg in named:
            paths, leaves, _ = optree.tree_flatten_with_path(arg, namespace="funcgrad")
            for path, leaf in zip(paths, leaves, strict=True):
                try:
                    _argument(leaf)
                except (TypeError, ValueError):
                    where += "".join(f"[{p!r}]" for p in path)
                    return TypeError(f"jit({self._name}): {where} is a {type(leaf).__name__} "
                                     f"({leaf!r:.40}), not an array; mark it static ({fix}) "
                                     "if it configures the computation")
        return TypeError(f"jit({self._name}): {err}")

    def _trace(self, args, kwargs, static_pos, in_tree, avals):
        fun = self.fun
        store = {}

        def flat_fun(*leaves):
            dyn_args, dyn_kwargs = tree_unflatten(in_tree, list(leaves))
            it = iter(dyn_args)
            full = [args[i] if i in static_pos else next(it) for i in range(len(args))]
            kw = {**{k: v for k, v in kwargs.items() if k in self.static_argnames},
                  **dyn_kwargs}
            out = fun(*full, **kw)
            out_flat, store["tree"] = tree_flatten(out)
            return [_default_width(self._output(o, out, k)) for k, o in enumerate(out_flat)]

        in_avals = [ShapedArray(*sig[:3]) for sig in avals]
        # a GPU argument's device (its own signature entry): where the program will run
        device = next((sig[3] for sig in avals if len(sig) > 3), None)
        program = trace_to_ir(flat_fun, in_avals, name=f"jit({self._name})",
                              labels=self._labels(args, kwargs, static_pos), device=device)
        hoisted, consts = hoist_consts(program)
        hoisted._name = self._name
        return _Entry(hoisted, consts, store["tree"], self._name)

    def _output(self, leaf, out, k):
        """Output leaf ``k`` as a Tensor, or a TypeError naming where it is in the output."""
        try:
            return as_tensor(leaf)
        except TypeError:
            path = optree.tree_paths(out, namespace="funcgrad")[k]
            where = "output" + "".join(f"[{p!r}]" for p in path)
            raise TypeError(f"jit({self._name}): {where} is a {type(leaf).__name__} "
                            f"({leaf!r:.40}), not an array; a jitted function returns "
                            "arrays, numbers and pytrees of them") from None

    def _labels(self, args, kwargs, static_pos):
        """Readable names of the flat inputs, e.g. ``x`` or ``params['w1']``."""
        names = []
        if self._signature is not None:
            names = [p.name for p in self._signature.parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        labels = []
        for i, arg in enumerate(args):
            if i in static_pos:
                continue
            base = names[i] if i < len(names) else f"#{i}"
            for path in optree.tree_paths(arg, namespace="funcgrad"):
                labels.append(base + "".join(f"[{p!r}]" for p in path))
        for key, value in kwargs.items():
            if key in self.static_argnames:
                continue
            for path in optree.tree_paths(value, namespace="funcgrad"):
                labels.append(key + "".join(f"[{p!r}]" for p in path))
        return labels

    def __call__(self, *args, **kwargs):
        if not kwargs and self._simple and _interp.current() is _interp.EAGER:
            # the common case, kept lean: concrete tensors, no static or keyword arguments
            flat, in_tree = optree.tree_flatten((args, {}), namespace="funcgrad")
            signature = []
            for x in flat:
                if type(x) is not Tensor:
                    break
                dev = x._dev
                if dev is None:
                    buf = x._buf
                    if type(buf) is not np.ndarray:
                        break
                    signature.append((buf.shape, buf.dtype, x._weak))
                elif type(dev) is DeviceBuffer and dev.device is CPU:
                    signature.append((dev.shape, dev.dtype, x._weak))
                else:
                    break
            else:
                key = (in_tree, tuple(signature), (), ())
                entry = self._cache.get(key)
                if entry is not None:
                    self._last_key = key
                    outs = _run_compiled(entry.program, entry.consts + flat)
                    if self.donate_argnums or self.donate_argnames:
                        self._donate(args, kwargs)
                    return tree_unflatten(entry.out_tree, outs)
        entry, flat = self._entry(args, kwargs)
        concrete = _interp.current() is _interp.EAGER and all(type(x) is Tensor for x in flat)
        if concrete:
            outs = _run_compiled(entry.program, entry.consts + flat)
            self._donate(args, kwargs)
        else:
            outs = jit_p.bind(*entry.consts, *flat, program=entry.program, name=entry.name)
        return tree_unflatten(entry.out_tree, outs)

    def _donate(self, args, kwargs):
        donated = [(f"argument {i}", args[i]) for i in self.donate_argnums if i < len(args)]
        donated += [(f"argument {k!r}", kwargs[k]) for k in self.donate_argnames if k in kwargs]
        for where, value in donated:
            for leaf in tree_flatten(value)[0]:
                if type(leaf) is Tensor:
                    _mark_donated(leaf, f"{where} of jit({self._name})")

    def lower(self, *args, **kwargs) -> Lowered:
        """The MLIR this function compiles to for these arguments."""
        entry, _ = self._entry(args, kwargs)
        return Lowered(entry, self._last_key)

    def clear_cache(self):
        self._cache.clear()
        self._last_key = None


_PYTHON_SCALAR_DTYPES = {float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def _argument(x) -> Tensor:
    """A jit argument as a Tensor.  Python numbers become *weak* 64-bit values: they still
    adapt to the other operand's dtype (``float32_tensor * 0.1`` stays float32), but a
    float64 computation sees them at full precision, as it does eagerly (a float32 0.1
    would be 1.5e-9 off, and 2**40 would not fit an int32).  An int outside int32's range
    is a plain int64, as ``np.int64(x)``: results made from it alone stay int64 rather than
    being cut to the default int32, which would wrap it silently."""
    if type(x) in (float, complex) or (type(x) is int and -2**63 <= x < 2**63):
        dtype = _PYTHON_SCALAR_DTYPES.get(type(x), np.dtype(np.int64))
        from funcgrad.core.tensor import wrap

        return wrap(np.asarray(x, dtype), type(x) is not int or -2**31 <= x < 2**31)
    return as_tensor(x)


def _default_width(out: Tensor) -> Tensor:
    """A result made of Python numbers only (weak, 64-bit inside, see ``_argument``) comes
    out at the default width, as it would eagerly (``jit(lambda a: a * 2)(3.0)`` is a
    float32 6.0, as in JAX)."""
    return at_default_width(out)


def _mark_donated(t: Tensor, name: str):
    shape, dtype = t.shape, t.dtype
    try:
        del t._buf
    except AttributeError:
        pass
    t._dev = _Donated(name, shape, dtype)


def _flat_signature(tree):
    """The leaves of ``tree`` as Tensors, its structure, and their signature entries."""
    flat, in_tree = tree_flatten(tree)
    flat = [_argument(x) for x in flat]
    return flat, in_tree, tuple(_signature_aval(x) for x in flat)


def _signature_aval(x: Tensor):
    dev = device_buffer(x)
    if isinstance(dev, _Donated):
        dev.to_numpy()
    if type(x) is Tensor:
        placed = x.device
        if placed != CPU:  # a GPU operand: its executable is compiled for that GPU
            return (x.shape, x.dtype, x._weak, placed)
    if dev is not None and type(x) is Tensor:
        return (dev.shape, dev.dtype, x._weak)
    aval = x.aval
    return (aval.shape, aval.dtype, aval.weak_type)


def _why_retrace(old, new, tree_value) -> str:
    old_tree, old_avals, old_static, old_kw = old
    new_tree, new_avals, new_static, new_kw = new
    if old_static != new_static or old_kw != new_kw:
        return f"a static argument changed: {old_static + old_kw} -> {new_static + new_kw}"
    if old_tree != new_tree:
        return f"the argument tree structure changed: {old_tree} -> {new_tree}"
    paths = optree.tree_paths(tree_value, namespace="funcgrad")
    for path, a, b in zip(paths, old_avals, new_avals, strict=False):
        if a != b:
            where = "".join(f"[{p!r}]" for p in path[1:]) or "argument"
            what = ("shape" if a[0] != b[0] else "dtype" if a[1] != b[1] else
                    "weak type" if a[2] != b[2] else "device")
            return (f"argument {where} changed {what}: {_fmt(a)} -> {_fmt(b)}")
    return "the signature changed"


def _fmt(sig) -> str:
    shape, dtype, weak = sig[:3]
    where = f" on {sig[3]}" if len(sig) > 3 else ""
    return f"{np.dtype(dtype).name}{list(shape)}{' (weak)' if weak else ''}{where}"


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=()):
    """Compile ``fun`` through MLIR and IREE; traces once per input signature.

    Python side effects in ``fun`` run only while tracing.  ``static_argnums`` /
    ``static_argnames`` mark hashable arguments whose values are baked into the program;
    ``donate_argnums`` (or ``donate_argnames``) lets the compiled call consume those inputs
    (using them afterwards raises).  ``f.lower(*args).as_text()`` shows the MLIR.

    >>> f = fg.jit(lambda x: fnp.sin(x) * 2)
    >>> f(fg.tensor([0.0, 1.0]))
    tensor([0.       , 1.6829419], dtype=float32)
    """
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, donate_argnames=donate_argnames)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)


def clear_caches():
    """Forget every traced program and in-memory compiled module (the disk cache stays)."""
    from funcgrad.lowering import compiler

    compiler._MEMORY_CACHE.clear()
    for by_options in list(_TRACES.values()):
        for traces in by_options.values():
            traces.clear()


def _log_env():
    """FUNCGRAD_LOG_RETRACE=1: the retrace messages reach stderr with no logging setup (a
    handler of funcgrad's own when the application has configured none)."""
    if os.environ.get("FUNCGRAD_LOG_RETRACE") not in (None, "", "0"):
        logger.setLevel(logging.INFO)
        if not logger.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
            logger.addHandler(handler)


_log_env()
