"""funcgrad.numpy.fft and the fft primitive against NumPy, derivatives against finite
differences, transposes against the pairing identity, vmap against a Python loop."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.abstract import aval_of
from funcgrad.core.primitive import UndefinedPrimal
from funcgrad.core.prims import fft as lax_fft
from funcgrad.test_util import check_grads

FFT = fnp.fft
NORMS = [None, "backward", "ortho", "forward"]
TOL = {np.float64: 1e-12, np.float32: 1e-4}


def _real(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _complex(shape, dtype=np.complex128, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _close(got, want, real_dtype=np.float64):
    tol = TOL[real_dtype] * max(1.0, float(np.abs(want).max()))
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=tol)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 3, 8])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_dimensional(norm, n, axis):
    x, z = _real((4, 6, 5)), _complex((4, 6, 5))
    for name, arg in (("fft", z), ("ifft", z), ("rfft", x), ("irfft", z)):
        got = getattr(FFT, name)(fg.tensor(arg), n=n, axis=axis, norm=norm)
        _close(got, getattr(np.fft, name)(arg, n=n, axis=axis, norm=norm))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
def test_dtypes(name):
    real = name == "rfft"
    x32 = _real((3, 8), np.float32) if real else _complex((3, 8), np.complex64)
    out32 = getattr(FFT, name)(fg.tensor(x32))
    want = getattr(np.fft, name)(x32.astype(np.complex128 if not real else np.float64))
    assert out32.dtype == (np.float32 if name == "irfft" else np.complex64)
    _close(out32, want, np.float32)
    x64 = x32.astype(np.float64 if real else np.complex128)
    assert getattr(FFT, name)(fg.tensor(x64)).dtype == (
        np.float64 if name == "irfft" else np.complex128)


def test_real_and_integer_inputs_to_complex_transforms():
    x = _real((5,))
    _close(FFT.fft(x), np.fft.fft(x))
    assert FFT.fft(x.astype(np.float32)).dtype == np.complex64
    ints = np.arange(6, dtype=np.int32)
    out = FFT.fft(ints)
    assert out.dtype == np.complex64
    _close(out, np.fft.fft(ints), np.float32)
    _close(FFT.irfft(x), np.fft.irfft(x))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s, axes", [(None, None), ((3, 4), None), (None, (0, 2)),
                                     ((4, 6), (2, 0)), ((5,), (1,))])
def test_n_dimensional(norm, s, axes):
    x, z = _real((3, 4, 5)), _complex((3, 4, 5))
    if s is not None and axes is None:
        axes_np = tuple(range(3 - len(s), 3))
    else:
        axes_np = axes
    for name, arg in (("fftn", z), ("ifftn", z), ("rfftn", x), ("irfftn", z)):
        got = getattr(FFT, name)(fg.tensor(arg), s=s, axes=axes, norm=norm)
        _close(got, getattr(np.fft, name)(arg, s=s, axes=axes_np, norm=norm))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_two_dimensional(name):
    arg = _real((2, 4, 6)) if name == "rfft2" else _complex((2, 4, 6))
    _close(getattr(FFT, name)(fg.tensor(arg)), getattr(np.fft, name)(arg))


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies_and_shifts(n, d):
    _close(FFT.fftfreq(n, d), np.fft.fftfreq(n, d), np.float32)
    _close(FFT.rfftfreq(n, d), np.fft.rfftfreq(n, d), np.float32)
    assert FFT.fftfreq(n, d, dtype=fg.float64).dtype == np.float64
    x = _real((n, n + 1))
    for axes in (None, 0, (1,), (0, 1)):
        _close(FFT.fftshift(fg.tensor(x), axes), np.fft.fftshift(x, axes))
        _close(FFT.ifftshift(fg.tensor(x), axes), np.fft.ifftshift(x, axes))


def test_round_trips():
    x = _real((3, 10))
    _close(FFT.irfft(FFT.rfft(x), n=10), x)
    z = _complex((3, 10))
    _close(FFT.ifft(FFT.fft(z)), z)


def test_errors():
    with pytest.raises(ValueError, match="norm"):
        FFT.fft(_complex((4,)), norm="bad")
    with pytest.raises(TypeError, match="real"):
        FFT.rfft(_complex((4,)))
    with pytest.raises(ValueError, match="out of bounds"):
        FFT.fft(_complex((4,)), axis=2)
    with pytest.raises(ValueError, match="number of data points"):
        FFT.fft(_complex((4,)), n=0)
    with pytest.raises(ValueError, match="fft_lengths"):
        lax_fft.fft(fg.tensor(_complex((4, 5))), "FFT", (6,))
    with pytest.raises(TypeError, match="complex"):
        lax_fft.fft_p.abstract_eval(aval_of(_real((4,))), fft_type="FFT", fft_lengths=(4,))


# --- derivatives -------------------------------------------------------------------------

_X = _real((3, 6))
_Z = _complex((3, 6))

def _power(z):
    return fnp.real(z) ** 2 + fnp.imag(z) ** 2


REAL_CASES = {
    "fft_real": (lambda x: fnp.real(FFT.fft(x)) + fnp.imag(FFT.fft(x)), _X),
    "ifft_ortho": (lambda x: fnp.imag(FFT.ifft(x, norm="ortho")), _X),
    "rfft": (lambda x: fnp.real(FFT.rfft(x, n=8)) * fnp.imag(FFT.rfft(x, n=8)), _X),
    "rfft_odd": (lambda x: fnp.imag(FFT.rfft(x, n=5, axis=0)), _X),
    "rfftn": (lambda x: fnp.real(FFT.rfftn(x)) - fnp.imag(FFT.rfftn(x)), _X),
    "irfft_of_rfft": (lambda x: FFT.irfft(FFT.rfft(x) * FFT.rfft(x), n=6), _X),
    "power_fft2": (lambda x: _power(FFT.fft2(x, norm="forward")), _X),
}


@pytest.mark.parametrize("name", sorted(REAL_CASES))
def test_grads_real_functions(name):
    fn, x = REAL_CASES[name]
    check_grads(fn, (fg.tensor(x),), order=2)


COMPLEX_CASES = {
    "fft": lambda z: FFT.fft(z),
    "ifft": lambda z: FFT.ifft(z, n=8),
    "fftn": lambda z: FFT.fftn(z, norm="ortho"),
    "irfft_even": lambda z: FFT.irfft(z, n=10),
    "irfft_odd": lambda z: FFT.irfft(z, n=11),
    "irfftn": lambda z: FFT.irfftn(z, s=(3, 9)),
}


def _pair(a, b):
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_inputs_forward_and_transpose(name):
    fn = COMPLEX_CASES[name]
    z = fg.tensor(_Z)
    check_grads(fn, (z,), order=2, modes=("fwd",))
    # reverse mode with JAX's convention: Re<vjp(u), v> == Re<u, jvp(v)> (no conjugation)
    v = fg.tensor(_complex(_Z.shape, seed=1))
    out, tangent = fg.jvp(fn, (z,), (v,))
    u = _complex(out.shape, seed=2) if np.iscomplexobj(np.asarray(out)) else _real(out.shape)
    (ct,) = fg.vjp(fn, z)[1](fg.tensor(u))
    np.testing.assert_allclose(_pair(ct, v), _pair(u, tangent), rtol=1e-10)


@pytest.mark.parametrize("fft_type, lengths, shape", [
    ("FFT", (6,), (2, 6)), ("IFFT", (3, 4), (2, 3, 4)), ("RFFT", (5,), (2, 5)),
    ("RFFT", (3, 4), (3, 4)), ("IRFFT", (6,), (2, 4)), ("IRFFT", (5,), (2, 3)),
    ("IRFFT", (3, 5), (3, 3))])
def test_transpose_rule(fft_type, lengths, shape):
    x = _real(shape) if fft_type == "RFFT" else _complex(shape)
    y = lax_fft.fft(fg.tensor(x), fft_type, lengths)
    u = _real(y.shape, seed=1) if fft_type == "IRFFT" else _complex(y.shape, seed=1)
    (ct,) = lax_fft.fft_p.transpose(fg.tensor(u), UndefinedPrimal(aval_of(fg.tensor(x))),
                                    fft_type=fft_type, fft_lengths=lengths)
    assert ct.shape == x.shape and ct.dtype == x.dtype
    np.testing.assert_allclose(_pair(ct, x), _pair(u, y), rtol=1e-10)


@pytest.mark.parametrize("in_axes", [0, 1, 2])
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fftn"])
def test_vmap_matches_loop(name, in_axes):
    x = _real((3, 4, 6)) if name == "rfft" else _complex((3, 4, 6))
    fn = getattr(FFT, name)
    got = fg.vmap(fn, in_axes=in_axes)(fg.tensor(x))
    want = np.stack([np.asarray(fn(fg.tensor(np.take(x, i, in_axes))))
                     for i in range(x.shape[in_axes])])
    _close(got, want)


# --- hfft and ihfft ----------------------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 5, 8])
@pytest.mark.parametrize("axis", [-1, 0])
def test_hermitian_transforms(norm, n, axis):
    x, z = _real((4, 6)), _complex((4, 6))
    _close(FFT.hfft(fg.tensor(z), n=n, axis=axis, norm=norm),
           np.fft.hfft(z, n=n, axis=axis, norm=norm))
    _close(FFT.ihfft(fg.tensor(x), n=n, axis=axis, norm=norm),
           np.fft.ihfft(x, n=n, axis=axis, norm=norm))


def test_hermitian_transforms_dtypes_round_trip_and_errors():
    z32 = _complex((3, 5), np.complex64)
    assert FFT.hfft(fg.tensor(z32)).dtype == np.float32
    assert FFT.ihfft(fg.tensor(z32.real)).dtype == np.complex64
    assert FFT.hfft(fg.tensor(_complex((3, 5)))).dtype == np.float64
    _close(FFT.hfft(z32), np.fft.hfft(z32.astype(np.complex128)), np.float32)
    x = _real((3, 9))
    _close(FFT.hfft(FFT.ihfft(x), n=9), x)
    with pytest.raises(TypeError, match="ihfft: expected a real input"):
        FFT.ihfft(_complex((4,)))
    with pytest.raises(ValueError, match="norm"):
        FFT.hfft(_complex((4,)), norm="bad")


def test_hermitian_transforms_grads():
    check_grads(lambda x: fnp.real(FFT.ihfft(x, n=5, norm="ortho")) * fnp.imag(FFT.ihfft(x, n=4)),
                (fg.tensor(_X),), order=2)
    check_grads(lambda x: FFT.hfft(x, n=7, axis=0, norm="forward"), (fg.tensor(_X),), order=2)
    z, v = fg.tensor(_Z), fg.tensor(_complex(_Z.shape, seed=1))
    for n in (10, 11):
        fn = lambda z, n=n: FFT.hfft(z, n=n)  # noqa: E731
        check_grads(fn, (z,), order=2, modes=("fwd",))
        out, tangent = fg.jvp(fn, (z,), (v,))
        u = _real(out.shape, seed=2)
        (ct,) = fg.vjp(fn, z)[1](fg.tensor(u))
        np.testing.assert_allclose(_pair(ct, v), _pair(u, tangent), rtol=1e-10)


def test_hermitian_transforms_under_jit():
    x, z = _real((3, 8)), _complex((3, 5))
    got_h, got_i = fg.jit(lambda z, x: (FFT.hfft(z, n=9, norm="ortho"), FFT.ihfft(x)))(z, x)
    _close(got_h, np.fft.hfft(z, n=9, norm="ortho"))
    _close(got_i, np.fft.ihfft(x))
