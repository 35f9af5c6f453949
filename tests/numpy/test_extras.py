"""funcgrad.numpy._extras against NumPy: array-API aliases, stacking/splitting helpers,
integer and floating-point math, cumulative and NaN reductions, predicates, index helpers
and vector products; eagerly and under jit, with gradients and a few vmaps."""

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.numpy import _extras as X
from funcgrad.test_util import check_grads

RNG = np.random.default_rng(0)


def _both(fn, *args):
    """fn on tensors, eagerly and jitted."""
    tensors = [fg.tensor(a) for a in args]
    return fn(*tensors), fg.jit(fn)(*tensors)


def _close(got, want, rtol=1e-12):
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300)


def test_all_names_exist():
    assert len(X.__all__) == len(set(X.__all__))
    for name in X.__all__:
        fn = getattr(X, name)
        assert callable(fn) and fn.__doc__ and ">>>" in fn.__doc__, name


@pytest.mark.parametrize("name,np_name,lo,hi", [
    ("acos", "arccos", -0.9, 0.9), ("asin", "arcsin", -0.9, 0.9), ("atan", "arctan", -3, 3),
    ("acosh", "arccosh", 1.1, 3), ("asinh", "arcsinh", -3, 3), ("atanh", "arctanh", -0.9, 0.9),
    ("fabs", "fabs", -3, 3),
])
def test_unary_aliases(name, np_name, lo, hi):
    x = RNG.uniform(lo, hi, 6)
    for got in _both(getattr(X, name), x):
        _close(got, getattr(np, np_name)(x))
    assert getattr(X, name)(fg.tensor(x.astype(np.float32))).dtype == np.float32
    check_grads(getattr(X, name), (fg.tensor(x),), order=1)


def test_atan2_and_fabs_dtypes():
    y, x = RNG.standard_normal(5), RNG.standard_normal(5)
    for got in _both(X.atan2, y, x):
        _close(got, np.arctan2(y, x))
    check_grads(X.atan2, (fg.tensor(y), fg.tensor(x)), order=1)
    assert X.fabs(fg.tensor([-2, 3])).dtype == np.float32
    np.testing.assert_array_equal(X.fabs(fg.tensor([-2, 3])).numpy(), [2.0, 3.0])
    assert X.fabs(fg.tensor([True])).dtype == np.float32
    with pytest.raises(TypeError, match="fabs: x must be real"):
        X.fabs(fg.tensor([1j]))


def test_matrix_transpose_unstack_rollaxis():
    x = RNG.standard_normal((2, 3, 4))
    for got in _both(X.matrix_transpose, x):
        _close(got, np.matrix_transpose(x))
    with pytest.raises(ValueError, match="matrix_transpose: .*ndim=1"):
        X.matrix_transpose(fg.tensor([1.0, 2.0]))
    for axis in (0, 1, -1):
        got = X.unstack(fg.tensor(x), axis=axis)
        want = np.unstack(x, axis=axis)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _close(g, w)
    jitted = fg.jit(lambda t: X.unstack(t, axis=1))(fg.tensor(x))
    _close(jitted[2], x[:, 2])
    check_grads(lambda t: X.unstack(t, axis=2)[1] * 2, (fg.tensor(x),), order=1)
    with pytest.raises(ValueError, match="unstack: .*0-d"):
        X.unstack(fg.tensor(1.0))
    y = np.ones((2, 3, 4, 5))
    for axis, start in [(3, 1), (1, 4), (2, 0), (0, -1), (1, 1), (-1, 0)]:
        assert X.rollaxis(fg.tensor(y), axis, start).shape == np.rollaxis(y, axis, start).shape
    _close(X.rollaxis(fg.tensor(x), 2, 0), np.rollaxis(x, 2, 0))
    with pytest.raises(ValueError, match="rollaxis: start 5"):
        X.rollaxis(fg.tensor(x), 0, 5)


def test_atleast_3d_dstack_splits_append():
    for shape in [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)]:
        a = np.ones(shape)
        assert X.atleast_3d(fg.tensor(a)).shape == np.atleast_3d(a).shape
    assert [t.shape for t in X.atleast_3d(1.0, fg.ones(2))] == [(1, 1, 1), (1, 2, 1)]
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    for got in _both(lambda u, v: X.dstack([u, v]), a, b):
        _close(got, np.dstack([a, b]))
    m = RNG.standard_normal((2, 3))
    _close(X.dstack([fg.tensor(m), fg.tensor(m)]), np.dstack([m, m]))
    x = RNG.standard_normal((4, 6, 2))
    for fn, np_fn, arg in [(X.hsplit, np.hsplit, 3), (X.vsplit, np.vsplit, [1, 3]),
                           (X.dsplit, np.dsplit, 2), (X.hsplit, np.hsplit, [2])]:
        got, want = fn(fg.tensor(x), arg), np_fn(x, arg)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _close(g, w)
    _close(X.hsplit(fg.tensor(np.arange(6.0)), 2)[1], np.hsplit(np.arange(6.0), 2)[1])
    with pytest.raises(ValueError, match="vsplit: ary must have at least 2 axes"):
        X.vsplit(fg.ones(4), 2)
    with pytest.raises(ValueError, match="dsplit: ary must have at least 3 axes"):
        X.dsplit(fg.ones((2, 2)), 2)
    with pytest.raises(ValueError, match="hsplit: .*0-d"):
        X.hsplit(fg.tensor(1.0), 1)
    for axis in (None, 0, 1):
        v = np.ones((1, 3)) if axis == 0 else np.ones((2, 2)) if axis == 1 else np.ones(4)
        for got in _both(lambda p, q, ax=axis: X.append(p, q, axis=ax), m, v):
            _close(got, np.append(m, v, axis=axis))
    assert X.append(fg.tensor([1, 2]), fg.tensor([3.0])).dtype == np.float32


def test_ediff1d():
    a = np.array([[1.0, 4.0], [9.0, 16.0]])
    for kw in [{}, {"to_begin": -1.0}, {"to_end": [7.0, 8.0]},
               {"to_begin": [0.5], "to_end": 99.0}]:
        got = X.ediff1d(fg.tensor(a), **{k: v for k, v in kw.items()})
        _close(got, np.ediff1d(a, **kw))
    jitted = fg.jit(lambda t: X.ediff1d(t, to_end=3.0))(fg.tensor(a))
    _close(jitted, np.ediff1d(a, to_end=3.0))
    check_grads(lambda t: X.ediff1d(t, to_begin=1.0), (fg.tensor(a),), order=1)
    # to_begin/to_end take ary's dtype (as JAX)
    assert X.ediff1d(fg.tensor([1, 3]), to_begin=0).dtype == np.int32


def test_logaddexp2():
    x, y = RNG.standard_normal(6) * 5, RNG.standard_normal(6) * 5
    for got in _both(X.logaddexp2, x, y):
        _close(got, np.logaddexp2(x, y), rtol=1e-12)
    _close(X.logaddexp2(fg.tensor([1000.0, -np.inf]), fg.tensor([1000.0, -np.inf])),
           np.logaddexp2([1000.0, -np.inf], [1000.0, -np.inf]))
    assert X.logaddexp2(fg.tensor([1, 2]), 3).dtype == np.float32
    check_grads(X.logaddexp2, (fg.tensor(x), fg.tensor(y)), order=2)


def test_gcd_lcm():
    a = np.array([12, -18, 0, 0, 7, 1071, -5], np.int32)
    b = np.array([-8, 12, 5, 0, 13, 462, -15], np.int32)
    for got in _both(X.gcd, a, b):
        np.testing.assert_array_equal(got.numpy(), np.gcd(a, b))
        assert got.dtype == np.int32
    for got in _both(X.lcm, a, b):
        np.testing.assert_array_equal(got.numpy(), np.lcm(a, b))
    np.testing.assert_array_equal(X.gcd(fg.tensor(a), 6).numpy(), np.gcd(a, 6))
    a2 = RNG.integers(-1000, 1000, (3, 4)).astype(np.int64)
    b2 = RNG.integers(-1000, 1000, (4,)).astype(np.int64)
    np.testing.assert_array_equal(X.gcd(fg.tensor(a2), fg.tensor(b2)).numpy(), np.gcd(a2, b2))
    np.testing.assert_array_equal(fg.vmap(X.gcd)(fg.tensor(a), fg.tensor(b)).numpy(),
                                  np.gcd(a, b))
    with pytest.raises(TypeError, match="gcd: arguments must be integers"):
        X.gcd(fg.tensor([1.0]), 2)
    with pytest.raises(TypeError, match="lcm: arguments must be integers"):
        X.lcm(fg.tensor([True]), fg.tensor([True]))


def test_modf():
    x = np.array([-3.5, 2.25, -0.0, 4.0, -4.0, np.inf, -np.inf, np.nan, 1e20])
    for frac, whole in _both(X.modf, x):
        want_frac, want_whole = np.modf(x)
        np.testing.assert_array_equal(frac.numpy(), want_frac)
        np.testing.assert_array_equal(whole.numpy(), want_whole)
        np.testing.assert_array_equal(np.signbit(frac.numpy()), np.signbit(want_frac))
    frac, whole = X.modf(fg.tensor([3, -2]))
    assert frac.dtype == whole.dtype == np.float32
    y = np.array([0.3, -1.7, 2.6])
    check_grads(lambda t: X.modf(t)[0], (fg.tensor(y),), order=1)


def _special_floats(dtype):
    info = np.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.0, 8.0, -3.5, 0.1, 1e-3, info.max, -info.max, info.tiny,
            info.smallest_subnormal, -info.smallest_subnormal * 7, info.tiny / 3,
            np.inf, -np.inf, np.nan]
    return np.concatenate([np.array(vals, dtype), RNG.standard_normal(8).astype(dtype) *
                           np.array(10.0, dtype) ** RNG.integers(-30, 30, 8).astype(dtype)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frexp_ldexp_exact(dtype):
    x = _special_floats(dtype)
    for m, e in _both(X.frexp, x):
        want_m, want_e = np.frexp(x)
        assert m.dtype == dtype and e.dtype == np.int32
        np.testing.assert_array_equal(m.numpy(), want_m)
        np.testing.assert_array_equal(e.numpy(), want_e)
    exps = np.array([0, 1, -1, 5, -5, 100, -100, 200, -200, 1000, -1000, 1100, -1100, 2000,
                     -2000, 40, -40], np.int32)
    xs = np.repeat(x, len(exps))
    es = np.tile(exps, len(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.ldexp(xs, es)
    eager, jitted = _both(X.ldexp, xs, es)
    assert eager.dtype == jitted.dtype == dtype
    np.testing.assert_array_equal(eager.numpy(), want)
    # compiled code may flush subnormal results to zero: exact elsewhere
    normal = ~((want != 0) & (np.abs(want) < np.finfo(dtype).tiny))
    np.testing.assert_array_equal(jitted.numpy()[normal], want[normal])
    # exactness at subnormal rounding boundaries
    odd = np.array([3, 5, 7, 2**20 + 1, 2**23 - 1], dtype)
    k = np.array([-150, -149, -148, -160, -170], np.int32)
    np.testing.assert_array_equal(X.ldexp(fg.tensor(odd), fg.tensor(k)).numpy(),
                                  np.ldexp(odd, k))
    with pytest.raises(TypeError, match="ldexp: x2 must be integers"):
        X.ldexp(fg.tensor([1.0]), fg.tensor([1.0]))


def test_frexp_ldexp_int_input():
    m, e = X.frexp(fg.tensor([3, 8]))
    assert m.dtype == np.float32
    np.testing.assert_array_equal(m.numpy(), [0.75, 0.5])
    np.testing.assert_array_equal(e.numpy(), [2, 4])
    assert X.ldexp(fg.tensor([1, 2]), 3).dtype == np.float32


def test_trapezoid():
    y = RNG.standard_normal((3, 5))
    x1 = np.sort(RNG.standard_normal(5))
    x2 = np.sort(RNG.standard_normal((3, 5)), axis=1)
    for got in _both(X.trapezoid, y):
        _close(got, np.trapezoid(y))
    for got in _both(lambda a, b: X.trapezoid(a, b), y, x1):
        _close(got, np.trapezoid(y, x1))
    _close(X.trapezoid(fg.tensor(y), fg.tensor(x2)), np.trapezoid(y, x2))
    _close(X.trapezoid(fg.tensor(y), dx=0.5, axis=0), np.trapezoid(y, dx=0.5, axis=0))
    assert X.trapezoid(fg.tensor([1, 2, 3])).dtype == np.float32
    assert X.trapezoid(fg.tensor(y.astype(np.float32))).dtype == np.float32
    check_grads(lambda a, b: X.trapezoid(a, b), (fg.tensor(y), fg.tensor(x1)), order=2)
    with pytest.raises(ValueError, match="trapezoid: x has 4 points but y has 5"):
        X.trapezoid(fg.tensor(y), fg.tensor(x1[:4]))


def test_geomspace():
    for args, kw in [((1.0, 1000.0, 4), {}), ((2.0, 32.0, 5), {"endpoint": False}),
                     ((-1.0, -1000.0, 7), {}), ((3.0, 0.5, 1), {}), ((1.0, 2.0, 0), {})]:
        want = np.geomspace(*args, **kw)
        got = X.geomspace(*(fg.tensor(np.float64(a)) if isinstance(a, float) else a
                            for a in args), **kw)
        _close(got, want, rtol=1e-13)
        if len(want):
            assert got.numpy()[0] == want[0]
    assert X.geomspace(1.0, 1000.0, 4).dtype == np.float32
    _close(X.geomspace(1.0, 1000.0, 4), np.geomspace(1.0, 1000.0, 4), rtol=1e-6)
    assert X.geomspace(1.0, 1000.0, 4).numpy()[-1] == 1000.0
    start, stop = np.array([1.0, 2.0]), np.array([10.0, 200.0])
    _close(X.geomspace(fg.tensor(start), fg.tensor(stop), 5, axis=1),
           np.geomspace(start, stop, 5, axis=1), rtol=1e-13)
    np.testing.assert_array_equal(X.geomspace(1, 1000, 4, dtype=fg.int32).numpy(),
                                  [1, 10, 100, 1000])
    jitted = fg.jit(lambda a, b: X.geomspace(a, b, 6))(fg.tensor(2.0), fg.tensor(64.0))
    _close(jitted, np.geomspace(2.0, 64.0, 6).astype(np.float32), rtol=1e-6)
    check_grads(lambda a, b: X.geomspace(a, b, 5), (fg.tensor(2.0, dtype=fg.float64),
                                                    fg.tensor(50.0, dtype=fg.float64)),
                order=1)
    with pytest.raises(ValueError, match="geomspace: start must be nonzero"):
        X.geomspace(0.0, 1.0)


def test_vander():
    x = RNG.standard_normal(4)
    for kw in [{}, {"N": 2}, {"N": 6, "increasing": True}, {"N": 0}]:
        for got in _both(lambda t, kw=kw: X.vander(t, **kw), x):
            _close(got, np.vander(x, **kw), rtol=0)
    assert X.vander(fg.tensor([1, 2, 3])).dtype == np.int32
    check_grads(lambda t: X.vander(t, 4), (fg.tensor(np.array([0.0, 1.5, -2.0])),), order=2)
    with pytest.raises(ValueError, match="vander: x must be 1-d"):
        X.vander(fg.ones((2, 2)))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative(name):
    fn, np_fn = getattr(X, name), getattr(np, name)
    x = RNG.standard_normal((3, 4))
    for axis in (0, 1, -1):
        for inc in (False, True):
            for got in _both(lambda t, a=axis, i=inc: fn(t, axis=a, include_initial=i), x):
                _close(got, np_fn(x, axis=axis, include_initial=inc))
    v = np.array([1, 2, 3], np.int8)
    got = fn(fg.tensor(v), include_initial=True)
    # as JAX 0.10: the sum widens int8 to int32, the product keeps int8
    want_dtype = np.int32 if name == "cumulative_sum" else np.int8
    assert got.dtype == want_dtype
    np.testing.assert_array_equal(got.numpy(), np_fn(v.astype(want_dtype), include_initial=True))
    assert fn(fg.tensor(v), dtype=fg.float32).dtype == np.float32
    check_grads(lambda t: fn(t, axis=1, include_initial=True), (fg.tensor(x),), order=1)
    with pytest.raises(ValueError, match=f"{name}: axis must be given"):
        fn(fg.tensor(x))


def test_nan_cumulative_and_nanprod():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 5.0, 0.5]])
    cases = [(name, axis, {}) for axis in (None, 0, 1) for name in ("nancumsum", "nancumprod")]
    cases += [("nanprod", axis, {"keepdims": k}) for axis in (None, 0, 1) for k in (False, True)]

    def every_case(t):  # one program for all cases: one compile instead of twelve
        return [getattr(X, name)(t, axis=axis, **kw) for name, axis, kw in cases]

    for results in _both(every_case, x):
        for (name, axis, kw), got in zip(cases, results, strict=True):
            _close(got, getattr(np, name)(x, axis=axis, **kw))
    np.testing.assert_array_equal(X.nanprod(fg.tensor([2, 3])).numpy(), 6)
    y = np.array([0.5, np.nan, 2.0, -1.5])
    check_grads(X.nanprod, (fg.tensor(y),), order=2)
    check_grads(X.nancumsum, (fg.tensor(y),), order=1)
    check_grads(X.nancumprod, (fg.tensor(y),), order=1)


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanargmax_nanargmin(name):
    fn, np_fn = getattr(X, name), getattr(np, name)
    x = np.array([[1.0, np.nan, 3.0, 3.0], [np.nan, -np.inf, 2.0, np.inf],
                  [np.nan, np.inf, np.nan, -np.inf], [5.0, 5.0, 5.0, 5.0]])
    for axis in (0, 1):
        for got in _both(lambda t, a=axis: fn(t, axis=a), x):
            np.testing.assert_array_equal(got.numpy(), np_fn(x, axis=axis))
            assert got.dtype == np.int32
    assert int(fn(fg.tensor(x))) == np_fn(x)
    assert fn(fg.tensor(x), axis=1, keepdims=True).shape == (4, 1)
    # all-NaN slices give -1 (as JAX; NumPy raises)
    got = fn(fg.tensor([[np.nan, np.nan], [1.0, np.nan]]), axis=1)
    np.testing.assert_array_equal(got.numpy(), [-1, 0])
    got = fg.vmap(fn)(fg.tensor(x))
    np.testing.assert_array_equal(got.numpy(), np_fn(x, axis=1))
    np.testing.assert_array_equal(fn(fg.tensor([3, 1, 4])).numpy(), np_fn([3, 1, 4]))


def test_predicates():
    for value in (1.0, 3, True, 1j, np.float32(1.0), "a", np.array(1.0), [1.0], None):
        assert X.isscalar(value) == np.isscalar(value), value
    assert X.isscalar(fg.tensor(1.0)) and not X.isscalar(fg.tensor([1.0]))
    for value in (1.0, 1j, [1.0, 2j], np.ones(2), np.ones(2, complex)):
        assert X.iscomplexobj(value) == np.iscomplexobj(value)
        assert X.isrealobj(value) == np.isrealobj(value)
    assert X.iscomplexobj(fg.tensor([1j])) and X.isrealobj(fg.tensor([1]))
    z = np.array([1 + 1j, 2 + 0j, 0j, 3j])
    for got in _both(X.iscomplex, z):
        np.testing.assert_array_equal(got.numpy(), np.iscomplex(z))
    for got in _both(X.isreal, z):
        np.testing.assert_array_equal(got.numpy(), np.isreal(z))
    np.testing.assert_array_equal(X.iscomplex(fg.tensor([1.0, 2.0])).numpy(), [False, False])
    np.testing.assert_array_equal(X.isreal(fg.tensor([1, 2])).numpy(), [True, True])


def test_indices_and_diag_indices():
    got = X.indices((2, 3))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), np.indices((2, 3)))
    np.testing.assert_array_equal(X.indices((2, 3, 4), dtype=fg.float32).numpy(),
                                  np.indices((2, 3, 4), dtype=np.float32))
    for g, w in zip(X.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True),
                    strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    assert X.indices(()).shape == np.indices(()).shape
    for args in [(3,), (2, 3)]:
        for g, w in zip(X.diag_indices(*args), np.diag_indices(*args), strict=True):
            np.testing.assert_array_equal(g.numpy(), w)
    a = np.ones((3, 3, 3))
    for g, w in zip(X.diag_indices_from(fg.tensor(a)), np.diag_indices_from(a), strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError, match="diag_indices_from: all sides of arr must be equal"):
        X.diag_indices_from(fg.ones((2, 3)))
    b = np.ones((3, 5))
    for k in (-1, 0, 2):
        for fn, np_fn in [(X.tril_indices_from, np.tril_indices_from),
                          (X.triu_indices_from, np.triu_indices_from)]:
            for g, w in zip(fn(fg.tensor(b), k), np_fn(b, k), strict=True):
                np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError, match="tril_indices_from: arr must be 2-d"):
        X.tril_indices_from(fg.ones(3))


def test_diagflat_ix():
    v = RNG.standard_normal((2, 2))
    for k in (0, 1, -2):
        for got in _both(lambda t, k=k: X.diagflat(t, k), v):
            _close(got, np.diagflat(v, k))
    check_grads(lambda t: X.diagflat(t, 1), (fg.tensor(v),), order=1)
    x = RNG.standard_normal((4, 5))
    rows, cols = np.array([0, 2, 3]), np.array([1, 4])
    got = X.ix_(fg.tensor(rows), fg.tensor(cols))
    want = np.ix_(rows, cols)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    _close(fg.tensor(x)[got], x[want])
    mask = np.array([True, False, True, False, True])
    for g, w in zip(X.ix_(fg.tensor(rows), fg.tensor(mask)), np.ix_(rows, mask), strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError, match="ix_: argument 0 must be 1-d"):
        X.ix_(fg.ones((2, 2), dtype=fg.int32))
    with pytest.raises(TypeError, match="ix_: argument 0 must be integer or boolean"):
        X.ix_(fg.ones(2))


def test_unravel_ravel_multi_index():
    shape = (3, 4, 5)
    flat = np.array([0, 7, 59, 23, 40], np.int32)
    for got in _both(lambda t: X.unravel_index(t, shape), flat):
        for g, w in zip(got, np.unravel_index(flat, shape), strict=True):
            np.testing.assert_array_equal(g.numpy(), w)
    assert [int(c) for c in X.unravel_index(17, (4, 5))] == list(np.unravel_index(17, (4, 5)))
    with pytest.raises(ValueError, match="unravel_index: index 60 is out of bounds"):
        X.unravel_index(fg.tensor([1, 60]), shape)
    # traced: negatives wrap once, then clip (as JAX)
    got = fg.jit(lambda t: X.unravel_index(t, (3, 4)))(fg.tensor([13, -1, -13]))
    np.testing.assert_array_equal(np.stack([g.numpy() for g in got]), [[2, 2, 0], [3, 3, 0]])
    coords = np.unravel_index(flat, shape)
    for order in ("C", "F"):
        want = np.ravel_multi_index(coords, shape, order=order)
        got = X.ravel_multi_index(tuple(fg.tensor(c.astype(np.int32)) for c in coords), shape,
                                  order=order)
        np.testing.assert_array_equal(got.numpy(), want)
    bad = (np.array([3, -1, 1]), np.array([1, 5, -6]))
    for mode in ("wrap", "clip"):
        want = np.ravel_multi_index(bad, (3, 4), mode=mode)
        fn = fg.jit(lambda a, b, m=mode: X.ravel_multi_index((a, b), (3, 4), mode=m))
        np.testing.assert_array_equal(fn(*(fg.tensor(b.astype(np.int32)) for b in bad)).numpy(),
                                      want)
    with pytest.raises(ValueError, match="ravel_multi_index: coordinates along axis 0"):
        X.ravel_multi_index((fg.tensor([3]), fg.tensor([1])), (3, 4))
    with pytest.raises(TypeError, match="ravel_multi_index: mode='raise' needs concrete"):
        fg.jit(lambda a: X.ravel_multi_index((a, a), (3, 4)))(fg.tensor([1]))
    with pytest.raises(ValueError, match="ravel_multi_index: 1 coordinate tensors for 2"):
        X.ravel_multi_index((fg.tensor([1]),), (3, 4))


def test_matvec_vecmat_vecdot():
    a = RNG.standard_normal((2, 3, 4))
    v = RNG.standard_normal(4)
    w = RNG.standard_normal((2, 1, 3))
    for got in _both(X.matvec, a, v):
        _close(got, np.matvec(a, v), rtol=1e-12)
    for got in _both(X.vecmat, w, a):
        _close(got, np.vecmat(w, a), rtol=1e-12)
    b = RNG.standard_normal((5, 4))
    for got in _both(X.vecdot, b, v):
        _close(got, np.vecdot(b, v), rtol=1e-12)
    _close(X.vecdot(fg.tensor(b.T), fg.tensor(b.T), axis=0), np.vecdot(b.T, b.T, axis=0))
    za = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
    zb = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
    _close(X.vecdot(fg.tensor(za), fg.tensor(zb)), np.vecdot(za, zb))
    _close(X.vecmat(fg.tensor(za[0]), fg.tensor(zb.T)), np.vecmat(za[0], zb.T))
    _close(X.matvec(fg.tensor(zb), fg.tensor(za[0])), np.matvec(zb, za[0]))
    assert X.vecdot(fg.tensor(b.astype(np.float32)), fg.tensor(v.astype(np.float32))).dtype \
        == np.float32
    check_grads(X.matvec, (fg.tensor(a), fg.tensor(v)), order=2)
    check_grads(X.vecmat, (fg.tensor(w), fg.tensor(a)), order=1)
    check_grads(X.vecdot, (fg.tensor(b), fg.tensor(v)), order=2)
    got = fg.vmap(X.vecdot)(fg.tensor(b), fg.tensor(b))
    _close(got, np.vecdot(b, b))
    with pytest.raises(ValueError, match="matvec: shapes"):
        X.matvec(fg.ones((2, 3)), fg.ones(4))
    with pytest.raises(ValueError, match="vecmat: x1 must be at least 1-d and x2 at least 2-d"):
        X.vecmat(fg.ones(3), fg.ones(3))
    with pytest.raises(ValueError, match="vecdot: sizes along axis -1 differ"):
        X.vecdot(fg.ones(3), fg.ones(4))


def test_set_operations_eager_and_with_a_static_size():
    a = np.array([5, 1, 4, 4, 9], np.int32)
    b = np.array([4, 7, 1], np.int32)
    # padded as jax.numpy pads: the smallest result, but 0 for setdiff1d
    sized = {"union1d": (8, [1, 4, 5, 7, 9, 1, 1, 1]), "intersect1d": (4, [1, 4, 1, 1]),
             "setdiff1d": (4, [5, 9, 0, 0]), "setxor1d": (6, [5, 7, 9, 5, 5, 5])}
    for name, (size, want) in sized.items():
        f = getattr(fnp, name)
        assert f(fg.tensor(a), fg.tensor(b)).tolist() == getattr(np, name)(a, b).tolist()
        assert f(fg.tensor(a), fg.tensor(b), size=size).tolist() == want
        jitted = fg.jit(lambda x, y, f=f, size=size: f(x, y, size=size, fill_value=-1))
        got = jitted(fg.tensor(a), fg.tensor(b)).tolist()
        n = len(getattr(np, name)(a, b))
        assert got == want[:n] + [-1] * (size - n)
        with pytest.raises(TypeError, match="size="):
            fg.jit(f)(fg.tensor(a), fg.tensor(b))
    assert fnp.setdiff1d(fg.tensor([1, 2]), fg.tensor([1, 2]), size=2).tolist() == [0, 0]
    np.testing.assert_array_equal(np.asarray(fnp.union1d(fg.tensor([1.5, np.nan]),
                                                         fg.tensor([np.nan, 0.5]))),
                                  [0.5, 1.5, np.nan])


def test_lexsort_and_partitions():
    rng = np.random.default_rng(0)
    keys = [rng.integers(0, 3, 20) for _ in range(3)]
    got = fnp.lexsort(tuple(fg.tensor(k.astype(np.int32)) for k in keys))
    assert got.tolist() == np.lexsort(keys).tolist()
    x = rng.standard_normal((3, 7))
    for kth in (0, 3, -1):
        part = np.asarray(fnp.partition(fg.tensor(x), kth, axis=1))
        np.testing.assert_array_equal(part[:, kth], np.partition(x, kth, axis=1)[:, kth])
        assert (part[:, :kth] <= part[:, [kth]]).all() and (part[:, kth:] >= part[:, [kth]]).all()
        index = np.asarray(fnp.argpartition(fg.tensor(x), kth, axis=1))
        np.testing.assert_array_equal(np.take_along_axis(x, index, 1)[:, kth],
                                      np.partition(x, kth, axis=1)[:, kth])
    with pytest.raises(ValueError, match="kth"):
        fnp.partition(fg.tensor(x), 7)


# --- integer edge cases, found by an audit against NumPy and JAX -----------------------------


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint64"])
def test_gcd_lcm_at_the_integer_limits(dtype):
    # abs(INT_MIN) is INT_MIN: gcd(-2, -128) in int8 came out -2; lcm took the absolute
    # value of the wrapped product (lcm(-127, -2) in int8 gave 2, NumPy's is -2)
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    a[:4], b[:4] = [info.min, info.min, 0, info.max], [info.min, 0, info.min, info.max]
    if info.min < 0:
        a[4:7], b[4:7] = [-2, -127, info.min], [info.min, -2, 6]
    with np.errstate(over="ignore"):
        for name in ("gcd", "lcm"):
            for got in _both(getattr(X, name), a, b):
                np.testing.assert_array_equal(got.numpy(), getattr(np, name)(a, b))
                assert got.dtype == dtype


def test_integer_statistics_and_float_results_as_jax():
    # 64-bit integers give float64 (as mean); median of 10**10 + 1 was float32 1e10
    big = np.array([10**10 + 1] * 3, np.int64)
    for name, fn in (("median", fnp.median), ("quantile", lambda a: fnp.quantile(a, 0.5)),
                     ("percentile", lambda a: fnp.percentile(a, 50))):
        for got in _both(fn, big):
            assert got.dtype == np.float64 and got.item() == 10**10 + 1, name
    assert fnp.histogram(fg.tensor(big), bins=2)[0].dtype == np.float64
    assert fnp.median(fg.tensor(np.array([1, 2, 4], np.int32))).dtype == np.float32
    # heaviside and rint of integers are floats (JAX); heaviside was int8, rint int8
    got = fnp.heaviside(fg.tensor(np.array([-1, 0, 7], np.int8)),
                        fg.tensor(np.array([0, 5, 0], np.int8)))
    assert got.dtype == np.float32 and got.tolist() == [0.0, 5.0, 1.0]
    assert fnp.rint(fg.tensor(np.array([1, 2], np.int8))).dtype == np.float32
    # linspace with a 64-bit integer dtype takes bounds beyond int32 (they overflowed)
    got = fnp.linspace(-2**40, 2**40, 3, dtype=np.int64)
    assert got.dtype == np.int64 and got.tolist() == [-2**40, 0, 2**40]
