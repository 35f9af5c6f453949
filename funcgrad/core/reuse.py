"""Reusing the buffers of temporaries in eager arithmetic, as NumPy does.

In ``tanh(x) * x + 0.5 * x**2`` every intermediate is a temporary no one else can see;
writing the next result into its buffer saves allocating (and the kernel zeroing) a fresh
one, which is most of the gap to NumPy on large arrays.  A Tensor's buffer may be reused
only when nothing else can observe it: the Tensor object is referenced by nothing but the
call in progress (its reference count equals the count a bare temporary has at that
point, measured once at import for this interpreter), and the NumPy array is referenced
by nothing but that Tensor (no views, no ``.numpy()`` handed out), owns its memory, is
writeable and is large enough for the saving to matter.
"""

from __future__ import annotations

import sys

import numpy as np

MIN_BYTES = 1 << 18
_getrefcount = sys.getrefcount


class _Probe:
    # each measures at its very start, as the fast paths do
    def __mul__(self, other):
        self_refs, other_refs = _getrefcount(self), _getrefcount(other)
        return self_refs, other_refs

    def __rmul__(self, other):
        self_refs = _getrefcount(self)
        return self_refs

    def __neg__(self):
        refs = _getrefcount(self)
        return refs


def _call_probe(x):
    refs = _getrefcount(x)
    return refs


def _calibrate():
    """Counts of a temporary at the top of a binary operator (self, other), a reflected
    operator, a unary operator and a plain call; ``None`` where a value held by a variable
    would not count more (then reuse could hit a live value, so it stays off)."""
    held, other = _Probe(), _Probe()
    temp_binary, held_binary = _Probe() * _Probe(), held * other
    temp_reflected, held_reflected = 1 * _Probe(), 1 * held
    temp_unary, held_unary = -_Probe(), -held
    temp_call, held_call = _call_probe(_Probe()), _call_probe(held)

    def safe(temp, kept):
        return temp if kept > temp else None

    return (safe(temp_binary[0], held_binary[0]), safe(temp_binary[1], held_binary[1]),
            safe(temp_reflected, held_reflected), safe(temp_unary, held_unary),
            safe(temp_call, held_call))


# The reference count a temporary has at the top of an operator method (self / other), a
# reflected operator, a unary operator and a plain function called with it.
OPERATOR_SELF, OPERATOR_OTHER, REFLECTED_SELF, UNARY_SELF, CALL_ARGUMENT = _calibrate()


class _Holder:
    __slots__ = ("_buf",)


def _buffer_refs_probe(holder, buf):
    return _getrefcount(buf)


def _calibrate_buffer():
    """The count of a buffer held only by a Tensor slot and the caller's one local, as
    ``reusable`` sees it."""
    holder = _Holder()
    holder._buf = np.empty(1)
    local = holder._buf
    return _buffer_refs_probe(holder, local)


BUFFER_REFS = _calibrate_buffer()


def reusable(tensor, refs: int, expected, buf, dtype, shape) -> bool:
    """Whether ``tensor`` (whose count the caller measured as ``refs`` before anything else
    referenced it, and whose buffer the caller holds in one local as ``buf``) is a
    temporary whose buffer may receive a result of ``dtype`` and ``shape``."""
    if expected is None or refs != expected:
        return False
    return (type(buf) is np.ndarray and buf.nbytes >= MIN_BYTES and buf.dtype is dtype
            and buf.shape == shape and buf.flags.owndata and buf.flags.writeable
            and _getrefcount(buf) == BUFFER_REFS)
