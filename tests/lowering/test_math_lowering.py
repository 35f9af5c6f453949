"""Compiled elementwise math (fg.jit) against the eager NumPy implementation, per dtype.

One jitted function per dtype applies every unary primitive to a grid of values (special
values included) and returns a tuple, so the module compiles a handful of programs.
Subnormal inputs are left out: compiled code flushes them to zero.
"""

import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.prims import elementwise as ew


@pytest.fixture(autouse=True, scope="module")
def _compile_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("funcgrad-cache")))
    yield
    mp.undo()


UNARY = ["neg", "sign", "floor", "ceil", "round", "is_finite", "exp", "log", "log1p", "expm1",
         "tanh", "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
         "asinh", "acosh", "atanh", "sqrt", "rsqrt", "abs", "erf", "erf_inv", "real", "imag",
         "conj"]
BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2"]
# known wrong: stablehlo.power is exp(y log x) (NaN for x <= 0 even when y is an integer)
KNOWN_WRONG = {("pow", d) for d in (dtypes.float64, dtypes.float32, dtypes.float16,
                                    dtypes.bfloat16)}
REAL = [dtypes.float64, dtypes.float32, dtypes.float16, dtypes.bfloat16]
COMPLEX = [dtypes.complex64, dtypes.complex128]
# relative tolerance against the eager result, and an absolute floor for results near 0
TOLERANCE = {dtypes.float64: (1e-14, 1e-300), dtypes.float32: (2e-6, 1e-37),
             dtypes.float16: (1e-2, 1e-4), dtypes.bfloat16: (2e-2, 1e-37),
             dtypes.complex64: (2e-5, 1e-6), dtypes.complex128: (1e-11, 1e-14)}
# the eager erf is 1 - erfc (absolute error 1e-16 near 0), and its inverse follows it
ABSOLUTE = {"erf": 2e-16, "erf_inv": 2e-16}


def _supports(prim, dtype):
    try:
        prim.abstract_eval(*[ShapedArray((2,), dtype)] * prim.arity)
    except TypeError:
        return False
    return True


def _real_grid(dtype):
    info = dtypes.finfo(dtype)
    near_half_pi = [k * math.pi / 2 + d for k in (1, 2, 3, 7, 100, 1001)
                    for d in (0.0, 1e-9, -1e-9)]
    values = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -3.0, 0.999, -0.999, 0.1, -0.1, 1e-3,
              1e-8, -1e-12, 1.5, 10.0, -10.0, 20.0, -40.0, 100.0, 700.0, -745.0, 1e4, 1e5,
              -1e5, 3e7, float(info.tiny), -float(info.tiny), float(info.max),
              -float(info.max), math.inf, -math.inf, math.nan, *near_half_pi]
    grid = np.array(values, dtype=np.float64).astype(dtype)
    with np.errstate(all="ignore"):
        keep = ~((grid != 0) & (np.abs(grid.astype(np.float64)) < float(info.tiny)))
    return grid[keep]


def _complex_grid(dtype):
    parts = np.array([0.0, -0.0, 0.5, -1.0, 2.0, 1e-3, -3.0, 10.0, 1.5, -0.25])
    re, im = np.meshgrid(parts, parts)
    return (re + 1j * im).ravel().astype(dtype)


def _grid(dtype):
    return _complex_grid(dtype) if dtypes.is_complex(dtype) else _real_grid(dtype)


def _assert_close(name, dtype, x, got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "b":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    rtol, atol = TOLERANCE[dtype]
    atol = max(atol, ABSOLUTE.get(name, 0.0))
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    g, w = got.astype(wide), want.astype(wide)
    for part in ((np.real, np.imag) if want.dtype.kind == "c" else (lambda v: v,)):
        gp, wp = part(g), part(w)
        both_nan = np.isnan(gp) & np.isnan(wp)
        with np.errstate(all="ignore"):
            close = (gp == wp) | (np.abs(gp - wp) <= atol + rtol * np.abs(wp))
        bad = ~(close | both_nan)
        assert not bad.any(), (f"{name} {dtype.name}: at x={x[bad][:4]} compiled "
                               f"{gp[bad][:4]} != eager {wp[bad][:4]}")


@pytest.mark.parametrize("dtype", REAL + COMPLEX, ids=lambda d: d.name)
def test_unary_math_matches_eager(dtype):
    names = [n for n in UNARY if _supports(getattr(ew, n + "_p"), dtype)]
    if dtypes.is_complex(dtype):  # abs_p's rule says complex, its impl gives real: unused
        names.remove("abs")
    prims = [getattr(ew, n + "_p") for n in names]
    x = _grid(dtype)
    outs = fg.jit(lambda t: tuple(p.bind(t) for p in prims))(fg.tensor(x))
    for name, prim, got in zip(names, prims, outs, strict=True):
        with np.errstate(all="ignore"):
            want = prim.impl(x)
        _assert_close(name, dtype, x, got, want)


INVERSE = ["asin", "acos", "atan", "asinh", "acosh", "atanh"]


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_complex_inverse_functions_take_numpys_side_of_branch_cuts(dtype):
    # points on the cuts and zero parts of either sign: the value and the sign of zero
    # parts as NumPy's (Kahan's formulas, funcgrad.lowering.math64)
    parts = [-3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0]
    re, im = np.meshgrid(parts, [-2.0, -0.0, 0.0, 2.0])
    x = np.empty(re.size, dtype)
    x.real, x.imag = re.ravel(), im.ravel()
    x = np.concatenate([x, np.array([1j, -1j, 3j, -3j], dtype)])
    prims = [getattr(ew, n + "_p") for n in INVERSE]
    outs = fg.jit(lambda t: tuple(p.bind(t) for p in prims))(fg.tensor(x))
    for name, prim, got in zip(INVERSE, prims, outs, strict=True):
        with np.errstate(all="ignore"):
            want = prim.impl(x)
        _assert_close(name, dtype, x, got, want)
        got = np.asarray(got)
        for part in (np.real, np.imag):
            zero = (part(want) == 0) & (part(got) == 0)
            flipped = np.signbit(part(got)) != np.signbit(part(want))
            assert not (zero & flipped).any(), f"{name}: sign of zero at {x[zero & flipped]}"


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_complex_division_matches_numpy_for_zeros_and_infinities(dtype):
    # Smith's algorithm with NumPy's zero-divisor case; IREE's own gave NaN for any z / 0
    parts = [0.0, -0.0, 1.0, -2.5, 3e-30, 1e30, math.inf, -math.inf, math.nan]
    re, im = np.meshgrid(parts, parts)
    z = np.empty(re.size, dtype)
    z.real, z.imag = re.ravel(), im.ravel()
    x, y = (v.ravel() for v in np.meshgrid(z, z))
    got = np.asarray(fg.jit(lambda a, b: a / b)(fg.tensor(x), fg.tensor(y)))
    with np.errstate(all="ignore"):
        want = x / y
    rtol = TOLERANCE[dtype][0]
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        with np.errstate(all="ignore"):
            close = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= rtol * np.abs(want))
        assert close.all(), (f"{x[~close][:3]} / {y[~close][:3]}: compiled {got[~close][:3]} "
                             f"!= NumPy {want[~close][:3]}")


def _pairs(dtype):
    if dtypes.is_complex(dtype):
        values = np.array([0.5, -1.0, 2.0 + 1j, 1e-3 - 0.5j, -3.0 + 2j, 1.5j], dtype=dtype)
    else:
        values = _real_grid(dtype)
        values = values[np.isfinite(values.astype(np.float64))
                        | np.isinf(values.astype(np.float64))]
        values = values[np.abs(values.astype(np.float64)) < 1e6]
    xs, ys = np.meshgrid(values, values)
    return xs.ravel(), ys.ravel()


@pytest.mark.parametrize("dtype", REAL + COMPLEX, ids=lambda d: d.name)
def test_binary_math_matches_eager(dtype):
    names = [n for n in BINARY if _supports(getattr(ew, n + "_p"), dtype)]
    if dtypes.is_complex(dtype):
        names = [n for n in names if n not in ("rem", "max", "min")]
    names = [n for n in names if (n, dtype) not in KNOWN_WRONG]
    prims = [getattr(ew, n + "_p") for n in names]
    x, y = _pairs(dtype)
    outs = fg.jit(lambda a, b: tuple(p.bind(a, b) for p in prims))(fg.tensor(x),
                                                                       fg.tensor(y))
    for name, prim, got in zip(names, prims, outs, strict=True):
        with np.errstate(all="ignore"):
            want = prim.impl(x, y)
        keep = np.ones(x.shape, bool)
        if name == "pow":  # known: stablehlo.power gives NaN for NaN ** 0 (NumPy: 1)
            keep = ~(np.isnan(x.astype(np.complex128)) & (y == 0))
        _assert_close(name, dtype, np.stack([x, y], -1)[keep], np.asarray(got)[keep],
                      want[keep])


def test_float64_trig_is_accurate_far_from_zero():
    """sin/cos within 1 ulp (tan 3) up to 2e8, where the 6-part reduction is exact."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-2e8, 2e8, 4000), np.arange(1, 2000) * (math.pi / 2),
                        10.0 ** rng.uniform(-300, 0, 500)])
    s, c, t = fg.jit(lambda v: (ew.sin(v), ew.cos(v), ew.tan(v)))(fg.tensor(x))
    for got, want, ulps in ((s, np.sin(x), 1), (c, np.cos(x), 1), (t, np.tan(x), 3)):
        error = np.abs(np.asarray(got) - want) / np.spacing(np.abs(want))
        assert error.max() <= ulps


def _float64_trig(x):
    return fg.jit(lambda v: (ew.sin(v), ew.cos(v), ew.tan(v)))(fg.tensor(x))


def _assert_within_ulps(got, want, ulps, what):
    got = np.asarray(got)
    assert np.array_equal(np.isnan(got), np.isnan(want)), what
    finite = np.isfinite(want)
    error = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
    assert error.max() <= ulps, (what, error.max())


def test_float64_trig_is_accurate_for_large_arguments():
    """Beyond 2**27 pi/2 the argument is reduced by a table of 2/pi (Payne-Hanek): within
    1 ulp of NumPy (tan 2) for every finite argument, of either sign, up to the largest."""
    rng = np.random.default_rng(4)
    magnitudes = np.concatenate([10.0 ** rng.uniform(8, math.log10(1.7e308), 6000),
                                 2.0 ** np.arange(27, 1024), [np.finfo(np.float64).max,
                                                              1e15, 2.0 ** 150 * 3]])
    x = np.concatenate([magnitudes, -magnitudes, rng.uniform(-100, 100, 100)])
    rng.shuffle(x)
    for got, ref, ulps in zip(_float64_trig(x), (np.sin, np.cos, np.tan), (1, 1, 2),
                              strict=True):
        _assert_within_ulps(got, ref(x), ulps, ref.__name__)


def test_float64_trig_of_the_hardest_argument_is_exact():
    """6381956970095103 * 2**797 is the float64 closest to a multiple of pi/2 (2**-61
    away): the reduction keeps every digit (NumPy's cos is 8 ulp off there)."""
    from fractions import Fraction

    from funcgrad.lowering.math64 import _pi_times_2_to

    x = 6381956970095103 * 2.0 ** 797
    half_pi = Fraction(_pi_times_2_to(2000), 2 ** 2001)
    k = round(Fraction(x) / half_pi)
    r = float(Fraction(x) - k * half_pi)  # sin r = r and cos r = 1 at this size
    assert abs(r) < 2.0 ** -60 and k % 2 == 1
    s, c, t = (np.asarray(v) for v in _float64_trig(np.array([x, -x])))
    sign = 1.0 if k % 4 == 1 else -1.0  # sin(x) = sign cos(r), cos(x) = -sign sin(r)
    np.testing.assert_array_equal(s, [sign, -sign])
    np.testing.assert_array_equal(c, [-sign * r, -sign * r])
    np.testing.assert_allclose(t, [-1.0 / r, 1.0 / r], rtol=2 * 2.0 ** -52)


def test_float64_trig_of_special_values():
    x = np.array([math.inf, -math.inf, math.nan, 0.0, -0.0, 5e-324 * 2 ** 60,
                  np.finfo(np.float64).max, -np.finfo(np.float64).max])
    s, c, t = (np.asarray(v) for v in _float64_trig(x))
    assert np.isnan(s[:3]).all() and np.isnan(c[:3]).all() and np.isnan(t[:3]).all()
    np.testing.assert_array_equal(np.signbit(s[3:5]), [False, True])
    np.testing.assert_array_equal(np.signbit(t[3:5]), [False, True])
    np.testing.assert_array_equal(c[3:5], [1.0, 1.0])
    for got, ref in zip((s, c, t), (np.sin, np.cos, np.tan), strict=True):
        _assert_within_ulps(got[5:], ref(x[5:]), 2, ref.__name__)


def test_float64_trig_takes_the_fast_path_unchanged_for_common_arguments():
    """Below 2**27 pi/2 the results are those of the Cody-Waite path, bit for bit: the
    table path only runs for an array holding a larger argument."""
    from funcgrad.lowering import math64

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-100, 100, 3000), rng.uniform(-2e8, 2e8, 3000)])
    fast = fg.jit(lambda v: tuple(math64._fast_trig(k)(v) for k in ("sin", "cos", "tan")))
    for got, want in zip(_float64_trig(x), fast(fg.tensor(x)), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # one large argument: every element takes the table path, within an ulp of the above
    mixed = np.append(x, 1e300)
    for got, want, ulps in zip(_float64_trig(mixed), fast(fg.tensor(x)), (1, 1, 2),
                               strict=True):
        _assert_within_ulps(np.asarray(got)[:-1], np.asarray(want), ulps, "mixed")


SCALES = np.array([1.0, 1e12, 1e-3, 1e300, 10.0])  # the branch flips from step to step


def test_float64_trig_in_loops_and_under_vmap():
    x = np.array([0.5, -3.0, 100.0, 7.25, -1e5])
    want = [(np.sin(x * s), np.cos(x * s), np.tan(x * s)) for s in SCALES]

    def step(v, scale):
        y = v * scale
        return v, (ew.sin(y), ew.cos(y), ew.tan(y))

    _, ys = fg.jit(lambda v, s: fg.scan(step, v, s))(fg.tensor(x), fg.tensor(SCALES))
    for i, got in enumerate(ys):
        _assert_within_ulps(got, np.stack([w[i] for w in want]), 2, f"scan {i}")

    def body(i, total):
        y = fg.tensor(x) * fg.tensor(SCALES)[i]
        return total + ew.sin(y) * 10.0 ** i + ew.cos(y) * 10.0 ** (i + 5)

    total = fg.jit(lambda: fg.fori_loop(0, len(SCALES), body, fg.tensor(np.zeros(5))))()
    expected = sum(np.sin(x * s) * 10.0 ** i + np.cos(x * s) * 10.0 ** (i + 5)
                   for i, s in enumerate(SCALES))
    np.testing.assert_allclose(np.asarray(total), expected, rtol=1e-14)

    rows = np.outer(SCALES, x)
    got = fg.jit(fg.vmap(lambda r: (ew.sin(r), ew.tan(r))))(fg.tensor(rows))
    _assert_within_ulps(got[0], np.sin(rows), 1, "vmap sin")
    _assert_within_ulps(got[1], np.tan(rows), 2, "vmap tan")
    scalar = fg.jit(lambda v: ew.sin(v) + ew.cos(v))(fg.tensor(np.float64(1e22)))
    np.testing.assert_allclose(np.asarray(scalar), np.sin(1e22) + np.cos(1e22), rtol=1e-15)


def test_float64_trig_gradient_through_a_scan_under_jit():
    """jit(grad) of a scan whose body branches on the argument size at every step."""

    def loss(v, scales):
        def step(c, scale):
            y = v * scale
            return c + ew.sin(y) * ew.cos(c), ew.tan(y)

        c, ys = fg.scan(step, v * 0.0, scales)
        return (c + ys * 1e-6).sum()

    x = fg.tensor(np.array([0.5, -3.0, 100.0, 7.25, -1e5]))
    scales = fg.tensor(np.array([1.0, 1e12, 1e-3, 1e20, 10.0]))
    got = fg.jit(fg.grad(loss))(x, scales)
    np.testing.assert_allclose(np.asarray(got), np.asarray(fg.grad(loss)(x, scales)),
                               rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
def test_narrow_float_trig_is_correctly_rounded_for_every_argument(dtype):
    """float32 (and float16) sin/cos/tan reduce by a table of 2/pi: exact for every finite
    argument, up to the largest float32 (the float64 path is exact below 2e8 only)."""
    rng = np.random.default_rng(2)
    finite_max = float(np.finfo(dtype).max)
    x = np.concatenate([rng.uniform(-10, 10, 3000),
                        np.sign(rng.standard_normal(6000))
                        * 10.0 ** rng.uniform(-8, math.log10(finite_max), 6000),
                        np.arange(1, 3000) * (math.pi / 2),  # near the zeros of sin and cos
                        [0.0, -0.0, math.inf, -math.inf, math.nan, finite_max, -finite_max]])
    x = x.astype(dtype)
    outs = fg.jit(lambda v: (ew.sin(v), ew.cos(v), ew.tan(v)))(fg.tensor(x))
    for name, got, ref in zip(("sin", "cos", "tan"), outs, (np.sin, np.cos, np.tan),
                              strict=True):
        with np.errstate(all="ignore"):
            want = ref(x.astype(np.float64)).astype(dtype)
        got = np.asarray(got)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        # compiled code flushes subnormal results to zero (documented): not compared
        finite = np.isfinite(want) & ~((want != 0) & (np.abs(want) < np.finfo(dtype).tiny))
        bits = np.int32 if dtype == np.float32 else np.int16
        ulps = np.abs(got[finite].view(bits).astype(np.int64)
                      - want[finite].view(bits).astype(np.int64))
        assert ulps.max() <= 1, (name, x[finite][ulps > 1][:4])
        if name != "cos":
            assert np.signbit(got[x.size - 6]), f"{name}(-0) lost its sign"


def _ulp_distance(got, want):
    """|got - want| in units in the last place of their float dtype (both finite)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    ordered = [np.where(v < 0, np.iinfo(bits).min - v, v).astype(np.int64)
               for v in (got.view(bits), want.view(bits))]
    return np.abs(ordered[0] - ordered[1])


def _assert_same_special_values(name, x, got, want):
    """NaN where the reference is NaN, the same infinities, zeros of the same sign."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), (name, x[np.isnan(g) != np.isnan(w)][:4])
    special = np.isinf(w) | (w == 0)
    differ = special & ((g != w) | (np.signbit(g) != np.signbit(w)))
    assert not differ.any(), (name, x[differ][:4], got[differ][:4], want[differ][:4])


INVERSE_TRIG = {"atan": (ew.atan, np.arctan), "asin": (ew.asin, np.arcsin),
                "acos": (ew.acos, np.arccos), "acosh": (ew.acosh, np.arccosh)}


def _float32_inverse_trig_sample():
    rng = np.random.default_rng(3)
    n = 40_000

    def signs():
        return np.where(rng.random(n) < 0.5, -1.0, 1.0)

    x = np.concatenate([
        rng.uniform(-1, 1, n), rng.uniform(-10, 10, n),
        signs() * 10.0 ** rng.uniform(-37, 38.5, n),  # tiny to the largest float32
        signs() * (1 - 10.0 ** rng.uniform(-8, 0, n)),  # near +-1 from inside (asin, acos)
        signs() * (1 + 10.0 ** rng.uniform(-8, 1, n)),  # just above 1 (acosh)
        [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan]])
    with np.errstate(over="ignore"):
        x = x.astype(np.float32)
    # compiled code flushes subnormals to zero (not compared)
    return x[~((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny))]


def test_float32_inverse_trig_is_within_1_ulp_of_exact():
    """IREE's own float32 atan/asin/acos were up to 40 ulp off (acosh 4): they are computed
    in float64 and rounded (funcgrad.lowering.math64.narrow_atan ...)."""
    x = _float32_inverse_trig_sample()
    y = x[np.random.default_rng(4).permutation(x.size)]
    outs = fg.jit(lambda a, b: (*(f(a) for f, _ in INVERSE_TRIG.values()), ew.atan2(b, a)))(
        fg.tensor(x), fg.tensor(y))
    refs = [ref for _, ref in INVERSE_TRIG.values()] + [lambda v: np.arctan2(y, v)]
    for name, got, ref in zip([*INVERSE_TRIG, "atan2"], outs, refs, strict=True):
        got = np.asarray(got)
        with np.errstate(all="ignore"):
            want = ref(x)  # NumPy's float32 functions (within about 2 ulp themselves)
            exact = (ref(x.astype(np.float64)) if name != "atan2"
                     else np.arctan2(y.astype(np.float64), x)).astype(np.float32)
        assert got.dtype == np.float32
        _assert_same_special_values(name, x, got, want)
        finite = np.isfinite(want) & (np.abs(want) >= np.finfo(np.float32).tiny)
        # NumPy's float32 functions are 1-2 ulp off themselves, differently on each CPU
        # (an AVX-512 machine's asin was 2 ulp from the exact value where ours was 1)
        to_numpy = _ulp_distance(got[finite], want[finite])
        assert to_numpy.max() <= 3, (name, x[finite][to_numpy > 3][:4])
        to_exact = _ulp_distance(got[finite], exact[finite])
        assert to_exact.max() <= 1, (name, x[finite][to_exact > 1][:4])


@pytest.mark.parametrize("dtype", [dtypes.float16, dtypes.bfloat16], ids=lambda d: d.name)
def test_narrow_inverse_trig_is_rounded_exactly_for_every_value(dtype):
    """float16/bfloat16 results are the exact value rounded through float32, bit for bit,
    for every (normal, infinite or NaN) value.  (Eager ones round NumPy's float32 functions,
    which are an ulp off next to a few rounding midpoints on some CPUs: atan(9.36) in
    float16 is 1.464, an AVX-512 machine's NumPy gave 1.465.)"""
    x = np.arange(2 ** 16, dtype=np.uint16).view(np.dtype(dtype))
    with np.errstate(invalid="ignore"):
        wide = x.astype(np.float64)
    x = x[~((wide != 0) & (np.abs(wide) < float(dtypes.finfo(dtype).tiny)))]
    y = x[np.random.default_rng(5).permutation(x.size)]
    outs = fg.jit(lambda a, b: (*(f(a) for f, _ in INVERSE_TRIG.values()), ew.atan2(b, a)))(
        fg.tensor(x), fg.tensor(y))
    tiny = float(dtypes.finfo(dtype).tiny)
    for name, got in zip([*INVERSE_TRIG, "atan2"], outs, strict=True):
        got = np.asarray(got)
        with np.errstate(all="ignore"):
            exact = np.arctan2(y.astype(np.float64), x.astype(np.float64)) if name == "atan2" \
                else INVERSE_TRIG[name][1](x.astype(np.float64))
            want = exact.astype(np.float32).astype(x.dtype)
        normal = ~((want != 0) & (np.abs(want.astype(np.float64)) < tiny))
        same = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))
        assert same[normal].all(), (name, x[normal & ~same][:4], got[normal & ~same][:4],
                                    want[normal & ~same][:4])


def test_float64_expm1_family_is_accurate_near_zero():
    rng = np.random.default_rng(1)
    x = np.concatenate([10.0 ** rng.uniform(-300, 0, 2000), -10.0 ** rng.uniform(-300, 0, 2000),
                        rng.uniform(-30, 30, 2000)])
    funcs = (ew.expm1, ew.log1p, ew.sinh, ew.tanh, ew.asinh, ew.atan)
    refs = (np.expm1, np.log1p, np.sinh, np.tanh, np.arcsinh, np.arctan)
    outs = fg.jit(lambda v: tuple(f(v) for f in funcs))(fg.tensor(x))
    for ref, got in zip(refs, outs, strict=True):
        with np.errstate(all="ignore"):
            want = ref(x)
        ok = np.isfinite(want)
        error = np.abs(np.asarray(got)[ok] - want[ok]) / np.spacing(np.abs(want[ok]))
        assert error.max() <= 4, ref.__name__


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_power_with_tensor_exponents_follows_c_pow(dtype):
    # IREE's stablehlo.power is exp(y * log(x)): NaN for every negative base and 0 ** 0
    import itertools

    bases = [-3.0, -1.0, -0.0, 0.0, 2.0, -2.0, -np.inf, np.inf, np.nan, 1.0, 0.5, -0.5]
    exponents = [2.0, 0.0, 3.0, -1.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 1.0, 2.5, -3.0]
    pairs = np.array(list(itertools.product(bases, exponents)))
    x, y = pairs[:, 0].astype(dtype), pairs[:, 1].astype(dtype)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    got = np.asarray(fg.jit(lambda a, b: a ** b)(fg.tensor(x), fg.tensor(y)))
    np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == np.float16 else 1e-6)
    same_sign = np.isnan(want) | (np.signbit(got) == np.signbit(want))
    assert same_sign.all(), list(zip(x[~same_sign], y[~same_sign], strict=True))
    integer_exponents = fg.tensor(np.array([2, 0, 0, 3, 2], np.int32))
    base = fg.tensor(np.array([-3.0, -1.0, 0.0, -2.0, -np.inf], dtype))
    np.testing.assert_allclose(fg.jit(lambda a, b: a ** b)(base, integer_exponents),
                               [9.0, 1.0, 1.0, -8.0, np.inf], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, dtypes.float16])
def test_narrow_pow_is_rounded_from_float64(dtype):
    """IREE's float32 power (exp(y log x) in float32) was up to 100 ulp off: 10.0 ** 9
    under jit was 3e-6 relative off.  Now float64 power rounded: NumPy's special values,
    and the exactly rounded result on a sample."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(0.1, 50, 20_000), np.full(30, 10.0)]).astype(dtype)
    y = np.concatenate([rng.uniform(-20, 20, 20_000), np.arange(30)]).astype(dtype)
    special = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 2, -2, 0.5, -8], dtype)
    a, b = (v.ravel() for v in np.meshgrid(special, special))
    x, y = np.concatenate([x, a]), np.concatenate([y, b])
    got = np.asarray(fg.jit(lambda u, v: u ** v)(fg.tensor(x), fg.tensor(y)))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(
            np.float32).astype(dtype)
    assert got.dtype == dtype
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same][:4], y[~same][:4], got[~same][:4], want[~same][:4])


def test_float64_pow_is_within_an_ulp():
    """IREE's float64 power (exp(y log x)) was up to 100 ulp off; math64.pow_magnitude
    takes ln x and y ln x as double-doubles.  Signs and special values as NumPy."""
    rng = np.random.default_rng(8)
    ranges = [(0.1, 50, -180, 180), (1e-300, 1e300, -1, 1), (0.5, 2, -1000, 1000),
              (0.99, 1.01, -60_000, 60_000)]
    x = np.concatenate([np.exp(rng.uniform(np.log(a), np.log(b), 20_000))
                        for a, b, _, _ in ranges])
    y = np.concatenate([rng.uniform(c, d, 20_000) for _, _, c, d in ranges])
    x[::7] *= -1
    y[::7] = np.round(y[::7])  # negative bases with integer exponents
    got = np.asarray(fg.jit(lambda u, v: u ** v)(fg.tensor(x), fg.tensor(y)))
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    normal = np.isfinite(want) & (np.abs(want) > 1e-300) & (np.abs(want) < 1e300)
    _assert_within_ulps(got[normal], want[normal], 1, "pow")
    special = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 2, -2, 0.5, -8])
    a, b = (v.ravel() for v in np.meshgrid(special, special))
    got = np.asarray(fg.jit(lambda u, v: u ** v)(fg.tensor(a), fg.tensor(b)))
    with np.errstate(all="ignore"):
        want = np.power(a, b)
        close = np.isfinite(want) & (want != 0) & (
            np.abs(got - want) <= np.spacing(np.abs(want)))  # 2 ** 0.5: an ulp
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | close | (
        np.isnan(got) & np.isnan(want))
    assert same.all(), (a[~same], b[~same], got[~same], want[~same])


@pytest.mark.parametrize("n", [5, 100_000])
def test_float64_sin_of_a_carry_read_in_a_fori_loop(n):
    """A stablehlo.if of a scalar sin in a loop: IREE 3.13 ran one iteration of five (or
    never returned); small arrays take both paths and a select instead."""
    x = fg.tensor(np.random.default_rng(9).uniform(-1, 1, n))
    scales = fg.tensor(np.array([1.0, 1e12, 2.0, 1e300, 0.5]))

    def fun(x):
        def body(i, c):
            a, b = c
            b = b.at[1].set(x[i])
            return (a * 0.5 + ew.sin(x * scales[i]) * b[1] + ew.cos(x[i] * scales[i]), b)
        return fg.fori_loop(0, 5, body, (x, x))[0]

    np.testing.assert_allclose(fg.jit(fun)(x).numpy(), fun(x).numpy(), rtol=1e-13, atol=1e-13)



def test_float64_fmod_is_exact_for_every_ratio():
    """fmod reduces by y 2**(52 j) level by level, as many levels as the array's largest
    |x / y| needs; a tiny divisor is scaled up first (the product's low parts were
    subnormal, flushed to zero: results up to 1e6 times y), a huge one down (its split
    overflowed: NaN for x near the float64 maximum).  Subnormal results flush to zero."""
    rng = np.random.default_rng(1)
    x = np.exp(rng.uniform(-690, 709, 20_000)) * rng.choice([-1, 1], 20_000)
    y = np.exp(rng.uniform(-690, 709, 20_000)) * rng.choice([-1, 1], 20_000)
    x[-5_000:] = rng.uniform(1.0, 1.79, 5_000) * 1e308
    x[:6], y[:6] = [5.5, -5.5, -0.0, np.inf, 1.0, np.nan], [2.0, 2.0, 3.0, 2.0, 0.0, 1.0]
    got = np.asarray(fg.jit(lambda a, b: ew.rem(a, b))(fg.tensor(x), fg.tensor(y)))
    with np.errstate(invalid="ignore"):
        want = np.fmod(x, y)
    flushed = (np.abs(want) < np.finfo(np.float64).tiny) & (got == 0)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | flushed | (
        np.isnan(got) & np.isnan(want))
    assert same.all(), (x[~same][:4], y[~same][:4], got[~same][:4], want[~same][:4])
    # in a loop body (the levels are a loop themselves)
    v = np.linspace(-10, 10, 7)
    fun = lambda a: fg.fori_loop(0, 5, lambda i, c: fnp.fmod(c * 3.7, 1.3), a)  # noqa: E731
    want = v.copy()
    for _ in range(5):
        want = np.fmod(want * 3.7, 1.3)
    np.testing.assert_array_equal(fg.jit(fun)(fg.tensor(v)).numpy(), want)


def test_float64_power_of_bases_at_and_above_two_to_the_1023():
    # the double-double log scaled them by 2**-1023, no normal float64 (the product was
    # garbage): 1e308 ** 0.5 came out 9.85e152
    v = np.array([1e308, 2.0 ** 1023, np.finfo(np.float64).max, 6.7e307, 3.0, 2.0 ** -1022])
    for y in (0.5, 1.0, -0.25):
        got = fg.jit(lambda x, y=y: fnp.power(x, y))(fg.tensor(v)).numpy()
        np.testing.assert_allclose(got, v ** y, rtol=4e-16)


@pytest.mark.parametrize("dtype,big", [(np.complex64, 3e38), (np.complex128, 1.6e308)])
def test_complex_sqrt_near_the_largest_finite_values(dtype, big):
    # (|a| + |z|) / 2 overflowed: sqrt(3e38+0j) in complex64 was inf under jit
    v = np.array([big, -big + 0.5j, complex(big, big), complex(-big, -big), 4, -4j],
                 dtype=dtype)
    got = fg.jit(fnp.sqrt)(fg.tensor(v)).numpy()
    np.testing.assert_allclose(got, np.sqrt(v), rtol=1e-6 if dtype == np.complex64 else 1e-14)


@pytest.mark.parametrize("dtype,big", [(np.complex64, 3e38), (np.complex128, 1.6e308)])
def test_complex_atan_and_atanh_of_huge_and_infinite_values(dtype, big):
    # 2y and y^2 overflowed: atan(3e38 + 1j) in complex64 was 3 pi / 8 under jit (pi / 2);
    # infinite parts gave NaN (C99's catanh: +-0 + +-i pi / 2)
    inf = np.inf
    v = np.array([complex(big, 1), complex(1, big), complex(-big, big), complex(1e20, 1e20),
                  complex(-1e16, -1), complex(inf, 1), complex(1, inf), complex(inf, inf),
                  complex(-inf, -2), complex(0, -inf), complex(0.5, 0.3)], dtype=dtype)
    for name in ("arctan", "arctanh"):
        got = fg.jit(getattr(fnp, name))(fg.tensor(v)).numpy()
        want = getattr(np, name)(v)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-30, err_msg=name)
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(want.imag))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint32",
                                   "uint64"])
def test_integer_power_with_large_tensor_exponents(dtype):
    # IREE's integer power lost large exponents: 3 ** 254 in uint8 gave 0 (57), uint64
    # 3 ** 64 gave 1, int64 2 ** 65 gave 2 (the exponent modulo 64)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    x = rng.integers(info.min, info.max, 24, dtype=dtype, endpoint=True)
    y = rng.integers(0, info.max, 24, dtype=dtype, endpoint=True)
    x[:5], y[:5] = [3, 2, 0, 1, 3], [info.max, info.max - 1, 0, info.max, 254 % info.max]
    if info.min < 0:
        x[5:9], y[5:9] = [-1, -1, 1, 5], [-3, -4, info.min, -2]
    bits = 2 ** info.bits

    def reference(a, n):
        if n < 0:
            return 1 if a == 1 else (-1) ** (n % 2) if a == -1 else 0
        r = pow(a, n, bits)
        return r - bits if info.min < 0 and r > info.max else r

    want = np.array([reference(int(a), int(n)) for a, n in zip(x, y, strict=True)], dtype=object)
    got = fg.jit(lambda a, n: a ** n)(fg.tensor(x), fg.tensor(y)).numpy()
    assert got.dtype == dtype
    assert [int(v) for v in got] == list(want)
