"""funcgrad.numpy._more against NumPy: histogramdd/histogram2d, piecewise, choose, put,
put_along_axis, resize, packbits/unpackbits, nextafter/spacing, polydiv, roots, unwrap,
trim_zeros and the float_/int_ aliases; eagerly, with gradients, and a few under jit and
vmap."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.numpy import _more as M
from funcgrad.test_util import check_grads

RNG = np.random.default_rng(0)
ALIASES = ("float_", "int_")


def t(x):
    return fg.tensor(np.asarray(x, np.float64))


def close(got, want, tol=1e-12):
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_names_exported_and_documented():
    assert len(M.__all__) == len(set(M.__all__))
    for name in M.__all__:
        assert getattr(fnp, name) is getattr(M, name), name
        if name not in ALIASES:
            assert M.__dict__[name].__doc__ and ">>>" in M.__dict__[name].__doc__, name


def test_float_and_int_aliases_match_jax():
    assert fnp.float_ is fnp.float64 and fnp.int_ is fnp.int64  # as jnp.float_ is jnp.float64
    assert np.dtype(fnp.float_) == np.float64 and np.dtype(fnp.int_) == np.int64
    assert fnp.float_(1.5).dtype == np.float64 and fnp.int_(3).dtype == np.int64
    assert fg.tensor(1.0).dtype == np.float32  # the default stays float32


# --- histogramdd, histogram2d ------------------------------------------------------------------


def _close_hist(got, want):
    hist, edges = got
    want_hist, want_edges = want
    close(hist, want_hist)
    assert len(edges) == len(want_edges)
    for e, w in zip(edges, want_edges, strict=True):
        close(e, w)


def test_histogramdd_matches_numpy():
    sample = RNG.standard_normal((60, 3))
    sample[0] = sample[:, :].max(axis=0)  # a point on every last edge: counted
    weights = RNG.uniform(0.5, 2.0, 60)
    edges = np.array([-1.0, 0.0, 0.5, 2.0])
    cases = [dict(bins=4), dict(bins=[2, edges, 3]), dict(bins=3, range=[(-1, 1), None, (0, 2)]),
             dict(bins=(3, 2, 4), weights=weights), dict(bins=3, density=True),
             dict(bins=[edges, 3, 2], weights=weights, density=True)]
    for kwargs in cases:
        args = {k: t(v) if k == "weights" else v for k, v in kwargs.items()}
        got = M.histogramdd(t(sample), **args)
        _close_hist(got, np.histogramdd(sample, **kwargs))
    hist, _ = M.histogramdd(t(sample), bins=3)
    assert hist.dtype == np.int32  # counts, as JAX
    assert M.histogramdd(t(sample), bins=3, weights=t(weights))[0].dtype == np.float64
    assert M.histogramdd(fg.tensor([[1, 2], [3, 4]]), bins=2)[1][0].dtype == np.float32


def test_histogramdd_jit_grad_and_errors():
    sample, weights = RNG.standard_normal((30, 2)), RNG.uniform(0.5, 2.0, 30)
    fn = fg.jit(lambda s, w: M.histogramdd(s, bins=(3, 4), weights=w, density=True))
    _close_hist(fn(t(sample), t(weights)),
                np.histogramdd(sample, bins=(3, 4), weights=weights, density=True))
    check_grads(lambda w: M.histogramdd(t(sample), bins=3, weights=w, density=True)[0],
                (t(weights),), order=1)
    with pytest.raises(ValueError, match=r"histogramdd: sample must be 2-d.*\(5,\)"):
        M.histogramdd(t(np.zeros(5)))
    with pytest.raises(ValueError, match=r"histogramdd: weights .* shape \(30,\), got"):
        M.histogramdd(t(sample), weights=t(np.ones(29)))
    with pytest.raises(ValueError, match=r"histogramdd: bins .* per dimension \(2\), got 3"):
        M.histogramdd(t(sample), bins=[2, 3, 4])
    with pytest.raises(ValueError, match="histogramdd: range must be"):
        M.histogramdd(t(sample), range=[(0, 1)])


def test_histogram2d_matches_numpy():
    x, y = RNG.standard_normal(50), RNG.standard_normal(50)
    weights = RNG.uniform(0.5, 2.0, 50)
    shared = [-2.0, -1.0, 0.0, 1.0, 2.0]
    for kwargs in [dict(), dict(bins=4), dict(bins=[3, np.array([-1.0, 0.0, 1.0])]),
                   dict(bins=shared), dict(bins=3, range=[(-1, 1), (-2, 2)]),
                   dict(bins=5, weights=weights, density=True)]:
        args = {k: t(v) if k == "weights" else v for k, v in kwargs.items()}
        got = M.histogram2d(t(x), t(y), **args)
        want = np.histogram2d(x, y, **kwargs)
        for g, w in zip(got, want, strict=True):
            close(g, w)
    got = fg.jit(lambda a, b: M.histogram2d(a, b, bins=4))(t(x), t(y))
    close(got[0], np.histogram2d(x, y, bins=4)[0])
    with pytest.raises(ValueError, match="histogram2d: x and y must be 1-d of equal length"):
        M.histogram2d(t(x), t(y[:-1]))


# --- piecewise, choose -------------------------------------------------------------------------


def test_piecewise_matches_numpy():
    x = RNG.uniform(-3, 3, (4, 5))
    conds = [x < -1, x > 0, x > 2]  # overlapping: the last true condition wins
    funcs = [lambda v: v**2, lambda v, s=2.0: s * v, 4.0]
    otherwise = lambda v: np.sin(v) if isinstance(v, np.ndarray) else fnp.sin(v)  # noqa: E731
    for fl in (funcs, funcs + [otherwise]):
        got = M.piecewise(t(x), [t(c).astype(bool) for c in conds], fl)
        close(got, np.piecewise(x, conds, fl))
    got = M.piecewise(t(x), fg.tensor(np.stack(conds)), [lambda v, k: v * k] * 3, 3.0)
    close(got, np.piecewise(x, conds, [lambda v, k: v * k] * 3, 3.0))
    xi = np.arange(-3, 4, dtype=np.int32)
    got = M.piecewise(fg.tensor(xi), [fg.tensor(xi < 0)], [lambda v: v * 2.6, 1.9])
    assert got.dtype == np.int32  # results take x's dtype, as NumPy and JAX
    np.testing.assert_array_equal(got.numpy(), np.piecewise(xi, [xi < 0], [lambda v: v * 2.6,
                                                                          1.9]))
    close(M.piecewise(t(2.0), [True], [lambda v: v * 3]), 6.0)


def test_piecewise_grad_jit_vmap_and_errors():
    x = np.array([-2.5, -1.5, 0.5, 1.5, 2.5])

    def fn(v):
        return M.piecewise(v, [v < -1, v > 1], [lambda u: u**3, fnp.exp, lambda u: u * 0.5])

    want = np.piecewise(x, [x < -1, x > 1], [lambda u: u**3, np.exp, lambda u: u * 0.5])
    close(fg.jit(fn)(t(x)), want)
    close(fg.vmap(fn)(t(x[:, None]))[:, 0], want)
    check_grads(fn, (t(x),), order=2)
    with pytest.raises(ValueError, match=r"piecewise: with 2 condition\(s\), funclist must "
                                         r"have 2 or 3 entries, got 1"):
        M.piecewise(t(x), [t(x) < 0, t(x) > 0], [1.0])
    with pytest.raises(ValueError, match=r"piecewise: condition 0 has shape \(3,\)"):
        M.piecewise(t(x), [fg.tensor([True, False, True])], [1.0])
    with pytest.raises(ValueError, match=r"piecewise: the value of funclist\[0\] has shape \(2,\)"):
        M.piecewise(t(x), [t(x) < 0], [lambda v: v[:2]])


def test_choose_matches_numpy():
    a = RNG.integers(-2, 5, (3, 4))
    choices = [RNG.standard_normal((3, 4)), RNG.standard_normal((1, 4)), 7.0]
    for mode in ("wrap", "clip"):
        got = M.choose(fg.tensor(a), [t(c) for c in choices], mode=mode)
        close(got, np.choose(a, choices, mode=mode))
    ok = np.clip(a, 0, 2)
    close(M.choose(fg.tensor(ok), [t(c) for c in choices]), np.choose(ok, choices))
    stacked = RNG.standard_normal((3, 4))
    close(M.choose(fg.tensor(ok[0]), t(stacked)), np.choose(ok[0], stacked))
    check_grads(lambda c0, c1: M.choose(fg.tensor(a), [c0, c1], mode="wrap"),
                (t(choices[0]), t(choices[1])), order=2)
    jitted = fg.jit(lambda i, c: M.choose(i, [c, -c], mode="clip"))(fg.tensor(a), t(stacked))
    close(jitted, np.choose(a, [stacked, -stacked], mode="clip"))
    with pytest.raises(TypeError, match="choose: mode='raise' .* traced .* mode='wrap'"):
        fg.jit(lambda i: M.choose(i, [1.0, 2.0]))(fg.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"choose: a has entries outside \[0, 3\)"):
        M.choose(fg.tensor(a), [t(c) for c in choices])
    with pytest.raises(ValueError, match="choose: mode must be 'raise', 'wrap' or 'clip'"):
        M.choose(fg.tensor(ok), [1.0], mode="fill")
    with pytest.raises(TypeError, match="choose: a must be integers, got float64"):
        M.choose(t([0.0]), [1.0])
    with pytest.raises(ValueError, match="choose: shapes"):
        M.choose(fg.tensor(ok), [t(np.ones(3))] * 3)


# --- put, put_along_axis, resize ---------------------------------------------------------------


def _np_put(a, ind, v, mode="raise"):
    out = a.copy()
    np.put(out, ind, v, mode=mode)
    return out


def test_put_matches_numpy():
    a = RNG.standard_normal((3, 4))
    ind, v = np.array([0, 5, -1, 7]), RNG.standard_normal(4)
    close(M.put(t(a), fg.tensor(ind), t(v)), _np_put(a, ind, v))
    close(M.put(t(a), fg.tensor(ind), t(v[:3])), _np_put(a, ind, v[:3]))  # v repeats
    close(M.put(t(a), fg.tensor(ind[:2]), t(v)), _np_put(a, ind[:2], v))  # v truncated
    wild = np.array([-20, 3, 15, 30])
    for mode in ("clip", "wrap"):
        close(M.put(t(a), fg.tensor(wild), t(v), mode=mode), _np_put(a, wild, v, mode=mode))
    # mode=None, as JAX: negatives count from the end once, the rest are clipped
    close(M.put(t(a), fg.tensor([-20, 15]), t(v[:2])), _np_put(a, [0, 11], v[:2]))
    close(M.put(t(a), fg.tensor(np.zeros(0, int)), t(v)), a)
    assert M.put(fg.tensor([1, 2, 3]), fg.tensor([1]), 9).dtype == np.int32
    jitted = fg.jit(lambda x, i, u: M.put(x, i, u, mode="wrap"))(t(a), fg.tensor(wild), t(v))
    close(jitted, _np_put(a, wild, v, mode="wrap"))
    check_grads(lambda x, u: M.put(x, fg.tensor(ind), u), (t(a), t(v)), order=2)
    with pytest.raises(ValueError, match="put: funcgrad tensors are immutable.*inplace=False"):
        M.put(t(a), fg.tensor([0]), 1.0, inplace=True)
    with pytest.raises(NotImplementedError, match="put: mode='raise' is not supported"):
        M.put(t(a), fg.tensor([0]), 1.0, mode="raise")
    with pytest.raises(ValueError, match="put: mode must be None, 'clip' or 'wrap'"):
        M.put(t(a), fg.tensor([0]), 1.0, mode="drop")
    with pytest.raises(TypeError, match="put: ind must be integers"):
        M.put(t(a), t([0.0]), 1.0)


def test_put_along_axis_matches_numpy():
    a = RNG.standard_normal((3, 4, 2))
    for axis in (0, 1, -1):
        size = a.shape[axis]
        shape = list(a.shape)
        shape[axis] = 2
        # distinct indices along the axis (repeats have no defined winner)
        idx = np.argsort(RNG.uniform(size=a.shape), axis=axis).take(range(2), axis=axis)
        idx[idx == size - 1] -= size  # some negative indices
        vals = RNG.standard_normal(shape)
        want = a.copy()
        np.put_along_axis(want, idx, vals, axis)
        close(M.put_along_axis(t(a), fg.tensor(idx), t(vals), axis), want)
    want = a.copy()
    np.put_along_axis(want, np.array([[[1], [3], [0], [2]]] * 3), 5.0, 1)  # broadcast values
    close(M.put_along_axis(t(a), fg.tensor(np.array([[[1], [3], [0], [2]]] * 3)), 5.0, 1),
          want)
    want = a.copy()
    np.put_along_axis(want, np.array([0, 23, 4]), np.array([1.0, 2.0, 3.0]), None)
    close(M.put_along_axis(t(a), fg.tensor([0, 23, 4]), t([1.0, 2.0, 3.0]), None), want)
    idx = fg.tensor(np.array([[[1, 0]], [[0, 1]], [[0, 1]]]))
    check_grads(lambda x, v: M.put_along_axis(x, idx, v, axis=2), (t(a[:, :1]), t(a[:, 1:2])),
                order=1)
    with pytest.raises(ValueError, match="put_along_axis: funcgrad tensors are immutable"):
        M.put_along_axis(t(a), idx, 1.0, 2, True)
    with pytest.raises(ValueError, match=r"put_along_axis: indices must have arr's rank 3"):
        M.put_along_axis(t(a), fg.tensor([0]), 1.0, 0)
    with pytest.raises(ValueError, match=r"put_along_axis: values has shape \(4,\), which does"):
        M.put_along_axis(t(a), idx, t(np.ones(4)), 2)


def test_resize_matches_numpy():
    a = RNG.standard_normal((2, 3))
    for shape in [(3, 4), 7, (2,), (1, 6), (0, 3), (4, 0, 2)]:
        close(M.resize(t(a), shape), np.resize(a, shape))
    close(M.resize(t(np.zeros(0)), (2, 2)), np.zeros((2, 2)))
    check_grads(lambda x: M.resize(x, (3, 5)), (t(a),), order=1)
    with pytest.raises(ValueError, match=r"resize: new_shape must be non-negative, got \(2, -1\)"):
        M.resize(t(a), (2, -1))
    with pytest.raises(TypeError, match="resize: new_shape must be an int"):
        M.resize(t(a), (2.5,))


# --- packbits, unpackbits ----------------------------------------------------------------------


def test_packbits_unpackbits_match_numpy():
    bits = RNG.integers(-1, 2, (3, 11))
    for axis in (None, 0, 1, -1):
        for order in ("big", "little"):
            got = M.packbits(fg.tensor(bits), axis=axis, bitorder=order)
            assert got.dtype == np.uint8
            np.testing.assert_array_equal(got.numpy(),
                                          np.packbits(bits, axis=axis, bitorder=order))
            packed = np.packbits(bits, axis=axis, bitorder=order)
            got = M.unpackbits(fg.tensor(packed), axis=axis, bitorder=order)
            np.testing.assert_array_equal(got.numpy(),
                                          np.unpackbits(packed, axis=axis, bitorder=order))
    np.testing.assert_array_equal(M.packbits(fg.tensor(bits > 0)).numpy(), np.packbits(bits > 0))
    packed = RNG.integers(0, 256, (2, 3)).astype(np.uint8)
    for count in (None, 5, 24, 30, -7):
        np.testing.assert_array_equal(M.unpackbits(fg.tensor(packed), axis=1,
                                                   count=count).numpy(),
                                      np.unpackbits(packed, axis=1, count=count))
    jitted = fg.jit(lambda p: M.unpackbits(M.packbits(p, axis=1), axis=1, count=11))
    np.testing.assert_array_equal(jitted(fg.tensor(bits)).numpy(), bits != 0)
    with pytest.raises(TypeError, match="packbits: a must be integers or booleans"):
        M.packbits(t([1.0]))
    with pytest.raises(TypeError, match="unpackbits: a must be uint8, got int32"):
        M.unpackbits(fg.tensor([1]))
    with pytest.raises(ValueError, match="packbits: bitorder must be 'big' or 'little'"):
        M.packbits(fg.tensor([1]), bitorder="middle")
    with pytest.raises(ValueError, match="unpackbits: count=-9 drops more than the 8 bits"):
        M.unpackbits(fg.tensor([1], dtype=fnp.uint8), count=-9)


# --- nextafter, spacing ------------------------------------------------------------------------


def _special_values(dtype):
    info = np.finfo(dtype)
    return np.array([0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 1e-3, 2.0**-20, info.tiny, -info.tiny,
                     info.smallest_subnormal, -info.smallest_subnormal,
                     3 * info.smallest_subnormal, info.max, -info.max, np.inf, -np.inf,
                     np.nan], dtype)


def _same_floats(got, want):
    got = np.asarray(got.numpy())
    assert got.dtype == want.dtype
    same = (got == want) & (np.signbit(got) == np.signbit(want))
    assert np.all(same | (np.isnan(got) & np.isnan(want))), (got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_nextafter_spacing_match_numpy_bit_for_bit(dtype):
    values = _special_values(dtype)
    x1, x2 = np.repeat(values, values.size), np.tile(values, values.size)
    want = np.nextafter(x1, x2)
    if dtype == np.float16:  # NumPy's float16 gives x1 for x1 == x2 (the C rule: x2)
        want = np.where(x1 == x2, x2, want)
    _same_floats(M.nextafter(fg.tensor(x1), fg.tensor(x2)), want)
    with np.errstate(over="ignore"):
        _same_floats(M.spacing(fg.tensor(values)), np.spacing(values))


def test_nextafter_spacing_jit_vmap_dtypes_and_errors():
    values = _special_values(np.float32)
    # computed on the bits: exact also for subnormals in compiled code
    _same_floats(fg.jit(M.nextafter)(fg.tensor(values), fg.tensor(values[::-1])),
                 np.nextafter(values, values[::-1]))
    with np.errstate(over="ignore"):
        _same_floats(fg.jit(M.spacing)(fg.tensor(values)), np.spacing(values))
        _same_floats(fg.vmap(M.spacing)(fg.tensor(values)), np.spacing(values))
    assert M.nextafter(fg.tensor([1, 2]), 3).dtype == np.float32
    assert M.spacing(fg.tensor([1])).dtype == np.float32
    close(M.nextafter(t([1.0, 2.0]), t(3.0)), np.nextafter([1.0, 2.0], 3.0), tol=0)
    bf = M.spacing(fnp.asarray(np.array([1.0, -2.0]), fnp.bfloat16))
    np.testing.assert_array_equal(bf.astype(fnp.float32).numpy(), [2.0**-7, -(2.0**-6)])
    grads = fg.grad(lambda v: fnp.sum(M.nextafter(v, 5.0) + M.spacing(v)))(t([1.0, 2.0]))
    np.testing.assert_array_equal(grads.numpy(), [0.0, 0.0])  # piecewise constant
    with pytest.raises(TypeError, match="nextafter: arguments must be real"):
        M.nextafter(fg.tensor([1j]), 1.0)
    with pytest.raises(ValueError, match="nextafter: shapes"):
        M.nextafter(t([1.0, 2.0]), t([1.0, 2.0, 3.0]))


# --- polydiv, roots ----------------------------------------------------------------------------


def test_polydiv_matches_numpy():
    for m, n in [(5, 2), (4, 4), (2, 5), (6, 1), (1, 1)]:
        u, v = RNG.standard_normal(m), RNG.standard_normal(n)
        q, r = M.polydiv(t(u), t(v))
        want_q, want_r = np.polydiv(u, v)
        close(q, want_q, tol=1e-10)
        assert r.shape == (m,)  # the full length: a static shape
        close(r[m - want_r.size:], want_r, tol=1e-10)
        close(r[:m - want_r.size], np.zeros(m - want_r.size), tol=1e-10)
    u, v = np.polymul([1.0, 2.0, -1.0], [2.0, 0.5]), np.array([2.0, 0.5])
    for u_, v_ in [(u, v), (np.array([3.0, 5.0, 2.0]), np.array([2.0, 1.0]))]:
        q, r = M.polydiv(t(u_), t(v_), trim_leading_zeros=True)
        want_q, want_r = np.polydiv(u_, v_)
        close(q, want_q)
        close(r, want_r)
    q, r = M.polydiv(fg.tensor([1, 2]), fg.tensor([2]))
    assert q.dtype == r.dtype == np.float32


def test_polydiv_grad_jit_and_errors():
    u, v = RNG.standard_normal(5), RNG.standard_normal(3)
    check_grads(M.polydiv, (t(u), t(v)), order=2)
    q, r = fg.jit(M.polydiv)(t(u), t(v))
    close(q, np.polydiv(u, v)[0], tol=1e-10)
    with pytest.raises(TypeError, match="polydiv: u or v is traced.*trim_leading_zeros=False"):
        fg.jit(lambda a, b: M.polydiv(a, b, trim_leading_zeros=True))(t(u), t(v))
    with pytest.raises(ValueError, match=r"polydiv: u must be 0-d or 1-d, got shape \(2, 2\)"):
        M.polydiv(t(np.ones((2, 2))), t(v))
    with pytest.raises(ValueError, match="polydiv: u and v must not be empty"):
        M.polydiv(t(u), t(np.zeros(0)))


def _sorted_roots(r):
    r = np.asarray(r)
    return r[np.lexsort((np.round(r.imag, 8), np.round(r.real, 8)))]


def test_roots_matches_numpy():
    for p in [RNG.standard_normal(6), [1.0, -3.0, 2.0], [0.0, 0.0, 1.0, -3.0, 2.0, 0.0, 0.0],
              [2.0, 0.0, 1.0], [5.0], [0.0, 3.0], [0.0, 0.0]]:
        got = M.roots(t(p))
        assert got.dtype == np.complex128
        close(_sorted_roots(got.numpy()), _sorted_roots(np.roots(p)), tol=1e-10)
    got = M.roots(fg.tensor([1, -3, 2]))
    assert got.dtype == np.complex64
    close(_sorted_roots(got.numpy()), [1.0, 2.0], tol=1e-5)
    got = M.roots(t([0.0, 1.0, -3.0, 2.0]), strip_zeros=False).numpy()
    assert got.shape == (3,) and np.isnan(got[-1])  # one NaN per leading zero, as JAX
    close(_sorted_roots(got[:2]), [1.0, 2.0], tol=1e-12)
    with pytest.raises(TypeError, match="roots: p is traced.*pass strip_zeros=False"):
        fg.jit(M.roots)(t([1.0, 2.0]))


def test_roots_without_stripping_works_under_jit_vmap_and_grad():
    roots = fg.jit(lambda p: M.roots(p, strip_zeros=False))
    for p in [[1.0, -6.0, 11.0, -6.0], [0.0, 1.0, -3.0, 2.0], [0.0, 0.0, 2.0, -1.0],
              [2.0, 0.0, 1.0], [1.0, -1.0, 0.0], [0.0, 0.0]]:
        got, want = roots(t(p)).numpy(), M.roots(t(p), strip_zeros=False).numpy()
        assert got.shape == want.shape and got.dtype == np.complex128
        assert np.array_equal(np.isnan(got), np.isnan(want)), (p, got, want)
        close(_sorted_roots(got[~np.isnan(got)]), _sorted_roots(want[~np.isnan(want)]),
              tol=1e-12)
    batch = fg.vmap(lambda p: M.roots(p, strip_zeros=False))(t([[1.0, -3.0, 2.0],
                                                               [1.0, 0.0, -4.0]]))
    close(_sorted_roots(batch.numpy()[1]), [-2.0, 2.0], tol=1e-12)
    # the roots sum to -p1 / p0
    grad = fg.grad(lambda p: fnp.real(M.roots(p, strip_zeros=False)).sum())
    close(grad(t([2.0, -6.0, 11.0, -6.0])), [-6.0 / 4, -0.5, 0.0, 0.0], tol=1e-8)
    with pytest.raises(ValueError, match=r"roots: p must be 0-d or 1-d, got shape \(1, 2\)"):
        M.roots(t([[1.0, 2.0]]))


# --- unwrap, trim_zeros ------------------------------------------------------------------------


def test_unwrap_matches_numpy():
    phase = np.cumsum(RNG.uniform(-2.5, 2.5, (4, 12)), axis=1)
    wrapped = np.angle(np.exp(1j * phase))
    for kwargs in [dict(), dict(axis=0), dict(discont=4.0), dict(period=5.0),
                   dict(discont=1.0, period=3.0, axis=1)]:
        close(M.unwrap(t(wrapped), **kwargs), np.unwrap(wrapped, **kwargs), tol=1e-10)
    close(M.unwrap(t(wrapped[0])), phase[0] - phase[0, 0] + wrapped[0, 0], tol=1e-10)
    edge = np.array([0.0, np.pi, 0.0, -np.pi])  # jumps of exactly period/2
    close(M.unwrap(t(edge)), np.unwrap(edge))
    assert M.unwrap(fg.tensor([0, 5, 1])).dtype == np.float32
    assert M.unwrap(t(np.zeros((2, 0)))).shape == (2, 0)
    close(fg.jit(lambda p: M.unwrap(p, period=5.0))(t(wrapped)),
          np.unwrap(wrapped, period=5.0), tol=1e-10)
    close(fg.vmap(M.unwrap)(t(wrapped)), np.unwrap(wrapped), tol=1e-10)
    check_grads(M.unwrap, (t(wrapped[:, :6]),), order=2)
    with pytest.raises(ValueError, match="unwrap: p must be real"):
        M.unwrap(fg.tensor([1j]))
    with pytest.raises(ValueError, match="unwrap: axis 2 is out of bounds"):
        M.unwrap(t(wrapped), axis=2)


def test_trim_zeros_matches_numpy():
    x = np.array([0, 0, 3, 0, 1, 2, 0, 0, 0])
    for trim in ("fb", "f", "b", "BF"):
        np.testing.assert_array_equal(M.trim_zeros(fg.tensor(x), trim).numpy(),
                                      np.trim_zeros(x, trim))
    np.testing.assert_array_equal(M.trim_zeros(fg.tensor(np.zeros(4))).numpy(), np.zeros(0))
    grid = np.zeros((4, 5))
    grid[1:3, 2:4] = RNG.standard_normal((2, 2))
    for axis in (None, 0, 1, -1, (0, 1)):
        for trim in ("fb", "f"):
            close(M.trim_zeros(t(grid), trim, axis=axis), np.trim_zeros(grid, trim, axis=axis))
    assert M.trim_zeros(t(np.zeros((2, 3)))).shape == (0, 0)
    with pytest.raises(TypeError, match="trim_zeros: filt is traced"):
        fg.jit(M.trim_zeros)(t(x))
    with pytest.raises(ValueError, match="trim_zeros: trim must be .*'fx'"):
        M.trim_zeros(t(x), "fx")
    with pytest.raises(ValueError, match="trim_zeros: axis 2 is out of bounds"):
        M.trim_zeros(t(grid), axis=2)
