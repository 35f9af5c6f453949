"""Running compiled modules with the IREE run-time, and device-resident buffers.

``Executable`` invokes a function through the low-level ``VmContext.invoke`` with
prepared argument lists (the high-level invoker costs microseconds per call).  Small
functions run on the ``local-sync`` driver (no thread wake-up), heavy ones on
``local-task`` (all cores).  Results stay ``DeviceBuffer``s inside Tensors until NumPy
needs them; feeding one to the next call costs no copy.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.tensor import ALIGNMENT, data_address
from funcgrad.lowering import host_calls

_MPI_LAUNCHER_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPIEXEC_HOSTNAME")
_RUNTIMES: dict[str, object] = {}
_LOCK = threading.Lock()
# key -> handler(key, list of NumPy arrays) for runtime tensor traces (fg.debug.print)
TRACE_HANDLERS: dict[str, object] = {}


class _Runtime:
    """One IREE device: ``local-sync``/``local-task`` (the CPU) or ``cuda:N``; its VM
    instance, HAL device and HAL module."""

    def __init__(self, driver: str):
        import iree.runtime as rt

        from funcgrad.core.devices import CPU, Device

        _quiet_shutdown()
        self.rt = rt
        self.device_name = CPU
        # under mpiexec the run-time would try to open its own MPI channel (and fail to
        # create the device); funcgrad.distributed does the communication, so hide the
        # launcher's variables while the device is created
        hidden = {k: os.environ.pop(k) for k in _MPI_LAUNCHER_VARIABLES if k in os.environ}
        try:
            if driver.startswith("cuda"):
                index = int(driver.partition(":")[2] or 0)
                self.device_name = Device("cuda", index)
                self.config = rt.Config(device=_cuda_device(rt, index))
            else:
                _worker_stacks(rt)
                self.config = rt.Config(driver)
        finally:
            os.environ.update(hidden)
        self.instance = self.config.vm_instance
        self.device = self.config.device
        self._sink = rt.HalModuleDebugSink(self._on_trace)
        self.hal_module = rt.create_hal_module(self.instance, self.device,
                                               debug_sink=self._sink)
        self.allocator = self.device.allocator


    def _on_trace(self, key, views):
        handler = TRACE_HANDLERS.get(key)
        if handler is None:
            return
        arrays = [np.array(self.rt.DeviceArray(self.device, v, implicit_host_transfer=True)
                           .to_host()) for v in views]
        handler(key, arrays)


def _cuda_device(rt, index: int):
    """IREE's device for GPU ``index``, allocating the way measured fastest on an H100.

    Synchronous allocations behind IREE's caching allocator: buffers allocated from CUDA's
    stream-ordered pools (IREE's default) cannot be exported by DLPack, so every eager use
    of a jit result went through the host, and each call paid for its allocations (a 16M
    elementwise call 0.50 -> 0.33 ms, a 1K one 0.13 -> 0.09 ms).  A freed buffer stays in
    the cache for the next call of the same sizes."""
    # read when the driver creates a device; only the cuda driver reads cuda_* flags
    rt.flags.parse_flags("--cuda_async_allocations=false")
    driver = rt.get_driver("cuda")
    if index == 0:  # the default CUDA device is ordinal 0; others by their URI
        return driver.create_default_device(allocators=["caching"])
    return driver.create_device_by_uri(f"cuda://{index}", allocators=["caching"])


_WORKER_STACK_BYTES = 512 * 1024
_worker_stacks_set = False


def _worker_stacks(rt):
    """Give IREE's CPU worker threads 512 KiB of stack (its default minimum is 128 KiB),
    a wide margin over the 64 KiB a compiled dispatch may allocate (compiler.py); read when
    the first CPU device is created."""
    global _worker_stacks_set
    if not _worker_stacks_set:
        rt.flags.parse_flags(f"--task_worker_stack_size={_WORKER_STACK_BYTES}")
        _worker_stacks_set = True


def _quiet_shutdown():
    """IREE objects still alive at interpreter exit make nanobind print a page of "leaked"
    warnings; they are not leaks of ours (the process is ending), so silence them."""
    try:
        from iree._runtime_libs import _runtime

        _runtime.disable_leak_checker()
    except Exception:
        pass


def runtime(driver: str) -> _Runtime:
    with _LOCK:
        found = _RUNTIMES.get(driver)
        if found is None:
            found = _RUNTIMES[driver] = _Runtime(driver)
        return found


class DeviceBuffer:
    """A buffer owned by the IREE run-time (a jit result): shape, dtype, lazy host view."""

    __slots__ = ("runtime", "view", "shape", "dtype", "device", "_host")

    def __init__(self, rt: _Runtime, view, shape, dtype):
        self.runtime = rt
        self.view = view
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.device = rt.device_name
        self._host = None

    def eager_buffer(self):
        """The buffer eager operations use: the host view on the CPU, a CuPy array
        sharing this buffer (DLPack; a copy where that fails) on a GPU."""
        if self.device.platform == "cpu":
            return self.to_numpy()
        from funcgrad.core import gpu

        try:
            capsule = self.runtime.device.create_dlpack_capsule(
                self.view, gpu._DLPACK_CUDA, self.device.id)
            array = gpu.cupy().from_dlpack(gpu.DLPackCapsule(capsule, self.device.id))
            if array.dtype != self.dtype:  # bfloat16/bool travel as integer storage
                array = array.view(self.dtype)
            return array.reshape(self.shape)
        except Exception:
            return gpu.to_gpu(self.to_numpy(), self.device)

    def to_numpy(self) -> np.ndarray:
        """The host array: a read-only view of the mapped buffer (no copy on the CPU).

        The array's base owns the mapping and the buffer, so it (and any view of it) stays
        valid after this DeviceBuffer and its Tensor are gone; the run-time's own array
        would point into unmapped memory then.
        """
        if self._host is None and self.device.platform != "cpu":
            # a GPU buffer: copied to the host (bfloat16/bool arrive as integer storage)
            array = np.array(self.runtime.rt.DeviceArray(
                self.runtime.device, self.view, implicit_host_transfer=True).to_host())
            array = array.view(self.dtype).reshape(self.shape)
            array.flags.writeable = False
            self._host = array
        if self._host is None:
            raw = _storage_dtype(self.dtype)
            mapped = self.view.map()
            array = np.asarray(_Mapping(mapped, self.view, mapped.asarray(self.shape, raw)))
            array = array.view(self.dtype) if raw != self.dtype else array
            array.flags.writeable = False
            self._host = array
        return self._host


def importable(array: np.ndarray) -> bool:
    """Whether the run-time can use ``array``'s memory in place (by DLPack): contiguous,
    64-byte aligned, writeable (DLPack refuses read-only arrays, e.g. mapped results) and
    not bfloat16."""
    return bool(array.flags.c_contiguous and array.size and array.flags.writeable
                and array.dtype != dtypes.bfloat16  # (before data_address: see there)
                and data_address(array) % ALIGNMENT == 0)


def copy_to_device(rt_: _Runtime, array: np.ndarray):
    """Copy a host array into a new buffer view of ``rt_``'s device."""
    rt = rt_.rt
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
        array = array.copy()
    raw = _storage_dtype(array.dtype)
    element = rt.array_interop.map_dtype_to_element_type(
        array.dtype if raw == array.dtype or array.dtype == np.bool_ else raw)
    if array.dtype == dtypes.bfloat16:
        element = rt.HalElementType.BFLOAT_16
        array = array.view(np.uint16)
    return rt_.allocator.allocate_buffer_copy(
        memory_type=rt.MemoryType.DEVICE_LOCAL, allowed_usage=rt.BufferUsage.DEFAULT,
        device=rt_.device, buffer=array, element_type=element)


class _Mapping:
    """Keeps a mapped device buffer alive for as long as NumPy arrays use its memory."""

    def __init__(self, mapped, view, array):
        self.mapped = mapped
        self.view = view
        self.__array_interface__ = array.__array_interface__


def _storage_dtype(dtype):
    # the HAL maps bfloat16 and bool onto same-width integer storage
    if dtype == dtypes.bfloat16:
        return np.dtype(np.uint16)
    if dtype == np.bool_:
        return np.dtype(np.uint8)
    return dtype


# Results at least this large get their buffer from funcgrad (passed in as storage,
# ``iree.abi.output``), backed by transparent huge pages as NumPy backs its large arrays: the
# run-time's own allocations fault in 4 KiB pages, and a kernel writing fresh memory that way
# ran 3.5x slower here (343 MB written: 90 -> 25 ms a call; per-example gradients of an MLP:
# 165 -> 50 ms).  Smaller results are left to the run-time: glibc serves allocations under
# its largest mmap threshold (32 MiB) from a heap that reuses freed memory, already faulted
# in, where fresh storage would be faulted in again every call (a 1024^3 GEMM's 4 MiB
# result: 1.065x JAX's time with storage passed in, 1.05x without, medians of paired runs).
OUTPUT_STORAGE_BYTES = 1 << 25


_BYTE = np.dtype(np.uint8)
_HUGE_PAGE = 1 << 21
_MADV_HUGEPAGE = 14  # Linux


def _madvise():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        return madvise
    except (OSError, AttributeError):
        return None


_MADVISE = _madvise() if sys.platform.startswith("linux") else None


def _advise_huge_pages(address: int, nbytes: int):
    """Ask Linux to back the whole 2 MiB pages inside ``[address, address + nbytes)`` with
    transparent huge pages (as NumPy does for its large arrays); elsewhere a no-op."""
    start = -(-address // _HUGE_PAGE) * _HUGE_PAGE
    end = (address + nbytes) // _HUGE_PAGE * _HUGE_PAGE
    if _MADVISE is not None and end > start:
        _MADVISE(start, end - start, _MADV_HUGEPAGE)  # advice only: a failure changes nothing


def output_storage_for(out_avals) -> tuple:
    """The results worth passing storage for: large, and not bool or bfloat16 (the
    run-time maps those onto integer storage)."""
    return tuple(i for i, a in enumerate(out_avals)
                 if a.size * a.dtype.itemsize >= OUTPUT_STORAGE_BYTES
                 and a.dtype not in (np.bool_, dtypes.bfloat16))


class Executable:
    """A compiled function ready to call on buffers."""

    def __init__(self, vmfb: bytes, out_avals, driver: str = "local-sync", name: str = "main",
                 output_storage=(), asynchronous: bool = False):
        rt_ = runtime(driver)
        rt = rt_.rt
        self.rt = rt_
        # compiled with coarse fences (compiler.ASYNC_FLAG): the call returns at once and
        # ``_await`` waits for its signal fence
        self.asynchronous = asynchronous
        if asynchronous:
            self._fence = rt.HalFence
            self._expected_s = 0.0
        self.vm_module = rt.VmModule.copy_buffer(rt_.instance, vmfb)
        self.function = self.vm_module.lookup_function(name)
        # the NumPy/LAPACK kernels its host calls run (funcgrad.lowering.host_calls)
        host = host_calls.host_module(rt_, self.function, asynchronous)
        modules = [rt_.hal_module] + ([host] if host is not None else []) + [self.vm_module]
        self.context = rt.VmContext(rt_.instance, modules=modules)
        self.out_avals = list(out_avals)
        self._list = rt.VmVariantList
        self._view_type = rt.HalBufferView
        self._map_type = rt.array_interop.map_dtype_to_element_type
        self._usage = rt.BufferUsage.DEFAULT
        self._device = rt_.device_name
        # results the module writes into memory passed in by the caller (see
        # ``output_storage_for``): shape, size in bytes and HAL element type of each
        self.output_storage = [(a.shape, a.size * a.dtype.itemsize, self._map_type(a.dtype))
                               for a in (self.out_avals[i] for i in output_storage)]
        self._storage_memory = rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE

    def to_device(self, array: np.ndarray):
        """Copy a host array into a device buffer view."""
        return copy_to_device(self.rt, array)

    def import_or_copy(self, array):
        """A buffer view over ``array``: on a CPU driver aliased without a copy when it is
        64-byte aligned and contiguous (funcgrad allocates user data that way), else a
        copy.  Importing unaligned memory is refused by the run-time, so alignment is
        checked first.  A CuPy array is imported by DLPack after CuPy's stream has
        finished writing it."""
        if type(array) is not np.ndarray:
            from funcgrad.core import gpu

            if gpu.is_gpu_array(array):
                gpu.synchronize(gpu.device_of(array))
                if self.rt.device_name.platform == "cuda" and array.dtype != dtypes.bfloat16:
                    try:
                        return self.rt.device.from_dlpack_capsule(
                            gpu.contiguous(array).__dlpack__())
                    except Exception:
                        pass  # not importable here: copied through the host below
                array = gpu.to_host(array)
        if (type(array) is np.ndarray and self.rt.device_name.platform == "cpu"
                and importable(array)):
            # (a GPU kernel handed host memory this way faulted: CUDA_ERROR_ILLEGAL_ADDRESS
            # on an H200, for a CPU tensor captured by a jitted function, say)
            return self.rt.device.from_dlpack_capsule(array.__dlpack__())
        return self.to_device(array)

    def _huge_page_storage(self, shape, nbytes, element):
        """A run-time buffer for a large result, its memory marked for huge pages.

        The run-time allocates it (so it owns the memory, which stays valid as long as any
        result aliasing it, and every access a result may need is allowed: NumPy memory
        imported by DLPack or ``import_host_allocation`` fails the first, or the second);
        funcgrad only asks the kernel to back it with 2 MiB pages."""
        buffer = self.rt.allocator.allocate_buffer(
            memory_type=self._storage_memory, allowed_usage=self._usage, allocation_size=nbytes)
        view = self._view_type(buffer, shape, element)
        mapped = view.map()
        _advise_huge_pages(mapped.asarray((nbytes,), _BYTE).ctypes.data, nbytes)
        return view

    def __call__(self, args):
        """Run on ``args`` (NumPy arrays or DeviceBuffers of this run-time); returns
        DeviceBuffers."""
        arg_list = self._list(len(args))
        for a in args:
            # any CPU driver's buffers work on the other's (the same host memory, complete
            # when a call returns): a local-sync result feeds a local-task call uncopied
            if isinstance(a, DeviceBuffer) and a.device is self._device:
                arg_list.push_ref(a.view)
            else:
                host = a.to_numpy() if isinstance(a, DeviceBuffer) else a
                arg_list.push_ref(self.import_or_copy(host))
        for shape, nbytes, element in self.output_storage:
            arg_list.push_ref(self._huge_page_storage(shape, nbytes, element))
        ret_list = self._list(len(self.out_avals))
        if self.asynchronous:
            # a semaphore per call: calls from several threads cannot signal out of order
            done = self._fence.create_at(self.rt.device.create_semaphore(0), 1)
            arg_list.push_ref(self._fence(1))  # nothing to wait for
            arg_list.push_ref(done)
            self.context.invoke(self.function, arg_list, ret_list)
            self._await(done)
        else:
            self.context.invoke(self.function, arg_list, ret_list)
        return [DeviceBuffer(self.rt, ret_list.get_as_object(i, self._view_type), aval.shape,
                             aval.dtype)
                for i, aval in enumerate(self.out_avals)]

    def _await(self, done):
        """Wait for a call's fence by sleeping and polling, not in IREE's blocking wait.

        IREE's blocking wait lets the calling thread take part in scheduling the workers'
        tasks; with as many workers as cores that third busy thread takes a core from a
        worker, and a dispatch waits for it: 15-25% of the calls of an MLP training step
        took 5-7 ms instead of 2.2 ms, the caller spending 3.5 ms of CPU in the wait (also
        when the wait only began near the end).  So the caller sleeps through the call's
        expected length (its shortest recent wait) less a margin wider than a sleep
        overshoots, then polls, at intervals that grow with any overrun (by 1/16 of it, so
        a call longer than expected is slowed by no more than that).  The margin keeps the
        estimate honest: a sleep that ended late would be measured as the call's length and
        never shrink."""
        if done.wait(timeout=0):
            return
        _precise_sleeps()
        expected = self._expected_s
        start = time.perf_counter()
        nap = expected * 0.9 - _WAKE_MARGIN_S
        if nap > _POLL_S:
            time.sleep(nap)
        waited = time.perf_counter() - start
        while not done.wait(timeout=0):
            time.sleep(min(max(_POLL_S, (waited - expected) / 16), _POLL_MAX_S))
            waited = time.perf_counter() - start
        # creeps up by at most 5% a call: one slow call does not stretch the next sleeps
        self._expected_s = waited if not expected else min(waited, expected * 1.05)


_POLL_S = 20e-6
_POLL_MAX_S = 2e-3
_WAKE_MARGIN_S = 60e-6  # more than a sleep overshoots with a 1 us timer slack
_PR_SET_TIMERSLACK = 29  # Linux prctl
_precise = threading.local()


def _precise_sleeps():
    """Let this thread's sleeps end within a microsecond of their time (Linux's default
    timer slack of 50 us is as long as a short compiled call); elsewhere a no-op."""
    if getattr(_precise, "done", False):
        return
    _precise.done = True
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1000, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # sleeps stay as precise as they were: only the wait's latency suffers
