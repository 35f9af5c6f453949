"""Tensor: the immutable n-d array users hold, a thin handle over one buffer.

This module holds storage, attributes and conversion; the operators and NumPy-style
methods are attached by ``funcgrad.numpy._methods`` (they are compositions of primitives,
so they work unchanged on tracers, which subclass Tensor).
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from funcgrad.core import dtypes, gpu
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.devices import CPU, Device
from funcgrad.core.devices import device as _lookup_device


class Tensor:
    """An immutable n-d array.

    Create one with ``fg.tensor(data)`` or any creation function; combine them with
    operators and ``funcgrad.numpy``.  ``t[0] = 1`` raises: use ``t.at[0].set(1)``.

    >>> t = fg.tensor([[1.0, 2.0]])
    >>> t * 2
    tensor([[2., 4.]], dtype=float32)
    """

    # _buf: the NumPy array (a CuPy array on a GPU); _dev: a device buffer (jit results)
    # whose eager view becomes _buf on first use, so a result fed to the next jit call is
    # never copied
    __slots__ = ("_buf", "_weak", "_dev", "__weakref__")
    # as JAX's arrays: above an ndarray's priority and without __array_ufunc__, NumPy defers
    # `ndarray + Tensor` to Tensor.__radd__, while np.exp(t) takes a host copy (__array__)
    __array_priority__ = 100
    __hash__ = None  # elementwise __eq__, like NumPy and JAX arrays

    def __getattr__(self, name):
        # only reached when a slot is unset: a device-resident result's eager view
        if name == "_buf":
            buf = object.__getattribute__(self, "_dev").eager_buffer()
            self._buf = buf
            return buf
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")

    # -- attributes -------------------------------------------------------------------
    # a device-resident result answers from its DeviceBuffer: asking a GPU result's shape
    # must not make its eager (CuPy) view
    @property
    def aval(self) -> ShapedArray:
        meta = self._buf if self._dev is None else self._dev
        return ShapedArray(meta.shape, meta.dtype, self._weak)

    @property
    def shape(self) -> tuple:
        return (self._buf if self._dev is None else self._dev).shape

    @property
    def dtype(self) -> np.dtype:
        return (self._buf if self._dev is None else self._dev).dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def weak_type(self) -> bool:
        return self._weak

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def device(self) -> Device:
        placed = getattr(self._dev, "device", None)
        if placed is not None:
            return placed
        buf = self._buf
        return CPU if type(buf) is np.ndarray else gpu.device_of(buf)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # -- conversion to host values ----------------------------------------------------
    def _host(self) -> np.ndarray:
        """The value as a host array (a copy only for a GPU tensor)."""
        buf = self._buf
        return buf if type(buf) is np.ndarray else gpu.to_host(buf)

    def numpy(self) -> np.ndarray:
        """The value as a read-only host ``np.ndarray`` (no copy on the CPU)."""
        view = self._host().view()
        view.flags.writeable = False
        return view

    def block_until_ready(self) -> Tensor:
        """Wait until the value is computed and return the tensor, as JAX's method.

        A jit call returns once its results are computed, so only eager GPU work
        (queued on CuPy's stream) is waited for.

        >>> fg.jit(lambda x: x * 2)(fg.ones(3)).block_until_ready()
        tensor([2., 2., 2.], dtype=float32)
        """
        if self._dev is None and type(self._buf) is not np.ndarray:
            gpu.synchronize(self.device)
        return self

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"Unable to avoid a copy while converting a {arr.dtype} "
                                 f"tensor to {np.dtype(dtype)} (copy=False)")
            return arr.astype(dtype)
        if copy:
            return arr.copy()
        return arr

    def item(self, *index):
        """The value of a one-element tensor (or of the element at ``index``, as NumPy's
        ``item``) as a Python scalar."""
        if index:
            return self._host().item(*index)
        if self.size != 1:
            raise ValueError(f"item(): only one-element tensors convert to a Python scalar, "
                             f"got shape {self.shape}")
        return self._host().reshape(()).item()

    def tolist(self):
        """The value as nested Python lists."""
        return self._host().tolist()

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor with shape {self.shape} is "
                             "ambiguous; use fnp.any(t) or fnp.all(t)")
        return bool(self._host().reshape(()))

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if not dtypes.is_integer(self.dtype) or self.ndim != 0:
            raise TypeError(f"only 0-d integer tensors can be used as an index, "
                            f"got {self.dtype.name}{list(self.shape)}")
        return int(self._host())

    def __repr__(self) -> str:
        buf = self._host()
        if buf.dtype == dtypes.bfloat16:  # print like other floats (ml_dtypes drops the ".")
            buf = buf.astype(np.float32)
        body = np.array2string(buf, separator=", ", prefix="tensor(",
                               threshold=1000, edgeitems=3)
        placed = self.device
        where = "" if placed == CPU else f", device={str(placed)!r}"
        shape = f", shape={self.shape}" if self.size == 0 and self.ndim > 1 else ""
        return f"tensor({body}{shape}, dtype={self.dtype.name}{where})"

    def __str__(self) -> str:
        return str(self._host())

    def __format__(self, spec: str) -> str:
        if type(self) is not Tensor:  # a tracer (f"{x}" in a traced function): its str
            return format(str(self), spec)
        if self.ndim == 0:  # shortest repr of the dtype (float32 1.3, not 1.2999999523...)
            value = self._host()[()]
            return str(value) if not spec else format(value.item(), spec)
        return format(str(self), spec)

    # -- immutability -----------------------------------------------------------------
    def __setitem__(self, index, value):
        # the value itself in the suggestion when it is a Python scalar (t.at[0].set(1))
        shown = repr(value) if isinstance(value, (bool, int, float, complex)) else "v"
        raise TypeError(
            "funcgrad tensors are immutable: `t[idx] = v` is not supported; use the "
            f"functional update `t = t.at[{_index_text(index)}].set({shown})` instead")

    def __delitem__(self, index):
        raise TypeError("funcgrad tensors are immutable; build a new one instead")

    def __reduce__(self):
        return (_rebuild, (self._host(), self._weak))

    def __copy__(self) -> Tensor:
        return self

    def __deepcopy__(self, memo) -> Tensor:
        return self

    def to(self, device) -> Tensor:
        """This tensor on ``device`` (``"cpu"``, ``"cuda:0"`` or a ``Device``): a copy
        when it lives elsewhere, itself when it is already there.

        >>> fg.ones(3).to("cpu").device
        device('cpu')
        """
        target = _lookup_device(device)
        if type(self) is not Tensor:  # a tracer: placement is the caller's business
            return self
        if target == self.device:
            if target == CPU:
                gpu.commit(self)
            return self
        if target == CPU:
            moved = wrap(gpu.to_host(self._buf), self._weak)
            gpu.commit(moved)
            return moved
        return wrap(gpu.to_gpu(self._buf, target), self._weak)


def _index_text(index) -> str:
    def one(i):
        if isinstance(i, slice):
            parts = ["" if p is None else str(p) for p in (i.start, i.stop, i.step)]
            return ":".join(parts[:2] if i.step is None else parts)
        return "..." if i is Ellipsis else repr(i)

    if isinstance(index, tuple):
        return ", ".join(one(i) for i in index)
    return one(index)


def wrap_device(buffer, weak: bool = False) -> Tensor:
    """A Tensor over a device buffer (a jit result); its host view is made on first use."""
    t = _new(Tensor)
    t._dev = buffer
    t._weak = weak
    return t


def device_buffer(t: Tensor):
    """The device buffer behind ``t``, or None for a host tensor."""
    try:
        return t._dev
    except AttributeError:
        return None


def _rebuild(arr, weak) -> Tensor:
    return wrap(np.array(arr), weak)


_new = object.__new__


def wrap(buf, weak: bool = False) -> Tensor:
    """Wrap a NumPy array (owned by funcgrad from now on) into a Tensor; no copy."""
    if type(buf) is not np.ndarray and not gpu.is_gpu_array(buf):
        buf = np.asarray(buf)
    t = _new(Tensor)
    t._buf = buf
    t._weak = weak
    t._dev = None
    return t


def _list_to_array(data, keep_default: bool = True) -> np.ndarray:
    """Nested Python lists/tuples to an array with JAX's defaults for Python scalars."""
    try:
        arr = np.array(data)
    except ValueError as err:
        raise ValueError(f"fg.tensor: ragged nested sequence (the sub-lists have different "
                         f"lengths), cannot make a rectangular tensor: {err}") from None
    if arr.dtype == object:
        leaves = list(_flatten_list(data))
        huge = [x for x in leaves if type(x) is int and not -2**63 <= x < 2**64]
        if huge:  # NumPy keeps ints beyond 64 bits as Python objects
            raise OverflowError(f"fg.tensor: Python int {huge[0]} does not fit any integer "
                                "dtype (at most 64 bits); use a float")
        kinds = sorted({type(x).__name__ for x in leaves})
        raise TypeError(f"fg.tensor: cannot convert a sequence holding {', '.join(kinds)} "
                        "values to a tensor; use numbers, bools, tensors or arrays")
    if arr.dtype.kind in "US":
        raise TypeError("fg.tensor: strings cannot be converted to a tensor")
    if keep_default and _only_python_scalars(data):
        default = {"f": dtypes.float32, "i": dtypes.int32, "c": dtypes.complex64}.get(
            arr.dtype.kind
        )
        if default is not None and arr.dtype != default:
            if arr.dtype.kind == "i" and arr.size and (
                    arr.max() > np.iinfo(np.int32).max or arr.min() < np.iinfo(np.int32).min):
                raise OverflowError("fg.tensor: Python int too large for the default int32; "
                                    "pass dtype=fg.int64")
            arr = arr.astype(default)
    return arr


def _flatten_list(data):
    if isinstance(data, (list, tuple)):
        for x in data:
            yield from _flatten_list(x)
    else:
        yield data


def _only_python_scalars(data) -> bool:
    return all(isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)
               for x in _flatten_list(data))


def to_numpy_array(data, dtype=None) -> np.ndarray:
    """Any array-like (Tensor, ndarray, scalar, nested list) to a fresh host array."""
    if isinstance(data, Tensor):
        arr = np.asarray(data)
    elif isinstance(data, (bool, int, float, complex)) and not isinstance(data, np.generic):
        if dtype is None:
            dtype, _ = dtypes.dtype_and_weak(data)
        arr = np.asarray(data)
        if isinstance(data, int) and not isinstance(data, bool) and dtype == dtypes.int32 and not (
                -(2**31) <= data < 2**31):
            raise OverflowError(f"fg.tensor: Python int {data} does not fit the default int32; "
                                "pass dtype=fg.int64")
    elif isinstance(data, (list, tuple, range)):
        data = list(data) if type(data) is range else data
        if any(isinstance(x, Tensor) for x in _flatten_list(data)):
            data = _tensors_to_arrays(data)
        arr = _list_to_array(data, keep_default=dtype is None)
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)
        if arr.dtype == object:
            raise TypeError("fg.tensor: object arrays cannot be converted to a tensor")
    elif hasattr(data, "__array__") or hasattr(data, "__dlpack__"):
        arr = np.asarray(data)
    else:
        raise TypeError(f"fg.tensor: cannot convert {type(data).__name__} to a tensor; pass "
                        "a number, a (nested) list, a NumPy array or a Tensor")
    if dtype is not None:
        target = dtypes.canonicalize(dtype)
        if arr.dtype != target:
            if (target.kind in "iu" and arr.dtype.kind in "iu" and arr.size
                    and isinstance(data, (bool, int, list, tuple))):
                _check_fits(arr, target)  # Python ints out of range raise, as NumPy 2
            if (arr.dtype.kind == "c" and target.kind != "c"
                    and isinstance(data, (complex, list, tuple))):
                # NumPy and JAX refuse Python complex numbers for a real dtype
                raise TypeError(f"fg.tensor: cannot convert complex values to "
                                f"{target.name}; take .real (or fnp.real) first, or pass "
                                "a complex dtype")
            arr = arr.astype(target)
    else:
        if not arr.dtype.isnative:  # big-endian data (FITS, some HDF5): native order
            arr = arr.astype(arr.dtype.newbyteorder("="))
        dtypes.canonicalize(arr.dtype)  # raises ValueError on unsupported dtypes
    return arr


def _check_fits(arr: np.ndarray, target: np.dtype) -> None:
    info = np.iinfo(target)
    low, high = int(arr.min()), int(arr.max())
    if low < info.min or high > info.max:
        bad = high if high > info.max else low
        raise OverflowError(f"fg.tensor: Python integer {bad} out of bounds for "
                            f"{target.name} (range {info.min}..{info.max})")


def _tensors_to_arrays(data):
    if isinstance(data, Tensor):
        return np.asarray(data)
    if isinstance(data, (list, tuple)):
        return [_tensors_to_arrays(x) for x in data]
    return data


def tensor(data, dtype=None, device=None) -> Tensor:
    """Make a Tensor from data: a number, nested lists, a NumPy array or a Tensor.

    Python floats become float32 and ints int32 (as JAX); NumPy arrays keep their dtype.

    >>> fg.tensor([[1, 2], [3, 4]], dtype=fg.float64)
    tensor([[1., 2.],
            [3., 4.]], dtype=float64)
    """
    if device is not None:
        return tensor(data, dtype).to(device)
    if type(data) is Tensor and (dtype is None or dtypes.canonicalize(dtype) == data.dtype):
        return data
    if isinstance(data, Tensor) and (type(data) is not Tensor or data.device != CPU):
        # a tracer or a GPU tensor: conversion is an operation (it stays where it is)
        from funcgrad.core.prims.elementwise import convert_element_type

        return data if dtype is None else convert_element_type(data, dtypes.canonicalize(dtype))
    if gpu.is_gpu_array(data):  # a CuPy array: copied (the caller may mutate theirs)
        return wrap(data.astype(dtypes.canonicalize(dtype or data.dtype), copy=True))
    if isinstance(data, (list, tuple)) and not _only_python_scalars(data):
        leaves = list(_flatten_list(data))
        if dtype is None and all(isinstance(x, (Tensor, np.ndarray, np.generic, bool, int,
                                                float, complex)) for x in leaves):
            # the dtype an operation on the elements would give (JAX's promotion, Python
            # numbers weak): [fg.tensor(1.0), 2.0] is float32, not NumPy's float64
            dtype = dtypes.result_type(*leaves)
        if any(isinstance(x, Tensor) and (type(x) is not Tensor or x.device != CPU)
               for x in leaves):  # traced or on a GPU: built by operations (differentiable)
            return _stack_nested(data, dtypes.canonicalize(dtype))
    arr = to_numpy_array(data, dtype)
    if isinstance(data, (np.ndarray, list, tuple)) or arr.base is not None:
        arr = aligned_copy(arr)  # the caller may mutate their array afterwards
    # a Python number stays weakly typed, as jnp.array(2.0): fg.tensor(2.0) + a float16
    # tensor is float16
    weak = dtype is None and type(data) in (int, float, complex)
    return wrap(arr, weak)


def _stack_nested(data, dtype) -> Tensor:
    """Nested lists holding traced (or GPU) tensors, stacked by operations."""
    from funcgrad.numpy import asarray, stack

    if isinstance(data, (list, tuple)):
        return stack([_stack_nested(x, dtype) for x in data])
    return asarray(data).astype(dtype)


ALIGNMENT = 64


def data_address(array: np.ndarray) -> int:
    """Where a writeable C-contiguous non-empty ``array``'s data starts in memory; its
    dtype must be one of NumPy's own (ctypes refuses bfloat16's buffer format).

    (A ctypes view of the buffer: 0.8 us, against 3-4 us for ``__array_interface__`` or
    ``.ctypes``, which build dictionaries and objects; jit calls ask for each input.)"""
    return ctypes.addressof(ctypes.c_char.from_buffer(array))


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on a 64-byte boundary, so a
    jit call can hand it to the run-time without copying (the run-time requires it)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize  # (several us quicker than np.prod)
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = -data_address(raw) % ALIGNMENT
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def aligned_copy(arr: np.ndarray) -> np.ndarray:
    """A 64-byte-aligned, C-contiguous copy of ``arr`` (see ``aligned_empty``)."""
    out = aligned_empty(arr.shape, arr.dtype)
    out[...] = arr
    return out


asarray = tensor
