"""fft: discrete Fourier transforms over the trailing axes (FFT, IFFT, RFFT, IRFFT).

``fft_lengths`` are the sizes of the transformed (trailing) axes of the *real* side:
the input for FFT/IFFT/RFFT, the output for IRFFT.  float32 data transforms in
complex64, float64 in complex128.  The transform is linear, so its JVP is the transform
of the tangent; transposes follow JAX's (the DFT matrix is symmetric, so FFT and IFFT are
their own transposes).
"""

from __future__ import annotations

import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import Primitive
from funcgrad.core.prims.structural import moveaxis

FFT, IFFT, RFFT, IRFFT = "FFT", "IFFT", "RFFT", "IRFFT"

# fft_type: (NumPy function, input kind, output is complex)
_TYPES = {
    FFT: (np.fft.fftn, "complex", True),
    IFFT: (np.fft.ifftn, "complex", True),
    RFFT: (np.fft.rfftn, "real", True),
    IRFFT: (np.fft.irfftn, "complex", False),
}

fft_p = Primitive("fft", linear=True, keeps_weak=False)


def _fft_impl(x, *, fft_type, fft_lengths):
    fn, _, complex_out = _TYPES[fft_type]
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out = fn(x, s=fft_lengths, axes=axes)
    dtype = _complex_of(x.dtype) if complex_out else dtypes.real_dtype(x.dtype)
    return out.astype(dtype, copy=False)


def _complex_of(dtype):
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def _fft_rule(x, *, fft_type, fft_lengths):
    if fft_type not in _TYPES:
        raise ValueError(f"fft: fft_type must be one of {sorted(_TYPES)}, got {fft_type!r}")
    _, kind, complex_out = _TYPES[fft_type]
    n = len(fft_lengths)
    if not 1 <= n <= x.ndim:
        raise ValueError(f"fft: {n} fft_lengths {fft_lengths} for an operand of shape "
                         f"{x.shape} (need 1 to {x.ndim})")
    ok = {"complex": (dtypes.complex64, dtypes.complex128),
          "real": (dtypes.float32, dtypes.float64)}[kind]
    if x.dtype not in ok:
        names = " or ".join(d.name for d in ok)
        raise TypeError(f"fft: {fft_type} needs a {kind} operand ({names}), got "
                        f"{x.dtype.name}")
    trailing = x.shape[-n:]
    expected = tuple(fft_lengths)
    if fft_type == IRFFT:
        expected = expected[:-1] + (fft_lengths[-1] // 2 + 1,)
    if trailing != expected:
        raise ValueError(f"fft: {fft_type} with fft_lengths {fft_lengths} needs trailing axes "
                         f"{expected}, got shape {x.shape}")
    shape = x.shape
    if fft_type == RFFT:
        shape = shape[:-1] + (fft_lengths[-1] // 2 + 1,)
    elif fft_type == IRFFT:
        shape = shape[:-1] + (fft_lengths[-1],)
    dtype = _complex_of(x.dtype) if complex_out else dtypes.real_dtype(x.dtype)
    return ShapedArray(shape, dtype)


def _fft_jvp(primals, tangents, **params):
    out = fft_p.bind(primals[0], **params)
    return out, None if tangents[0] is None else fft_p.bind(tangents[0], **params)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if ct is None:
        return [None]
    if fft_type == RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


def _rfft_transpose(ct, fft_lengths):
    # rfft(x) = FFT(x as complex)[..., :n//2+1]: transpose each piece, last one first
    from funcgrad.core.prims import elementwise as ew
    from funcgrad.core.prims.structural import pad

    n = fft_lengths[-1]
    config = [(0, 0, 0)] * ct.ndim
    config[-1] = (0, n - ct.shape[-1], 0)
    full = pad(ct, np.zeros((), ct.dtype), config)
    return ew.real(fft_p.bind(full, fft_type=FFT, fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    # the cotangent's RFFT, scaled by 1/N and by 2 on the bins that stand for a
    # Hermitian pair, conjugated (JAX's convention for complex cotangents)
    from funcgrad.core.prims import elementwise as ew
    from funcgrad.numpy._util import asarray

    x = fft_p.bind(ct, fft_type=RFFT, fft_lengths=fft_lengths)
    m = x.shape[-1]
    mask = np.full(m, 2.0)
    mask[0] = 1.0
    if fft_lengths[-1] % 2 == 0:
        mask[-1] = 1.0
    scale = asarray((mask / math.prod(fft_lengths)).astype(dtypes.real_dtype(x.dtype)))
    scale = ew.complex_(scale, ew.zeros_like_value(scale))
    return ew.conj(x * scale)


def _fft_batch(axis_size, args, dims, **params):
    x = args[0] if dims[0] == 0 else moveaxis(args[0], dims[0], 0)
    return fft_p.bind(x, **params), 0


fft_p.impl = _fft_impl
fft_p.abstract_eval = _fft_rule
fft_p.jvp = _fft_jvp
fft_p.transpose = _fft_transpose
fft_p.batch = _fft_batch


def fft(x, fft_type: str, fft_lengths):
    """Apply the ``fft_type`` transform over the trailing ``len(fft_lengths)`` axes."""
    fft_type = str(fft_type).upper()
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=tuple(int(n) for n in fft_lengths))
