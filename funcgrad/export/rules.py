"""The ONNX rule of every primitive, in tables by family, attached as ``prim.onnx``.

A rule is ``rule(ctx, args, in_avals, out_avals, **params) -> [output names]`` (see
``funcgrad.export.onnx.OnnxContext``).  The rules live here rather than next to the other
rules of each primitive so that ONNX stays an optional dependency: importing
``funcgrad.export`` attaches them.  A primitive ONNX cannot express gets a rule that raises
``NotImplementedError`` naming it, so every primitive has a rule (``tests/export`` checks).

ONNX Runtime's CPU kernels cover fewer dtypes than the ONNX spec; where a kernel is missing
the rule computes in a wider dtype and casts back (``_in_dtype``), which is exact for
integers (wrap-around is kept by the final cast) and rounds once for float16/bfloat16.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.abstract import ShapedArray
from funcgrad.core.primitive import registry

_INT64_MIN = np.iinfo(np.int64).min

# --- dtype support of ONNX Runtime's CPU kernels ---------------------------------------------

_F16 = (np.dtype(np.float16), np.dtype(dtypes.bfloat16))


def _wider(dtype, supported) -> np.dtype:
    """The dtype to compute in when ORT has no kernel for ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype in supported:
        return dtype
    if dtype == np.bool_:
        return np.dtype(np.int32)
    if dtype in _F16:
        return np.dtype(np.float32)
    if dtype.kind in "iu" and dtype.itemsize < 4:
        return np.dtype(np.int32)
    if dtype.kind in "iu" and dtype != np.uint64:
        return np.dtype(np.int64)  # uint32 (uint64 stays: there is no wider integer)
    return dtype


_FLOATS = tuple(np.dtype(d) for d in (np.float32, np.float64))
_NUMERIC = _FLOATS + tuple(np.dtype(d) for d in (np.int32, np.int64))


def _in_dtype(supported, fn, *, ordered: bool = False, modular: bool = False):
    """Wrap ``fn(ctx, args, in_avals, out_avals, **params)`` to cast inputs whose dtype ORT
    lacks into a wider one, and the outputs back.  ``ordered`` rules (comparisons, max,
    sort) compute uint64 as int64 shifted by 2**63, which keeps the order; ``modular`` ones
    (sums) compute it as int64, which wraps the same."""

    def rule(ctx, args, in_avals, out_avals, **params):
        dtype = in_avals[0].dtype if in_avals else out_avals[0].dtype
        wide = _wider(dtype, supported)
        if modular and wide == np.uint64 and wide not in supported:
            wide = np.dtype(np.int64)
        if ordered and wide == np.uint64 and wide not in supported:
            return _as_ordered_int64(ctx, fn, args, in_avals, out_avals, params)
        if wide == dtype:
            return fn(ctx, args, in_avals, out_avals, **params)
        args = [ctx.cast(a, wide) if av.dtype == dtype else a
                for a, av in zip(args, in_avals, strict=True)]
        in_avals = [ShapedArray(a.shape, wide) if a.dtype == dtype else a for a in in_avals]
        wide_outs = [ShapedArray(a.shape, wide) if a.dtype == dtype else a for a in out_avals]
        outs = fn(ctx, args, in_avals, wide_outs, **params)
        return [ctx.cast(o, a.dtype) if a.dtype == dtype else o
                for o, a in zip(outs, out_avals, strict=True)]

    return rule


def _as_ordered_int64(ctx, fn, args, in_avals, out_avals, params):
    top = ctx.scalar(1 << 63, np.uint64)
    to_signed = lambda x: ctx.cast(ctx.op("BitwiseXor", [x, top]), np.int64)
    u64 = np.dtype(np.uint64)
    args = [to_signed(a) if av.dtype == u64 else a for a, av in zip(args, in_avals, strict=True)]
    in_avals = [ShapedArray(a.shape, np.int64) if a.dtype == u64 else a for a in in_avals]
    signed_outs = [ShapedArray(a.shape, np.int64) if a.dtype == u64 else a for a in out_avals]
    outs = fn(ctx, args, in_avals, signed_outs, **params)
    return [ctx.op("BitwiseXor", [ctx.cast(o, u64), top]) if a.dtype == u64 else o
            for o, a in zip(outs, out_avals, strict=True)]


def _single(op_type, supported=_NUMERIC, **attributes):
    """One ONNX node with the equation's inputs."""

    def rule(ctx, args, in_avals, out_avals, **params):
        return [ctx.op(op_type, args, **attributes)]

    return _in_dtype(supported, rule)


def via(function, name=None):
    """A rule emitting the IR of the funcgrad function ``function(*args, **params)``: for
    primitives ONNX has no operator for but funcgrad ops compose (atan2, cumprod)."""

    def rule(ctx, args, in_avals, out_avals, **params):
        from funcgrad.transforms.tracing import trace_to_ir

        def flat(*xs):
            out = function(*xs, **params)
            return list(out) if isinstance(out, (list, tuple)) else [out]

        program = trace_to_ir(flat, [a.strip_weak() for a in in_avals], name="to_onnx")
        return ctx.emit_ir(program, args)

    rule.__name__ = f"onnx_via_{name or getattr(function, '__name__', 'function')}"
    return rule


def unsupported(name, why):
    """A rule that raises: ``name`` cannot be exported, because ``why``."""

    def rule(ctx, args, in_avals, out_avals, **params):
        raise ctx.fail(f"primitive {name!r} cannot be exported to ONNX: {why}")

    return rule


# --- elementwise ----------------------------------------------------------------------------


def _is_float(dtype) -> bool:
    return dtypes.is_inexact(dtype)


def _neg(ctx, args, in_avals, out_avals):
    (x,), (aval,) = args, in_avals
    if aval.dtype.kind == "u":
        return [ctx.op("Sub", [ctx.scalar(0, aval.dtype), x])]
    return [ctx.op("Neg", [x])]


def _sign(ctx, args, in_avals, out_avals):
    (x,), (aval,) = args, in_avals
    if aval.dtype.kind == "u":  # 0 or 1
        return [ctx.cast(ctx.op("Greater", [x, ctx.scalar(0, aval.dtype)]), aval.dtype)]
    return [ctx.op("Sign", [x])]


def _is_finite(ctx, args, in_avals, out_avals):
    (x,) = args
    return [ctx.op("Not", [ctx.op("Or", [ctx.op("IsNaN", [x]), ctx.op("IsInf", [x])])])]


def _bitwise(bool_op, int_op):
    def rule(ctx, args, in_avals, out_avals):
        return [ctx.op(bool_op if in_avals[0].dtype == np.bool_ else int_op, args)]

    return rule


def _rsqrt(ctx, args, in_avals, out_avals):
    return [ctx.op("Reciprocal", [ctx.op("Sqrt", args)])]


def _ne(ctx, args, in_avals, out_avals):
    return [ctx.op("Not", [ctx.op("Equal", args)])]


def _extremum(op_type, bool_op):
    """Max/Min (ONNX Runtime's propagate NaN, as NumPy's maximum/minimum); Or/And on bool."""
    numeric = _in_dtype(_NUMERIC + (np.dtype(np.uint32),),
                        lambda ctx, args, in_avals, out_avals: [ctx.op(op_type, args)],
                        ordered=True)

    def rule(ctx, args, in_avals, out_avals):
        if in_avals[0].dtype == np.bool_:
            return [ctx.op(bool_op, args)]
        return numeric(ctx, args, in_avals, out_avals)

    return rule


def _division(is_rem):
    """Float Div/Mod(fmod); integer division truncating with XLA's values for x / 0 (-1,
    all bits set) and x % 0 (x), and INT_MIN / -1 = INT_MIN (rem 0) instead of a trap."""

    def rule(ctx, args, in_avals, out_avals):
        x, y = args
        aval = in_avals[0]
        if _is_float(aval.dtype):
            return [ctx.op("Mod", [x, y], fmod=1) if is_rem else ctx.op("Div", [x, y])]
        dtype = aval.dtype
        one = ctx.scalar(1, dtype)
        is_zero = ctx.op("Equal", [y, ctx.scalar(0, dtype)])
        bad = is_zero
        if dtype.kind == "i":
            overflow = ctx.op("And", [ctx.op("Equal", [x, ctx.scalar(np.iinfo(dtype).min,
                                                                       dtype)]),
                                      ctx.op("Equal", [y, ctx.scalar(-1, dtype)])])
            bad = ctx.op("Or", [is_zero, overflow])
        safe = _where(ctx, bad, one, y, dtype)
        out = ctx.op("Mod", [x, safe], fmod=1) if is_rem else ctx.op("Div", [x, safe])
        if dtype.kind == "i":
            at_overflow = ctx.scalar(0 if is_rem else np.iinfo(dtype).min, dtype)
            out = _where(ctx, overflow, at_overflow, out, dtype)
        by_zero = x if is_rem else ctx.scalar(-1 if dtype.kind == "i" else
                                             np.iinfo(dtype).max, dtype)
        return [_where(ctx, is_zero, by_zero, out, dtype)]

    return _in_dtype(_NUMERIC + tuple(np.dtype(d) for d in (np.uint32, np.uint64)), rule)


def _pow(ctx, args, in_avals, out_avals):
    if _is_float(in_avals[0].dtype):
        return _in_dtype(_NUMERIC, lambda ctx, args, i, o: [ctx.op("Pow", args)])(
            ctx, args, in_avals, out_avals)
    from funcgrad.core.prims import elementwise as ew

    # integers by squaring in a Loop: ORT's integer Pow computes in double (3 ** 39 came
    # out 11 too large)
    power = functools.partial(ew.integer_power, as_loop=True)
    return via(power, "integer_power")(ctx, args, in_avals, out_avals)


def _integer_pow(ctx, args, in_avals, out_avals, *, y):
    (x,), (aval,) = args, out_avals
    result, base, n = None, x, abs(y)
    while n:  # exponentiation by squaring, exact as the eager impl
        if n & 1:
            result = base if result is None else ctx.op("Mul", [result, base])
        n >>= 1
        if n:
            base = ctx.op("Mul", [base, base])
    if result is None:
        result = ctx.full(1, aval)
    if y < 0:
        if not _is_float(aval.dtype):
            return _pow(ctx, [x, ctx.full(y, aval)], [aval, aval], out_avals)
        result = ctx.op("Div", [ctx.scalar(1, aval.dtype), result])
    return [result]


def _unsigned(dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _logical_shift(ctx, x, amount, dtype, direction):
    """``x`` shifted by ``amount`` (both ``dtype``, amount in [0, bits)) with BitShift on
    the unsigned type of the same width (computed in uint32 for 16-bit types)."""
    unsigned = _unsigned(dtype)
    xu = ctx.cast(x, unsigned) if unsigned != dtype else x
    au = ctx.cast(amount, unsigned) if unsigned != dtype else amount
    if unsigned == np.uint16:  # ORT's BitShift has no uint16 kernel
        xu, au = ctx.cast(xu, np.uint32), ctx.cast(au, np.uint32)
        out = ctx.cast(ctx.op("BitShift", [xu, au], direction=direction), np.uint16)
    else:
        out = ctx.op("BitShift", [xu, au], direction=direction)
    return ctx.cast(out, dtype) if unsigned != dtype else out


def _shift(kind):
    """shift_left / shift_right_logical give 0 for amounts outside [0, bits);
    shift_right_arithmetic shifts by bits - 1 (the sign fill) for them, negative ones
    included (as XLA and funcgrad)."""

    def rule(ctx, args, in_avals, out_avals):
        x, y = args
        dtype = in_avals[0].dtype
        bits = dtype.itemsize * 8
        clamped = ctx.op("Max", [ctx.op("Min", [y, ctx.scalar(bits - 1, dtype)]),
                                 ctx.scalar(0, dtype)]) if _has_min_max(dtype) else \
            _clamp_small(ctx, y, dtype, bits)
        if kind == "arithmetic":
            if dtype.kind == "i":  # a negative amount: the sign fill too
                clamped = _where(ctx, _less(ctx, y, 0, dtype), ctx.scalar(bits - 1, dtype),
                                 clamped, dtype)
            logical = _logical_shift(ctx, x, clamped, dtype, "RIGHT")
            if dtype.kind == "u":
                return [logical]
            # x >> n = ~((~x) >>> n) for negative x
            flipped = _logical_shift(ctx, ctx.op("BitwiseNot", [x]), clamped, dtype, "RIGHT")
            negative = ctx.op("Less", [x, ctx.scalar(0, dtype)])
            return [_where(ctx, negative, ctx.op("BitwiseNot", [flipped]), logical, dtype)]
        shifted = _logical_shift(ctx, x, clamped, dtype,
                                 "LEFT" if kind == "left" else "RIGHT")
        outside = ctx.op("Or", [_less(ctx, y, 0, dtype),
                                ctx.op("Not", [_less(ctx, y, bits, dtype)])])
        return [_where(ctx, outside, ctx.scalar(0, dtype), shifted, dtype)]

    return rule


def _has_min_max(dtype) -> bool:
    return np.dtype(dtype) in _NUMERIC + (np.dtype(np.uint32), np.dtype(np.uint64))


def _less(ctx, x, bound, dtype):
    if np.dtype(dtype) in _NUMERIC:
        return ctx.op("Less", [x, ctx.scalar(bound, dtype)])
    return ctx.op("Less", [ctx.cast(x, np.int64), ctx.scalar(bound, np.int64)])


def _clamp_small(ctx, y, dtype, bits):
    wide = ctx.cast(y, np.int64)
    wide = ctx.op("Max", [ctx.op("Min", [wide, ctx.scalar(bits - 1, np.int64)]),
                          ctx.scalar(0, np.int64)])
    return ctx.cast(wide, dtype)


def _select_n(ctx, args, in_avals, out_avals):
    which, *cases = args
    if len(cases) == 1:
        return [cases[0]]
    if in_avals[0].dtype == np.bool_:
        return [_where(ctx, which, cases[1], cases[0], out_avals[0].dtype)]
    # an integer selector: case i where which == i, clamped into range as the impl
    which64 = ctx.cast(which, np.int64)
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        pick = ctx.op("LessOrEqual", [which64, ctx.scalar(i, np.int64)])
        out = _where(ctx, pick, cases[i], out, out_avals[0].dtype)
    return [out]


_WHERE_TYPES = _NUMERIC + tuple(np.dtype(d) for d in (np.int8, np.uint8, np.uint32,
                                                      np.float16))


def _where(ctx, pred, on_true, on_false, dtype):
    """``Where`` for every dtype (ORT's kernel lacks bool, 16-bit integers and uint64)."""
    dtype = np.dtype(dtype)
    if dtype in _WHERE_TYPES:
        return ctx.op("Where", [pred, on_true, on_false])
    if dtype == np.bool_:
        return ctx.op("Or", [ctx.op("And", [pred, on_true]),
                             ctx.op("And", [ctx.op("Not", [pred]), on_false])])
    if dtype == np.uint64:  # on_false + (on_true - on_false) * pred, modulo 2**64: exact
        difference = ctx.op("Sub", [on_true, on_false])
        return ctx.op("Add", [on_false, ctx.op("Mul", [difference, ctx.cast(pred, dtype)])])
    wide = _wider(dtype, _WHERE_TYPES)
    out = ctx.op("Where", [pred, ctx.cast(on_true, wide), ctx.cast(on_false, wide)])
    return ctx.cast(out, dtype)


def _convert(ctx, args, in_avals, out_avals, *, new_dtype, weak_type=False):
    (x,), (src,), (aval,) = args, in_avals, out_avals
    if dtypes.is_complex(src.dtype) or dtypes.is_complex(aval.dtype):
        raise ctx.fail("convert_element_type: complex dtypes cannot be exported to ONNX")
    if src.dtype == aval.dtype:
        return [x]
    if aval.dtype.kind in "iu" and _is_float(src.dtype):
        return [_saturating_cast(ctx, x, aval.dtype)]
    return [ctx.cast(x, aval.dtype)]


def _saturating_cast(ctx, x, dtype):
    """float -> integer ``dtype`` saturating at its limits, NaN -> 0, as the eager impl
    (and JAX/XLA): ONNX's Cast is undefined out of range (ORT gave INT_MIN for NaN, inf
    and 3e9).  Computed in float64, where every limit is a power of two, exactly."""
    info = np.iinfo(dtype)
    wide = ctx.cast(x, np.float64)
    above = 2.0 ** (info.bits - (dtype.kind == "i"))  # info.max + 1
    clipped = ctx.op("Clip", [wide, ctx.scalar(float(info.min), np.float64),
                              ctx.scalar(np.nextafter(above, 0), np.float64)])
    out = ctx.cast(clipped, dtype)
    too_large = ctx.op("GreaterOrEqual", [wide, ctx.scalar(above, np.float64)])
    out = _where(ctx, too_large, ctx.scalar(info.max, dtype), out, dtype)
    return _where(ctx, ctx.op("IsNaN", [wide]), ctx.scalar(0, dtype), out, dtype)


def _conj(ctx, args, in_avals, out_avals):
    if dtypes.is_complex(in_avals[0].dtype):
        raise ctx.fail("conj: complex dtypes cannot be exported to ONNX")
    return [args[0]]


def _erf_float64(x):
    """erf to float64 accuracy: the eager impl's Chebyshev fit of erfc (ORT's Erf kernel
    is float32 only)."""
    from funcgrad.core.prims import elementwise as ew
    from funcgrad.core.prims.structural import full_like

    z = ew.abs(x)
    t = 2.0 / (2.0 + z)
    ty = 4.0 * t - 2.0
    d, dd = full_like(x, 0.0), full_like(x, 0.0)
    for c in ew._ERFC_COEFFS[:0:-1]:
        d, dd = ty * d - dd + c, d
    erfc = t * ew.exp(-z * z + 0.5 * (ew._ERFC_COEFFS[0] + ty * d) - dd)
    out = ew.select_n(ew.ge(x, full_like(x, 0.0)), erfc - 1.0, 1.0 - erfc)
    # 1 - erfc has erfc's 1e-16 absolute error: the series below 1/2, relative to x (as
    # the eager impl); erf_inv's Newton steps need it for small arguments
    z2 = ew.min(x * x, full_like(x, 0.25))
    total, term = full_like(x, 0.0), x
    for n in range(18):
        total = total + term / (2 * n + 1)
        term = -term * z2 / (n + 1)
    series = (2.0 / math.sqrt(math.pi)) * total
    out = ew.select_n(ew.le(z, full_like(x, 0.5)), out, series)
    # erf(+-0) is x (x in Where's second branch: ORT's first turns -0.0 into +0.0)
    return ew.select_n(ew.gt(z, full_like(x, 0.0)), x, out)


def _trig_float64(kind):
    """float64 sin, cos or tan: below math64's _FAST_LIMIT (2**27 pi/2) its Cody-Waite
    composition, within an ulp; ORT's float64 Sin and Cos beyond it.  ORT's kernels alone
    were not accurate near multiples of pi/2 (cos(pi/2) gave -0.0, not 6.1e-17; tan(pi/2)
    -inf, not 1.6e16); the composition alone was wrong beyond 2e8."""
    from funcgrad.lowering import math64

    fast = via(math64._fast_trig(kind), f"fast_{kind}")

    def rule(ctx, args, in_avals, out_avals):
        if kind == "tan":
            native = ctx.op("Div", [ctx.op("Sin", args), ctx.op("Cos", args)])
        else:
            native = ctx.op(kind.capitalize(), args)
        large = ctx.op("GreaterOrEqual", [ctx.op("Abs", args),
                                          ctx.scalar(math64._FAST_LIMIT, np.float64)])
        (small,) = fast(ctx, args, in_avals, out_avals)
        out = ctx.op("Where", [large, native, small])
        if kind == "cos":
            return [out]
        # sin and tan of +-0 (and NaN) are x.  ORT's Where gives +0.0 for a -0.0 in its
        # first branch (not its second), which the composition's zero test passed through;
        # and ORT turns Where(Not(c), a, b) into Where(c, b, a), so no Not here
        nonzero = ctx.op("Greater", [ctx.op("Abs", args), ctx.scalar(0.0, np.float64)])
        return [ctx.op("Where", [nonzero, out, args[0]])]

    return rule


def _erf_inv(x):
    """erf^-1 by Giles' single-precision approximation (as XLA), plus two Newton steps on
    erf for float64."""
    from funcgrad.core.prims import elementwise as ew
    from funcgrad.core.prims.structural import full_like
    from funcgrad.lowering.math64 import _polynomial

    w = -ew.log((1.0 - x) * (1.0 + x))
    central = _polynomial(w - 2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06,
                                    -4.39150654e-06, 0.00021858087, -0.00125372503,
                                    -0.00417768164, 0.246640727, 1.50140941))
    tail = _polynomial(ew.sqrt(w) - 3.0, (-0.000200214257, 0.000100950558, 0.00134934322,
                                          -0.00367342844, 0.00573950773, -0.0076224613,
                                          0.00943887047, 1.00167406, 2.83297682))
    out = ew.select_n(ew.lt(w, full_like(w, 5.0)), tail, central) * x
    if x.dtype == dtypes.float64:
        for _ in range(2):
            err = ew.erf(out) - x
            out = out - err / ((2.0 / math.sqrt(math.pi)) * ew.exp(-(out * out)))
    one = full_like(x, 1.0)
    inf = full_like(x, math.inf)
    out = ew.select_n(ew.eq(x, one), out, inf)
    out = ew.select_n(ew.eq(x, -one), out, -inf)
    return ew.select_n(ew.gt(ew.abs(x), one), out, full_like(x, math.nan))


def _declare_elementwise():
    from funcgrad.lowering import math64

    floats = _FLOATS
    unary = {
        "floor": "Floor", "ceil": "Ceil", "round": "Round", "exp": "Exp", "log": "Log",
        "tanh": "Tanh", "logistic": "Sigmoid", "sqrt": "Sqrt", "erf": "Erf",
    }
    for name, op_type in unary.items():
        registry[name].onnx = _single(op_type, floats)
    registry["erf"].onnx = _float32_or("Erf", via(_erf_float64, "erf"))
    for kind in ("sin", "cos", "tan"):
        registry[kind].onnx = _float32_or(kind.capitalize(), _trig_float64(kind))
    # ORT computes these only in float32: exact compositions for the other float dtypes
    for name, fn in (("asin", math64.asin), ("acos", math64.acos),
                     ("atan", math64.atan), ("sinh", math64.sinh), ("cosh", math64.cosh),
                     ("asinh", math64.asinh), ("acosh", math64.acosh),
                     ("atanh", math64.atanh)):
        registry[name].onnx = _float32_or(name[0].upper() + name[1:], via(fn, name))
    registry["abs"].onnx = _in_dtype(_NUMERIC, lambda ctx, args, i, o: [
        args[0] if i[0].dtype.kind == "u" else ctx.op("Abs", args)])
    registry["neg"].onnx = _in_dtype(_NUMERIC, _neg)
    registry["sign"].onnx = _in_dtype(_NUMERIC, _sign)
    registry["is_finite"].onnx = _in_dtype(floats, _is_finite)
    registry["not"].onnx = lambda ctx, args, i, o: [
        ctx.op("Not" if i[0].dtype == np.bool_ else "BitwiseNot", args)]
    registry["rsqrt"].onnx = _in_dtype(floats, _rsqrt)
    registry["log1p"].onnx = _in_dtype(floats, via(math64.log1p, "log1p"))
    registry["expm1"].onnx = _in_dtype(floats, via(math64.expm1, "expm1"))
    registry["erf_inv"].onnx = _in_dtype(floats, via(_erf_inv, "erf_inv"))
    registry["atan2"].onnx = _in_dtype(floats, via(math64.atan2, "atan2"))
    for name in ("add", "sub", "mul"):
        registry[name].onnx = _single(name.capitalize(), _NUMERIC + (
            np.dtype(np.uint32), np.dtype(np.uint64)))
    registry["div"].onnx = _division(is_rem=False)
    registry["rem"].onnx = _division(is_rem=True)
    registry["pow"].onnx = _pow
    registry["integer_pow"].onnx = _in_dtype(_NUMERIC, _integer_pow, modular=True)
    registry["max"].onnx = _extremum("Max", "Or")
    registry["min"].onnx = _extremum("Min", "And")
    registry["and"].onnx = _bitwise("And", "BitwiseAnd")
    registry["or"].onnx = _bitwise("Or", "BitwiseOr")
    registry["xor"].onnx = _bitwise("Xor", "BitwiseXor")
    registry["shift_left"].onnx = _shift("left")
    registry["shift_right_logical"].onnx = _shift("logical")
    registry["shift_right_arithmetic"].onnx = _shift("arithmetic")
    compare_types = _NUMERIC + (np.dtype(np.uint32), np.dtype(np.uint64))
    registry["eq"].onnx = _in_dtype(compare_types + (np.dtype(np.bool_),),
                                    lambda ctx, args, i, o: [ctx.op("Equal", args)])
    registry["ne"].onnx = _in_dtype(compare_types + (np.dtype(np.bool_),), _ne)
    for name, op_type in (("lt", "Less"), ("le", "LessOrEqual"), ("gt", "Greater"),
                          ("ge", "GreaterOrEqual")):
        registry[name].onnx = _single(op_type, compare_types)
    registry["select_n"].onnx = _select_n
    registry["convert_element_type"].onnx = _convert
    registry["conj"].onnx = _conj
    for name in ("real", "imag", "complex"):
        registry[name].onnx = unsupported(name, "ONNX Runtime has no complex dtypes")


def _float32_or(op_type, composite):
    """The native ONNX op for float32 (ORT's only kernel), ``composite`` otherwise."""
    native = _in_dtype((np.dtype(np.float32),), lambda ctx, args, i, o: [ctx.op(op_type,
                                                                                 args)])

    def rule(ctx, args, in_avals, out_avals, **params):
        if in_avals[0].dtype == np.float64:
            return composite(ctx, args, in_avals, out_avals, **params)
        return native(ctx, args, in_avals, out_avals, **params)

    return rule


# --- structural -------------------------------------------------------------------------------


def _broadcast_in_dim(ctx, args, in_avals, out_avals, *, shape, broadcast_dimensions):
    (x,), (aval,) = args, in_avals
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = aval.shape[src]
    if tuple(expanded) != aval.shape:
        x = ctx.reshape(x, expanded)
    if tuple(expanded) != tuple(shape):
        x = _expand(ctx, x, shape, aval.dtype)
    return [x]


def _expand(ctx, x, shape, dtype):
    """Expand (through float32 for bfloat16, which ORT's kernel lacks: exact)."""
    if dtype == dtypes.bfloat16:
        wide = ctx.op("Expand", [ctx.cast(x, np.float32), ctx.ints(shape)])
        return ctx.cast(wide, dtype)
    return ctx.op("Expand", [x, ctx.ints(shape)])


def _slice(ctx, args, in_avals, out_avals, *, start_indices, limit_indices, strides):
    axes = [d for d, (lo, hi, st, n) in enumerate(zip(start_indices, limit_indices, strides,
                                                       in_avals[0].shape, strict=True))
            if (lo, hi, st) != (0, n, 1)]
    if not axes:
        return [args[0]]
    pick = lambda seq: ctx.ints([seq[d] for d in axes])
    return [ctx.op("Slice", [args[0], pick(start_indices), pick(limit_indices),
                             ctx.ints(axes), pick(strides)])]


def _interior_pad(ctx, x, value, shape, dim, interior, dtype):
    """Insert ``interior`` copies of ``value`` between the elements of ``x`` along ``dim``:
    stack each element with a block of fill values, flatten, drop the trailing fill."""
    n = shape[dim]
    before, after = tuple(shape[:dim]), tuple(shape[dim + 1:])
    column = ctx.reshape(x, before + (n, 1) + after)
    fill = _expand(ctx, value, before + (n, interior) + after, dtype)
    stacked = ctx.op("Concat", [column, fill], axis=dim + 1)
    flat = ctx.reshape(stacked, before + (n * (interior + 1),) + after)
    kept = n + (n - 1) * interior
    out = ctx.op("Slice", [flat, ctx.ints([0]), ctx.ints([kept]), ctx.ints([dim])])
    return out, shape[:dim] + (kept,) + shape[dim + 1:]


def _pad(ctx, args, in_avals, out_avals, *, padding_config):
    x, value = args
    shape = tuple(in_avals[0].shape)
    for dim, (_, _, interior) in enumerate(padding_config):
        if interior and shape[dim] > 1:
            x, shape = _interior_pad(ctx, x, value, shape, dim, interior, in_avals[0].dtype)
    lows = [lo for lo, _, _ in padding_config]
    highs = [hi for _, hi, _ in padding_config]
    if not any(lows) and not any(highs):
        return [x]
    if any(v < 0 for v in lows + highs):
        # negative padding crops: pad the positive part, then slice
        x = ctx.op("Pad", [x, ctx.ints([max(v, 0) for v in lows + highs]), value],
                   mode="constant")
        grown = [n + max(lo, 0) + max(hi, 0) for n, lo, hi in zip(shape, lows, highs, strict=True)]
        starts = [max(-lo, 0) for lo in lows]
        ends = [g - max(-hi, 0) for g, hi in zip(grown, highs, strict=True)]
        return [ctx.op("Slice", [x, ctx.ints(starts), ctx.ints(ends),
                                 ctx.ints(range(len(shape)))])]
    return [ctx.op("Pad", [x, ctx.ints(lows + highs), value], mode="constant")]


def _rev(ctx, args, in_avals, out_avals, *, dimensions):
    k = len(dimensions)
    return [ctx.op("Slice", [args[0], ctx.ints([-1] * k), ctx.ints([_INT64_MIN] * k),
                             ctx.ints(dimensions), ctx.ints([-1] * k)])]


def _iota(ctx, args, in_avals, out_avals, *, dtype, shape, dimension):
    (aval,) = out_avals
    if not shape:
        return [ctx.scalar(0, aval.dtype)]
    n = shape[dimension]
    if aval.dtype in _NUMERIC + (np.dtype(np.int16),):
        line = ctx.op("Range", [ctx.scalar(0, aval.dtype), ctx.scalar(n, aval.dtype),
                                ctx.scalar(1, aval.dtype)])
    else:
        line = ctx.const(np.arange(n).astype(aval.dtype))
    view = [1] * len(shape)
    view[dimension] = n
    if len(shape) > 1:
        line = ctx.reshape(line, view)
    if tuple(view) != tuple(shape):
        line = ctx.op("Expand", [line, ctx.ints(shape)])
    return [line]


_PAD_TYPES = tuple(np.dtype(d) for d in (np.float16, np.float32, np.float64,
                                         np.int8, np.int32, np.int64, np.uint8, np.uint32,
                                         np.uint64, np.bool_))


def _declare_structural():
    registry["broadcast_in_dim"].onnx = _broadcast_in_dim
    registry["reshape"].onnx = lambda ctx, args, i, o, *, new_sizes: [
        ctx.reshape(args[0], new_sizes)]
    registry["transpose"].onnx = lambda ctx, args, i, o, *, permutation: [
        ctx.op("Transpose", args, perm=list(permutation))]
    registry["slice"].onnx = _slice
    registry["pad"].onnx = _in_dtype(_PAD_TYPES, _pad)
    registry["concatenate"].onnx = lambda ctx, args, i, o, *, dimension: [
        ctx.op("Concat", args, axis=dimension)]
    registry["rev"].onnx = _rev
    registry["iota"].onnx = _iota


# --- dot_general ---------------------------------------------------------------------------------


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _dot_general(ctx, args, in_avals, out_avals, *, dimension_numbers,
                 preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = args
    la, ra = in_avals
    nb = len(lb)
    plain_batch = tuple(lb) == tuple(rb) == tuple(range(nb))
    if (plain_batch and tuple(lc) == (la.ndim - 1,)
            and ((nb == 0 and rc == (0,) and ra.ndim <= 2 and la.ndim >= 1)
                 or (nb > 0 and la.ndim == ra.ndim == nb + 2 and rc == (nb,)))):
        return [ctx.op("MatMul", [lhs, rhs])]
    names = iter(_LETTERS)
    lhs_names = [next(names) for _ in range(la.ndim)]
    rhs_names = [next(names) for _ in range(ra.ndim)]
    for a, b in zip(lb + lc, rb + rc, strict=True):
        rhs_names[b] = lhs_names[a]
    free = lambda n, c, b: [i for i in range(n) if i not in c and i not in b]
    out = ([lhs_names[a] for a in lb] + [lhs_names[a] for a in free(la.ndim, lc, lb)]
           + [rhs_names[a] for a in free(ra.ndim, rc, rb)])
    equation = f"{''.join(lhs_names)},{''.join(rhs_names)}->{''.join(out)}"
    return [ctx.op("Einsum", [lhs, rhs], equation=equation)]


def _dot_rule(ctx, args, in_avals, out_avals, **params):
    lhs_dtype, out_dtype = in_avals[0].dtype, out_avals[0].dtype
    if out_dtype != lhs_dtype and np.promote_types(lhs_dtype, out_dtype) == out_dtype:
        # accumulate in the preferred dtype, as the eager impl
        args = [ctx.cast(a, out_dtype) for a in args]
        in_avals = [ShapedArray(a.shape, out_dtype) for a in in_avals]
    compute = _in_dtype(_NUMERIC, _dot_general, modular=True)
    (out,) = compute(ctx, args, in_avals,
                     [ShapedArray(out_avals[0].shape, in_avals[0].dtype)], **params)
    return [ctx.cast(out, out_dtype) if in_avals[0].dtype != out_dtype else out]


# --- reductions, cumulative, arg, sort ------------------------------------------------------------


def _reduce(op_type, supported, ordered=False):
    def rule(ctx, args, in_avals, out_avals, *, axes):
        if not axes:
            return [args[0]]
        out = ctx.op(op_type, [args[0], ctx.ints(axes)], keepdims=0)
        if op_type in ("ReduceMax", "ReduceMin") and _is_float(in_avals[0].dtype):
            # onnxruntime's ReduceMax/Min skip NaNs; NumPy, JAX and funcgrad return NaN
            nan = ctx.cast(ctx.op("IsNaN", [args[0]]), np.int32)
            any_nan = ctx.op("Greater", [ctx.op("ReduceMax", [nan, ctx.ints(axes)],
                                                keepdims=0), ctx.scalar(0, np.int32)])
            out = ctx.op("Where", [any_nan, ctx.scalar(np.nan, in_avals[0].dtype), out])
        return [out]

    return _in_dtype(supported, rule, ordered=ordered)


def _reduce_bool(is_all):
    """all/any as a count of (false/true) values: exact on empty axes too."""

    def rule(ctx, args, in_avals, out_avals, *, axes):
        if not axes:
            return [args[0]]
        x = ctx.op("Not", args) if is_all else args[0]
        count = ctx.op("ReduceSum", [ctx.cast(x, np.int64), ctx.ints(axes)], keepdims=0)
        zero = ctx.scalar(0, np.int64)
        return [ctx.op("Equal" if is_all else "Greater", [count, zero])]

    return rule


def _arg_reduce(op_type):
    """ArgMax/ArgMin, first index on ties; a NaN wins (its first index), as NumPy."""

    def rule(ctx, args, in_avals, out_avals, *, axis, index_dtype):
        (x,), (aval,) = args, in_avals
        out = ctx.op(op_type, [x], axis=axis, keepdims=0, select_last_index=0)
        if _is_float(aval.dtype):
            nan = ctx.cast(ctx.op("IsNaN", [x]), np.int32)
            first_nan = ctx.op("ArgMax", [nan], axis=axis, keepdims=0, select_last_index=0)
            any_nan = ctx.op("Greater", [ctx.op("ReduceMax", [nan, ctx.ints([axis])],
                                                keepdims=0), ctx.scalar(0, np.int32)])
            out = ctx.op("Where", [any_nan, first_nan, out])
        return [ctx.cast(out, index_dtype)]

    return _in_dtype(_NUMERIC + (np.dtype(np.int8), np.dtype(np.uint8)), rule, ordered=True)


def _cumsum(ctx, args, in_avals, out_avals, *, axis, reverse):
    return [ctx.op("CumSum", [args[0], ctx.scalar(axis, np.int64)], reverse=int(reverse))]


def _cumulative(combine_name):
    def function(x, *, axis, reverse):
        from funcgrad.core.prims import elementwise as ew
        from funcgrad.core.prims.reductions import _prefix_scan

        return _prefix_scan(x, axis, reverse, getattr(ew, combine_name))

    return via(function, f"cum{combine_name}")


_TOPK_TYPES = _NUMERIC


def _sort_keys(ctx, key, dtype):
    """TopK-sortable keys (most significant first) ordering like ``key``: floats become
    (is NaN, value with NaN zeroed) so NaNs sort last as in NumPy."""
    dtype = np.dtype(dtype)
    if _is_float(dtype):
        if dtype not in _TOPK_TYPES:
            key = ctx.cast(key, np.float32)
        nan = ctx.op("IsNaN", [key])
        cleaned = ctx.op("Where", [nan, ctx.scalar(0, _wider(dtype, _TOPK_TYPES)), key])
        return [ctx.cast(nan, np.int32), cleaned]
    if dtype == np.uint64:  # order-preserving map to int64
        return [ctx.cast(ctx.op("BitwiseXor", [key, ctx.scalar(1 << 63, np.uint64)]),
                         np.int64)]
    wide = _wider(dtype, _TOPK_TYPES)
    return [ctx.cast(key, wide) if wide != dtype else key]


def _sort(ctx, args, in_avals, out_avals, *, dimension, num_keys):
    """Stable sort by TopK (ONNX breaks ties by the lower index): one TopK per key, least
    significant first, composing the permutations; every operand is gathered by the
    final one."""
    n = in_avals[0].shape[dimension] if in_avals[0].shape else 1
    if n <= 1:
        return list(args)
    keys = []
    for key, aval in zip(args[:num_keys], in_avals[:num_keys], strict=True):
        keys += _sort_keys(ctx, key, aval.dtype)
    k = ctx.ints([n])
    perm = None
    for key in reversed(keys):
        if perm is not None:
            key = ctx.op("GatherElements", [key, perm], axis=dimension)
        _, order = ctx.op("TopK", [key, k], num_outputs=2, axis=dimension, largest=0,
                          sorted=1)
        perm = order if perm is None else ctx.op("GatherElements", [perm, order],
                                                  axis=dimension)
    return [ctx.op("GatherElements", [x, perm], axis=dimension) for x in args]


def _declare_reductions():
    # integer sums in int64, cast back (which wraps): ORT's int32 ReduceSum saturates
    sums = _FLOATS + (np.dtype(np.int64),)
    registry["reduce_sum"].onnx = _in_dtype(sums, _reduce("ReduceSum", sums), modular=True)
    registry["reduce_prod"].onnx = _in_dtype(_NUMERIC, _reduce("ReduceProd", _NUMERIC),
                                             modular=True)
    extremum_types = _NUMERIC + (np.dtype(np.int8), np.dtype(np.uint8))
    registry["reduce_max"].onnx = _reduce("ReduceMax", extremum_types, ordered=True)
    registry["reduce_min"].onnx = _reduce("ReduceMin", extremum_types, ordered=True)
    registry["reduce_and"].onnx = _reduce_bool(is_all=True)
    registry["reduce_or"].onnx = _reduce_bool(is_all=False)
    registry["argmax"].onnx = _arg_reduce("ArgMax")
    registry["argmin"].onnx = _arg_reduce("ArgMin")
    registry["cumsum"].onnx = _in_dtype(sums, _cumsum, modular=True)
    registry["cumprod"].onnx = _cumulative("mul")
    registry["cummax"].onnx = _cumulative("max")
    registry["cummin"].onnx = _cumulative("min")
    registry["sort"].onnx = _sort


# --- gather and scatter --------------------------------------------------------------------------


def _to_front(ctx, x, ndim, axes):
    """``x`` with ``axes`` moved to the front (in order); the permutation used."""
    perm = list(axes) + [d for d in range(ndim) if d not in axes]
    if perm == list(range(ndim)):
        return x, perm
    return ctx.op("Transpose", [x], perm=perm), perm


def _gather(ctx, args, in_avals, out_avals, *, axes):
    operand, indices = args
    op_aval, idx_aval = in_avals
    if op_aval.size == 0:
        return [ctx.full(0, out_avals[0])]
    moved, _ = _to_front(ctx, operand, op_aval.ndim, axes)
    # clamp into range as compiled code does (GatherND would wrap negatives, fail others)
    idx = ctx.cast(indices, np.int64) if idx_aval.dtype != np.int64 else indices
    upper = ctx.ints([op_aval.shape[a] - 1 for a in axes])
    idx = ctx.op("Max", [ctx.op("Min", [idx, upper]), ctx.scalar(0, np.int64)])
    return [ctx.op("GatherND", [moved, idx])]


_SCATTER_REDUCTION = {"set": None, "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _scatter(ctx, args, in_avals, out_avals, *, axes, mode):
    """ScatterND on the operand with ``axes`` in front and one extra row: out-of-range
    indices (dropped by funcgrad) are sent to that row, which is then cut off."""
    operand, indices, updates = args
    op_aval, idx_aval, up_aval = in_avals
    if idx_aval.size == 0 or op_aval.size == 0:
        return [operand]
    moved, perm = _to_front(ctx, operand, op_aval.ndim, axes)
    moved_shape = [op_aval.shape[p] for p in perm]
    first = moved_shape[0]
    spare = ctx.full(0, ShapedArray([1] + moved_shape[1:], op_aval.dtype))
    padded = ctx.op("Concat", [moved, spare], axis=0)
    idx = ctx.cast(indices, np.int64) if idx_aval.dtype != np.int64 else indices
    inside = ctx.op("And", [
        ctx.op("GreaterOrEqual", [idx, ctx.scalar(0, np.int64)]),
        ctx.op("Less", [idx, ctx.ints([op_aval.shape[a] for a in axes])])])
    all_inside = ctx.op("Equal", [
        ctx.op("ReduceMin", [ctx.cast(inside, np.int32), ctx.ints([-1])], keepdims=1),
        ctx.scalar(1, np.int32)])
    spare_index = ctx.ints([first] + [0] * (len(axes) - 1))
    idx = ctx.op("Where", [all_inside, idx, spare_index])
    scattered = ctx.op("ScatterND", [padded, idx, updates],
                       reduction=_SCATTER_REDUCTION[mode])
    out = ctx.op("Slice", [scattered, ctx.ints([0]), ctx.ints([first]), ctx.ints([0])])
    if perm != list(range(op_aval.ndim)):
        out = ctx.op("Transpose", [out], perm=[int(i) for i in np.argsort(perm)])
    return [out]


def _declare_indexing():
    from funcgrad.core.prims import indexing

    registry["gather"].onnx = _gather
    registry["dynamic_slice"].onnx = via(indexing.dynamic_slice_by_gather)
    registry["dynamic_update_slice"].onnx = via(indexing.dynamic_update_slice_by_scatter)
    modular = _in_dtype(_NUMERIC + (np.dtype(np.bool_),), _scatter, modular=True)
    # ORT's ScatterND has no bool min/max: those go through int32 like other bool math
    ordered = _in_dtype(_NUMERIC, _scatter, ordered=True)
    registry["scatter"].onnx = lambda ctx, args, in_avals, out_avals, *, axes, mode: (
        ordered if mode in ("min", "max") else modular)(ctx, args, in_avals, out_avals,
                                                        axes=axes, mode=mode)


# --- control flow, calls and the rest ----------------------------------------------------------


def _inline(param):
    """Calls of a sub-IR (jit_call, checkpoint, custom_jvp/vjp_call): emit the IR in place;
    the custom derivative rules only matter to differentiation, which ran before export."""

    def rule(ctx, args, in_avals, out_avals, **params):
        return ctx.emit_ir(params[param], args)

    return rule


def _branch_graph(ctx, emit, out_avals, name):
    sub = ctx.child()
    outs = emit(sub)
    return sub.graph(name, [], outs, out_avals)


def _cond(ctx, args, in_avals, out_avals, *, branches):
    """Branch k runs when index == k: a chain of If nodes (one for a predicate)."""
    index, operands = args[0], list(args[1:])
    out_avals = [a.strip_weak() for a in out_avals]

    def choose(cx, k):
        if k == len(branches) - 1:
            return cx.emit_ir(branches[k], operands)
        pick = cx.op("Equal", [cx.cast(index, np.int64), cx.scalar(k, np.int64)])
        then_graph = _branch_graph(cx, lambda sub: sub.emit_ir(branches[k], operands),
                                   out_avals, f"branch{k}")
        else_graph = _branch_graph(cx, lambda sub: choose(sub, k + 1), out_avals,
                                   f"branches{k + 1}_")
        outs = cx.op("If", [pick], num_outputs=len(out_avals), then_branch=then_graph,
                     else_branch=else_graph)
        return outs if isinstance(outs, list) else [outs]

    return choose(ctx, 0)


def _scan(ctx, args, in_avals, out_avals, *, body, num_consts, num_carry, length, reverse):
    """A Loop of ``length`` trips: the body reads step i of each xs with Gather, the
    loop stacks the ys (reversed afterwards for reverse=True)."""
    consts = list(args[:num_consts])
    init = list(args[num_consts:num_consts + num_carry])
    xs = list(args[num_consts + num_carry:])
    out_avals = [a.strip_weak() for a in out_avals]
    carry_avals, ys_avals = out_avals[:num_carry], out_avals[num_carry:]
    if length == 0:
        return init + [ctx.const(np.zeros(a.shape, a.dtype)) for a in ys_avals]
    sub = ctx.child()
    step, keep_going = sub.fresh("step"), sub.fresh("cond")
    carry_in = [sub.fresh("carry") for _ in init]
    position = step
    if reverse:
        position = sub.op("Sub", [sub.scalar(length - 1, np.int64), step])
    x_t = [sub.op("Gather", [x, position], axis=0) for x in xs]
    outs = sub.emit_ir(body, consts + carry_in + x_t)
    body_y_avals = [ShapedArray(a.shape[1:], a.dtype) for a in ys_avals]
    graph = sub.graph(
        "scan_body",
        [(step, ShapedArray((), np.int64)), (keep_going, ShapedArray((), np.bool_))]
        + list(zip(carry_in, carry_avals, strict=True)),
        [keep_going] + outs, [ShapedArray((), np.bool_)] + carry_avals + body_y_avals)
    results = ctx.op("Loop", [ctx.scalar(length, np.int64), ctx.scalar(True, np.bool_)]
                     + init, num_outputs=len(out_avals), body=graph)
    results = results if isinstance(results, list) else [results]
    carry_out, ys = results[:num_carry], results[num_carry:]
    if reverse:
        ys = [_rev(ctx, [y], None, None, dimensions=(0,))[0] for y in ys]
    return carry_out + ys


def _while(ctx, args, in_avals, out_avals, *, cond_ir, body_ir, cond_nconsts, body_nconsts):
    """A Loop with no trip count: the condition runs once before it and after each body."""
    cond_consts = list(args[:cond_nconsts])
    body_consts = list(args[cond_nconsts:cond_nconsts + body_nconsts])
    init = list(args[cond_nconsts + body_nconsts:])
    out_avals = [a.strip_weak() for a in out_avals]
    (first,) = ctx.emit_ir(cond_ir, cond_consts + init)
    sub = ctx.child()
    step, keep_going = sub.fresh("step"), sub.fresh("cond")
    carry_in = [sub.fresh("carry") for _ in init]
    new = sub.emit_ir(body_ir, body_consts + carry_in)
    (again,) = sub.emit_ir(cond_ir, cond_consts + new)
    graph = sub.graph(
        "while_body",
        [(step, ShapedArray((), np.int64)), (keep_going, ShapedArray((), np.bool_))]
        + list(zip(carry_in, out_avals, strict=True)),
        [again] + new, [ShapedArray((), np.bool_)] + out_avals)
    results = ctx.op("Loop", ["", first] + init, num_outputs=len(out_avals), body=graph)
    return results if isinstance(results, list) else [results]


def _declare_control_flow():
    registry["cond"].onnx = _cond
    registry["scan"].onnx = _scan
    registry["while_loop"].onnx = _while
    registry["jit_call"].onnx = _inline("program")
    for name in ("custom_jvp_call", "custom_vjp_call", "checkpoint"):
        registry[name].onnx = _inline("call")
    registry["stop_gradient"].onnx = lambda ctx, args, i, o: [args[0]]
    registry["debug_print"].onnx = unsupported(
        "debug_print", "fg.debug.print is a Python side effect, which a model file cannot "
        "hold; remove the print (or export the function without it)")
    registry["custom_lin"].onnx = unsupported(
        "custom_lin", "it is the linearized half of a custom_vjp and only exists inside "
        "differentiation; export the function or its gradient, not a linearization")
    registry["bitcast_convert_type"].onnx = unsupported(
        "bitcast_convert_type", "ONNX has no bit-reinterpreting cast (this includes "
        "funcgrad.random, which builds floats from random bits: pass random values in "
        "as inputs instead)")
    for name in ("fft", "cholesky", "triangular_solve", "lu", "qr", "svd", "eigh", "eig"):
        registry[name].onnx = unsupported(
            name, "ONNX has no operator for it (linear algebra decompositions and complex "
            "FFTs are not in the ONNX standard set ONNX Runtime runs)")


def _declare_all():
    # importing these registers their primitives
    import funcgrad.debug  # noqa: F401
    import funcgrad.transforms.control_flow  # noqa: F401
    import funcgrad.transforms.custom  # noqa: F401
    import funcgrad.transforms.jit  # noqa: F401

    _declare_elementwise()
    _declare_structural()
    registry["dot_general"].onnx = _dot_rule
    _declare_reductions()
    _declare_indexing()
    _declare_control_flow()


_declare_all()
