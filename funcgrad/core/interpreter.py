"""Interpreters: the current-interpreter context, the eager interpreter and tracers.

Every primitive application goes through ``Primitive.bind``, which hands it to the
*current* interpreter.  A transformation installs its own interpreter (whose ``parent``
is the one that was current) while it runs the user's function; its rules run with the
parent current again, so transformations nest to any depth.  The eager interpreter is
the root: it runs the primitive's NumPy implementation.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from funcgrad.core import dtypes, gpu
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.config import config
from funcgrad.core.tensor import Tensor, wrap

_ndarray = np.ndarray


class Interpreter:
    """Base class: ``process(prim, args, params)`` applies one primitive."""

    name = "interpreter"

    def __init__(self, parent: Interpreter | None):
        self.parent = parent
        self.active = True

    def process(self, prim, args, params):
        raise NotImplementedError

    def forward(self, prim, args, params):
        """Hand a primitive application none of this interpreter's tracers touch upward."""
        with using(self.parent):
            return prim.bind(*args, **params)


def device_of(value):
    """The device of a Tensor (traced or not); the CPU for a Python or NumPy value."""
    from funcgrad.core.devices import CPU

    return value.device if isinstance(value, Tensor) else CPU


class LeakedTracerError(RuntimeError):
    """A tracer was used after the transformation that made it had finished."""


class ConcretizationError(TypeError):
    """A traced value was used where Python needs a concrete one (bool, int, index)."""


class EagerInterpreter(Interpreter):
    """Runs each primitive's NumPy implementation at once."""

    name = "eager"

    def process(self, prim, args, params):
        if prim.takes_tensors:
            for arg in args:
                if isinstance(arg, Tracer):
                    raise _leaked(arg)
            return prim.impl(*args, **params)
        values = []
        weak = prim.keeps_weak
        on_gpu = False
        for arg in args:
            if isinstance(arg, Tensor):
                if type(arg) is not Tensor:
                    raise _leaked(arg)
                buf = arg._buf
                values.append(buf)
                on_gpu = on_gpu or type(buf) is not _ndarray
                weak = weak and arg._weak
            else:
                values.append(arg)
                # a raw NumPy constant is strongly typed (as its abstract value says)
                weak = weak and isinstance(arg, (int, float, complex)) and not isinstance(
                    arg, (bool, np.generic))
        # a primitive told its output's weakness (convert_element_type) gets it, as its
        # abstract evaluation says
        weak = params.get("weak_type", weak)
        if on_gpu:
            out = gpu.run_impl(prim, args, values, params)
        else:
            out = prim.impl(*values, **params)
        if prim.multiple_results:
            results = [wrap(o, weak) for o in out]
        else:
            results = wrap(out, weak)
        if config.debug_nans:
            _check_nans(prim, results)
        if config.check_avals:
            _check_avals(prim, args, params, results)
        return results


def _leaked(tracer) -> LeakedTracerError:
    return LeakedTracerError(
        f"leaked tracer {tracer!r}: a value traced inside a transformation (jit, grad, vmap, "
        "...) was used after that transformation returned, e.g. stored in a global or a "
        "closure. Return it from the transformed function instead.")


def _check_nans(prim, results):
    outs = results if isinstance(results, list) else [results]
    for out in outs:
        buf = out._buf
        if dtypes.is_inexact(buf.dtype) and np.isnan(buf).any():  # bfloat16 is kind 'V'
            raise FloatingPointError(
                f"debug_nans: primitive '{prim.name}' produced a NaN (output shape "
                f"{buf.shape}, dtype {buf.dtype.name})")


def _check_avals(prim, args, params, results):
    from funcgrad.core.abstract import aval_of

    expected = prim.abstract_eval(*[aval_of(a) for a in args], **params)
    got = [r.aval for r in results] if prim.multiple_results else [results.aval]
    expected = list(expected) if prim.multiple_results else [expected]
    for want, have in zip(expected, got, strict=False):
        if want.shape != have.shape or want.dtype != have.dtype:
            raise AssertionError(f"primitive '{prim.name}': NumPy impl gave {have}, "
                                 f"shape rule says {want}")


EAGER = EagerInterpreter(None)
class _State(threading.local):
    # a class attribute default: a plain threading.local would raise (and catch) an
    # AttributeError inside getattr on every primitive application
    interpreter = EAGER


_state = _State()


def current() -> Interpreter:
    """The interpreter primitives are bound to right now (eager outside transformations)."""
    return _state.interpreter


@contextlib.contextmanager
def using(interpreter: Interpreter):
    """Make ``interpreter`` current for the duration of the block."""
    previous = _state.interpreter
    _state.interpreter = interpreter
    try:
        yield interpreter
    finally:
        _state.interpreter = previous


class Tracer(Tensor):
    """A value inside a transformation: it knows its abstract value, not its numbers.

    Subclasses hold whatever their interpreter needs (a primal and tangent, a batched
    value and its axis, an IR variable).  Using one as a Python bool, int or index raises
    ``ConcretizationError`` naming the fix.
    """

    __slots__ = ("_interp",)

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self) -> tuple:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def device(self):
        from funcgrad.core.devices import CPU

        return CPU

    def _concretization_error(self, what: str) -> Exception:
        if not self._interp.active:  # the transformation is over: the advice below is not
            return _leaked(self)
        label = getattr(self, "label", None)
        origin = f" ({label})" if label else ""
        return ConcretizationError(
            f"{what} of a traced value {self!r}{origin}: inside {self._interp.name} the value is "
            "abstract (only its shape and dtype are known). Use fg.cond / fnp.where "
            "for value-dependent choices, or mark the argument static with "
            "jit's static_argnums / static_argnames.")

    def __bool__(self):
        raise self._concretization_error("Python bool()")

    def __int__(self):
        raise self._concretization_error("Python int()")

    def __float__(self):
        raise self._concretization_error("Python float()")

    def __complex__(self):
        raise self._concretization_error("Python complex()")

    def __index__(self):
        raise self._concretization_error("use as a Python index")

    def item(self, *index):
        raise self._concretization_error(".item()")

    def tolist(self):
        raise self._concretization_error(".tolist()")

    def numpy(self):
        raise self._concretization_error(".numpy()")

    def __array__(self, dtype=None, copy=None):
        raise self._concretization_error("conversion to a NumPy array")

    def __repr__(self) -> str:
        return f"Tracer<{self.aval.str_short()}>(made by {self._interp.name})"

    __str__ = __repr__

    def __reduce__(self):
        raise self._concretization_error("pickling")
