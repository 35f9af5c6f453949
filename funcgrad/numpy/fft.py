"""funcgrad.numpy.fft: NumPy's discrete Fourier transforms over the ``fft`` primitive.

Axes are resized (zero padding or truncation) to the requested lengths, moved to the
end, transformed, scaled for ``norm`` ("backward", "ortho" or "forward") and moved back.
Real and integer inputs transform in complex64 (float64: complex128), as JAX.
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims import fft as lax_fft
from funcgrad.core.prims.structural import pad, slice_
from funcgrad.numpy import _elementwise, _shape
from funcgrad.numpy._util import asarray, normalize_axis, promote

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
    "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]

_NORMS = ("backward", "ortho", "forward")


def _as_complex(name, x):
    (x,) = promote(name, x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        return x
    if x.dtype not in (dtypes.float32, dtypes.float64):
        x = ew.convert_element_type(x, dtypes.float32)
    zero = ew.zeros_like_value(x)
    return ew.complex_(x, zero)


def _as_real(name, x):
    (x,) = promote(name, x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"{name}: expected a real input, got {x.dtype.name}")
    if x.dtype not in (dtypes.float32, dtypes.float64):
        x = ew.convert_element_type(x, dtypes.float32)
    return x


def _resize(x, axis, n):
    """Zero-pad or truncate ``axis`` of ``x`` to length ``n``."""
    size = x.shape[axis]
    if n == size:
        return x
    if n < size:
        limit = list(x.shape)
        limit[axis] = n
        return slice_(x, (0,) * x.ndim, limit)
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (0, n - size, 0)
    return pad(x, np.zeros((), x.dtype), config)


def _scale(x, norm, n, inverse):
    if norm is None or norm == "backward":
        factor = 1.0
    elif norm == "ortho":
        factor = math.sqrt(n) if inverse else 1 / math.sqrt(n)
    elif norm == "forward":
        factor = float(n) if inverse else 1 / n
    else:
        raise ValueError(f"fft: norm must be one of {_NORMS}, got {norm!r}")
    return x if factor == 1.0 else x * factor


def _axes_and_lengths(name, x, s, axes, *, irfft=False):
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(normalize_axis(name, a, x.ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: repeated axes {axes}")
    if not axes:
        raise ValueError(f"{name}: needs at least one axis")
    if s is None:
        s = [x.shape[a] for a in axes]
        if irfft:
            s[-1] = 2 * (x.shape[axes[-1]] - 1)
    s = tuple(int(n) for n in s)
    if len(s) != len(axes):
        raise ValueError(f"{name}: s={s} and axes={axes} differ in length")
    if any(n < 1 for n in s):
        raise ValueError(f"{name}: invalid number of data points {s}")
    return axes, s


def _transform(name, fft_type, x, s, axes, norm):
    inverse = fft_type in (lax_fft.IFFT, lax_fft.IRFFT)
    if fft_type == lax_fft.RFFT:
        x = _as_real(name, x)
    else:
        x = _as_complex(name, x)
    axes, s = _axes_and_lengths(name, x, s, axes, irfft=fft_type == lax_fft.IRFFT)
    for a, n in zip(axes, s, strict=True):
        last = a == axes[-1]
        x = _resize(x, a, n // 2 + 1 if last and fft_type == lax_fft.IRFFT else n)
    trailing = tuple(range(x.ndim - len(axes), x.ndim))
    x = _shape.moveaxis(x, axes, trailing)
    out = lax_fft.fft(x, fft_type, s)
    out = _scale(out, norm, math.prod(s), inverse)
    return _shape.moveaxis(out, trailing, axes)


def _one_axis(name, fft_type, x, n, axis, norm):
    return _transform(name, fft_type, x, None if n is None else (n,), (axis,), norm)


def fft(a, n=None, axis: int = -1, norm=None):
    """One-dimensional discrete Fourier transform along ``axis`` (length ``n``).

    >>> fnp.fft.fft(fg.tensor([1.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _one_axis("fft", lax_fft.FFT, a, n, axis, norm)


def ifft(a, n=None, axis: int = -1, norm=None):
    """One-dimensional inverse discrete Fourier transform along ``axis``.

    >>> fnp.fft.ifft(fg.tensor([4.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _one_axis("ifft", lax_fft.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
    """Fourier transform of real input: the ``n // 2 + 1`` non-negative frequencies.

    >>> fnp.fft.rfft(fg.tensor([1.0, 1.0, 1.0, 1.0]))
    tensor([4.+0.j, 0.+0.j, 0.+0.j], dtype=complex64)
    """
    return _one_axis("rfft", lax_fft.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
    """Inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (m - 1)``).

    >>> fnp.fft.irfft(fg.tensor([4.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.], dtype=float32)
    """
    return _one_axis("irfft", lax_fft.IRFFT, a, n, axis, norm)


# hfft and ihfft transform in the other direction from irfft and rfft, so NumPy scales them
# with the opposite convention: "backward" leaves hfft unscaled and divides ihfft by n
_SWAPPED_NORMS = {None: "forward", "backward": "forward", "forward": "backward"}


def hfft(a, n=None, axis: int = -1, norm=None):
    """Fourier transform of a Hermitian-symmetric signal given by its first half: real output
    of length ``n`` (default ``2 * (m - 1)``); ``irfft(conj(a), n) * n`` for ``norm=None``.

    >>> fnp.fft.hfft(fg.tensor([4.0, 1.0, 0.0]))
    tensor([6., 4., 2., 4.], dtype=float32)
    """
    conj = _elementwise.conjugate(a)
    return _one_axis("hfft", lax_fft.IRFFT, conj, n, axis, _SWAPPED_NORMS.get(norm, norm))


def ihfft(a, n=None, axis: int = -1, norm=None):
    """Inverse of ``hfft`` for real ``a``: the ``n // 2 + 1`` non-negative frequencies of a
    Hermitian spectrum; ``conj(rfft(a, n)) / n`` for ``norm=None``.

    >>> fnp.fft.ihfft(fg.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor([ 2.5-0.j , -0.5-0.5j, -0.5-0.j ], dtype=complex64)
    """
    out = _one_axis("ihfft", lax_fft.RFFT, a, n, axis, _SWAPPED_NORMS.get(norm, norm))
    return _elementwise.conjugate(out)


def fftn(a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform over ``axes`` (default all).

    >>> fnp.fft.fftn(fnp.ones((2, 2))).shape
    (2, 2)
    """
    return _transform("fftn", lax_fft.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """N-dimensional inverse discrete Fourier transform.

    >>> fnp.fft.ifftn(fnp.ones((2, 2))).shape
    (2, 2)
    """
    return _transform("ifftn", lax_fft.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """N-dimensional Fourier transform of real input (last axis halved).

    >>> fnp.fft.rfftn(fnp.ones((2, 4))).shape
    (2, 3)
    """
    return _transform("rfftn", lax_fft.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """Inverse of ``rfftn``.

    >>> fnp.fft.irfftn(fnp.ones((2, 3))).shape
    (2, 4)
    """
    return _transform("irfftn", lax_fft.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional discrete Fourier transform (over the last two axes).

    >>> fnp.fft.fft2(fnp.ones((2, 2))).shape
    (2, 2)
    """
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional inverse discrete Fourier transform.

    >>> fnp.fft.ifft2(fnp.ones((2, 2))).shape
    (2, 2)
    """
    return ifftn(a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """Two-dimensional Fourier transform of real input.

    >>> fnp.fft.rfft2(fnp.ones((2, 4))).shape
    (2, 3)
    """
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """Inverse of ``rfft2``.

    >>> fnp.fft.irfft2(fnp.ones((2, 3))).shape
    (2, 4)
    """
    return irfftn(a, s, axes, norm)


def fftfreq(n: int, d: float = 1.0, *, dtype=None):
    """Sample frequencies of ``fft`` for ``n`` points spaced ``d`` apart.

    >>> fnp.fft.fftfreq(4)
    tensor([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)
    """
    n = int(n)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return asarray(k / (n * d), dtype=dtypes.float32 if dtype is None else dtype)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None):
    """Sample frequencies of ``rfft`` for ``n`` points spaced ``d`` apart.

    >>> fnp.fft.rfftfreq(4)
    tensor([0.  , 0.25, 0.5 ], dtype=float32)
    """
    n = int(n)
    k = np.arange(0, n // 2 + 1)
    return asarray(k / (n * d), dtype=dtypes.float32 if dtype is None else dtype)


def _shift(name, x, axes, sign):
    (x,) = promote(name, x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(normalize_axis(name, a, x.ndim) for a in axes)
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return _shape.roll(x, shifts, axes)


def fftshift(x, axes=None):
    """Move the zero frequency to the centre (over ``axes``, default all).

    >>> fnp.fft.fftshift(fnp.fft.fftfreq(4))
    tensor([-0.5 , -0.25,  0.  ,  0.25], dtype=float32)
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """Inverse of ``fftshift``.

    >>> fnp.fft.ifftshift(fnp.fft.fftshift(fnp.fft.fftfreq(5)))
    tensor([ 0. ,  0.2,  0.4, -0.4, -0.2], dtype=float32)
    """
    return _shift("ifftshift", x, axes, -1)
