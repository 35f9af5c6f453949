"""funcgrad.numpy._signal against NumPy: convolution, cov/corrcoef, interp/digitize/bincount,
histogram, gradient, windows and i0, polynomials, vectorize."""

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.numpy import _signal as S
from funcgrad.test_util import check_grads

RNG = np.random.default_rng(0)


def t(x):
    return fg.tensor(np.asarray(x, np.float64))


def _both(fn, *args):
    """``fn`` eagerly and under jit, on float64 tensors."""
    tensors = [t(a) for a in args]
    return [fn(*tensors), fg.jit(fn)(*tensors)]


def close(got, want, tol=1e-12):
    np.testing.assert_allclose(np.asarray(got.numpy() if hasattr(got, "numpy") else got), want,
                               rtol=tol, atol=tol)


# --- convolve, correlate -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate_match_numpy(mode):
    pairs = [(RNG.standard_normal(n), RNG.standard_normal(m))
             for n, m in [(1, 1), (5, 3), (4, 4), (3, 6), (2, 7)]]

    def both(operands):  # every pair in one program: one compile instead of ten
        return [(S.convolve(a, v, mode), S.correlate(a, v, mode)) for a, v in operands]

    operands = [(t(a), t(v)) for a, v in pairs]
    for results in (both(operands), fg.jit(both)(operands)):
        for (a, v), (conv, corr) in zip(pairs, results, strict=True):
            close(conv, np.convolve(a, v, mode))
            close(corr, np.correlate(a, v, mode))
    for a, v in pairs:
        ac, vc = a + 1j * RNG.standard_normal(a.size), v + 1j * RNG.standard_normal(v.size)
        close(S.correlate(fg.tensor(ac), fg.tensor(vc), mode), np.correlate(ac, vc, mode))


def test_convolve_dtypes_grads_vmap_and_errors():
    assert S.convolve(fg.tensor([1, 2, 3]), fg.tensor([1, 1])).dtype == np.float32
    assert S.correlate(fg.tensor([1.0, 2.0]), fg.tensor([1.0])).dtype == np.float32
    a, v = t(RNG.standard_normal(5)), t(RNG.standard_normal(3))
    check_grads(lambda x, y: S.convolve(x, y, "same"), (a, v), order=2)
    check_grads(S.correlate, (a, v), order=1)
    rows = RNG.standard_normal((3, 5))
    close(fg.vmap(lambda r: S.convolve(r, v))(t(rows)),
          np.stack([np.convolve(r, v.numpy()) for r in rows]))
    with pytest.raises(ValueError, match="convolve: a must be 1-d, got ndim 2"):
        S.convolve(t(rows), v)
    with pytest.raises(ValueError, match="convolve: mode must be one of.*'valid'"):
        S.convolve(a, v, mode="circular")
    with pytest.raises(ValueError, match="correlate: inputs cannot be empty"):
        S.correlate(a, t(np.zeros(0)))


# --- cov, corrcoef -----------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"bias": True}, {"ddof": 2}, {"rowvar": False},
                                    {"fweights": [1, 2, 0, 3, 1, 1]},
                                    {"aweights": np.array([0.5, 1.0, 0.2, 0.9, 1.5, 0.3])},
                                    {"fweights": [1, 2, 0, 3, 1, 1], "ddof": 0,
                                     "aweights": np.array([0.5, 1.0, 0.2, 0.9, 1.5, 0.3])}])
def test_cov_matches_numpy(kwargs):
    x, y = RNG.standard_normal((3, 6)), RNG.standard_normal((2, 6))
    if kwargs.get("rowvar") is False:
        x, y = x.T, y.T
    for got in _both(lambda a, b: S.cov(a, b, **kwargs), x, y):
        close(got, np.cov(x, y, **kwargs))
    close(S.cov(t(x), **kwargs), np.cov(x, **kwargs))


def test_cov_corrcoef_details():
    close(S.cov(t([1.0, 2.0, 4.0])), np.cov([1.0, 2.0, 4.0]))
    assert S.cov(fg.tensor([[1, 2, 3], [1, 0, 4]])).dtype == np.float32
    x, y = RNG.standard_normal((3, 6)), RNG.standard_normal((2, 6))
    for got in _both(S.corrcoef, x, y):
        close(got, np.corrcoef(x, y))
    close(S.corrcoef(t(x.T), rowvar=False), np.corrcoef(x.T, rowvar=False))
    check_grads(S.cov, (t(x),), order=2)
    check_grads(S.corrcoef, (t(x),), order=1)
    with pytest.raises(ValueError, match="cov: m must be 1-d or 2-d, got ndim 3"):
        S.cov(fg.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="cov: fweights must be 1-d of length 6"):
        S.cov(t(x), fweights=[1, 2])


# --- interp, digitize, bincount ----------------------------------------------------------------


def test_interp_matches_numpy():
    xp, fp = np.sort(RNG.standard_normal(7)), RNG.standard_normal(7)
    x = RNG.standard_normal(20) * 2
    for got in _both(S.interp, x, xp, fp):
        close(got, np.interp(x, xp, fp))
    for got in _both(lambda a, b, c: S.interp(a, b, c, left=-5.0, right=7.0), x, xp, fp):
        close(got, np.interp(x, xp, fp, -5.0, 7.0))
    for got in _both(lambda a, b, c: S.interp(a, b, c, period=1.3), x, xp, fp):
        close(got, np.interp(x, xp, fp, period=1.3))
    fc = fp + 1j * fp[::-1]
    close(S.interp(t(x), t(xp), fg.tensor(fc)), np.interp(x, xp, fc))
    assert S.interp(fg.tensor([1]), fg.tensor([0, 2]), fg.tensor([0, 4])).dtype == np.float32
    xg = t(np.array([-3.0, -0.4, 0.3, 0.9]))
    check_grads(lambda x_, f_: S.interp(x_, t(xp), f_), (xg, t(fp)), order=1)
    with pytest.raises(ValueError, match="interp: xp and fp must be 1-d of equal length"):
        S.interp(t(x), t(xp), t(fp[:3]))


def test_digitize_matches_numpy():
    bins = np.array([-1.0, 0.0, 0.0, 1.0, 2.0])
    x = np.array([-2, -1, -0.5, 0, 0.5, 1, 2, 3.0])
    for right in (False, True):
        for b in (bins, bins[::-1]):
            for got in _both(lambda a, c, r=right: S.digitize(a, c, right=r), x, b):
                np.testing.assert_array_equal(got.numpy(), np.digitize(x, b, right=right))
                assert got.dtype == np.int32
    with pytest.raises(ValueError, match="digitize: bins must be monotonically"):
        S.digitize(t(x), t([0.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="digitize: bins must be 1-d"):
        S.digitize(t(x), fg.ones((2, 2)))


def test_bincount():
    x = np.array([0, 1, 1, 3, 5])
    w = RNG.random(5)
    got = S.bincount(fg.tensor(x))
    np.testing.assert_array_equal(got.numpy(), np.bincount(x))
    assert got.dtype == np.int32
    close(S.bincount(fg.tensor(x), t(w), minlength=8), np.bincount(x, w, minlength=8))
    np.testing.assert_array_equal(S.bincount(fg.tensor(x), length=3).numpy(), [1, 2, 0])
    jitted = fg.jit(lambda z: S.bincount(z, length=7))(fg.tensor(x))
    np.testing.assert_array_equal(jitted.numpy(), np.bincount(x, minlength=7))
    # as JAX: negative values are clipped into bin 0 (NumPy raises)
    np.testing.assert_array_equal(S.bincount(fg.tensor([-1, 0, 2, 2])).numpy(), [2, 0, 2])
    batched = fg.vmap(lambda z: S.bincount(z, length=4))(fg.tensor([[0, 1, 1], [3, 3, 2]]))
    np.testing.assert_array_equal(batched.numpy(), [[1, 2, 0, 0], [0, 0, 1, 2]])
    check_grads(lambda ww: S.bincount(fg.tensor(x), ww), (t(w),), order=1)
    with pytest.raises(TypeError, match="bincount: x is traced.*length="):
        fg.jit(S.bincount)(fg.tensor(x))
    with pytest.raises(TypeError, match="bincount: x must be integers"):
        S.bincount(t(w))
    with pytest.raises(ValueError, match="bincount: weights must have x's shape"):
        S.bincount(fg.tensor(x), t([1.0]))


# --- histogram ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"bins": 7}, {"bins": 5, "range": (-1.0, 1.0)},
                                    {"bins": [-2.0, -0.5, 0.0, 1.0, 3.0]}, {"density": True},
                                    {"weights": True}, {"bins": 3, "density": True,
                                                        "weights": True}])
def test_histogram_matches_numpy(kwargs):
    a = RNG.standard_normal(50)
    a[3] = a.max() + 1.0  # the right edge itself lands in the last bin
    kwargs = dict(kwargs)
    if kwargs.pop("weights", False):
        kwargs["weights"] = RNG.random(50)
    ours = {k: t(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    want_h, want_e = np.histogram(a, **kwargs)
    got_h, got_e = S.histogram(t(a), **ours)
    close(got_h, want_h)
    close(got_e, want_e)
    close(S.histogram_bin_edges(t(a), **{k: v for k, v in ours.items() if k != "density"}),
          want_e)
    if "range" in kwargs or np.ndim(kwargs.get("bins", 10)) == 1:
        jh, je = fg.jit(lambda z: S.histogram(z, **ours))(t(a))
        close(jh, want_h)
        close(je, want_e)


def test_histogram_dtypes_grads_and_errors():
    h, e = S.histogram(fg.tensor([1, 2, 2, 3, 3, 3]), bins=3)
    assert h.dtype == np.float32 and e.dtype == np.float32
    np.testing.assert_array_equal(h.numpy(), [1, 2, 3])
    h, e = S.histogram(t([2.0, 2.0]), bins=2)  # equal min and max: widened by 0.5
    close(e, [1.5, 2.0, 2.5])
    a = t(RNG.standard_normal(20))
    check_grads(lambda w: S.histogram(a, bins=4, weights=w, density=True)[0],
                (t(RNG.random(20)),), order=1)
    with pytest.raises(NotImplementedError, match="histogram_bin_edges: string values"):
        S.histogram(a, bins="auto")
    with pytest.raises(ValueError, match="histogram_bin_edges: range must be None or a pair"):
        S.histogram(a, range=(0.0, 1.0, 2.0))
    with pytest.raises(ValueError, match="histogram: weights must have a's shape"):
        S.histogram(a, weights=t([1.0]))


# --- gradient ----------------------------------------------------------------------------------


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(edge_order):
    f = RNG.standard_normal((5, 4))
    coords = np.cumsum(RNG.random(5)) + 0.1
    eo = {"edge_order": edge_order}
    got = S.gradient(t(f), **eo)
    assert isinstance(got, list) and len(got) == 2
    for g, w in zip(got, np.gradient(f, **eo), strict=True):
        close(g, w)
    for g, w in zip(S.gradient(t(f), 0.5, 2.0, **eo), np.gradient(f, 0.5, 2.0, **eo),
                    strict=True):
        close(g, w)
    close(S.gradient(t(f), 0.3, axis=1, **eo), np.gradient(f, 0.3, axis=1, **eo))
    for got in _both(lambda z, c: S.gradient(z, c, axis=0, **eo), f, coords):
        close(got, np.gradient(f, coords, axis=0, **eo))
    for g, w in zip(S.gradient(t(f), coords, 3.0, **eo), np.gradient(f, coords, 3.0, **eo),
                    strict=True):
        close(g, w)
    close(S.gradient(t(f[:, 0]), **eo), np.gradient(f[:, 0], **eo))


def test_gradient_dtypes_grads_and_errors():
    got = S.gradient(fg.tensor([1, 2, 4, 7]))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), [1.0, 1.5, 2.5, 3.0])
    check_grads(lambda z: S.gradient(z, 0.7, axis=0, edge_order=2), (t(RNG.random((4, 3))),),
                order=1)
    with pytest.raises(ValueError, match="gradient: axis 0 has 2 elements"):
        S.gradient(t([1.0, 2.0]), edge_order=2)
    with pytest.raises(ValueError, match="gradient: edge_order must be 1 or 2"):
        S.gradient(t([1.0, 2.0, 3.0]), edge_order=3)
    with pytest.raises(TypeError, match="gradient: expected 0, 1 or 2 spacings"):
        S.gradient(fg.ones((3, 3)), 1.0, 2.0, 3.0)


# --- windows, i0 -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hamming", "hanning", "blackman", "bartlett"])
def test_windows_match_numpy(name):
    for M in (0, 1, 2, 5, 8):
        got = getattr(S, name)(M)
        assert got.dtype == np.float32 and got.shape == (M,)
        np.testing.assert_allclose(got.numpy(), getattr(np, name)(M), atol=1e-7)
    with pytest.raises(TypeError, match=f"{name}: M must be an int"):
        getattr(S, name)(2.5)


def test_i0_and_kaiser():
    x = np.concatenate([np.linspace(-30.0, 30.0, 241), [0.0, 7.99, 8.0, 8.01, 200.0, 700.0]])
    np.testing.assert_allclose(S.i0(t(x)).numpy(), np.i0(x), rtol=2e-15)
    x32 = np.concatenate([np.linspace(-30.0, 30.0, 241), [89.0, 91.0]]).astype(np.float32)
    got = S.i0(fg.tensor(x32))
    assert got.dtype == np.float32 and S.i0(fg.tensor([1, 2])).dtype == np.float32
    np.testing.assert_allclose(got.numpy(), np.i0(x32.astype(np.float64)), rtol=2e-6)
    # i0' = i1
    check_grads(S.i0, (t([-9.0, -1.0, 0.3, 2.0, 12.0]),), order=2)
    close(fg.grad(S.i0)(t(1.0)), 0.565159103992485, tol=1e-10)
    for M in (0, 1, 2, 5, 8):
        for beta in (0.0, 1.0, 14.0):
            close(S.kaiser(M, fg.tensor(beta, dtype=fg.float64)), np.kaiser(M, beta))
    assert S.kaiser(4, 3.0).dtype == np.float32
    check_grads(lambda b: S.kaiser(6, b), (t(4.0),), order=1)
    with pytest.raises(TypeError, match="i0: complex input"):
        S.i0(fg.tensor([1j]))


# --- polynomials -------------------------------------------------------------------------------


def test_polynomials_match_numpy():
    p, q = np.array([3.0, -1.0, 2.0, 0.5]), np.array([1.0, 2.0])
    x = RNG.standard_normal(6)
    for got in _both(S.polyval, p, x):
        close(got, np.polyval(p, x))
    close(S.polyadd(t(p), t(q)), np.polyadd(p, q))
    close(S.polysub(t(q), t(p)), np.polysub(q, p))
    close(S.polymul(t(p), t(q)), np.polymul(p, q))
    for m in range(5):
        close(S.polyder(t(p), m), np.polyder(p, m))
        close(S.polyint(t(p), m), np.polyint(p, m))
        close(S.polyint(t(p), m, k=3.0), np.polyint(p, m, k=3.0))
    close(S.polyint(t(p), 3, k=[1.0, 2.0, 3.0]), np.polyint(p, 3, k=[1.0, 2.0, 3.0]))
    assert S.polyval(fg.tensor([1, 2, 3]), 2).dtype == np.int32
    assert S.polyadd(fg.tensor([1, 2]), fg.tensor([1, 2, 3])).dtype == np.int32
    assert S.polyder(fg.tensor([1, 2, 3])).dtype == np.float32
    assert S.polymul(fg.tensor([1, 2]), fg.tensor([1, 2])).dtype == np.float32
    check_grads(S.polyval, (t(p), t(x)), order=2)
    check_grads(S.polymul, (t(p), t(q)), order=1)
    with pytest.raises(ValueError, match="polyder: m .* must be >= 0"):
        S.polyder(t(p), -1)
    with pytest.raises(ValueError, match="polyval: p must be a 1-d coefficient sequence"):
        S.polyval(fg.ones((2, 2)), 1.0)


def test_polyfit_matches_numpy():
    x = np.linspace(0.0, 2.0, 12)
    y = np.stack([np.sin(x), np.cos(x)], axis=1)
    w = RNG.random(12)
    for got in _both(lambda a, b: S.polyfit(a, b, 3), x, y[:, 0]):
        close(got, np.polyfit(x, y[:, 0], 3), tol=1e-9)
    close(S.polyfit(t(x), t(y), 2, w=t(w)), np.polyfit(x, y, 2, w=w), tol=1e-9)
    check_grads(lambda b: S.polyfit(t(x), b, 2), (t(y[:, 0]),), order=1)
    with pytest.raises(NotImplementedError, match="polyfit: full=True"):
        S.polyfit(t(x), t(y[:, 0]), 1, full=True)


# --- vectorize ---------------------------------------------------------------------------------


def test_vectorize_elementwise_and_signature():
    calls = []

    def scalar_fn(a, b):
        calls.append(a.shape)
        return a * 2.0 + b

    a, b = RNG.standard_normal((2, 1)), RNG.standard_normal(3)
    got = S.vectorize(scalar_fn)(t(a), t(b))
    close(got, a * 2.0 + b)
    assert calls == [()]  # pyfunc sees scalars
    close(fg.jit(S.vectorize(scalar_fn))(t(a), t(b)), a * 2.0 + b)
    scaled = S.vectorize(lambda x, k: x * k, excluded={1})
    close(scaled(t(b), 3.0), b * 3.0)

    def dot(u, v):
        assert u.shape == (4,)
        return (u * v).sum()

    u, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 4))
    close(S.vectorize(dot, signature="(n),(n)->()")(t(u), t(v)), np.sum(u * v, axis=-1))
    outer = S.vectorize(lambda x, y: x[:, None] * y[None, :], signature="(m),(n)->(m,n)")
    close(outer(t(u), t(v[0])), u[..., :, None] * v[0][None, :])
    check_grads(S.vectorize(dot, signature="(n),(n)->()"), (t(u), t(v)), order=1)
    with pytest.raises(ValueError, match="vectorize: core dimension 'n' has inconsistent"):
        S.vectorize(dot, signature="(n),(n)->()")(t(u), t(np.ones(5)))
    with pytest.raises(ValueError, match="vectorize: not a valid gufunc signature"):
        S.vectorize(dot, signature="(n)(n)->()")
    with pytest.raises(ValueError, match="vectorize: output shape"):
        S.vectorize(lambda x: x, signature="(n)->()")(t(u))
