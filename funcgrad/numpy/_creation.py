"""Creation functions: zeros, ones, full, arange, linspace, eye, and friends."""

from __future__ import annotations

import functools
import inspect
import math
import operator

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.devices import CPU
from funcgrad.core.devices import device as _lookup_device
from funcgrad.core.interpreter import ConcretizationError
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.structural import broadcast_in_dim, iota
from funcgrad.core.prims.structural import full as _full
from funcgrad.core.tensor import Tensor, tensor
from funcgrad.numpy._util import asarray as _as_tensor


def _shape(shape) -> tuple:
    if isinstance(shape, Tensor) and shape.ndim == 0 or isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        if isinstance(shape, str):
            raise TypeError
        # integers only (a concrete integer tensor too), as JAX: 2.5 is an error, not 2
        shape = tuple(operator.index(d) for d in shape)
    except ConcretizationError:
        raise  # a traced size: its error names the argument and the fix (static_argnums)
    except (TypeError, ValueError):
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimensions are not allowed: {shape}")
    return shape


def _placed(fn):
    """Give a creation function its ``device=`` argument: built, then put there (a GPU
    copy; on the CPU the tensor is only marked as explicitly placed)."""
    position = list(inspect.signature(fn).parameters).index("device")

    @functools.wraps(fn)
    def create(*args, **kwargs):
        device = kwargs.get("device", args[position] if len(args) > position else None)
        out = fn(*args, **kwargs)
        if device is None:
            return out
        if isinstance(out, tuple):  # linspace(..., retstep=True)
            return (out[0].to(_lookup_device(device)), *out[1:])
        return out.to(_lookup_device(device))

    return create


def _weak_like(x, out, dtype):
    """``out`` weakly typed when ``x`` is and no dtype was asked for (a Python number given
    to jit: the result comes out of jit at the default width, as eagerly and in JAX)."""
    if dtype is None and getattr(x, "weak_type", False):
        return ew.convert_element_type(out, out.dtype, weak_type=True)
    return out


def _like_device(x, out, device=None):
    """``out`` on ``device``, else on the device of ``x`` when ``x`` is a GPU tensor (as
    JAX's ``*_like``)."""
    if device is not None:
        return out.to(_lookup_device(device))
    placed = getattr(x, "device", CPU) if type(x) is Tensor else CPU
    return out if placed == CPU else out.to(placed)


def _dtype_of_fill(value, dtype):
    if dtype is not None:
        return dtypes.canonicalize(dtype)
    if hasattr(value, "dtype"):
        # a weak value (a Python number passed to jit) fills at the default width, as eagerly
        return dtypes.weak_default_width(value.dtype) if getattr(value, "weak_type", False) \
            else value.dtype
    return dtypes.dtype_and_weak(value)[0]


@_placed
def full(shape, fill_value, dtype=None, device=None):
    """A tensor of ``shape`` filled with ``fill_value``.

    >>> fg.full((2, 2), 7.0)
    tensor([[7., 7.],
            [7., 7.]], dtype=float32)
    """
    shape = _shape(shape)
    if isinstance(fill_value, (list, tuple)) or (hasattr(fill_value, "shape")
                                                  and getattr(fill_value, "ndim", 0)):
        value = _as_tensor(fill_value, dtype)  # an array of values, broadcast (as JAX)
        from funcgrad.numpy._shape import broadcast_to

        return broadcast_to(value, shape)
    target = _dtype_of_fill(fill_value, dtype)
    if isinstance(fill_value, (bool, int, float, complex, np.generic)):
        return _full(shape, fill_value, target)
    value = ew.convert_element_type(_as_tensor(fill_value), target)
    return broadcast_in_dim(value, shape, ())


@_placed
def zeros(shape, dtype=None, device=None):
    """A tensor of zeros (float32 by default).

    >>> fg.zeros((2, 3)).shape
    (2, 3)
    """
    return _full(_shape(shape), 0, dtypes.float32 if dtype is None else dtype)


@_placed
def ones(shape, dtype=None, device=None):
    """A tensor of ones (float32 by default)."""
    return _full(_shape(shape), 1, dtypes.float32 if dtype is None else dtype)


@_placed
def empty(shape, dtype=None, device=None):
    """A tensor of the given shape; funcgrad fills it with zeros (tensors are immutable)."""
    return zeros(shape, dtype, device)


def _like(x, shape, dtype):
    x = _as_tensor(x)
    return (x.shape if shape is None else _shape(shape),
            x.dtype if dtype is None else dtypes.canonicalize(dtype))


def zeros_like(x, dtype=None, shape=None, *, device=None):
    """Zeros with the shape and dtype of ``x`` (on ``device``, else where ``x`` is)."""
    shape, like_dtype = _like(x, shape, dtype)
    return _like_device(x, _weak_like(x, _full(shape, 0, like_dtype), dtype), device)


def ones_like(x, dtype=None, shape=None, *, device=None):
    """Ones with the shape and dtype of ``x`` (on ``device``, else where ``x`` is)."""
    shape, like_dtype = _like(x, shape, dtype)
    return _like_device(x, _weak_like(x, _full(shape, 1, like_dtype), dtype), device)


def full_like(x, fill_value, dtype=None, shape=None, *, device=None):
    """``fill_value`` with the shape and dtype of ``x`` (on ``device``, else where ``x`` is)."""
    shape, like_dtype = _like(x, shape, dtype)
    return _like_device(x, _weak_like(x, full(shape, fill_value, like_dtype), dtype), device)


def empty_like(x, dtype=None, shape=None, *, device=None):
    """Same as ``zeros_like`` (tensors are immutable)."""
    return zeros_like(x, dtype, shape, device=device)


def _static(name, value):
    """A concrete number, a NumPy scalar keeping its dtype (arange(np.float64(0), 1) is
    float64, as in NumPy); a traced one raises the error naming its argument and the fix
    (``static_argnums``), as its ``item()`` does."""
    if isinstance(value, np.generic) or not hasattr(value, "item"):
        return value
    return np.dtype(value.dtype).type(value.item())


@_placed
def arange(start, stop=None, step=None, dtype=None, device=None):
    """Evenly spaced values in [start, stop) (Python ints give int32, floats float32).

    >>> fnp.arange(5)
    tensor([0, 1, 2, 3, 4], dtype=int32)
    """
    start = _static("arange", start)
    if stop is None:
        start, stop = 0, start
    stop = _static("arange", stop)
    step = 1 if step is None else _static("arange", step)
    if step == 0:
        raise ValueError("arange: step must not be zero")
    span = (stop - start) / step
    if not math.isfinite(span):
        raise ValueError(f"arange: start={start}, stop={stop}, step={step} give no finite "
                         "number of elements")
    n = max(0, math.ceil(span))
    if dtype is None:
        dtype = dtypes.result_type(start, stop, step)
    dtype = dtypes.canonicalize(dtype)
    if dtype.kind in "iu":
        count = iota(dtype, (n,), 0)
        if any(isinstance(v, (float, np.floating)) for v in (start, step)):
            # NumPy's rule: the first value and the step are the first two values cast
            # (arange(0, 5, 1.5, dtype=int32) is [0, 1, 2, 3], not the cast [0, 1, 3, 4])
            first = int(np.asarray(start).astype(dtype))
            step = int(np.asarray(start + step).astype(dtype)) - first
            start = first
    elif dtypes.is_inexact(dtype):
        count = iota(dtypes.float64 if dtype == dtypes.float64 else dtypes.float32, (n,), 0)
    else:
        raise ValueError(f"arange: dtype {dtype.name} not supported")
    out = count if (start, step) == (0, 1) else count * step + start
    return ew.convert_element_type(out, dtype)


@_placed
def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
    """``num`` evenly spaced values from start to stop (inclusive by default).

    >>> fnp.linspace(0.0, 1.0, 5)
    tensor([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    if not isinstance(num, (int, np.integer)) or isinstance(num, bool):
        raise TypeError(f"linspace: num must be an int, got {num!r}")
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    if dtype is None:
        dtype = dtypes.result_type(start, stop)
        dtype = dtypes.float_dtype_for(dtype)
    dtype = dtypes.canonicalize(dtype)
    # float64 for 64-bit integers (float32 cannot count them); Python numbers straight to
    # it (linspace(-2**40, 2**40, 3, dtype=int64) overflowed the default int32)
    work = dtypes.float_dtype_for(dtype)

    def in_work(v):
        if isinstance(v, (int, float)):
            return _as_tensor(v, work)
        return ew.convert_element_type(_as_tensor(v), work)

    start_t, stop_t = in_work(start), in_work(stop)
    div = (num - 1) if endpoint else num
    shape = np.broadcast_shapes(start_t.shape, stop_t.shape)
    steps = iota(work, (num, *shape), 0)
    from funcgrad.numpy._util import broadcast_to

    lo = broadcast_to(start_t, shape)
    hi = broadcast_to(stop_t, shape)
    lo_b = broadcast_in_dim(lo, (num, *shape), tuple(range(1, len(shape) + 1)))
    hi_b = broadcast_in_dim(hi, (num, *shape), tuple(range(1, len(shape) + 1)))
    step = (hi - lo) / div if div > 0 else (hi - lo) * float("nan")
    if div > 0:
        out = lo_b + steps * broadcast_in_dim(step, (num, *shape), tuple(range(1, len(shape) + 1)))
        if endpoint and num > 1:
            from funcgrad.numpy._elementwise import where

            last = ew.eq(steps, _full(steps.shape, num - 1, work))
            out = where(last, hi_b, out)
    else:
        out = lo_b
    if axis != 0:
        from funcgrad.numpy._shape import moveaxis

        out = moveaxis(out, 0, axis)
    out = ew.convert_element_type(out if dtypes.is_inexact(dtype) else
                                  _floor(out), dtype)
    return (out, step) if retstep else out


def _floor(x):
    from funcgrad.numpy._elementwise import floor

    return floor(x)


def logspace(start, stop, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype=None):
    """``base ** linspace(start, stop, num)``."""
    from funcgrad.numpy._elementwise import power

    out = power(base, linspace(start, stop, num, endpoint))
    return out if dtype is None else out.astype(dtype)


@_placed
def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None):
    """Identity-like 2-d tensor: ones on diagonal ``k``.

    >>> fg.eye(2)
    tensor([[1., 0.],
            [0., 1.]], dtype=float32)
    """
    M = N if M is None else M
    N, M = _shape((N, M))
    if isinstance(k, (float, complex, np.inexact)):
        raise ValueError(f"eye: k (the diagonal) must be an integer, got {k!r}")
    dtype = dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)
    rows = iota(dtypes.int32, (N, M), 0)
    cols = iota(dtypes.int32, (N, M), 1)
    hit = ew.eq(ew.add(rows, _full((N, M), k, dtypes.int32)), cols)
    return ew.convert_element_type(hit, dtype)


def identity(n: int, dtype=None):
    """The n x n identity."""
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    """Ones at and below diagonal ``k``, zeros above."""
    M = N if M is None else M
    N, M = _shape((N, M))
    dtype = dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)
    rows = iota(dtypes.int32, (N, M), 0)
    cols = iota(dtypes.int32, (N, M), 1)
    hit = ew.le(cols, ew.add(rows, _full((N, M), k, dtypes.int32)))
    return ew.convert_element_type(hit, dtype)


def meshgrid(*xs, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
    """Coordinate grids from 1-d coordinate vectors (as ``numpy.meshgrid``); ``sparse``
    gives each grid size 1 along the other axes (they broadcast to the full grids).
    ``copy`` is accepted as JAX's (tensors are immutable).

    >>> [g.shape for g in fnp.meshgrid(fnp.arange(3), fnp.arange(2), sparse=True)]
    [(1, 3), (2, 1)]
    """
    del copy
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: indexing must be 'xy' or 'ij'")
    xs = [_as_tensor(x) for x in xs]
    shape = [x.size for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        dim = i
        if indexing == "xy" and len(xs) >= 2 and i < 2:
            dim = 1 - i
        own = tuple(n if d == dim else 1 for d, n in enumerate(shape)) if sparse else \
            tuple(shape)
        out.append(broadcast_in_dim(x.reshape(-1), own, (dim,)))
    return out


def asarray(a, dtype=None, order=None, *, copy=None, device=None) -> Tensor:
    """``a`` as a Tensor, as ``jnp.asarray``: Tensors (traced ones too) pass through,
    converted to ``dtype`` if given; NumPy arrays and other data are copied, so changing
    a NumPy array afterwards does not change the Tensor.  ``copy=False`` wraps a NumPy
    array's memory without copying it (the caller then promises not to change it).

    >>> fnp.asarray(np.arange(3.0), dtype=fnp.float32)
    tensor([0., 1., 2.], dtype=float32)
    """
    if order not in (None, "K", "A", "C"):
        raise ValueError(f"asarray: order={order!r} is not supported (Tensors are "
                         "C-contiguous); use order=None")
    if device is None and (isinstance(a, Tensor) or copy is False and type(a) is np.ndarray):
        return _as_tensor(a, dtype)  # (a Tensor's conversion is an operation, as astype)
    return tensor(a, dtype, device)


# the public names are this module's own functions (not the helpers it imports)
__all__ = [_name for _name, _value in list(globals().items()) if not _name.startswith("_")
           and getattr(_value, "__module__", None) == __name__]
