"""Elementwise functions of funcgrad.numpy: tables of NumPy names over primitives."""

from __future__ import annotations

import builtins
import math
import operator
from sys import getrefcount

import numpy as np

from funcgrad.core import dtypes, reuse
from funcgrad.core import interpreter as _interp
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims.structural import full, full_like
from funcgrad.core.tensor import Tensor, wrap
from funcgrad.numpy._util import apply_elementwise, asarray, eager_apply, promote


def _unary(name, prim, *, inexact: bool, doc: str, example: tuple[str, str]):
    impl = prim.impl
    direct = isinstance(impl, np.ufunc) or getattr(impl, "accepts_out", False)

    def fn(x):
        refs = getrefcount(x)  # first, before anything below references x again
        if (direct and type(x) is Tensor and _interp.current() is _interp.EAGER
                and not _interp.config.debug_nans):
            # eager fast path for float tensors: the ufunc directly, into x's buffer when
            # x is a temporary (see funcgrad.core.reuse)
            a = x._buf
            if type(a) is np.ndarray and a.dtype.kind == "f":
                out = a if reuse.reusable(x, refs, reuse.CALL_ARGUMENT, a, a.dtype,
                                          a.shape) else None
                result = impl(a) if out is None else impl(a, out=out)
                return wrap(result if type(result) is np.ndarray else np.asarray(result),
                            x._weak)
        (x,) = promote(name, x, to_inexact=inexact)
        return apply_elementwise(name, prim, x)

    fn.__name__ = fn.__qualname__ = name
    arguments, result = example
    fn.__doc__ = (f"{doc}, elementwise (as ``numpy.{name}``).\n\n"
                  f">>> fnp.{name}({arguments})\n{result}")
    return fn


def _binary(name, prim, *, inexact: bool = False, doc: str, example: tuple[str, str]):
    # dtype kinds whose operands of one dtype need no promotion (bools have their own
    # rules below, integers become floats for true division, shifts check their operands)
    direct = "" if name == "left_shift" else "fc" if inexact else "fciu"

    def fn(x, y):
        if type(x) is Tensor and type(y) is Tensor and _interp.current() is _interp.EAGER:
            # eager fast path: two host tensors of one dtype and shape, applied directly
            # (promotion and broadcasting would change nothing; 2-3x less overhead)
            a, b = x._buf, y._buf
            if (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype
                    and a.dtype.kind in direct and a.shape == b.shape):
                return eager_apply(name, prim, (x, y), a.shape)
        x, y = promote(name, x, y, to_inexact=inexact)
        if name == "left_shift":
            x, y = _shift_operands(name, x, y)
        if x.dtype == np.bool_:
            logical = _ON_BOOLS.get(name)
            if logical is not None:  # NumPy/JAX: True + True is True (or), * is and
                return apply_elementwise(name, logical, x, y)
            if name in _ORDERINGS:  # False < True, compared as integers
                x, y = (ew.convert_element_type(v, np.dtype(np.uint8)) for v in (x, y))
        return apply_elementwise(name, prim, x, y)

    fn.__name__ = fn.__qualname__ = name
    arguments, result = example
    fn.__doc__ = (f"{doc}, elementwise with broadcasting (as ``numpy.{name}``).\n\n"
                  f">>> fnp.{name}({arguments})\n{result}")
    return fn


# name: (primitive, promote integers to float, what it computes,
#        (the docstring example's arguments, what it prints))
_UNARY = {
    "exp": (ew.exp_p, True, "e to the power x",
            ("fg.tensor([0.5])", "tensor([1.64872...], dtype=float32)")),
    "log": (ew.log_p, True, "Natural logarithm",
            ("fg.tensor([0.5])", "tensor([-0.69314...], dtype=float32)")),
    "log1p": (ew.log1p_p, True, "log(1 + x), accurate near 0",
              ("fg.tensor([0.5])", "tensor([0.40546...], dtype=float32)")),
    "expm1": (ew.expm1_p, True, "exp(x) - 1, accurate near 0",
              ("fg.tensor([0.5])", "tensor([0.64872...], dtype=float32)")),
    "sin": (ew.sin_p, True, "Sine",
            ("fg.tensor([0.5])", "tensor([0.47942...], dtype=float32)")),
    "cos": (ew.cos_p, True, "Cosine",
            ("fg.tensor([0.5])", "tensor([0.87758...], dtype=float32)")),
    "tan": (ew.tan_p, True, "Tangent",
            ("fg.tensor([0.5])", "tensor([0.54630...], dtype=float32)")),
    "tanh": (ew.tanh_p, True, "Hyperbolic tangent",
             ("fg.tensor([0.5])", "tensor([0.46211...], dtype=float32)")),
    "sinh": (ew.sinh_p, True, "Hyperbolic sine",
             ("fg.tensor([0.5])", "tensor([0.52109...], dtype=float32)")),
    "cosh": (ew.cosh_p, True, "Hyperbolic cosine",
             ("fg.tensor([0.5])", "tensor([1.12762...], dtype=float32)")),
    "arcsin": (ew.asin_p, True, "Inverse sine",
               ("fg.tensor([0.5])", "tensor([0.52359...], dtype=float32)")),
    "arccos": (ew.acos_p, True, "Inverse cosine",
               ("fg.tensor([0.5])", "tensor([1.04719...], dtype=float32)")),
    "arctan": (ew.atan_p, True, "Inverse tangent",
               ("fg.tensor([0.5])", "tensor([0.46364...], dtype=float32)")),
    "arcsinh": (ew.asinh_p, True, "Inverse hyperbolic sine",
                ("fg.tensor([0.5])", "tensor([0.48121...], dtype=float32)")),
    "arccosh": (ew.acosh_p, True, "Inverse hyperbolic cosine",
                ("fg.tensor([1.5])", "tensor([0.96242...], dtype=float32)")),
    "arctanh": (ew.atanh_p, True, "Inverse hyperbolic tangent",
                ("fg.tensor([0.5])", "tensor([0.54930...], dtype=float32)")),
    "sqrt": (ew.sqrt_p, True, "Square root",
             ("fg.tensor([0.25, 4.0])", "tensor([0.5, 2. ], dtype=float32)")),
    "negative": (ew.neg_p, False, "Negation",
                 ("fg.tensor([0.5, -2.0])", "tensor([-0.5, 2. ], dtype=float32)")),
    "sign": (ew.sign_p, False, "Sign (-1, 0 or 1)",
             ("fg.tensor([-2.0, 0.0, 3.0])", "tensor([-1., 0., 1.], dtype=float32)")),
}
_BINARY = {
    "add": (ew.add_p, False, "Sum",
            ("fg.tensor([1.0, 2.0]), 2.0", "tensor([3., 4.], dtype=float32)")),
    "subtract": (ew.sub_p, False, "Difference",
                 ("fg.tensor([1.0, 2.0]), 2.0", "tensor([-1., 0.], dtype=float32)")),
    "multiply": (ew.mul_p, False, "Product",
                 ("fg.tensor([1.0, 2.0]), 2.0", "tensor([2., 4.], dtype=float32)")),
    "divide": (ew.div_p, True, "True quotient",
               ("fg.tensor([1.0, 2.0]), 2.0", "tensor([0.5, 1. ], dtype=float32)")),
    "maximum": (ew.max_p, False, "Larger of two values (NaN propagates)",
                ("fg.tensor([1.0, 2.0]), 2.0", "tensor([2., 2.], dtype=float32)")),
    "minimum": (ew.min_p, False, "Smaller of two values (NaN propagates)",
                ("fg.tensor([1.0, 2.0]), 2.0", "tensor([1., 2.], dtype=float32)")),
    "arctan2": (ew.atan2_p, True, "Angle of the point (x2, x1): arctan(x1 / x2) by quadrant",
                ("fg.tensor([1.0, 2.0]), 2.0", "tensor([0.46364..., 0.78539...], dtype=float32)")),
    "equal": (ew.eq_p, False, "x == y",
              ("fg.tensor([1.0, 2.0]), 2.0", "tensor([False, True], dtype=bool)")),
    "not_equal": (ew.ne_p, False, "x != y",
                  ("fg.tensor([1.0, 2.0]), 2.0", "tensor([ True, False], dtype=bool)")),
    "less": (ew.lt_p, False, "x < y",
             ("fg.tensor([1.0, 2.0]), 2.0", "tensor([ True, False], dtype=bool)")),
    "less_equal": (ew.le_p, False, "x <= y",
                   ("fg.tensor([1.0, 2.0]), 2.0", "tensor([ True,  True], dtype=bool)")),
    "greater": (ew.gt_p, False, "x > y",
                ("fg.tensor([1.0, 2.0]), 2.0", "tensor([False, False], dtype=bool)")),
    "greater_equal": (ew.ge_p, False, "x >= y",
                      ("fg.tensor([1.0, 2.0]), 2.0", "tensor([False, True], dtype=bool)")),
    "bitwise_and": (ew.and_p, False, "Bitwise (or logical, for bool) and",
                    ("fg.tensor([5, 6]), 3", "tensor([1, 2], dtype=int32)")),
    "bitwise_or": (ew.or_p, False, "Bitwise (or logical, for bool) or",
                   ("fg.tensor([5, 6]), 3", "tensor([7, 7], dtype=int32)")),
    "bitwise_xor": (ew.xor_p, False, "Bitwise (or logical, for bool) xor",
                    ("fg.tensor([5, 6]), 3", "tensor([6, 5], dtype=int32)")),
    "left_shift": (ew.shift_left_p, False, "x shifted left by y bits",
                   ("fg.tensor([1, 2]), 3", "tensor([ 8, 16], dtype=int32)")),
}

# what add/multiply/maximum/minimum compute on two bool operands, and the comparisons
# whose primitives need numbers
_ON_BOOLS = {"add": ew.or_p, "multiply": ew.and_p, "maximum": ew.or_p, "minimum": ew.and_p}
_ORDERINGS = ("less", "less_equal", "greater", "greater_equal")

for _name, (_prim, _inexact, _doc, _example) in _UNARY.items():
    globals()[_name] = _unary(_name, _prim, inexact=_inexact, doc=_doc, example=_example)
for _name, (_prim, _inexact, _doc, _example) in _BINARY.items():
    globals()[_name] = _binary(_name, _prim, inexact=_inexact, doc=_doc, example=_example)

true_divide = divide  # noqa: F821


def conjugate(x):
    """Complex conjugate, elementwise; real tensors (integers and bools too) unchanged."""
    x = asarray(x)
    return apply_elementwise("conjugate", ew.conj_p, x) if dtypes.is_complex(x.dtype) else x


conj = conjugate


def positive(x):
    """+x (a copy-free identity).

    >>> fnp.positive(fg.tensor([-1.0]))
    tensor([-1.], dtype=float32)
    """
    return asarray(x)


def _shift_operands(name, x, y):
    """Operands of a bit shift: integers; bools shift as int32 (as JAX: True << True is
    2); floats are refused (as NumPy and JAX)."""
    if x.dtype == np.bool_:
        return (ew.convert_element_type(v, dtypes.int32) for v in (x, y))
    if not dtypes.is_integer(x.dtype):
        raise TypeError(f"{name}: bit shifts need integer operands, got {x.dtype.name} (as "
                        "NumPy and JAX)")
    return x, y


def right_shift(x, y):
    """x shifted right by y bits (arithmetic for signed integers, as NumPy)."""
    x, y = _shift_operands("right_shift", *promote("right_shift", x, y))
    prim = ew.shift_right_arithmetic_p if x.dtype.kind == "i" else ew.shift_right_logical_p
    return apply_elementwise("right_shift", prim, x, y)


def invert(x):
    """Bitwise not (logical not for bool).

    >>> fnp.invert(fg.tensor([True, False]))
    tensor([False,  True], dtype=bool)
    """
    x = asarray(x)
    return apply_elementwise("invert", ew.not_p, x)


bitwise_not = bitwise_invert = invert


def logical_not(x):
    """Logical not of the truth values of x."""
    return invert(_truth(x))


def _truth(x):
    x = asarray(x)
    return x if x.dtype == dtypes.bool_ else not_equal(x, 0)  # noqa: F821


def logical_and(x, y):
    """Logical and of the truth values of x and y."""
    return bitwise_and(_truth(x), _truth(y))  # noqa: F821


def logical_or(x, y):
    """Logical or of the truth values of x and y."""
    return bitwise_or(_truth(x), _truth(y))  # noqa: F821


def logical_xor(x, y):
    """Logical xor of the truth values of x and y."""
    return bitwise_xor(_truth(x), _truth(y))  # noqa: F821


def abs(x):  # noqa: A001  (NumPy's name)
    """Absolute value (magnitude for complex numbers), elementwise.

    >>> fnp.abs(fg.tensor([-1.5, 2.0]))
    tensor([1.5, 2. ], dtype=float32)
    """
    x = asarray(x)
    if x.dtype.kind == "b":
        return x
    return apply_elementwise("abs", ew.abs_p, x)


absolute = abs


def real(x):
    """Real part (the value itself for real dtypes)."""
    x = asarray(x)
    return apply_elementwise("real", ew.real_p, x) if dtypes.is_complex(x.dtype) else x


def imag(x):
    """Imaginary part (zeros for real dtypes)."""
    x = asarray(x)
    if dtypes.is_complex(x.dtype):
        return apply_elementwise("imag", ew.imag_p, x)
    return full_like(x, 0)


def _ints_for_bools(*xs):
    """Booleans counted as int32 (as JAX) for arithmetic that has no boolean meaning."""
    return [x.astype(dtypes.int32) if x.dtype == dtypes.bool_ else x for x in xs]


def square(x):
    """x * x, elementwise (int32 for booleans, as JAX).

    >>> fnp.square(fg.tensor([3.0]))
    tensor([9.], dtype=float32)
    """
    (x,) = _ints_for_bools(asarray(x))
    return ew.integer_pow(x, 2)


def reciprocal(x):
    """1 / x, elementwise."""
    return divide(1, x)  # noqa: F821


def floor(x):
    """Largest integer <= x (integers pass through)."""
    x = asarray(x)
    return x if not dtypes.is_inexact(x.dtype) else apply_elementwise("floor", ew.floor_p, x)


def ceil(x):
    """Smallest integer >= x (integers pass through)."""
    x = asarray(x)
    return x if not dtypes.is_inexact(x.dtype) else apply_elementwise("ceil", ew.ceil_p, x)


def trunc(x):
    """Round towards zero."""
    x = asarray(x)
    return x if not dtypes.is_inexact(x.dtype) else ew.trunc(x)


fix = trunc


def round(x, decimals: int = 0):  # noqa: A001
    """Round half to even to ``decimals`` places, as NumPy.

    >>> fnp.round(fg.tensor([0.5, 1.5, 2.25]), 1)
    tensor([0.5, 1.5, 2.2], dtype=float32)
    """
    try:
        decimals = operator.index(decimals)
    except TypeError:
        raise TypeError(f"round: decimals must be an integer, got {decimals!r}") from None
    x = asarray(x)
    if dtypes.is_complex(x.dtype):  # each part on its own, as NumPy and JAX
        return apply_elementwise("round", ew.complex_p, round(real(x), decimals),
                                 round(imag(x), decimals))
    if not dtypes.is_inexact(x.dtype):
        if decimals >= 0 or x.dtype == np.bool_:
            return x
        # integers to a multiple of 10**-decimals, half to even (as NumPy), in exact
        # integer arithmetic: q = x // step, r = x % step (0 <= r < step)
        step = 10 ** (-decimals)
        if step > np.iinfo(x.dtype).max:
            return x * 0
        q, r = floor_divide(x, step), remainder(x, step)
        rest = step - r
        up = (r > rest) | ((r == rest) & (remainder(q, 2) != 0))
        return (q + up.astype(x.dtype)) * step
    if decimals == 0:
        return apply_elementwise("round", ew.round_p, x)
    scale = 10.0 ** decimals
    return apply_elementwise("round", ew.round_p, x * scale) / scale


around = round


def rint(x):
    """Round to the nearest integer, half to even (integers become floats, as JAX)."""
    (x,) = promote("rint", x, to_inexact=True)
    return round(x)


def isnan(x):
    """True where x is NaN.

    >>> fnp.isnan(fg.tensor([1.0, float("nan")]))
    tensor([False,  True], dtype=bool)
    """
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return full(x.shape, False, dtypes.bool_)
    return not_equal(x, x)  # noqa: F821


def isfinite(x):
    """True where x is neither infinite nor NaN."""
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return full(x.shape, True, dtypes.bool_)
    if dtypes.is_complex(x.dtype):
        return logical_and(isfinite(real(x)), isfinite(imag(x)))
    return apply_elementwise("isfinite", ew.is_finite_p, x)


def isinf(x):
    """True where x is +inf or -inf."""
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return full(x.shape, False, dtypes.bool_)
    return equal(abs(x), math.inf)  # noqa: F821


def isposinf(x):
    """True where x is +inf."""
    return equal(x, math.inf)  # noqa: F821


def isneginf(x):
    """True where x is -inf."""
    return equal(x, -math.inf)  # noqa: F821


def power(x, y):
    """x ** y, elementwise; a Python int exponent uses repeated multiplication.

    >>> fnp.power(fg.tensor([2.0, 3.0]), 2)
    tensor([4., 9.], dtype=float32)
    """
    if isinstance(y, int) and not isinstance(y, bool):
        (x,) = _ints_for_bools(asarray(x))
        if not dtypes.is_inexact(x.dtype) and y < 0:
            raise ValueError("power: integers to negative integer powers are not allowed")
        return ew.integer_pow(x, y)
    x, y = _ints_for_bools(*promote("power", x, y))
    return apply_elementwise("power", ew.pow_p, x, y)


pow = power  # noqa: A001


def float_power(x, y):
    """``x ** y`` in the promoted inexact dtype, as JAX's (integers as floats, complex kept;
    NumPy's computes in float64/complex128: pass float64 inputs for that).

    >>> fnp.float_power(fg.tensor([2, 3]), -1)
    tensor([0.5       , 0.33333334], dtype=float32)
    """
    return power(*promote("float_power", x, y, to_inexact=True))


def floor_divide(x, y):
    """Largest integer <= x / y, elementwise (as ``numpy.floor_divide``); for integers
    ``x // 0`` is 0 (as NumPy; JAX gives -1 or -2).

    >>> fnp.floor_divide(fg.tensor([7, -7]), 2)
    tensor([ 3, -4], dtype=int32)
    """
    guard = _may_be_zero(y)
    x, y = _ints_for_bools(*promote("floor_divide", x, y))
    if dtypes.is_inexact(x.dtype):
        return _float_floor_divide(x, y)
    q = apply_elementwise("floor_divide", ew.div_p, x, y)
    if x.dtype.kind != "u":
        r = apply_elementwise("floor_divide", ew.rem_p, x, y)
        q = where(_sign_differs(r, y), q - 1, q)
    return _zero_by_zero(q, y) if guard else q


def _may_be_zero(y) -> bool:
    """False for a divisor known to be non-zero before tracing (a Python or NumPy integer
    other than 0, the common ``x % 2``): it needs no guard against division by zero."""
    return not (isinstance(y, (int, np.integer)) and not isinstance(y, bool) and y != 0)


def _zero_by_zero(out, y):
    """NumPy's integer ``x // 0``, ``x % 0`` and ``fmod(x, 0)``: 0 (with a warning NumPy
    gives and funcgrad does not).  The div/rem primitives keep XLA's values (-1, x), as
    ``lax.div``/``lax.rem`` do, so the NumPy functions select the 0 (a select in jit)."""
    return where(equal(y, 0), 0, out)  # noqa: F821


def _sign_differs(r, y):
    """Where a truncated remainder ``r`` is non-zero with a sign other than the divisor's:
    there the floored quotient is one less and the floored remainder ``r + y``."""
    return logical_and(not_equal(r, 0), not_equal(less(r, 0), less(y, 0)))  # noqa: F821


def _float_floor_divide(x, y):
    """NumPy's (and Python's) float floor division: from the exact remainder fmod(x, y),
    not floor(x / y), whose rounded quotient can land on the next integer (7 // 0.1 is
    69, floor(7 / 0.1) is 70); x / y where y is 0, NaN for an infinite x."""
    r = apply_elementwise("floor_divide", ew.rem_p, x, y)
    q = (x - r) / y
    q = where(_sign_differs(r, y), q - 1, q)
    whole = floor(q)  # noqa: F821
    whole = where(q - whole > 0.5, whole + 1, whole)
    # a zero quotient keeps the sign of x / y; a zero divisor gives x / y (inf, NaN)
    quotient = x / y
    whole = where(equal(whole, 0), copysign(full_like(whole, 0), quotient), whole)  # noqa: F821
    from funcgrad.transforms.custom import stop_gradient

    # piecewise constant: derivative 0 everywhere, as JAX (x / y's gave +-inf at y = 0)
    return stop_gradient(where(equal(y, 0), quotient, whole))  # noqa: F821


def remainder(x, y):
    """x mod y with the sign of y (as ``numpy.remainder`` / Python's %); for integers
    ``x % 0`` is 0 (as NumPy and JAX).

    >>> fnp.remainder(fg.tensor([7, -7]), 3)
    tensor([1, 2], dtype=int32)
    """
    guard = _may_be_zero(y)
    x, y = _ints_for_bools(*promote("remainder", x, y))
    r = apply_elementwise("remainder", ew.rem_p, x, y)
    if x.dtype.kind != "u":
        r = where(_sign_differs(r, y), r + y, r)
    return _zero_by_zero(r, y) if guard and not dtypes.is_inexact(x.dtype) else r


mod = remainder


def fmod(x, y):
    """C-style remainder (sign of x); for integers ``fmod(x, 0)`` is 0 (as NumPy, JAX).

    >>> fnp.fmod(fg.tensor([7, -7]), 3)
    tensor([ 1, -1], dtype=int32)
    """
    guard = _may_be_zero(y)
    x, y = _ints_for_bools(*promote("fmod", x, y))
    r = apply_elementwise("fmod", ew.rem_p, x, y)
    return _zero_by_zero(r, y) if guard and not dtypes.is_inexact(x.dtype) else r


def divmod_(x, y):
    """(floor_divide(x, y), remainder(x, y)); for integers both are 0 where y is 0.

    >>> fnp.divmod(fg.tensor([7, -7]), 3)
    (tensor([ 2, -3], dtype=int32), tensor([1, 2], dtype=int32))
    """
    return floor_divide(x, y), remainder(x, y)


def exp2(x):
    """2 ** x, elementwise."""
    (x,) = promote("exp2", x, to_inexact=True)
    scale = math.log(2.0)
    if dtypes.is_complex(x.dtype):  # (-inf + 0.5j) * ln 2 as a complex product has a NaN
        return exp(_by_parts("exp2", x, lambda part: part * scale))  # noqa: F821
    return exp(x * scale)  # noqa: F821


def log2(x):
    """Base-2 logarithm."""
    return _log_base("log2", x, 2.0)


def log10(x):
    """Base-10 logarithm."""
    return _log_base("log10", x, 10.0)


def _log_base(name, x, base):
    (x,) = promote(name, x, to_inexact=True)
    scale = math.log(base)
    if dtypes.is_complex(x.dtype):  # a complex division turns inf + 0j into inf + nan j
        return _by_parts(name, log(x), lambda part: part / scale)  # noqa: F821
    return log(x) / scale  # noqa: F821


def _by_parts(name, z, scale):
    """Complex ``z`` with ``scale`` applied to its real and imaginary parts apart: scaling
    by a real number, which as a complex operation would make 0 * inf = NaN of an infinite
    part."""
    return apply_elementwise(name, ew.complex_p, scale(real(z)), scale(imag(z)))  # noqa: F821


def logaddexp(x, y):
    """log(exp(x) + exp(y)) without overflow.

    >>> fnp.logaddexp(fg.tensor([1000.0]), 1000.0)
    tensor([1000.6932], dtype=float32)
    """
    x, y = promote("logaddexp", x, y, to_inexact=True)
    if dtypes.is_complex(x.dtype):  # log(e^m (1 + e^(other - m))), m the larger real part
        first = greater_equal(real(x), real(y))  # noqa: F821
        m, other = where(first, x, y), where(first, y, x)
        return m + log1p(exp(other - m))  # noqa: F821
    big = maximum(x, y)  # noqa: F821
    delta = subtract(x, y)  # noqa: F821
    both_inf = logical_and(isinf(big), equal(x, y))  # noqa: F821
    safe_delta = where(both_inf, full_like(delta, 0), delta)
    # |delta| written as delta * sign(delta): the same value, but its derivative at a tie
    # is 0 (abs's is 1 there), so that with maximum's even split the gradient at x == y
    # is (0.5, 0.5), the exact softmax weights
    magnitude = safe_delta * sign(safe_delta)  # noqa: F821
    return where(both_inf, big, big + log1p(exp(-magnitude)))  # noqa: F821


def hypot(x, y):
    """sqrt(x**2 + y**2), elementwise, without overflow or underflow in the squares (the
    magnitude of x + iy); inf when either is infinite, even if the other is NaN."""
    x, y = promote("hypot", x, y, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"hypot: real arguments only, got {x.dtype.name}")
    wide = x.dtype if x.dtype in (dtypes.float32, dtypes.float64) else dtypes.float32
    z = apply_elementwise("hypot", ew.complex_p, x.astype(wide), y.astype(wide))
    return abs(z).astype(x.dtype)


def deg2rad(x):
    """Degrees to radians."""
    (x,) = promote("deg2rad", x, to_inexact=True)
    return x * (math.pi / 180.0)


radians = deg2rad


def rad2deg(x):
    """Radians to degrees."""
    (x,) = promote("rad2deg", x, to_inexact=True)
    return x * (180.0 / math.pi)


degrees = rad2deg


def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (where derivatives of every order are exact too).

    >>> fnp.sinc(fg.tensor([0.0, 0.5]))
    tensor([1.        , 0.63661975], dtype=float32)
    """
    (x,) = promote("sinc", x, to_inexact=True)
    zero = equal(x, 0)  # noqa: F821
    pi_x = x * math.pi
    safe = where(zero, full_like(x, 1), pi_x)
    return where(zero, _sin_over_at_zero(0, pi_x), sin(safe) / safe)  # noqa: F821


def _sin_over_at_zero(k, y):
    """The k-th derivative of sin(y) / y at y = 0, shaped like ``y`` and depending on it so
    that its derivative is the (k+1)-th: sinc's derivatives of every order at 0 (the
    quotient's, whose inputs are held at 1 there, would all be 0)."""
    from funcgrad.transforms.custom import custom_jvp

    @custom_jvp
    def at_zero(y):
        # sin(y)/y = sum (-1)^n y^2n / (2n+1)!: the 2n-th derivative is (-1)^n / (2n + 1)
        return y * 0 + (0.0 if k % 2 else (-1.0) ** (k // 2) / (k + 1))

    @at_zero.defjvp
    def _(primals, tangents):
        (y,), (t,) = primals, tangents
        return at_zero(y), _sin_over_at_zero(k + 1, y) * t

    return at_zero(y)


def where(condition, x=None, y=None, *, size=None, fill_value=None):
    """Pick ``x`` where ``condition`` holds, else ``y`` (broadcasting all three).

    With only ``condition``, the indices of its non-zero elements (``fnp.nonzero``: traced
    input needs ``size``).

    >>> fnp.where(fg.tensor([True, False]), 1.0, 0.0)
    tensor([1., 0.], dtype=float32)
    """
    if x is None and y is None:
        from funcgrad.numpy._indexing import nonzero

        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where: pass both x and y, or neither")
    condition = _truth(condition)
    x, y = promote("where", x, y)
    return apply_elementwise("where", ew.select_n_p, condition, y, x)


def clip(x, a_min=None, a_max=None, *, min=None, max=None):  # noqa: A002
    """Limit values to [min, max] (either may be None).

    >>> fnp.clip(fg.tensor([-2.0, 0.5, 3.0]), 0.0, 1.0)
    tensor([0. , 0.5, 1. ], dtype=float32)
    """
    lo = a_min if min is None else min
    hi = a_max if max is None else max
    x = asarray(x)
    if x.dtype.kind in "iu":
        # a Python int bound past the dtype's range limits nothing (as np.clip): clip(uint8,
        # -1, 3) is clip(uint8, 0, 3), where maximum(uint8, -1) is an overflow
        info = np.iinfo(x.dtype)
        lo, hi = (builtins.min(builtins.max(b, int(info.min)), int(info.max))
                  if type(b) is int else b for b in (lo, hi))
    if lo is not None:
        x = maximum(x, lo)  # noqa: F821
    if hi is not None:
        x = minimum(x, hi)  # noqa: F821
    return x


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf=None, neginf=None):
    """Replace NaN and infinities with finite numbers (NumPy's argument order; ``copy``
    changes nothing: the result is always a new tensor)."""
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return x
    if dtypes.is_complex(x.dtype):  # each part on its own, as NumPy
        return ew.complex_(nan_to_num(real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(x.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    x = where(isnan(x), nan, x)
    x = where(isposinf(x), posinf, x)
    return where(isneginf(x), neginf, x)


def heaviside(x, h0):
    """0 for x < 0, h0 at 0, 1 for x > 0."""
    x, h0 = promote("heaviside", x, h0, to_inexact=True)  # floats for integers, as JAX
    out = where(less(x, 0), 0, where(greater(x, 0), 1, h0))  # noqa: F821
    return where(isnan(x), x, out)


def copysign(x, y):
    """|x| with the sign of y."""
    x, y = promote("copysign", x, y, to_inexact=True)
    negative_y = logical_or(less(y, 0), logical_and(equal(y, 0), less(1 / y, 0)))  # noqa: F821
    return where(negative_y, -abs(x), abs(x))


def signbit(x):
    """True where the sign bit is set (negative numbers and -0.0)."""
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return less(x, 0)  # noqa: F821
    from funcgrad.core.prims.bitcast import bitcast_convert_type

    # the sign bit itself (a NaN has one too): the same-width signed integer is negative
    signed = np.dtype(f"int{x.dtype.itemsize * 8}")
    return less(bitcast_convert_type(x, signed), 0)  # noqa: F821


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (infinities close only to themselves),
    as ``numpy.isclose``.

    >>> fnp.isclose(fg.tensor([1.0, 2.0]), fg.tensor([1.0 + 1e-9, 2.1]))
    tensor([ True, False], dtype=bool)
    """
    a, b = promote("isclose", a, b, to_inexact=True)
    finite = logical_and(isfinite(a), isfinite(b))  # noqa: F821
    fa, fb = where(finite, a, 0), where(finite, b, 0)  # no inf - inf
    close = where(finite, less_equal(abs(fa - fb), atol + rtol * abs(fb)),  # noqa: F821
                  equal(a, b))  # noqa: F821
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def cbrt(x):
    """Real cube root, elementwise (negative for negative x)."""
    (x,) = promote("cbrt", x, to_inexact=True)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"cbrt: real arguments only, got {x.dtype.name}")
    root = power(abs(x), 1.0 / 3.0)
    return where(less(x, 0), -root, root)  # noqa: F821


def fmax(x, y):
    """Elementwise maximum ignoring NaNs (NaN only where both are)."""
    x, y = promote("fmax", x, y)
    if not dtypes.is_inexact(x.dtype):
        return maximum(x, y)  # noqa: F821
    return where(isnan(y), x, where(isnan(x), y, maximum(x, y)))  # noqa: F821


def fmin(x, y):
    """Elementwise minimum ignoring NaNs (NaN only where both are)."""
    x, y = promote("fmin", x, y)
    if not dtypes.is_inexact(x.dtype):
        return minimum(x, y)  # noqa: F821
    return where(isnan(y), x, where(isnan(x), y, minimum(x, y)))  # noqa: F821


def angle(z, deg: bool = False):
    """The argument (phase) of complex numbers: ``arctan2(imag, real)``; 0 or pi for reals."""
    z = asarray(z)
    if not dtypes.is_inexact(z.dtype):  # float64 for 64-bit integers, as sqrt
        z = z.astype(dtypes.float_dtype_for(z.dtype))
    out = arctan2(imag(z), real(z))  # noqa: F821
    return out * (180.0 / math.pi) if deg else out


# the public names are this module's own functions (not the helpers it imports)
__all__ = [_name for _name, _value in list(globals().items()) if not _name.startswith("_")
           and getattr(_value, "__module__", None) == __name__]
