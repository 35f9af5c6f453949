"""Math functions as compositions of basic operations, for dtypes IREE cannot compile.

IREE's llvm-cpu backend links no libm and expands only float32 math into polynomials, so a
float64 ``sin`` (or ``tanh``, ``atan``, ``fmod`` ...) fails to link, and its float64
``expm1``/``log1p``/``sinh``/``asinh``/``acosh``/``cosh`` are naive (``exp(x) - 1``: no
correct digit near 0).  The functions here compute them from operations that do compile
exactly or to within an ulp in every float dtype (``+ - * /``, ``sqrt``, ``exp``, ``log``,
``floor``, ``round``, comparisons, ``select``); ``rules_for_dtype`` makes a primitive's
lowering use them for the dtypes that need them.

Accuracy (float64, measured by tests/lowering/test_math_lowering.py against NumPy):
``sin``/``cos`` within 1 ulp and ``tan`` within 3 ulp for every finite argument (below
``2**27 * pi/2``, about 2.1e8, by a Cody-Waite reduction; an array holding a larger
argument is reduced by a table of 2/pi instead, exactly, at about 6x the time); the
float32/16 and bfloat16 ``sin``/``cos``/``tan`` reduce by a table of 2/pi
(``_reduce_narrow``) and are correctly rounded for every finite argument (tested on
80,000, up to 3.4e38); ``atan2`` of them is
the float64 one rounded, ``atan``/``asin``/``acos``/``acosh`` short float64 evaluations
(``_short_inverse``) rounded, within an ulp (IREE's float32 ones are 40 ulp off);
``tanh``, ``expm1``, ``log1p``, ``sinh``, ``cosh``, ``asinh``, ``acosh``, ``atan``,
``asin``, ``acos``, ``atan2``, ``atanh`` within 4 ulp everywhere; ``pow`` within an ulp
(``pow_magnitude``: IREE's exp(y log x) is 100 ulp off; float32 pow is it rounded, exact
on a 100,000 sample); ``fmod`` exact (subnormal results flush to zero), as many reduction
levels as the largest |x / y| of the array needs, in a loop.
Complex functions are built on these from their textbook formulas (relative error about
1e-15, 1e-12 for log/log1p/asinh/asin of small or unit-modulus z; away from overflow);
the inverse functions follow Kahan's branch-cut formulas, so points on a cut and zeros
of either sign land where NumPy puts them.  C99's special values of infinities are not
all NumPy's.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.reductions import reduce_max
from funcgrad.core.prims.structural import full_like

# --- dispatching a primitive's lowering rule on its operand dtype -------------------------


def rules_for_dtype(native, fallback: dict):
    """A lowering rule running ``fallback[dtype]`` for the operand dtypes listed there and
    ``native`` for all others.

    Arguments:
        native: the rule for dtypes IREE compiles correctly.
        fallback: ``{dtype: rule}``, e.g. ``{fg.float64: rules.via(math64.tanh)}``.

    >>> from funcgrad.lowering import rules
    >>> rule = rules_for_dtype(rules.elementwise("stablehlo.tanh"),
    ...                        {dtypes.float64: rules.via(tanh)})   # as tanh_p.lower
    >>> rule.__name__
    'lower_tanh_by_dtype'
    """
    table = {np.dtype(d): r for d, r in fallback.items()}

    def rule(ctx, args, in_avals, out_avals, **params):
        chosen = table.get(np.dtype(in_avals[0].dtype), native)
        return chosen(ctx, args, in_avals, out_avals, **params)

    rule.__name__ = f"{getattr(native, '__name__', 'lower')}_by_dtype"
    return rule


def in_float64(function):
    """``function`` computed in float64 and rounded back to its operands' dtype: the
    fallback for float32/float16/bfloat16 where their native lowering is wrong.

    float16 and bfloat16 results are rounded through float32, as the eager (NumPy and
    ml_dtypes) functions compute them in float32: rounding once could differ from eager
    at the float32 results that fall next to a narrow rounding midpoint.
    """

    def wrapped(*args):
        dtype = args[0].dtype
        wide = [ew.convert_element_type(a, dtypes.float64) for a in args]
        out = function(*wide)
        if np.dtype(dtype).itemsize < 4:
            out = ew.convert_element_type(out, dtypes.float32)
        return ew.convert_element_type(out, dtype)

    wrapped.__name__ = getattr(function, "__name__", "function")
    return wrapped


# --- small helpers ----------------------------------------------------------------------------


def _where(pred, on_true, on_false):
    """select with Python numbers allowed for either branch."""
    ref = on_true if not isinstance(on_true, (int, float)) else on_false
    if isinstance(on_true, (int, float)):
        on_true = full_like(ref, on_true)
    if isinstance(on_false, (int, float)):
        on_false = full_like(ref, on_false)
    return ew.select_n(pred, on_false, on_true)


def _polynomial(x, coefficients):
    """Horner's rule; ``coefficients`` from the highest degree down."""
    result = full_like(x, coefficients[0])
    for c in coefficients[1:]:
        result = result * x + c
    return result


def _with_sign_of(magnitude, x):
    """``magnitude`` with the sign of ``x`` (x = +-0 gives x itself, so -0 stays -0)."""
    return _where(ew.eq(x, full_like(x, 0)), x, _where(ew.lt(x, full_like(x, 0)),
                                                       -magnitude, magnitude))


def _sign_bit(x):
    """True for negative x, -0 and -inf (1 / -0 is -inf)."""
    zero = full_like(x, 0)
    return ew.lt(x, zero) | (ew.eq(x, zero) & ew.lt(1.0 / x, zero))


def _two_sum(a, b):
    """``a + b`` as ``hi + lo`` exactly (Knuth's TwoSum, no ordering needed)."""
    hi = a + b
    b_virtual = hi - a
    lo = (a - (hi - b_virtual)) + (b - b_virtual)
    return hi, lo


# --- pi/2 split into 26-bit parts: k * part is exact for integers |k| < 2**27 ---------------


def _pi_times_2_to(bits: int) -> int:
    """floor(pi * 2**bits), by Machin's formula in integers."""
    scale = 1 << (bits + 32)

    def arctan_inverse(n):
        total, term, k, sign = 0, scale // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    return (16 * arctan_inverse(5) - 4 * arctan_inverse(239)) >> 32


def _split_half_pi(parts: int, bits: int):
    """pi/2 as a sum of ``parts`` floats of ``bits`` significant bits each."""

    precision = parts * bits + 16
    remaining = Fraction(_pi_times_2_to(precision), 2 ** (precision + 1))
    pieces = []
    for _ in range(parts):
        exponent = remaining.numerator.bit_length() - remaining.denominator.bit_length()
        scale = Fraction(2) ** (bits - 1 - exponent)
        piece = Fraction(math.floor(remaining * scale)) / scale
        pieces.append(float(piece))
        remaining -= piece
    return tuple(pieces)


_HALF_PI_PARTS = _split_half_pi(parts=6, bits=26)
# below it the quadrant index is below 2**27 and the reduction by the parts exact
_FAST_LIMIT = 2.0 ** 27 * _HALF_PI_PARTS[0]

# fdlibm's minimax kernels on [-pi/4, pi/4] (public constants, k_sin.c and k_cos.c)
_SIN = (1.58969099521155010221e-10, -2.50507602534068634195e-08, 2.75573137070700676789e-06,
        -1.98412698298579493134e-04, 8.33333333332248946124e-03)
_SIN1 = -1.66666666666666324348e-01
_COS = (-1.13596475577881948265e-11, 2.08757232129817482790e-09, -2.75573143513906633035e-07,
        2.48015872894767294178e-05, -1.38888888888741095749e-03, 4.16666666666666019037e-02)


def _reduce_half_pi(x):
    """x = k * pi/2 + (hi + lo) with |hi + lo| <= pi/4 for |x| < _FAST_LIMIT (NaN for
    inf and NaN); returns (k, hi, lo)."""
    k = ew.round(x * (2 / math.pi))
    hi = x - k * _HALF_PI_PARTS[0]  # exact (Sterbenz)
    lo = full_like(x, 0)
    for part in _HALF_PI_PARTS[1:]:
        hi, err = _two_sum(hi, -(k * part))
        lo = lo + err
    hi, lo = _two_sum(hi, lo)
    return k, hi, lo


def _kernel_sin(x, y):
    """sin(x + y) for |x| <= pi/4, |y| <= ulp(x)/2."""
    z = x * x
    v = z * x
    r = _polynomial(z, _SIN)
    return x - ((z * (0.5 * y - v * r) - y) - v * _SIN1)


def _kernel_cos(x, y):
    """cos(x + y) for |x| <= pi/4, |y| <= ulp(x)/2."""
    z = x * x
    r = z * _polynomial(z, _COS)
    half_z = 0.5 * z
    w = 1.0 - half_z
    return w + (((1.0 - w) - half_z) + (z * r - x * y))


def _keep_zero(x, out):
    """x where x is +-0 (the reduction's sums lose the sign of -0)."""
    return _where(ew.eq(x, full_like(x, 0)), x, out)


def _in_quadrant(kind, quadrant, s, c):
    """sin, cos or tan of ``quadrant * pi/2 + r`` from ``s = sin r`` and ``c = cos r``."""
    if kind == "tan":
        odd = ew.eq(quadrant, full_like(quadrant, 1)) | ew.eq(quadrant, full_like(quadrant, 3))
        return _where(odd, -c / s, s / c)
    q = ew.convert_element_type(quadrant, dtypes.int32)
    return ew.select_n(q, s, c, -s, -c) if kind == "sin" else ew.select_n(q, c, -s, -c, s)


def _fast_trig(kind):
    """sin, cos or tan of float64 x with |x| < _FAST_LIMIT, reduced by the 6-part pi/2
    (Cody-Waite); NaN for inf and NaN."""

    def function(x):
        k, hi, lo = _reduce_half_pi(x)
        quadrant = k - 4.0 * ew.floor(k * 0.25)  # 0..3
        out = _in_quadrant(kind, quadrant, _kernel_sin(hi, lo), _kernel_cos(hi, lo))
        return out if kind == "cos" else _keep_zero(x, out)

    function.__name__ = f"fast_{kind}"
    return function


# --- float64 arguments beyond _FAST_LIMIT: (2**e * 2/pi) mod 4 by a table (Payne-Hanek) ----
# A finite float64 |x| >= pi/4 is m * 2**e with an integer m < 2**53 and -53 <= e <= 971;
# (x * 2/pi) mod 4 = (m * T) mod 4 with T = (2**e * 2/pi) mod 4, tabulated as 7 floats of
# 26 significant bits each (2 bits above the binary point, 180 below).  With m split into
# 27 high and 26 low bits every product is exact; those of weight >= 2**-50 are summed
# exactly modulo 4 and give the quadrant, the rest are summed in fixed-point limbs (exact
# where it matters) to the reduced argument within 2**-126 (the worst float64 case,
# 6381956970095103 * 2**797, is 2**-61 from a multiple of pi/2).

_WIDE_MIN_E, _WIDE_MAX_E = -53, 971
_WIDE_CHUNKS = 7


def _two_over_pi_mod_4_wide():
    """Rows [T_0, ..., T_6] for e in [_WIDE_MIN_E, _WIDE_MAX_E]: T_0 a multiple of 2**-24
    below 4, T_j (j >= 1) 26 bits of weight 2**(-24 - 26 j) and above."""
    bits = 1300  # 2/pi to 2**-1300: the bits of weight 2**-180 * 2**-971 and above
    two_over_pi = (1 << (2 * bits + 1)) // _pi_times_2_to(bits)
    rows = []
    for e in range(_WIDE_MIN_E, _WIDE_MAX_E + 1):
        value = (two_over_pi << e if e >= 0 else two_over_pi >> -e) % (4 << bits)
        row = [(value >> (bits - 24)) / 2.0 ** 24]
        for j in range(1, _WIDE_CHUNKS):
            shift = bits - 24 - 26 * j
            row.append(((value >> shift) & ((1 << 26) - 1)) * 2.0 ** -(24 + 26 * j))
        rows.append(row)
    return np.array(rows, np.float64)


_TWO_OVER_PI_MOD_4_WIDE = _two_over_pi_mod_4_wide()


def _mod_4(v):
    """v mod 4 for v >= 0, exact for multiples of 2**-50 below 2**53 * 2**-50."""
    return v - 4.0 * ew.floor(v * 0.25)


def _biased_exponent(a):
    """The exponent field of float64 ``a >= 0`` as int64: 1 to 2046 for normal numbers,
    0 for zero and subnormals, 2047 for inf and NaN."""
    from funcgrad.core.prims.bitcast import bitcast_convert_type

    bits = bitcast_convert_type(a, dtypes.int64)
    return ew.shift_right_logical_p.bind(bits, full_like(bits, 52))


def _from_biased_exponent(biased, dtype):
    """2.0 ** (biased - 1023) for int64 ``biased`` in 1..2046, made from its bits (exact)."""
    from funcgrad.core.prims.bitcast import bitcast_convert_type

    return bitcast_convert_type(ew.shift_left_p.bind(biased, full_like(biased, 52)), dtype)


def _round_to(v, weight: float):
    """v rounded to a multiple of ``weight`` (a power of two), for |v| < 2**52 * weight."""
    big = 1.5 * 2.0 ** 52 * weight
    return (v + big) - big


def _reduce_wide(a):
    """(quadrant, hi, lo) with a = quadrant * pi/2 + hi + lo (mod 2 pi), |hi + lo| <= pi/4
    (a hair more), for every float64 ``a >= 0``; hi is NaN for inf and NaN."""
    from funcgrad.numpy._indexing import take

    e = _biased_exponent(a) - (1023 + 52)
    # e outside the table (a < pi/4, inf, NaN) gives garbage that the selects below drop
    power = _from_biased_exponent(1023 - e, a.dtype)
    m = a * power  # the integer significand (exact: a power of two)
    rows = take(_TWO_OVER_PI_MOD_4_WIDE, e - _WIDE_MIN_E, axis=0, mode="clip")
    t = [rows[..., j] for j in range(_WIDE_CHUNKS)]
    m_hi = ew.floor(m * 2.0 ** -26) * 2.0 ** 26
    m_lo = m - m_hi
    # products of weight 2**(-24 - 26 j): low = m_lo * T_j, high = m_hi * T_(j+1)
    # (m_hi * T_0 is a multiple of 4); weight >= 2**-50: exactly, modulo 4
    s = _mod_4(_mod_4(m_lo * t[0]) + _mod_4(m_hi * t[1]))
    s = _mod_4(s + _mod_4(m_hi * t[2])) + m_lo * t[1]  # < 8, multiples of 2**-50
    k = ew.round(s)
    f = s - k  # |f| <= 1/2, exact
    # the rest in limbs of multiples of 2**-50, 2**-76 and (rounded) 2**-102
    low2, high2 = m_lo * t[2], m_hi * t[3]  # < 2**-22, multiples of 2**-76
    low3, high3 = m_lo * t[3], m_hi * t[4]  # < 2**-48, multiples of 2**-102
    low2_top, high2_top = _round_to(low2, 2.0 ** -50), _round_to(high2, 2.0 ** -50)
    low3_top, high3_top = _round_to(low3, 2.0 ** -76), _round_to(high3, 2.0 ** -76)
    limb_50 = f + low2_top + high2_top
    limb_76 = ((low2 - low2_top) + (high2 - high2_top)) + (low3_top + high3_top)
    limb_102 = (((low3 - low3_top) + (high3 - high3_top))
                + ((m_lo * t[4] + m_hi * t[5]) + (m_lo * t[5] + m_hi * t[6] + m_lo * t[6])))
    r, r_lo = _two_sum(limb_50, limb_76)
    r, r_lo = _two_sum(r, r_lo + limb_102)
    # times pi/2 in two parts: r split in 26-bit halves times a 26-bit pi/2 is exact
    r_top, r_tail = _split(r)
    p0, p1, p2 = _HALF_PI_PARTS[:3]
    hi, lo = _two_sum(r_top * p0, r_tail * p0 + (r * p1 + (r * p2 + r_lo * p0)))
    small = ew.lt(a, full_like(a, math.pi / 4))
    quadrant = _where(small, 0.0, k - 4.0 * ew.floor(k * 0.25))
    hi = _where(ew.is_finite(a), hi, math.nan)
    return quadrant, _where(small, a, hi), _where(small, 0.0, lo)


def _exact_trig(kind):
    """sin, cos or tan of any float64 x, reduced by the table above."""

    def function(x):
        quadrant, hi, lo = _reduce_wide(ew.abs(x))
        out = _in_quadrant(kind, quadrant, _kernel_sin(hi, lo), _kernel_cos(hi, lo))
        return out if kind == "cos" else _with_sign_of(out, x)

    function.__name__ = f"exact_{kind}"
    return function


# --- float64 sin/cos/tan: the fast path unless some argument needs the table -------------
# Both paths as one elementwise select made the common case 7-16x slower (IREE clones the
# shared producers into each dispatch, and the table's gather splits them): instead a
# stablehlo.if runs one of the two whole computations, so the common case pays one
# reduction more (the largest finite |x|, against _FAST_LIMIT: within the timing noise).
# The branch is emitted by the lowering rule itself, not by a cond: cond selects between
# branches of up to 2**16 elements (see control_flow), which would compute both.


def trig_rule(kind):
    """The float64 lowering rule of ``kind`` (``"sin"``, ``"cos"`` or ``"tan"``): within
    1 ulp (tan 3) for every argument.  A ``stablehlo.if`` (any finite |x| >= _FAST_LIMIT)
    runs the table path or the fast one, each returning through an optimization barrier as
    control_flow's cond does (IREE 3.13 mis-schedules the buffers of branches without one).

    >>> from funcgrad.core.prims.elementwise import sin_p
    >>> rule = rules_for_dtype(sin_p.lower, {dtypes.float64: trig_rule("sin")})  # as sin_p's
    """

    def rule(ctx, args, in_avals, out_avals):
        from funcgrad.transforms.tracing import trace_to_ir

        (x,), (aval,) = args, [a.strip_weak() for a in in_avals]
        result_aval = out_avals[0].strip_weak()

        def needs_table(v):
            # the largest finite |x| (a float max reduces twice as fast as a boolean or)
            a = ew.abs(v)
            largest = reduce_max(_where(ew.is_finite(a), a, 0.0), range(a.ndim))
            return [ew.ge(largest, full_like(largest, _FAST_LIMIT))]

        def emit(function):
            return ctx.lower_ir(trace_to_ir(function, [aval], name="lowering"), [x])

        if aval.size <= _SELECT_TRIG_WORK:
            # IREE 3.13 mis-runs a stablehlo.if of small values in a loop (a fori_loop
            # taking sin of x[i] ran one iteration of five, or never returned), as
            # control_flow's small conds: both paths, selected per element (the 7-16x of
            # both paths is paid on small arrays only; a 100,000-element one in a loop ran
            # right with the if)
            exact = emit(lambda v: [_exact_trig(kind)(v)])
            fast = emit(lambda v: [_fast_trig(kind)(v)])
            (large,) = emit(lambda v: [ew.ge(ew.abs(v), full_like(v, _FAST_LIMIT))])
            return [ctx.op1("stablehlo.select", [large, exact[0], fast[0]], result_aval)]
        (pred,) = emit(needs_table)
        op = ctx.op("stablehlo.if", [pred], [result_aval], regions=2)
        for region, function in zip(op.regions, (_exact_trig(kind), _fast_trig(kind)),
                                    strict=True):
            with ctx.ir.InsertionPoint(region.blocks.append()):
                outs = ctx.op("stablehlo.optimization_barrier",
                              emit(lambda v, f=function: [f(v)]), [result_aval])
                ctx.op("stablehlo.return", outs, [])
        return list(op.results)

    rule.__name__ = f"lower_float64_{kind}"
    return rule


# arrays up to this size take both paths and a select (as control_flow's small conds)
_SELECT_TRIG_WORK = 1 << 16


# --- float32 and narrower arguments: an exact reduction for every finite value ----------------
# A float32 x is m * 2**e with an integer m < 2**24.  Then (x * 2/pi) mod 4 is
# (m * ((2**e * 2/pi) mod 4)) mod 4, and a table of (2**e * 2/pi) mod 4 in three parts of
# 28 bits (products with m are exact in float64) gives the quadrant and the reduced
# argument to about 2**-80 for every e (Payne-Hanek, indexed by the exponent).  About 30
# operations: the float64 path's exact reduction below 2**27 * pi/2 and fmod above it took
# some 190, most of float32 sin's time (4x JAX's), and were not accurate above 2.1e8.

_NARROW_MIN_E = -24  # |x| >= pi/4 is m * 2**e with e >= -24
_NARROW_MAX_E = 104  # the largest float32 is below 2**128 = 2**24 * 2**104


def _two_over_pi_mod_4_table():
    """(2**e * 2/pi) mod 4 for e in [_NARROW_MIN_E, _NARROW_MAX_E], rows of three floats:
    multiples of 2**-26 (< 4) and of 2**-54 (< 2**-26), then the rest rounded."""

    bits = 400
    two_over_pi = (1 << (2 * bits + 1)) // _pi_times_2_to(bits)  # 2/pi * 2**bits
    rows = []
    for e in range(_NARROW_MIN_E, _NARROW_MAX_E + 1):
        value = (two_over_pi << e if e >= 0 else two_over_pi >> -e) % (4 << bits)
        hi = value >> (bits - 26)
        value -= hi << (bits - 26)
        mid = value >> (bits - 54)
        value -= mid << (bits - 54)
        rows.append((hi / 2.0 ** 26, mid / 2.0 ** 54, float(Fraction(value, 1 << bits))))
    return np.array(rows, np.float64)


_TWO_OVER_PI_MOD_4 = _two_over_pi_mod_4_table()


def _reduce_narrow(a):
    """(quadrant, hi, lo) with a = quadrant * pi/2 + hi + lo (mod 2 pi), |hi + lo| <= pi/4,
    for float64 ``a >= 0`` holding a float32 (or narrower) value; hi is NaN for inf and
    NaN (the table products are)."""
    from funcgrad.numpy._indexing import take

    exponent = _biased_exponent(a) - 1023
    # e outside the table (a < pi/4, inf, NaN) gives garbage that the selects below drop
    # (clamping it instead cost 15% of the time: AVX2 has no 64-bit integer min/max)
    e = exponent - 23
    power = _from_biased_exponent(1023 - e, a.dtype)
    m = a * power  # the integer significand (exact: a power of two)
    row = e - _NARROW_MIN_E
    rows = take(_TWO_OVER_PI_MOD_4, row, axis=0, mode="clip")  # one gather of 3 parts
    c_hi, c_mid, c_lo = (rows[..., i] for i in range(3))
    whole = m * c_hi  # exact, < 2**26, a multiple of 2**-26
    whole = whole - 4.0 * ew.floor(whole * 0.25)
    s, err = _two_sum(whole, m * c_mid)  # m * c_mid exact
    k = ew.floor(s + 0.5)  # (a tie may go either way; round-half-even cost 20% more)
    f, f_lo = _two_sum(s - k, err + m * c_lo)  # s - k exact
    # r = f * pi/2 in two parts: f split in 26-bit halves times a 26-bit pi/2 is exact
    f_hi, f_tail = _split(f)
    p0, p1, p2 = _HALF_PI_PARTS[:3]
    hi, lo = _two_sum(f_hi * p0, f_tail * p0 + (f * p1 + (f * p2 + f_lo * p0)))
    small = ew.lt(a, full_like(a, math.pi / 4))
    quadrant = _where(small, 0.0, k - 4.0 * ew.floor(k * 0.25))
    return quadrant, _where(small, a, hi), _where(small, 0.0, lo)


def _narrow(kind):
    """sin, cos or tan of a float32/float16/bfloat16 x: reduced exactly (above), the
    float64 kernels, rounded back; within an ulp of the true value for every finite x."""

    def function(x):
        dtype = x.dtype
        wide = ew.convert_element_type(x, dtypes.float64)
        quadrant, hi, lo = _reduce_narrow(ew.abs(wide))
        out = _in_quadrant(kind, quadrant, _kernel_sin(hi, lo), _kernel_cos(hi, lo))
        if kind != "cos":  # odd functions (+-0 stay themselves)
            out = _with_sign_of(out, wide)
        return ew.convert_element_type(out, dtype)

    function.__name__ = f"narrow_{kind}"
    return function


narrow_sin, narrow_cos, narrow_tan = _narrow("sin"), _narrow("cos"), _narrow("tan")


# --- exponential family -------------------------------------------------------------------------


def expm1(x):
    """exp(x) - 1 without cancellation near 0: the Taylor series for |x| < 0.5.

    >>> expm1(fg.tensor([1e-10], fg.float64))   # exp(x) - 1 gives 1.00000008e-10
    tensor([1.e-10], dtype=float64)
    """
    # x * (1 + x/2 * (1 + x/3 * (... (1 + x/19)))): relative error of its tail < 1e-19
    series = full_like(x, 1.0)
    for n in range(19, 1, -1):
        series = 1.0 + (x * (1.0 / n)) * series
    small = x * series
    return _where(ew.lt(ew.abs(x), full_like(x, 0.5)), small, ew.exp(x) - 1.0)


def log1p(x):
    """log(1 + x), accurate near 0: log(u) * x / (u - 1) with u = 1 + x (Goldberg).

    >>> log1p(fg.tensor([1e-10], fg.float64))
    tensor([1.e-10], dtype=float64)
    """
    u = 1.0 + x
    one = full_like(x, 1.0)
    safe = _where(ew.eq(u, one), full_like(x, 2.0), u)
    corrected = ew.log(safe) * (x / (safe - 1.0))
    large = ew.gt(x, full_like(x, 2.0 ** 53))  # u - 1 is inf or imprecise there
    return _where(ew.eq(u, one), x, _where(large, ew.log(x), corrected))


def _exp_large(a):
    """exp(a) for a up to 2 * 709.78 without overflowing halfway: (exp(a/2) / 2) * exp(a/2)
    is 0.5 * exp(a)."""
    half = ew.exp(a * 0.5)
    return (0.5 * half) * half


def sinh(x):
    """Hyperbolic sine, from expm1 (no cancellation near 0).

    >>> sinh(fg.tensor([1e-10], fg.float64))
    tensor([1.e-10], dtype=float64)
    """
    a = ew.abs(x)
    e = expm1(a)
    small = 0.5 * (e + e / (e + 1.0))
    return _with_sign_of(_where(ew.lt(a, full_like(a, 22.0)), small, _exp_large(a)), x)


def cosh(x):
    """Hyperbolic cosine, finite up to |x| = 710.47.

    >>> cosh(fg.tensor([2.0], fg.float64))
    tensor([3.76219569], dtype=float64)
    """
    a = ew.abs(x)
    e = ew.exp(a)
    return _where(ew.lt(a, full_like(a, 22.0)), 0.5 * e + 0.5 / e, _exp_large(a))


def tanh(x):
    """tanh(|x|) = -expm1(-2|x|) / (2 + expm1(-2|x|)), sign restored.

    >>> tanh(fg.tensor([0.5], fg.float64))
    tensor([0.46211716], dtype=float64)
    """
    e = expm1(-2.0 * ew.abs(x))
    return _with_sign_of(-e / (2.0 + e), x)


_LN2 = math.log(2.0)


def asinh(x):
    """Inverse hyperbolic sine (fdlibm's three ranges).

    >>> asinh(fg.tensor([0.5], fg.float64))
    tensor([0.48121183], dtype=float64)
    """
    a = ew.abs(x)
    a_squared = a * a
    small = log1p(a + a_squared / (1.0 + ew.sqrt(1.0 + a_squared)))
    medium = ew.log(2.0 * a + 1.0 / (ew.sqrt(a_squared + 1.0) + a))
    large = ew.log(a) + _LN2
    out = _where(ew.lt(a, full_like(a, 2.0)), small,
                 _where(ew.lt(a, full_like(a, 2.0 ** 28)), medium, large))
    return _with_sign_of(out, x)


def acosh(x):
    """Inverse hyperbolic cosine; NaN below 1.

    >>> acosh(fg.tensor([1.5], fg.float64))
    tensor([0.96242365], dtype=float64)
    """
    t = x - 1.0
    small = log1p(t + ew.sqrt(2.0 * t + t * t))
    medium = ew.log(2.0 * x - 1.0 / (x + ew.sqrt(x * x - 1.0)))
    large = ew.log(x) + _LN2
    out = _where(ew.lt(x, full_like(x, 2.0)), small,
                 _where(ew.lt(x, full_like(x, 2.0 ** 28)), medium, large))
    return _where(ew.lt(x, full_like(x, 1.0)), math.nan, out)


def atanh(x):
    """Inverse hyperbolic tangent, 0.5 log1p(2x / (1 - x)) on |x| (fdlibm's form).

    >>> atanh(fg.tensor([0.5], fg.float64))
    tensor([0.54930614], dtype=float64)
    """
    a = ew.abs(x)
    small = 0.5 * log1p(2.0 * a + 2.0 * a * a / (1.0 - a))
    large = 0.5 * log1p(2.0 * a / (1.0 - a))
    out = _where(ew.lt(a, full_like(a, 0.5)), small, large)
    return _with_sign_of(_where(ew.gt(a, full_like(a, 1.0)), math.nan, out), x)


# --- inverse trigonometry ----------------------------------------------------------------------

# fdlibm s_atan.c: atan at the breakpoints 0.5, 1, 1.5, inf as hi + lo, and its kernel
_ATAN_HI = (4.63647609000806093515e-01, 7.85398163397448278999e-01,
            9.82793723247329054082e-01, 1.57079632679489655800e+00)
_ATAN_LO = (2.26987774529616870924e-17, 3.06161699786838301793e-17,
            1.39033110312309984516e-17, 6.12323399573676603587e-17)
_AT = (3.33333333333329318027e-01, -1.99999999998764832476e-01, 1.42857142725034663711e-01,
       -1.11111104054623557880e-01, 9.09088713343650656196e-02, -7.69187620504482999495e-02,
       6.66107313738753120669e-02, -5.83357013379057348645e-02, 4.97687799461593236017e-02,
       -3.65315727442169155270e-02, 1.62858201153657823623e-02)


def _atan_nonnegative(a):
    """atan(a) for a >= 0 (or NaN): reduce to |t| <= 7/16 around a breakpoint."""
    one = full_like(a, 1.0)
    bounds = (7 / 16, 11 / 16, 19 / 16, 39 / 16)
    # index 0: no reduction (a / 1, exact); 1..4: around breakpoint index-1
    numerators = (a, 2.0 * a - 1.0, a - 1.0, a - 1.5, -one)
    denominators = (one, 2.0 + a, a + 1.0, 1.0 + 1.5 * a, a)
    index = full_like(a, 0.0)
    for bound in bounds:
        index = index + ew.convert_element_type(ew.ge(a, full_like(a, bound)), a.dtype)
    which = ew.convert_element_type(index, dtypes.int32)
    # one division of the selected operands, not one per candidate: divisions dominate
    t = ew.select_n(which, *numerators) / ew.select_n(which, *denominators)
    z = t * t
    w = z * z
    s1 = z * _polynomial(w, _AT[10::-2])
    s2 = w * _polynomial(w, _AT[9::-2])
    hi = ew.select_n(which, full_like(a, 0.0), *[full_like(a, v) for v in _ATAN_HI])
    lo = ew.select_n(which, full_like(a, 0.0), *[full_like(a, v) for v in _ATAN_LO])
    reduced = hi - ((t * (s1 + s2) - lo) - t)
    return _where(ew.eq(which, ew.convert_element_type(full_like(a, 0), dtypes.int32)),
                  t - t * (s1 + s2), reduced)


def atan(x):
    """Arctangent (fdlibm's reduction and kernel), within 1 ulp.

    >>> atan(fg.tensor([0.5], fg.float64))
    tensor([0.46364761], dtype=float64)
    """
    return _with_sign_of(_atan_nonnegative(ew.abs(x)), x)


_PI_HI, _PI_LO = math.pi, 1.2246467991473532e-16  # pi = _PI_HI + _PI_LO to 107 bits


def atan2(y, x):
    """Angle of (x, y) in (-pi, pi], with C99's values at zeros and infinities.

    >>> atan2(fg.tensor([1.0], fg.float64), fg.tensor([-1.0], fg.float64))
    tensor([2.35619449], dtype=float64)
    """
    ax, ay = ew.abs(x), ew.abs(y)
    both_inf = ew.eq(ax, full_like(ax, math.inf)) & ew.eq(ay, full_like(ay, math.inf))
    both_zero = ew.eq(ax, full_like(ax, 0)) & ew.eq(ay, full_like(ay, 0))
    ratio = _where(both_inf | both_zero, full_like(ax, 1.0), ay / ax)
    angle = _atan_nonnegative(ratio)  # in [0, pi/2]
    angle = _where(both_zero, full_like(ax, 0.0), angle)
    negative_x = _sign_bit(x)
    angle = _where(negative_x, _PI_HI - (angle - _PI_LO), angle)
    # pi - pi/2 rounds a bit high through the sum above; pi/2 itself is exact
    angle = _where(ew.eq(ratio, full_like(ratio, math.inf)), full_like(ratio, math.pi / 2),
                   angle)
    angle = _where(_sign_bit(y), -angle, angle)
    return _where(ew.ne(x, x) | ew.ne(y, y), math.nan, angle)


def asin(x):
    """Arcsine as atan2(x, sqrt((1 - x)(1 + x))); NaN outside [-1, 1].

    >>> asin(fg.tensor([0.5], fg.float64))
    tensor([0.52359878], dtype=float64)
    """
    return atan2(x, ew.sqrt((1.0 - x) * (1.0 + x)))


def acos(x):
    """Arccosine as 2 atan(sqrt((1 - x) / (1 + x))); NaN outside [-1, 1].

    >>> acos(fg.tensor([0.5], fg.float64))
    tensor([1.04719755], dtype=float64)
    """
    return 2.0 * _atan_nonnegative(ew.sqrt((1.0 - x) / (1.0 + x)))


# --- float32 and narrower inverse functions: float64, rounded once to float32 -----------------
# IREE's float32 asin/acos/atan are up to 40 ulp off (4 for acosh near 1).  A float32 (or
# narrower) argument is exact in float64, where a short evaluation good to 2**-43 rounds
# back correctly but for the rare values within 2**-43 of a rounding midpoint: within an
# ulp of the true value.  Cheaper than the full float64 functions above (about 2x).

_TAN_PI_8, _TAN_3PI_8 = math.tan(math.pi / 8), math.tan(3 * math.pi / 8)
# atan(t) = t + t z P(z), z = t**2 <= tan(pi/8)**2: P fitted at Chebyshev nodes (degree 7),
# relative error of atan below 2**-43 (checked against mpmath)
_ATAN_NARROW = (0.03299869760239289, -0.06029830380602184, 0.07605397104035895,
                -0.0908417200430235, 0.11110823946421503, -0.1428570823202255,
                0.19999999951169561, -0.3333333333326854)


def _atan_ratio(y, x):
    """atan(y / x) in [0, pi/2] for float64 y, x >= 0 (not both 0 or inf), NaN if either
    is; one division reduces to |t| <= tan(pi/8) around 0, pi/4 or pi/2."""
    above = ew.gt(y, x * _TAN_3PI_8)
    middle = ew.gt(y, x * _TAN_PI_8)
    # y / x, (y - x) / (y + x) = tan(angle - pi/4), -x / y = tan(angle - pi/2)
    t = _where(above, -x, _where(middle, y - x, y)) / _where(above, y,
                                                            _where(middle, y + x, x))
    base = _where(above, math.pi / 2, _where(middle, math.pi / 4, full_like(t, 0.0)))
    z = t * t
    return base + (t + t * (z * _polynomial(z, _ATAN_NARROW)))


def _short_inverse(kind):
    """atan, asin, acos or acosh of a float64 ``wide`` holding a float32 (or narrower)
    value, good to 2**-43: the float64 half of ``narrow_*`` (``in_float64`` rounds it)."""

    def function(wide):
        a = ew.abs(wide)
        if kind == "atan":
            return _with_sign_of(_atan_ratio(a, full_like(a, 1.0)), wide)
        if kind == "asin":  # (1 - a)(1 + a) is exact: no cancellation near |x| = 1
            return _with_sign_of(_atan_ratio(a, ew.sqrt((1.0 - a) * (1.0 + a))), wide)
        if kind == "acos":  # 2 atan(sqrt((1 - x) / (1 + x))); acos(1) = +0
            return 2.0 * _atan_ratio(ew.sqrt(1.0 - wide), ew.sqrt(1.0 + wide))
        # acosh: log(x + sqrt((x - 1)(x + 1))), the product exact; NaN below 1
        out = ew.log(wide + ew.sqrt((wide - 1.0) * (wide + 1.0)))
        return _where(ew.lt(wide, full_like(wide, 1.0)), math.nan, out)

    function.__name__ = f"narrow_{kind}"
    return in_float64(function)


narrow_atan, narrow_asin = _short_inverse("atan"), _short_inverse("asin")
narrow_acos, narrow_acosh = _short_inverse("acos"), _short_inverse("acosh")


# --- power -----------------------------------------------------------------------------------
# x ** y = exp(y * ln x): with ln x rounded to float64 the product's error, up to 709 * 2**-53,
# is the result's relative error (IREE's power: 100 ulp).  Here ln x is a double-double (its
# mantissa part by atanh's series on a double-double quotient), the product too, and
# exp(hi + lo) = exp(hi) * (1 + lo).

# fdlibm's ln 2 split (e_log.c): k * _LN2_HI is exact for |k| < 2**11
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_TWO_THIRDS = (2 / 3, float(Fraction(2, 3) - Fraction(2 / 3)))  # 2/3 as hi + lo


def _log_double_double(a):
    """ln(a) as hi + lo to about 2**-100 relative, for finite normal ``a > 0``."""
    e = _biased_exponent(a) - 1023
    # m = a / 2**e in [1, 2), exact; 2**-1023 is no normal float64, so a >= 2**1023 is
    # halved first (x ** 0.5 at 1e308 was 10x too small)
    top = ew.eq(e, full_like(e, 1023))
    m = _where(top, a * 0.5, a) * _from_biased_exponent(_where(top, 1, 1023 - e), a.dtype)
    above = ew.gt(m, full_like(m, math.sqrt(2.0)))
    m = _where(above, m * 0.5, m)
    k = ew.convert_element_type(e, a.dtype) + _where(above, full_like(m, 1.0), 0.0)
    f = m - 1.0  # exact (Sterbenz), |f| < 0.42
    # s = f / (2 + f) as s_hi + s_lo: ln m = 2 atanh(s)
    d_hi, d_lo = _two_sum(full_like(f, 2.0), f)
    s_hi = f / d_hi
    p_hi, p_lo = _two_product(s_hi, d_hi)
    s_lo = (((f - p_hi) - p_lo) - s_hi * d_lo) / d_hi
    # ln m = 2 s + 2/3 s**3 + 2 s**5 sum z**n / (2n + 5), z = s**2 < 0.03: the s**3 term
    # (up to 0.0034) as a double-double too, the rest (< 6e-5, 11 terms) in float64
    z_hi, z_lo = _two_product(s_hi, s_hi)
    c_hi, c_lo = _two_product(s_hi, z_hi)
    c_lo = c_lo + s_hi * z_lo
    t_hi, t_lo = _two_product(full_like(c_hi, _TWO_THIRDS[0]), c_hi)
    t_lo = t_lo + (_TWO_THIRDS[0] * c_lo + _TWO_THIRDS[1] * c_hi + 2.0 * z_hi * s_lo)
    rest = 2.0 * s_hi * z_hi * z_hi * _polynomial(
        z_hi, [1.0 / (2 * n + 5) for n in range(10, -1, -1)])
    hi, lo = _two_sum(k * _LN2_HI, 2.0 * s_hi)
    hi, lo2 = _two_sum(hi, t_hi)
    return _two_sum(hi, (lo + lo2) + (k * _LN2_LO + (2.0 * s_lo + (t_lo + rest))))


def pow_magnitude(a, y):
    """a ** y for float64 ``a >= 0`` within 2 ulp (IREE's power: 100 ulp off); zeros,
    infinities and NaN as exp(y * ln a).  The power lowering adds signs and special cases.

    >>> pow_magnitude(fg.tensor([10.0], fg.float64), fg.tensor([9.0], fg.float64))
    tensor([1.e+09], dtype=float64)
    """
    regular = ew.is_finite(a) & ew.is_finite(y) & ew.ge(a, full_like(a, 2.0 ** -1022))
    l_hi, l_lo = _log_double_double(_where(regular, a, 1.0))
    t_hi, t_lo = _two_product(y, l_hi)
    t_hi, t_lo = _two_sum(t_hi, t_lo + y * l_lo)
    near = ew.exp(t_hi)
    accurate = _where(ew.is_finite(near), near + near * t_lo, near)
    return _where(regular, accurate, ew.exp(y * ew.log(a)))


# --- remainder ---------------------------------------------------------------------------------


def _two_product(a, b):
    """``a * b`` as ``hi + lo`` exactly (Dekker's product with Veltkamp splitting)."""
    # scale a huge a down by a power of two first: the splitting constant would overflow
    scale = _where(ew.gt(ew.abs(a), full_like(a, 2.0 ** 900)), full_like(a, 2.0 ** -100),
                   full_like(a, 1.0))
    a = a * scale
    hi = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi / scale, lo / scale


def _split(a):
    big = a * 134217729.0  # 2**27 + 1
    hi = big - (big - a)
    return hi, a - hi


def _fmod_step(r, b):
    """r mod b for 0 <= r < 2**53 b, exactly: one quotient, an exact product, one fix-up.
    A tiny b is scaled up first (the low parts of the product would be subnormal, which
    compiled code flushes to zero), a huge one down (its Veltkamp split would overflow)."""
    scale = _where(ew.lt(b, full_like(b, 2.0 ** -500)), full_like(b, 2.0 ** 600),
                   _where(ew.gt(b, full_like(b, 2.0 ** 900)), full_like(b, 2.0 ** -200), 1.0))
    reduced = _fmod_step_normal(r * scale, b * scale) / scale
    return _where(ew.lt(r, b), r, reduced)


def _fmod_step_normal(r, b):
    q = ew.floor(r / b)
    hi, lo = _two_product(q, b)
    reduced = (r - hi) - lo  # r - hi is exact (Sterbenz); the result is representable
    reduced = _where(ew.lt(reduced, full_like(r, 0.0)), reduced + b, reduced)
    return _where(ew.ge(reduced, b), reduced - b, reduced)  # (r < b: _fmod_step keeps r)


def fmod(x, y):
    """C's fmod: x - trunc(x / y) * y with the sign of x, exactly.

    r mod y = (r mod y 2**(52 j)) mod y, so reducing by y 2**(52 j) for j = L-1 ... 0
    keeps every quotient below 2**53; L levels cover ratios |x / y| below 2**(52 L), and
    41 all float64 ratios.  The levels run in a loop, as many as the largest ratio of the
    array needs (one for ratios below 2**52; all 41 unrolled took 0.5 s for 1M values and
    3-6 s to compile).

    >>> fmod(fg.tensor([5.5], fg.float64), fg.tensor([2.0], fg.float64))
    tensor([1.5], dtype=float64)
    """
    from funcgrad.transforms.control_flow import fori_loop

    a, b = ew.abs(x), ew.abs(y)
    invalid = ew.eq(b, full_like(b, 0)) | ew.eq(a, full_like(a, math.inf)) | \
        ew.ne(x, x) | ew.ne(y, y)
    # log2 |x / y| < e_a - e_b + 1 (exponents from the bits; a subnormal counts as 2**-1074)
    spread = _where(invalid, 0, _binary_exponent(a) - _binary_exponent(b) + 1)
    widest = reduce_max(spread, tuple(range(spread.ndim)))
    levels = ew.min(ew.max(ew.div(widest + 51, full_like(widest, 52)), full_like(widest, 1)),
                    full_like(widest, 41))
    levels = ew.convert_element_type(levels, dtypes.int32)
    reduced = fori_loop(0, levels, lambda i, r: _fmod_step(
        r, _times_power_of_two(b, 52 * (levels - 1 - i))), _where(invalid, 0.0, a))
    reduced = _where(invalid, math.nan, reduced)
    return _where(_sign_bit(x), -reduced, reduced)


def _binary_exponent(a):
    """floor(log2 a) for finite a > 0 as int64 (-1074 for subnormals and zero)."""
    biased = _biased_exponent(a)
    return _where(ew.eq(biased, full_like(biased, 0)), -1074, biased - 1023)


def _times_power_of_two(b, k):
    """b * 2**k for a float64 array ``b`` and an integer scalar 0 <= k <= 2080, exact where
    finite: three factors 2**k_i, k_i <= 1000, made from their bits."""
    k = ew.convert_element_type(k, dtypes.int64)
    for _ in range(3):
        part = ew.min(k, full_like(k, 1000))
        b, k = b * _from_biased_exponent(part + 1023, b.dtype), k - part
    return b


# --- unsigned and complex odds and ends ---------------------------------------------------------


def unsigned_sign(x):
    """sign of an unsigned integer: 0 or 1."""
    return ew.min(x, full_like(x, 1))


def complex_is_finite(z):
    """Both parts finite."""
    return ew.is_finite(ew.real(z)) & ew.is_finite(ew.imag(z))


# --- complex functions from real ones (textbook formulas on the parts) ---------------------------


def _parts(z):
    return ew.real(z), ew.imag(z)


def _complex(re, im):
    return ew.complex_(re, im)


def _hypot(a, b):
    """sqrt(a**2 + b**2) without overflow or underflow in the squares."""
    a, b = ew.abs(a), ew.abs(b)
    big, small = ew.max(a, b), ew.min(a, b)
    safe = _where(ew.eq(big, full_like(big, 0)), full_like(big, 1.0), big)
    ratio = small / safe
    out = big * ew.sqrt(1.0 + ratio * ratio)
    out = _where(ew.eq(big, full_like(big, 0)), full_like(big, 0.0), out)
    inf = full_like(big, math.inf)
    return _where(ew.eq(big, inf), inf, out)


def complex_abs(z):
    """|z| as NumPy: no overflow or underflow in the squares; inf when either part is
    infinite, even if the other is NaN."""
    a, b = ew.abs(ew.real(z)), ew.abs(ew.imag(z))
    inf = full_like(a, math.inf)
    return _where(ew.eq(a, inf) | ew.eq(b, inf), inf, _hypot(a, b))


def complex_exp(z):
    a, b = _parts(z)
    e = ew.exp(a)
    im = _where(ew.eq(b, full_like(b, 0)), b, e * ew.sin(b))
    return _complex(e * ew.cos(b), im)


def complex_log(z):
    a, b = _parts(z)
    return _complex(ew.log(_hypot(a, b)), ew.atan2(b, a))


def complex_expm1(z):
    a, b = _parts(z)
    half_sin = ew.sin(0.5 * b)
    re = ew.expm1(a) * ew.cos(b) - 2.0 * half_sin * half_sin
    im = _where(ew.eq(b, full_like(b, 0)), b, ew.exp(a) * ew.sin(b))
    return _complex(re, im)


def complex_log1p(z):
    a, b = _parts(z)
    # |1 + z|**2 - 1 = 2a + a**2 + b**2 keeps the digits of a small z
    small = 0.5 * ew.log1p(a * (2.0 + a) + b * b)
    big = ew.log(_hypot(1.0 + a, b))
    use_small = ew.lt(ew.abs(a) + ew.abs(b), full_like(a, 0.5))
    return _complex(_where(use_small, small, big), ew.atan2(b, 1.0 + a))


def complex_sin(z):
    a, b = _parts(z)
    return _complex(ew.sin(a) * ew.cosh(b), ew.cos(a) * ew.sinh(b))


def complex_cos(z):
    a, b = _parts(z)
    return _complex(ew.cos(a) * ew.cosh(b), -(ew.sin(a) * ew.sinh(b)))


def complex_sinh(z):
    a, b = _parts(z)
    return _complex(ew.sinh(a) * ew.cos(b), ew.cosh(a) * ew.sin(b))


def complex_cosh(z):
    a, b = _parts(z)
    return _complex(ew.cosh(a) * ew.cos(b), ew.sinh(a) * ew.sin(b))


def complex_tanh(z):
    """Kahan's formula: with t = tan b, s = sinh a, c = cosh a and d = 1 + (1 + t**2) s**2,
    tanh z = ((1 + t**2) c s + i t) / d; for |a| > 20 it is sign(a) + i 4 sin b cos b e^-2|a|."""
    a, b = _parts(z)
    t, s = ew.tan(b), ew.sinh(a)
    beta = 1.0 + t * t
    denominator = 1.0 + beta * s * s
    re = beta * ew.cosh(a) * s / denominator
    im = t / denominator
    large = ew.gt(ew.abs(a), full_like(a, 20.0))
    re = _where(large, ew.tanh(a), re)
    im = _where(large, 4.0 * ew.sin(b) * ew.cos(b) * ew.exp(-2.0 * ew.abs(a)), im)
    return _complex(re, _where(ew.eq(b, full_like(b, 0)), b, im))


def complex_tan(z):
    a, b = _parts(z)
    w = complex_tanh(_complex(-b, a))  # tan z = -i tanh(i z)
    c, d = _parts(w)
    return _complex(d, -c)


def complex_sqrt(z):
    a, b = _parts(z)
    # t = sqrt((|a| + |z|) / 2); near the largest finite values the sum overflows (sqrt of
    # 3e38+0j in complex64 was inf): there t = 2 sqrt(|a| / 8 + |z / 4| / 2)
    big = ew.gt(ew.max(ew.abs(a), ew.abs(b)),
                full_like(a, float(dtypes.finfo(a.dtype).max) / 4))
    scaled = 2.0 * ew.sqrt(0.125 * ew.abs(a) + 0.5 * _hypot(a * 0.25, b * 0.25))
    t = _where(big, scaled, ew.sqrt(0.5 * (ew.abs(a) + _hypot(a, b))))
    safe_t = _where(ew.eq(t, full_like(t, 0)), full_like(t, 1.0), t)
    other = ew.abs(b) / (2.0 * safe_t)
    other = _where(ew.eq(t, full_like(t, 0)), full_like(t, 0.0), other)
    nonnegative = ew.ge(a, full_like(a, 0))
    re = _where(nonnegative, t, other)
    im = _where(nonnegative, _with_sign_of_bit(other, b), _with_sign_of_bit(t, b))
    inf = full_like(b, math.inf)
    return _complex(re, _where(ew.eq(ew.abs(b), inf), b, im))


def _with_sign_of_bit(magnitude, x):
    return _where(_sign_bit(x), -magnitude, magnitude)


def complex_rsqrt(z):
    a, b = _parts(z)
    zero = ew.eq(a, full_like(a, 0)) & ew.eq(b, full_like(b, 0))
    pole = _complex(full_like(a, math.inf), full_like(a, math.nan))  # NumPy's 1 / 0j
    return _where(zero, pole, 1.0 / complex_sqrt(z))


def complex_logistic(z):
    return 1.0 / (1.0 + complex_exp(-z))


def complex_pow(x, y):
    zero = ew.eq(x, ew.convert_element_type(full_like(ew.real(x), 0), x.dtype))
    out = complex_exp(y * complex_log(x))
    one = ew.convert_element_type(full_like(ew.real(x), 1), x.dtype)
    y_zero = ew.eq(y, ew.convert_element_type(full_like(ew.real(y), 0), y.dtype))
    out = _where(zero, ew.convert_element_type(full_like(ew.real(x), 0), x.dtype), out)
    return _where(y_zero, one, out)


def complex_asin(z):
    """Kahan's formula ("Branch cuts for complex elementary functions", 1987): with
    s = sqrt(1 - z) and t = sqrt(1 + z), asin z = atan2(x, Re(s t)) + i asinh(Im(conj(s) t)).
    Both square roots take the sign of zero imaginary parts into account, so points on the
    cuts (|x| > 1, y = +-0) land on NumPy's side."""
    x, _ = _parts(z)
    a, b, c, d = _kahan_roots(z)
    return _complex(ew.atan2(x, a * c - b * d), ew.asinh(a * d - b * c))


def _kahan_roots(z):
    """The parts ``(a, b, c, d)`` of ``s = sqrt(1 - z) = a + ib`` and
    ``t = sqrt(1 + z) = c + id``, with ``1 - z`` taken as ``(1 - x) - iy`` so that the
    sign of a zero imaginary part survives."""
    x, y = _parts(z)
    a, b = _parts(complex_sqrt(_complex(1.0 - x, -y)))
    c, d = _parts(complex_sqrt(_complex(1.0 + x, y)))
    return a, b, c, d


def complex_acos(z):
    """Kahan: acos z = 2 atan2(Re s, Re t) + i asinh(Im(conj(t) s)), s and t as in asin."""
    a, b, c, d = _kahan_roots(z)
    return _complex(2.0 * ew.atan2(a, c), ew.asinh(c * b - d * a))


def complex_asinh(z):
    """asinh z = -i asin(i z)."""
    return _rotated(complex_asin, z)


def _rotated(function, z):
    """-i function(i z), with the parts swapped and negated exactly (no multiplications
    that would turn a -0 into a +0)."""
    x, y = _parts(z)
    u, v = _parts(function(_complex(-y, x)))
    return _complex(v, -u)


def complex_acosh(z):
    """Kahan: with s = sqrt(z - 1) and t = sqrt(z + 1),
    acosh z = asinh(Re(conj(s) t)) + i 2 atan2(Im s, Re t)."""
    x, y = _parts(z)
    a, b = _parts(complex_sqrt(_complex(x - 1.0, y)))
    c, d = _parts(complex_sqrt(_complex(x + 1.0, y)))
    return _complex(ew.asinh(a * c + b * d), 2.0 * ew.atan2(b, c))


def complex_atanh(z):
    """atanh z = log1p(4x / ((1 - x)^2 + y^2)) / 4 + i atan2(2y, (1 - x)(1 + x) - y^2) / 2
    (for |x| > 1/2 the real part as (log((1 + x)^2 + y^2) - log((1 - x)^2 + y^2)) / 4):
    the real part is +-inf at z = +-1 and the imaginary part keeps the sign of zero (and
    +-pi/2 on the cuts |x| > 1) as NumPy's."""
    x, y = _parts(z)
    one_minus, one_plus = 1.0 - x, 1.0 + x
    below = one_minus * one_minus + y * y
    re = 0.25 * ew.log1p(4.0 * x / below)
    # near z = +-1 the quotient is close to -1 or huge: the logarithms of both squares
    above = one_plus * one_plus + y * y
    re = _where(ew.gt(ew.abs(x), full_like(x, 0.5)), 0.25 * (ew.log(above) - ew.log(below)), re)
    # for large |z| the squares overflow; there Re atanh z = Re(1 / z) = x / |z|^2
    h = _hypot(x, y)
    re = _where(ew.gt(h, full_like(h, 1e15)), x / h / h, re)
    im = 0.5 * ew.atan2(2.0 * y, one_minus * one_plus - y * y)
    # and 2y, y^2 overflow (atan2(inf, -inf): 3 pi / 8 for atan(3e38 + 1j) in complex64):
    # the same angle with both arguments divided by m^2, m = max(|x|, |y|); an infinite
    # z gives +-0 + +-i pi / 2 (the signs of x and y), as C99's catanh
    m = ew.max(ew.abs(x), ew.abs(y))
    big, finite = ew.gt(m, full_like(m, 1e15)), ew.is_finite(m)
    safe = _where(finite, m, 1.0)
    xs, ys, inv = x / safe, y / safe, 1.0 / safe
    scaled = 0.5 * ew.atan2(2.0 * ys * inv, inv * inv - xs * xs - ys * ys)
    signed_zero = ew.sign(y) * 0.0
    im = _where(big, _where(finite, scaled, 0.5 * ew.atan2(signed_zero, full_like(y, -1.0))), im)
    re = _where(big & ~finite, ew.sign(x) * 0.0, re)
    return _complex(re, im)


def complex_atan(z):
    """atan z = -i atanh(i z)."""
    return _rotated(complex_atanh, z)


def complex_divide(x, y):
    """x / y by Smith's algorithm with NumPy's case for a zero divisor (its
    ``nc_divide``: the parts divided by +0, giving NumPy's infinities and NaNs), so compiled
    complex division rounds as NumPy's.  IREE's own division gives NaN for any z / 0."""
    a, b = _parts(x)
    c, d = _parts(y)
    abs_c, abs_d = ew.abs(c), ew.abs(d)
    real_larger = ew.ge(abs_c, abs_d)
    # |c| >= |d|: ratio d / c; else c / d (a zero c and d only reach the first case)
    c_zero, d_zero = ew.eq(c, full_like(c, 0)), ew.eq(d, full_like(d, 0))
    ratio = d / _where(c_zero, 1.0, c)
    scale = 1.0 / (c + d * ratio)
    re_first, im_first = (a + b * ratio) * scale, (b - a * ratio) * scale
    ratio = c / _where(d_zero, 1.0, d)
    scale = 1.0 / (d + c * ratio)
    re_second, im_second = (a * ratio + b) * scale, (b * ratio - a) * scale
    zero = c_zero & d_zero
    re = _where(real_larger, _where(zero, a / abs_c, re_first), re_second)
    im = _where(real_larger, _where(zero, b / abs_c, im_first), im_second)
    return _complex(re, im)


def complex_functions():
    """{primitive: its complex composition}, for the lowering table."""
    return {
        ew.exp_p: complex_exp, ew.log_p: complex_log, ew.expm1_p: complex_expm1,
        ew.log1p_p: complex_log1p, ew.sin_p: complex_sin, ew.cos_p: complex_cos,
        ew.tan_p: complex_tan, ew.sinh_p: complex_sinh, ew.cosh_p: complex_cosh,
        ew.tanh_p: complex_tanh, ew.sqrt_p: complex_sqrt, ew.rsqrt_p: complex_rsqrt,
        ew.logistic_p: complex_logistic, ew.pow_p: complex_pow, ew.asinh_p: complex_asinh,
        ew.asin_p: complex_asin, ew.acos_p: complex_acos, ew.acosh_p: complex_acosh,
        ew.atanh_p: complex_atanh, ew.atan_p: complex_atan,
    }
