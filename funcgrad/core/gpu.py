"""GPU tensors: CuPy arrays as eager buffers, and the moves between host and GPU.

A Tensor on ``cuda:N`` holds a ``cupy.ndarray`` where a CPU tensor holds a NumPy array.
CuPy implements NumPy's dispatch protocols (``__array_ufunc__``, ``__array_function__``),
so most primitives' NumPy implementations run unchanged on CuPy arrays; where one cannot
(it builds NumPy arrays itself, or calls a function CuPy lacks) the operation runs on
host copies and its results are copied back, so every primitive works on the GPU.

Placement follows JAX's rule: a CPU tensor nobody placed explicitly (``fg.tensor(x)``,
constants inside transformation rules) moves to the GPU of the other operands; one placed
with ``device="cpu"`` / ``.to("cpu")`` / ``fg.device_put`` is *committed*, and mixing it
with a GPU tensor raises ``ValueError`` naming both devices, as does mixing two GPUs.

CuPy is imported on first use only (``import funcgrad`` stays fast).
"""

from __future__ import annotations

import weakref

import numpy as np

from funcgrad.core.devices import CPU, Device

_cupy = None
# ids of CPU tensors placed there explicitly (see the module docstring); entries leave
# with their tensor
_COMMITTED: set[int] = set()
# DLPack's device code for CUDA memory
_DLPACK_CUDA = 2


def cupy():
    """The ``cupy`` module (imported on first use)."""
    global _cupy
    if _cupy is None:
        try:
            import cupy as module
        except ImportError as err:  # pragma: no cover - depends on the machine
            raise RuntimeError("GPU tensors need CuPy: pip install 'funcgrad[cuda]' "
                               "(cupy-cuda12x) on a machine with an NVIDIA GPU") from err
        _cupy = module
    return _cupy


def is_gpu_array(buf) -> bool:
    """Whether ``buf`` is a CuPy array (checked without importing CuPy)."""
    return type(buf).__module__.startswith("cupy")


def device_of(buf) -> Device:
    """The device a buffer lives on: ``CPU`` for NumPy arrays, ``cuda:N`` for CuPy."""
    if type(buf) is np.ndarray or not is_gpu_array(buf):
        return CPU
    return Device("cuda", int(buf.device.id))


def to_gpu(buf, device: Device):
    """A copy of ``buf`` (NumPy or CuPy on another GPU) on GPU ``device``."""
    cp = cupy()
    if is_gpu_array(buf):  # on another GPU: through the host, which always works
        buf = to_host(buf)
    with cp.cuda.Device(device.id):
        return cp.asarray(buf)


def contiguous(buf):
    """``buf`` in C order with its own shape: ``contiguous(cupy.zeros(())).shape`` is
    ``()``, where ``cupy.ascontiguousarray``, like NumPy's, gives ``(1,)``, which a compiled
    module then refuses."""
    if buf.flags.c_contiguous:
        return buf
    return cupy().ascontiguousarray(buf).reshape(buf.shape)


def to_host(buf) -> np.ndarray:
    """A host copy of a CuPy array, 64-byte aligned (so jit calls can alias it)."""
    from funcgrad.core.tensor import aligned_empty

    out = aligned_empty(buf.shape, buf.dtype)
    if out.size:
        out[...] = cupy().asnumpy(buf)
    return out


def commit(tensor) -> None:
    """Mark a CPU tensor as explicitly placed: it no longer moves to a GPU silently."""
    key = id(tensor)
    if key not in _COMMITTED:
        _COMMITTED.add(key)
        weakref.finalize(tensor, _COMMITTED.discard, key)


def is_committed(tensor) -> bool:
    return id(tensor) in _COMMITTED


def placement(args, what: str) -> Device:
    """The GPU the operands of one operation share; ``ValueError`` naming both devices
    when they are on different GPUs or a GPU operand meets a committed CPU one."""
    from funcgrad.core.tensor import Tensor

    found: Device | None = None
    found_at = None
    for position, arg in enumerate(args):
        if not isinstance(arg, Tensor):
            continue
        here = arg.device
        if here == CPU and not is_committed(arg):
            continue
        if found is None:
            found, found_at = here, position
        elif here != found:
            raise ValueError(
                f"{what}: operands are on different devices: operand {found_at} is on "
                f"{found} and operand {position} is on {here}; move one with "
                f"t.to({str(found)!r}) or fg.device_put")
    return found if found is not None else CPU


def run_impl(prim, args, values, params):
    """Run ``prim``'s implementation where its GPU operands live (see the module
    docstring); returns the impl's output(s) as CuPy arrays on that GPU."""
    target = placement(args, f"primitive '{prim.name}'")
    if target == CPU:  # only committed CPU tensors and uncommitted ones: plain NumPy
        return prim.impl(*values, **params)
    cp = cupy()
    moved = [to_gpu(v, target) if type(v) is np.ndarray or (is_gpu_array(v) and
                                                            device_of(v) != target) else v
             for v in values]
    with cp.cuda.Device(target.id):
        try:
            out = prim.impl(*moved, **params)
        except (TypeError, AttributeError, NotImplementedError):
            # the NumPy impl cannot take CuPy arrays: run it on host copies
            host = [to_host(v) if is_gpu_array(v) else v for v in moved]
            out = prim.impl(*host, **params)
        if prim.multiple_results:
            return [_on(o, target) for o in out]
        return _on(out, target)


def _on(out, target: Device):
    if is_gpu_array(out):
        return out if device_of(out) == target else to_gpu(out, target)
    return to_gpu(np.asarray(out), target)


class DLPackCapsule:
    """Presents a bare DLPack capsule (as IREE's run-time makes them) through the
    ``__dlpack__`` protocol that ``cupy.from_dlpack`` expects."""

    def __init__(self, capsule, device_id: int):
        self.capsule = capsule
        self.device_id = device_id

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (_DLPACK_CUDA, self.device_id)


def synchronize(device: Device) -> None:
    """Wait for CuPy's work on ``device`` (before another run-time reads its buffers)."""
    cp = cupy()
    with cp.cuda.Device(device.id):
        cp.cuda.get_current_stream().synchronize()


def compute_arch(device: Device) -> str:
    """The IREE CUDA target for a GPU: its ``sm_XY``, or the newest IREE target below it
    (newer GPUs run that target's PTX)."""
    from funcgrad.lowering.compiler import CUDA_ARCHS

    cp = cupy()
    capability = int(cp.cuda.Device(device.id).compute_capability)
    supported = [a for a in CUDA_ARCHS if int(a[3:]) <= capability]
    if not supported:
        raise RuntimeError(f"{device}: compute capability {capability // 10}."
                           f"{capability % 10} is older than IREE's oldest CUDA target "
                           f"({CUDA_ARCHS[0]})")
    return max(supported, key=lambda a: int(a[3:]))
