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
    dtype = dtypes.complex_dtype(x.dtype) if complex_out else dtypes.real_dtype(x.dtype)
    return out.astype(dtype, copy=False)


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
    dtype = dtypes.complex_dtype(x.dtype) if complex_out else dtypes.real_dtype(x.dtype)
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


# --- MLIR lowering ------------------------------------------------------------------------------
# On the CPU a long transform is a host call of ``_fft_impl`` (funcgrad.lowering.host_calls).
# Short ones, and all on GPUs: IREE 3.13 legalizes stablehlo.fft only for some cases
# (float32 RFFT, not float64), so they lower as products with DFT matrices (constants), one
# trailing axis at a time.  The complex products are split into real ones, which every
# backend compiles.  O(n^2) per axis: meant for the moderate lengths jitted code uses.


def _dft_matrix(n, inverse, dtype):
    """``exp(-+2 pi i jk / n)`` (n x n, divided by n when ``inverse``) as (real, imag)
    NumPy arrays, computed in float64; ``jk mod n`` keeps the angles exact."""
    jk = np.outer(np.arange(n), np.arange(n)) % n
    angle = (2 * np.pi / n) * jk
    scale = 1.0 / n if inverse else 1.0
    sign = 1.0 if inverse else -1.0
    return (scale * np.cos(angle)).astype(dtype), (sign * scale * np.sin(angle)).astype(dtype)


def _matmul_last(x, w):
    """``x @ w`` over x's last axis (``w`` a NumPy matrix)."""
    from funcgrad.core.prims.dot import dot_general
    from funcgrad.numpy._util import asarray

    return dot_general(x, asarray(w), (((x.ndim - 1,), (0,)), ((), ())))


def _complex_matmul_last(xr, xi, wr, wi):
    """(xr + i xi) @ (wr + i wi) over the last axis, as (real, imag); ``xi`` may be None."""
    real = _matmul_last(xr, wr)
    imag = _matmul_last(xr, wi)
    if xi is not None:
        real = real - _matmul_last(xi, wi)
        imag = imag + _matmul_last(xi, wr)
    return real, imag


def _along(axis, fn, *xs):
    """Apply ``fn`` (working on the last axis) along ``axis`` of each of ``xs``."""
    last = xs[0].ndim - 1
    moved = [None if x is None else (x if axis == last else moveaxis(x, axis, last))
             for x in xs]
    outs = fn(*moved)
    return [o if axis == last else moveaxis(o, last, axis) for o in outs]


def _fft_via_dft(x, *, fft_type, fft_lengths):
    from funcgrad.core.prims import elementwise as ew

    real_dtype = dtypes.real_dtype(x.dtype)
    axes = list(range(x.ndim - len(fft_lengths), x.ndim))
    if fft_type == RFFT:
        xr, xi = x, None
    else:
        xr, xi = ew.real(x), ew.imag(x)

    def full_transform(axis, n, inverse):
        wr, wi = _dft_matrix(n, inverse, real_dtype)
        return _along(axis, lambda a, b: _complex_matmul_last(a, b, wr, wi), xr, xi)

    if fft_type in (FFT, IFFT):
        for axis, n in zip(axes, fft_lengths, strict=False):
            xr, xi = full_transform(axis, n, fft_type == IFFT)
        return ew.complex_(xr, xi)
    if fft_type == RFFT:
        n = fft_lengths[-1]
        wr, wi = _dft_matrix(n, False, real_dtype)
        xr, xi = _along(axes[-1], lambda a, b: _complex_matmul_last(
            a, None, wr[:, :n // 2 + 1], wi[:, :n // 2 + 1]), xr, None)
        for axis, n in zip(axes[:-1], fft_lengths[:-1], strict=False):
            xr, xi = full_transform(axis, n, False)
        return ew.complex_(xr, xi)
    # IRFFT: inverse transforms over the leading axes, then the Hermitian half -> real:
    # x[t] = Re(sum_k w_k X[k] e^{2 pi i k t / n}) / n, w_k = 2 except the self-paired bins
    for axis, n in zip(axes[:-1], fft_lengths[:-1], strict=False):
        xr, xi = full_transform(axis, n, True)
    n = fft_lengths[-1]
    half = n // 2 + 1
    cos, sin = _dft_matrix(n, True, np.float64)
    weight = np.full((half, 1), 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    cos = (cos[:half] * weight).astype(real_dtype)
    sin = (sin[:half] * weight).astype(real_dtype)
    (out,) = _along(axes[-1], lambda a, b: [_matmul_last(a, cos) - _matmul_last(b, sin)],
                    xr, xi)
    return out


def _declare_lowering():
    from funcgrad.lowering import rules
    from funcgrad.lowering.host_calls import on_host

    # on the CPU NumPy's pocketfft runs long transforms, O(n log n); short ones, and all
    # on GPUs, are products with DFT matrices
    fft_p.lower = on_host(fft_p, rules.via(_fft_via_dft), worth_it=_long_transform)


# Above this length a host call beats the DFT product on the CPU (rfft of 8 rows, a jit
# call: length 256 66 us compiled against 155 us by a host call; 1024 554 against 186 us;
# 4096 40 ms against 0.25 ms), and the DFT matrix grows as its square.
_HOST_FFT_LENGTH = 256


def _long_transform(in_avals, *, fft_type, fft_lengths):
    return max(fft_lengths) > _HOST_FFT_LENGTH


_declare_lowering()
