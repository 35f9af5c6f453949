"""Operators and NumPy-style methods of Tensor, attached from one table.

They live here, not in tensor.py, because they are funcgrad.numpy functions; tracers
inherit them, so user code behaves the same inside every transformation.
"""

from __future__ import annotations

from sys import getrefcount

import numpy as np

from funcgrad import numpy as fnp
from funcgrad.core import dtypes, reuse
from funcgrad.core import interpreter as _interp
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.tensor import Tensor, wrap
from funcgrad.numpy import _indexing, _util


def _swap(fn):
    return lambda self, other: fn(other, self)


def _fast_binary(prim, fallback, reflected: bool = False):
    """Operator with eager fast paths: two same-shape, same-dtype concrete tensors, or a
    float tensor and a Python scalar (weak, so the tensor's dtype wins, as NumPy 2 and
    JAX agree); the result goes into a temporary operand's buffer when one is free."""
    impl = prim.impl
    eager = _interp.EAGER
    thread_state = _interp._state
    state = _interp.config
    ufunc = isinstance(impl, np.ufunc)
    self_count = reuse.REFLECTED_SELF if reflected else reuse.OPERATOR_SELF
    other_count = reuse.OPERATOR_OTHER
    big = reuse.MIN_BYTES
    new = object.__new__
    ndarray = np.ndarray

    def op(self, other):
        if (type(self) is Tensor and thread_state.interpreter is eager
                and not state.debug_nans):
            a = self._buf
            other_type = type(other)
            if type(a) is not ndarray:  # a GPU tensor: the interpreter places the operation
                other_type = None
            if other_type is Tensor:
                b = other._buf
                if a.dtype is b.dtype and a.shape == b.shape and type(b) is ndarray:
                    if ufunc and not reflected and a.nbytes >= big:
                        # counted in statements of their own: an argument list holding
                        # ``self`` would add a reference (see funcgrad.core.reuse)
                        self_refs = getrefcount(self)
                        other_refs = getrefcount(other)
                        if reuse.reusable(self, self_refs, self_count, a, a.dtype, a.shape):
                            result = impl(a, b, out=a)
                        elif reuse.reusable(other, other_refs, other_count, b, a.dtype,
                                            a.shape):
                            result = impl(a, b, out=b)
                        else:
                            result = impl(a, b)
                    else:
                        result = impl(a, b)
                    t = new(Tensor)
                    t._buf = result if type(result) is np.ndarray else np.asarray(result)
                    t._weak = self._weak and other._weak
                    t._dev = None
                    return t
            elif (other_type is float or other_type is int) and a.dtype.kind == "f" and ufunc:
                out = None
                if a.nbytes >= big:
                    self_refs = getrefcount(self)
                    if reuse.reusable(self, self_refs, self_count, a, a.dtype, a.shape):
                        out = a
                if reflected:
                    result = impl(other, a, out=out) if out is not None else impl(other, a)
                else:
                    result = impl(a, other, out=out) if out is not None else impl(a, other)
                return wrap(result if type(result) is np.ndarray else np.asarray(result),
                            self._weak)
        if not isinstance(other, _OPERAND_TYPES) and not hasattr(other, "__array__"):
            return NotImplemented
        return fallback(other, self) if reflected else fallback(self, other)

    op.defers_unknown = True
    return op


_OPERATORS = {
    "__add__": _fast_binary(ew.add_p, fnp.add),
    "__radd__": _fast_binary(ew.add_p, fnp.add, reflected=True),
    "__sub__": _fast_binary(ew.sub_p, fnp.subtract),
    "__rsub__": _fast_binary(ew.sub_p, fnp.subtract, reflected=True),
    "__mul__": _fast_binary(ew.mul_p, fnp.multiply),
    "__rmul__": _fast_binary(ew.mul_p, fnp.multiply, reflected=True),
    "__truediv__": fnp.divide,
    "__rtruediv__": _swap(fnp.divide),
    "__floordiv__": fnp.floor_divide,
    "__rfloordiv__": _swap(fnp.floor_divide),
    "__mod__": fnp.remainder,
    "__rmod__": _swap(fnp.remainder),
    "__divmod__": lambda a, b: (fnp.floor_divide(a, b), fnp.remainder(a, b)),
    "__rdivmod__": lambda a, b: (fnp.floor_divide(b, a), fnp.remainder(b, a)),
    "__pow__": fnp.power,
    "__rpow__": _swap(fnp.power),
    "__matmul__": fnp.matmul,
    "__rmatmul__": _swap(fnp.matmul),
    "__neg__": fnp.negative,
    "__pos__": fnp.positive,
    "__abs__": fnp.abs,
    "__invert__": fnp.invert,
    "__and__": fnp.bitwise_and,
    "__rand__": _swap(fnp.bitwise_and),
    "__or__": fnp.bitwise_or,
    "__ror__": _swap(fnp.bitwise_or),
    "__xor__": fnp.bitwise_xor,
    "__rxor__": _swap(fnp.bitwise_xor),
    "__lshift__": fnp.left_shift,
    "__rlshift__": _swap(fnp.left_shift),
    "__rshift__": fnp.right_shift,
    "__rrshift__": _swap(fnp.right_shift),
    "__eq__": fnp.equal,
    "__ne__": fnp.not_equal,
    "__lt__": fnp.less,
    "__le__": fnp.less_equal,
    "__gt__": fnp.greater,
    "__ge__": fnp.greater_equal,
    "__getitem__": _indexing.getitem,
}


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return fnp.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if not axes:
        return fnp.transpose(self)
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return fnp.transpose(self, axes)


def _astype(self, dtype, copy: bool = False, device=None):
    """``Tensor.astype``; JAX's ``copy`` changes nothing (tensors are immutable) and
    ``device`` moves the result as ``.to(device)``."""
    out = _util.asarray(self, dtype)
    return out if device is None else out.to(device)


def _round_builtin(self, ndigits=None):
    """Python's ``round``: an integer tensor without ``ndigits`` (as JAX), else the
    dtype kept."""
    if ndigits is not None:
        return fnp.round(self, ndigits)
    rounded = fnp.round(self)
    if not dtypes.is_float(rounded.dtype):
        return rounded
    return rounded.astype(dtypes.int64 if rounded.dtype.itemsize == 8 else dtypes.int32)


_METHODS = {
    "reshape": _reshape,
    "transpose": _transpose,
    "astype": _astype,
    "sum": fnp.sum,
    "mean": fnp.mean,
    "max": fnp.max,
    "min": fnp.min,
    "argmax": fnp.argmax,
    "argmin": fnp.argmin,
    "prod": fnp.prod,
    "std": fnp.std,
    "var": fnp.var,
    "all": fnp.all,
    "any": fnp.any,
    "cumsum": fnp.cumsum,
    "cumprod": fnp.cumprod,
    "squeeze": fnp.squeeze,
    "expand_dims": fnp.expand_dims,
    "flatten": fnp.ravel,
    "ravel": fnp.ravel,
    "clip": fnp.clip,
    "round": fnp.round,
    "__round__": _round_builtin,
    "abs": fnp.abs,
    "exp": fnp.exp,
    "log": fnp.log,
    "sqrt": fnp.sqrt,
    "tanh": fnp.tanh,
    "sin": fnp.sin,
    "cos": fnp.cos,
    "swapaxes": fnp.swapaxes,
    "dot": fnp.dot,
    "sort": fnp.sort,
    "argsort": fnp.argsort,
    "take": fnp.take,
    "repeat": fnp.repeat,
    "diagonal": fnp.diagonal,
    "trace": fnp.trace,
    "conj": fnp.conjugate,
    "conjugate": fnp.conjugate,
    "copy": fnp.copy,
}


# methods NumPy's own functions call with ``out=None`` (``np.sum(t)`` -> ``t.sum(axis=None,
# dtype=None, out=None)``), as they do for JAX arrays
_TAKES_OUT = ("sum", "mean", "max", "min", "argmax", "argmin", "prod", "std", "var", "all",
              "any", "cumsum", "cumprod", "clip", "round", "take")


def _without_out(name, fn):
    def method(self, *args, out=None, **kwargs):
        if out is not None:
            raise TypeError(f"Tensor.{name}: out= is not supported because funcgrad tensors "
                            "are immutable; use the returned tensor instead")
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


_UNARY_OPERATORS = ("__neg__", "__pos__", "__abs__", "__invert__", "__getitem__")
_OPERAND_TYPES = (Tensor, np.ndarray, np.generic, bool, int, float, complex, list, tuple)


def _defer_unknown(fn):
    """Return NotImplemented for operands that are not array-like (None, strings, other
    objects), so Python tries the other side and ``t == None`` is False, as in JAX."""

    def op(self, other):
        if not isinstance(other, _OPERAND_TYPES) and not hasattr(other, "__array__"):
            return NotImplemented
        return fn(self, other)

    op.__name__ = getattr(fn, "__name__", "op")
    return op


def _install():
    for name, fn in _OPERATORS.items():
        direct = name in _UNARY_OPERATORS or getattr(fn, "defers_unknown", False)
        setattr(Tensor, name, fn if direct else _defer_unknown(fn))
    for name, fn in _METHODS.items():
        setattr(Tensor, name, _without_out(name, fn) if name in _TAKES_OUT else fn)
    Tensor.T = property(lambda self: fnp.transpose(self))
    Tensor.mT = property(lambda self: fnp.swapaxes(self, -1, -2))
    Tensor.real = property(fnp.real)
    Tensor.imag = property(fnp.imag)
    Tensor.at = property(_indexing._AtIndexer)
    Tensor.__iter__ = _iterate
    Tensor.__hash__ = None


def _iterate(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    for i in range(self.shape[0]):
        yield self[i]


_install()
