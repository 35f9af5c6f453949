"""Compiling MLIR with IREE, and the on-disk cache of compiled modules.

One ``iree.compiler.api.Session`` per target (flags measured in ../shared/DESIGN.md);
modules are built in the session's own context.  Compiled modules are cached in memory
and on disk under ``FUNCGRAD_CACHE_DIR`` (default: the user cache dir), keyed by the MLIR
text, the flags, the IREE version and the CPU model, written atomically (temp file +
rename); a corrupt entry is ignored and rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import subprocess
import tempfile
import threading
import time

from funcgrad.lowering import vm_branches

logger = logging.getLogger("funcgrad.jit")

CPU_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
    "--iree-opt-data-tiling=true",
    # microkernels for the data-tiled matmuls (programs with a large one only: CPU_PLAIN_FLAGS)
    "--iree-llvmcpu-enable-ukernels=all",
    "--iree-input-type=stablehlo",
    "--iree-input-demote-f64-to-f32=false",
    "--iree-input-demote-i64-to-i32=false",
    # constant-expression evaluation JIT-compiles a second module at compile time; funcgrad
    # passes arrays in as arguments, so it only ever folds splats: measured 0.3-0.45 s off
    # the MLP step's 2.0-3.4 s cold compile, same step time
    "--iree-opt-const-eval=false",
    # data-tiled matmuls fused with their consumers can want a little over IREE's default
    # 32 KiB of stack (34 KiB in the per-example gradients, a Hessian): the compile failed
    # and fell back to no data tiling.  IREE's workers have at least 128 KiB of stack, and
    # funcgrad's run-time gives them 512 KiB (runtime.py)
    "--iree-llvmcpu-stack-allocation-limit=65536",
)
_MAGIC = b"FGVMFB1\n"


class CompileError(RuntimeError):
    """IREE rejected a module; carries the compiler's diagnostics."""


@functools.cache
def _cpuinfo_field(name: str) -> str | None:
    """The value of the first ``name : value`` line of /proc/cpuinfo, or None."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_has_avx512() -> bool:
    """Whether the host CPU has AVX-512 (its vector width decides where data tiling pays
    off: funcgrad.transforms.jit)."""
    return "avx512f" in (_cpuinfo_field("flags") or "").split()


def cache_dir() -> str:
    """Where compiled modules are cached: ``FUNCGRAD_CACHE_DIR`` or the user cache dir."""
    env = os.environ.get("FUNCGRAD_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "funcgrad")


class _SessionHolder:
    """The compiler session of one target, created on first use (imports IREE lazily)."""

    def __init__(self, flags):
        self.flags = tuple(flags)
        self.lock = threading.RLock()
        self._session = None

    @property
    def session(self):
        if self._session is None:
            from iree.compiler.api import Session

            session = Session()
            session.set_flags(*self.flags)
            session.context.load_all_available_dialects()
            self._session = session
        return self._session


# Programs without a large matmul lose more to data tiling's operand packs than its kernels
# gain (funcgrad.transforms.jit._data_tiling_work); an RNN scan of 1000 steps took 2.21 ms
# with it, 1.71 ms without (iree-benchmark-module).
CPU_PLAIN_FLAGS = tuple(f for f in CPU_FLAGS if f not in (
    "--iree-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all")) + (
    "--iree-opt-data-tiling=false",)
# Programs that run on IREE's worker threads (local-task) are compiled with coarse fences:
# the call returns at once and funcgrad waits for its fence (runtime.Executable._await)
ASYNC_FLAG = "--iree-execution-model=async-external"
# For programs of float64 math and nothing but elementwise, data-movement and reduction
# operations (funcgrad.transforms.jit._fuses_aggressively), their reductions behind
# barriers (IREE 3.13 miscompiles a reduction fused with its consumers under the flag):
# IREE otherwise splits the deep elementwise graphs of math64's expansions into several
# dispatches and recomputes the values they share in each.  1M float64 values, one module
# compiled both ways and called alternately: pow 118 -> 35 ms, sin 10.7 -> 8.0, atan2
# 22 -> 20, complex128 exp 40 -> 36, others within 5%; float32 math unchanged; the MLP
# step 5-15% slower and 0.6 s longer to compile with it
FUSION_FLAG = "--iree-dispatch-creation-enable-aggressive-fusion"
_SESSIONS = {"cpu": _SessionHolder(CPU_FLAGS + (ASYNC_FLAG,)),
             "cpu-plain": _SessionHolder(CPU_PLAIN_FLAGS),
             "cpu-plain-task": _SessionHolder(CPU_PLAIN_FLAGS + (ASYNC_FLAG,)),
             "cpu-fused": _SessionHolder(CPU_PLAIN_FLAGS + (FUSION_FLAG,)),
             "cpu-fused-task": _SessionHolder(CPU_PLAIN_FLAGS + (FUSION_FLAG, ASYNC_FLAG))}

CUDA_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
# IREE 3.13's --iree-cuda-target has no sm_90 row (IREE issue 22147): for Hopper the module
# carries an explicit device target with the architecture and PTX 8.0 instead.
_SM90_TARGET = (
    '[#hal.device.target<"cuda", [#hal.executable.target<"cuda", "cuda-nvptx-fb", '
    '{iree_codegen.target_info = #iree_gpu.target<arch = "sm_90", features = "+ptx80", '
    "wgp = <compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, "
    "subgroup = shuffle|arithmetic, dot = dp4xi8toi32, mma = [], subgroup_size_choices = "
    "[32], max_workgroup_sizes = [1024, 1024, 1024], max_thread_count_per_workgroup = 1024, "
    "max_workgroup_memory_bytes = 166912, max_workgroup_counts = [2147483647, 65535, "
    "65535]>>}>]>]")


def cuda_flags(arch: str) -> tuple:
    """Compiler flags for NVIDIA GPUs of architecture ``arch`` (e.g. ``"sm_80"``)."""
    if arch not in CUDA_ARCHS:
        raise ValueError(f"unsupported CUDA architecture {arch!r}; choose from "
                         f"{', '.join(CUDA_ARCHS)}")
    flags = ["--iree-hal-target-device=cuda", "--iree-input-type=stablehlo",
             "--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false"]
    if arch != "sm_90":
        flags.append(f"--iree-cuda-target={arch}")
    return tuple(flags)


def session_for_target(target: str = "cpu", arch: str | None = None) -> _SessionHolder:
    """The compiler session of a target: ``"cpu"``, or ``"cuda"`` with an ``arch``."""
    if target == "cpu":
        return _SESSIONS["cpu"]
    if target != "cuda":
        raise ValueError(f"unknown compile target {target!r}; use 'cpu' or 'cuda'")
    arch = arch or "sm_80"
    key = f"cuda:{arch}"
    if key not in _SESSIONS:
        _SESSIONS[key] = _SessionHolder(cuda_flags(arch))
        _SESSIONS[key].arch = arch
    return _SESSIONS[key]


def attach_device_target(module, holder: _SessionHolder) -> None:
    """Give the module the explicit device target its session needs (sm_90)."""
    if getattr(holder, "arch", None) == "sm_90":
        from iree.compiler import ir

        with module.context:
            module.operation.attributes["hal.device.targets"] = ir.Attribute.parse(_SM90_TARGET)
_MEMORY_CACHE: dict[str, bytes] = {}


def session_for(target: str = "cpu"):
    return _SESSIONS[target]


def _version() -> str:
    """The IREE compiler's version, read from its package files without importing it (the
    import costs ~0.15 s, too much for a cache hit)."""
    global _VERSION
    if _VERSION is None:
        import importlib.util
        import re

        _VERSION = "unknown"
        try:
            spec = importlib.util.find_spec("iree.compiler")
            if spec and spec.submodule_search_locations:
                path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
                with open(path) as f:
                    found = re.search(r'VERSION = "([^"]+)"', f.read())
                if found:
                    _VERSION = found.group(1)
        except (OSError, ImportError, ValueError):
            pass
    return _VERSION


_VERSION = None


def cache_key(mlir_text: str, flags) -> str:
    h = hashlib.sha256()
    for part in (mlir_text, "\0".join(flags), _version(), _cpu_model()):
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()


def _read_cache(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 32:
        logger.info("ignoring corrupt cache entry %s", path)
        return None
    digest, payload = data[len(_MAGIC):len(_MAGIC) + 32], data[len(_MAGIC) + 32:]
    if hashlib.sha256(payload).digest() != digest:
        logger.info("ignoring corrupt cache entry %s (checksum mismatch)", path)
        return None
    return payload


def _write_cache(path: str, payload: bytes) -> None:
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".vmfb")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except OSError as err:  # a read-only or full disk must not break jit
        logger.info("could not write the compile cache at %s: %s", directory, err)


def lookup(key: str) -> bytes | None:
    """A compiled module from the memory or disk cache, or None."""
    cached = _MEMORY_CACHE.get(key)
    if cached is not None:
        return cached
    payload = _read_cache(_cache_path(key))
    if payload is not None:
        _MEMORY_CACHE[key] = payload
    return payload


def store(key: str, payload: bytes) -> None:
    """Remember a compiled module in memory and on disk."""
    _MEMORY_CACHE[key] = payload
    _write_cache(_cache_path(key), payload)


def _cache_path(key: str) -> str:
    return os.path.join(cache_dir(), key[:2], key + ".vmfb")


def compile_module(module, holder: _SessionHolder, name: str = "main",
                   key: str | None = None, retry: bool = True) -> bytes:
    """Compile an MLIR module (built in ``holder``'s context) to a VM flatbuffer, cached
    under ``key`` (by default the MLIR text with the flags).  ``retry=False``: a module
    IREE refuses with a diagnostic raises at once (the caller has another lowering)
    instead of being compiled again without the optional optimizations."""
    if key is None:
        key = cache_key(str(module), holder.flags)
    payload = lookup(key)
    if payload is not None:
        return payload
    path = _cache_path(key)
    start = time.perf_counter()
    payload = _compile(module, holder, name, retry)
    elapsed = time.perf_counter() - start
    if os.environ.get("FUNCGRAD_LOG_COMPILES") not in (None, "", "0"):
        logger.warning("compiled %s in %.3f s", name, elapsed)
    else:
        logger.debug("compiled %s in %.3f s", name, elapsed)
    _MEMORY_CACHE[key] = payload
    _write_cache(path, payload)
    return payload


def _compile(module, holder: _SessionHolder, name: str, retry: bool = True) -> bytes:
    """Compile in an ``iree-compile`` subprocess.  The compiler can crash (seen: a race in
    IREE 3.13's encoding materialization, now and then); in-process that would kill the
    user's Python, here it is retried (then single-threaded) or reported as an error."""
    with holder.lock:
        with holder.session.context:
            verified = module.operation.verify()
            text = str(module)
    if not verified:
        raise CompileError(f"jit: the MLIR built for {name} does not verify:\n"
                           f"{_truncate(text)}")
    with tempfile.TemporaryDirectory(prefix="funcgrad-compile-") as tmp:
        source = os.path.join(tmp, "module.mlir")
        target = os.path.join(tmp, "module.vmfb")
        with open(source, "w") as f:
            f.write(text)
        # the flags as they are; again (crashes can be races); then without the
        # optimizations that IREE 3.13 fails or crashes on for some programs (data tiling,
        # microkernels), single-threaded.  After a diagnostic (no crash): without those
        # optimizations, still multi-threaded
        plain = [f for f in holder.flags if f not in _OPTIONAL_FLAGS] + [
            "--iree-opt-data-tiling=false"]
        safe = plain + ["--mlir-disable-threading"]
        attempts = [list(holder.flags), list(holder.flags), safe]
        failure = ""
        branches = _has_host_branches(text)
        while attempts:
            flags = attempts.pop(0)
            fused = FUSION_FLAG in flags
            try:
                result = _run_compiler(flags, source, target, name, branches,
                                       _FUSED_COMPILE_TIMEOUT_S if fused else None)
            except _CompileTimeout:
                if not fused:
                    raise
                logger.info("iree-compile took over %s s compiling %s with aggressive "
                            "fusion; compiling it without", _FUSED_COMPILE_TIMEOUT_S, name)
                attempts = [plain]
                continue
            if result.returncode == 0:
                if flags is safe or flags is plain:
                    logger.info("compiled %s without data tiling, microkernels and "
                                "aggressive fusion", name)
                with open(target, "rb") as f:
                    return f.read()
            failure = result.stderr
            crashed = "Stack dump" in failure or "PLEASE submit a bug report" in failure \
                or "error:" not in failure
            workaround = _workaround_for(failure, flags)
            if workaround is not None:
                # a known IREE failure with a flag that avoids it (_WORKAROUNDS); the flag is
                # kept for the later attempts
                logger.info("iree-compile failed compiling %s; again with %s", name, workaround)
                flags = [*flags, workaround]
                plain, safe = [*plain, workaround], [*safe, workaround]
                attempts = [flags, plain, safe] if retry else [flags]
            elif not crashed:
                # a diagnostic: the same flags would fail the same way; without the optional
                # optimizations it may compile (threads are only given up after crashes,
                # which can be races)
                attempts = [plain, safe] if retry and flags is not safe and flags is not plain \
                    else []
            logger.info("iree-compile %s compiling %s (exit %s)%s", "crashed" if crashed
                        else "failed", name, result.returncode, "; retrying" if attempts else "")
    raise CompileError(f"jit: IREE failed to compile {name}:\n{_diagnostics(failure)}\n"
                       f"MLIR:\n{_truncate(text)}")


# IREE 3.13 failures that one flag avoids, by the diagnostic's text: the module is compiled
# again with the flag (logged at INFO).  Found by fuzzing jit on an H200:
# - CUDA reductions whose fused body is not a plain add, sum(-x) (its combiner becomes
#   ``acc - x``) and sum(x * c): the reduction vector-distribution pipeline cannot pad them
#   ("failed to get neutral element", "failed to distribute"); the older pipeline can
# - a hoisted constant read before its initializer (jit(grad) of loops carrying complex
#   values, for CUDA): without compile-time evaluation of constant expressions
_WORKAROUNDS = (
    ("failed to get neutral element for reduction",
     "--iree-codegen-llvmgpu-use-reduction-vector-distribution=false"),
    ("op failed to distribute", "--iree-codegen-llvmgpu-use-reduction-vector-distribution=false"),
    ("jit global source initialization order invalid", "--iree-opt-const-eval=false"),
)


def _workaround_for(stderr: str, flags) -> str | None:
    """The flag of ``_WORKAROUNDS`` that avoids the failure in ``stderr``, unless ``flags``
    hold it already."""
    return next((flag for text, flag in _WORKAROUNDS if text in stderr and flag not in flags),
                None)


def _has_host_branches(mlir_text: str) -> bool:
    """Whether IREE's VM code for this module branches: only StableHLO's control flow
    becomes VM branches (a fused scan's ``scf.for`` runs inside a kernel)."""
    return any(op in mlir_text for op in ("stablehlo.while", "stablehlo.case", "stablehlo.if"))


def _run_compiler(flags, source: str, target: str, name: str, branches: bool = True,
                  timeout: float | None = None):
    """``iree-compile``; for a module with ``branches``, in two steps: to the VM dialect,
    where the branches that pass one buffer twice are rewritten (``vm_branches``: IREE
    3.13 nulls one of them), then on to the flatbuffer (~0.1 s more than one step).
    Returns the failing step's ``CompletedProcess`` or the last one."""
    if not branches:
        return _run_tool([_compiler_tool(), *flags, source, "-o", target], name, timeout)
    vm_source = os.path.splitext(target)[0] + ".vm.mlir"
    result = _run_tool([_compiler_tool(), *flags, "--compile-to=vm", source,
                        "-o", vm_source], name, timeout)
    if result.returncode != 0:
        return result
    with open(vm_source) as f:
        original = f.read()
    text, changed = vm_branches.separate_repeated_branch_refs(original)
    finish = [_compiler_tool(), *flags, "--compile-from=vm", vm_source, "-o", target]
    if changed:
        logger.debug("%s: %d repeated buffer operands of VM branches separated", name, changed)
        with open(vm_source, "w") as f:
            f.write(text)
        result = _run_tool(finish, name, timeout)
        if result.returncode == 0:
            return result
        # the rewrite's syntax is funcgrad's guess at IREE's printer: if IREE rejects it,
        # the module as IREE made it (it may then hit the bug at run time)
        logger.info("%s: IREE rejected the rewritten VM branches; compiling them unchanged:"
                    "\n%s", name, _diagnostics(result.stderr, 5))
        with open(vm_source, "w") as f:
            f.write(original)
    return _run_tool(finish, name, timeout)


class _CompileTimeout(CompileError):
    """iree-compile ran longer than it was given."""


def _run_tool(command, name: str, timeout: float | None = None):
    timeout = _COMPILE_TIMEOUT_S if timeout is None else timeout
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise _CompileTimeout(f"jit: compiling {name} took over {timeout} s and was "
                              "stopped") from None


_COMPILE_TIMEOUT_S = 900
# With aggressive fusion IREE 3.13 can run away on a small module (jit(jacfwd(grad)) of
# x.at[:, argmax(x[0])].mul(v): 2 s without the flag, past 7 minutes and 24 GB with it):
# such a compile is stopped after this long and redone without the optional flags
_FUSED_COMPILE_TIMEOUT_S = 120
# optimizations IREE 3.13 fails on for some programs, dropped after a diagnostic: data
# tiling and microkernels; aggressive fusion ("operand #3 does not dominate this use" in
# FormDispatchRegions, for the jvp of a scan of a custom_jvp'd float64 sin)
_OPTIONAL_FLAGS = ("--iree-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all",
                   FUSION_FLAG)


def _compiler_tool() -> str:
    from iree.compiler.tools import binaries

    return binaries.find_tool("iree-compile")


def _diagnostics(stderr: str, limit: int = 40) -> str:
    """The compiler's error lines (not its stack dump); for a crash without any, the
    first frames of the stack that name a function (where in IREE it crashed)."""
    lines = [ln for ln in stderr.splitlines() if not ln.lstrip().startswith("#")]
    errors = [ln for ln in lines if "error" in ln.lower() or "note:" in ln]
    if errors:
        return "\n".join(errors[:limit])
    frames = [ln.strip()[:300] for ln in stderr.splitlines()
              if ln.lstrip().startswith("#") and "::" in ln and "llvm::sys::" not in ln]
    return "\n".join(lines[:limit] + ["the crash, innermost first:"] * bool(frames)
                     + frames[:12])


def _truncate(text: str, limit: int = 20000) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"
