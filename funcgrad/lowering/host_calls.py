"""Host kernels: compiled CPU programs call NumPy/LAPACK for decompositions and FFTs.

XLA's CPU backend runs ``cholesky``, ``lu``, ``qr``, ``eigh``, ``svd`` and ``eig`` as calls
into LAPACK, and FFTs as calls into a C++ FFT library; funcgrad's compiled CPU programs do
the same.  A primitive lowered with ``on_host`` becomes, on the CPU, a call to an external
function that the run-time provides: the primitive's own eager implementation
(``prim.impl``: NumPy's or SciPy's LAPACK, pocketfft), run on the calling thread between
the kernels around it.  On other platforms its ``fallback`` rule lowers it (column
algorithms, DFT products).

How a call finds its implementation, also for a module loaded from the disk cache:

- at lowering, each call site gets an import ``fghost.<primitive>_<n>`` with static
  tensor types (``fg.jit(fnp.linalg.cholesky).lower(a).as_text()`` shows
  ``call @fghost.cholesky_0``), and the module's main function records every import
  (primitive, params, operand and result avals) as JSON in its ``iree.reflection``;
- ``runtime.Executable`` reads that record back from the compiled module and builds the
  ``fghost`` module with one export per import (``host_module``).
"""

from __future__ import annotations

import contextlib
import json

import numpy as np

from funcgrad.core.abstract import ShapedArray

MODULE = "fghost"
REFLECTION_KEY = "funcgrad.host_calls"
_DISABLED = False


def enabled() -> bool:
    """Whether CPU lowerings call host kernels (``without_host_calls`` turns them off)."""
    return not _DISABLED


@contextlib.contextmanager
def without_host_calls():
    """Lower host-called primitives on the CPU with their compiled fallbacks (what GPUs
    run: column algorithms, DFT matrices), in every thread (compiles may run on others);
    for tests of those fallbacks.  Part of the cache key."""
    global _DISABLED
    before, _DISABLED = _DISABLED, True
    try:
        yield
    finally:
        _DISABLED = before


def on_host(prim, fallback, worth_it=None):
    """The lowering rule of ``prim``: on the CPU a host call of ``prim.impl``; elsewhere,
    where ``worth_it(in_avals, **params)`` says a compiled kernel is quicker, or with
    params that do not fit in JSON, ``fallback``."""

    def rule(ctx, args, in_avals, out_avals, **params):
        if (ctx.platform != "cpu" or not enabled() or not _json_params(params)
                or (worth_it is not None and not worth_it(in_avals, **params))):
            return fallback(ctx, args, in_avals, out_avals, **params)
        return ctx.host_call(prim.name, params, args, in_avals, out_avals)

    rule.__name__ = f"lower_{prim.name}_on_host"
    return rule


def _json_params(params) -> bool:
    try:
        return json.loads(json.dumps(params)) is not None
    except (TypeError, ValueError):
        return False


def spec(name: str, prim_name: str, params, in_avals, out_avals) -> dict:
    """The record of one import (what ``host_module`` needs to provide it)."""
    def avals(xs):
        return [[list(a.shape), np.dtype(a.dtype).name] for a in xs]

    return {"name": name, "prim": prim_name, "params": params,
            "in": avals(in_avals), "out": avals(out_avals)}


def host_module(rt_, function, asynchronous: bool):
    """The ``fghost`` VM module providing the imports recorded on ``function`` (a
    compiled module's main function), or None when it makes no host calls."""
    record = function.reflection.get(REFLECTION_KEY)
    if not record:
        return None
    rt = rt_.rt
    kernels = [_Kernel(rt_, s, asynchronous) for s in json.loads(record)]
    iface = rt.PyModuleInterface(MODULE, lambda _iface: None)
    for kernel in kernels:
        # a coarse-fences program passes a wait and a signal fence after the tensors
        signature = ("0" + "r" * len(kernel.in_avals) + ("rr" if asynchronous else "")
                     + "_" + "r" * len(kernel.out_avals))
        iface.export(kernel.name, signature, kernel)
    return iface.create()


class _Kernel:
    """One import: NumPy views of the operands -> ``prim.impl`` -> new result buffers."""

    def __init__(self, rt_, record: dict, asynchronous: bool):
        from funcgrad.core.primitive import registry

        self.rt_ = rt_
        self.name = record["name"]
        self.prim = registry[record["prim"]]
        # the operands were checked against the shape rule when the program was traced
        self.impl = getattr(self.prim.impl, "__wrapped__", self.prim.impl)
        self.params = {k: _tuples(v) for k, v in record["params"].items()}
        self.in_avals = [ShapedArray(tuple(s), np.dtype(d)) for s, d in record["in"]]
        self.out_avals = [ShapedArray(tuple(s), np.dtype(d)) for s, d in record["out"]]
        self.asynchronous = asynchronous
        # worked out once: a call costs tens of microseconds, each of them counts
        from funcgrad.core.tensor import aligned_copy
        from funcgrad.lowering.runtime import _storage_dtype, copy_to_device

        self._aligned_copy, self._copy_to_device = aligned_copy, copy_to_device
        self._reads = [(a.shape, _storage_dtype(a.dtype), a.dtype, a.size)
                       for a in self.in_avals]

    def __call__(self, _module_state, *refs):
        rt = self.rt_.rt
        signal = None
        if self.asynchronous:
            *refs, wait, signal = refs
            wait.deref(rt.HalFence).wait()
            signal = signal.deref(rt.HalFence)
        try:
            view_type = rt.HalBufferView
            mapped = [ref.deref(view_type).map() if read[3] else None
                      for ref, read in zip(refs, self._reads, strict=True)]
            arrays = [_host_array(m, *read) for m, read in zip(mapped, self._reads, strict=True)]
            with np.errstate(all="ignore"):
                outs = self.impl(*arrays, **self.params)
            outs = list(outs) if self.prim.multiple_results else [outs]
            results = [self._device_copy(o, a) for o, a in zip(outs, self.out_avals,
                                                                 strict=True)]
        except BaseException as err:
            if signal is not None:  # else the caller would wait for the fence forever
                signal.fail(f"{self.prim.name} on the host: {type(err).__name__}: {err}")
            raise
        if signal is not None:
            signal.signal()
        return results[0].ref if len(results) == 1 else tuple(r.ref for r in results)

    def _device_copy(self, value, aval):
        """A buffer view of a result: copied into 64-byte aligned memory, which the
        run-time takes over without another copy (DLPack)."""
        array = np.asarray(value)
        if array.shape != aval.shape:
            raise ValueError(f"{self.prim.name}: the host kernel returned shape {array.shape},"
                             f" expected {aval.shape}")
        array = array.astype(aval.dtype, copy=False)
        if not array.size:
            return self._copy_to_device(self.rt_, array)
        return self.rt_.device.from_dlpack_capsule(self._aligned_copy(array).__dlpack__())


def _tuples(value):
    """A param as it was before JSON made its tuples lists."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _host_array(mapped, shape, raw, dtype, size):
    """A read-only NumPy view of a mapped operand (valid while ``mapped`` lives), of
    ``shape`` and ``dtype`` stored as ``raw``."""
    if not size:
        return np.empty(shape, dtype)
    array = mapped.asarray(shape, raw)
    array = array.view(dtype) if raw != dtype else array
    array.flags.writeable = False
    return array
