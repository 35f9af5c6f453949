"""funcgrad.random: explicit-key, counter-based random numbers (threefry-2x32).

A key is a plain ``uint32`` tensor of shape ``(2,)``.  Nothing is stateful: the same key
always gives the same numbers, on every device, eager or traced.  Derive new keys with
:func:`split` or :func:`fold_in` instead of reusing one key for two purposes.

The generator is the Threefry-2x32 block cipher with 20 rounds (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", 2011; the Random123 library), laid out as JAX's
partitionable mode does: element ``i`` of a sample of any shape comes from encrypting the
64-bit counter ``i`` with the key.  Everything is written with funcgrad's uint32
primitives, so every function here traces, batches (``vmap`` over keys) and compiles.

>>> from funcgrad import random
>>> key = random.key(0)
>>> key, sub = random.split(key)
>>> random.normal(sub, (2, 3)).shape
(2, 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from funcgrad.core import dtypes
from funcgrad.core.prims import elementwise as ew
from funcgrad.core.prims import structural as st
from funcgrad.core.prims.bitcast import bitcast_convert_type
from funcgrad.core.prims.sorting import sort as _sort
from funcgrad.core.tensor import Tensor, wrap

__all__ = [
    "PRNGKey", "bernoulli", "bits", "categorical", "choice", "exponential", "fold_in",
    "gumbel", "key", "normal", "permutation", "randint", "split", "threefry_2x32",
    "truncated_normal", "uniform",
]

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA  # Threefry's key-schedule constant
_MAX_COUNT = 2**32  # counters are (0, i) with i < 2**32: samples have fewer elements


# --- the cipher ----------------------------------------------------------------------------


def _threefry2x32(k0: Tensor, k1: Tensor, x0: Tensor, x1: Tensor) -> tuple[Tensor, Tensor]:
    """Threefry-2x32, 20 rounds: encrypt counter words (x0, x1) with key words (k0, k1).

    All four are uint32 tensors of one shape; returns the two output words.
    """
    shape = x0.shape
    constants: dict[int, Tensor] = {}

    def const(value: int) -> Tensor:
        if value not in constants:
            constants[value] = st.full(shape, value, dtypes.uint32)
        return constants[value]

    add, xor = ew.add_p.bind, ew.xor_p.bind
    ks = (k0, k1, xor(xor(k0, k1), const(_KEY_PARITY)))
    x0, x1 = add(x0, ks[0]), add(x1, ks[1])
    for group in range(5):
        for rotation in _ROTATIONS[group % 2]:
            x0 = add(x0, x1)
            x1 = ew.or_p.bind(ew.shift_left_p.bind(x1, const(rotation)),
                              ew.shift_right_logical_p.bind(x1, const(32 - rotation)))
            x1 = xor(x1, x0)
        # key injection after every four rounds, with the round-group number added
        x0 = add(x0, ks[(group + 1) % 3])
        x1 = add(add(x1, ks[(group + 2) % 3]), const(group + 1))
    return x0, x1


def _key_words(key: Tensor, shape: tuple) -> tuple[Tensor, Tensor]:
    """The two words of ``key``, each broadcast to ``shape``."""
    words = []
    for i in range(2):
        word = st.reshape(st.slice_(key, (i,), (i + 1,)), ())
        words.append(st.broadcast_in_dim(word, shape, ()))
    return words[0], words[1]


def _counters(shape: tuple) -> tuple[Tensor, Tensor]:
    """The (high, low) words of the row-major position of every element of ``shape``."""
    size = math.prod(shape)
    if size >= _MAX_COUNT:
        raise ValueError(f"funcgrad.random: a sample of shape {shape} has {size} elements; "
                         f"at most {_MAX_COUNT - 1} are supported in one call (split the key)")
    low = st.reshape(st.iota(dtypes.uint32, (size,), 0), shape)
    return st.full(shape, 0, dtypes.uint32), low


def _encrypt_positions(key: Tensor, shape: tuple) -> tuple[Tensor, Tensor]:
    high, low = _counters(shape)
    k0, k1 = _key_words(key, shape)
    return _threefry2x32(k0, k1, high, low)


def _stack_words(y0: Tensor, y1: Tensor) -> Tensor:
    shape = y0.shape
    return st.concatenate([st.reshape(y0, (*shape, 1)), st.reshape(y1, (*shape, 1))],
                          len(shape))


def threefry_2x32(key, count) -> Tensor:
    """The raw Threefry-2x32 cipher: encrypt the uint32 ``count`` array under ``key``.

    As ``jax.prng.threefry_2x32``: the flattened ``count`` (even length) is split in two
    halves that are the two counter words; the output has ``count``'s shape.

    >>> fg.random.threefry_2x32(fg.random.key(0), fg.tensor([0, 0], dtype=fg.uint32)).shape
    (2,)
    """
    key = _check_key("threefry_2x32", key)
    count = _as_tensor(count)
    if count.dtype != dtypes.uint32:
        raise TypeError(f"threefry_2x32: count must be uint32, got {count.dtype.name}")
    flat = st.reshape(count, (count.size,))
    if count.size % 2:
        raise ValueError(f"threefry_2x32: count must have an even number of elements, got "
                         f"shape {count.shape}")
    half = count.size // 2
    x0, x1 = st.slice_(flat, (0,), (half,)), st.slice_(flat, (half,), (count.size,))
    k0, k1 = _key_words(key, (half,))
    y0, y1 = _threefry2x32(k0, k1, x0, x1)
    return st.reshape(st.concatenate([y0, y1], 0), count.shape)


# --- keys ---------------------------------------------------------------------------------


def key(seed) -> Tensor:
    """A key (``uint32[2]``) from an integer seed: its high and low 32-bit words.

    The seed is read as a 64-bit integer (negative seeds in two's complement), so
    ``key(1)`` is ``[0, 1]`` and ``key(2**32 + 5)`` is ``[1, 5]``, as ``jax.random.PRNGKey``.
    An integer tensor of shape ``()`` works too, also traced (e.g. ``vmap`` over seeds).

    >>> fg.random.key(42)
    tensor([ 0, 42], dtype=uint32)
    """
    if isinstance(seed, (bool, np.bool_)) or (isinstance(seed, Tensor)
                                              and seed.dtype == dtypes.bool_):
        raise TypeError("random.key: the seed must be an integer, got a bool")
    if isinstance(seed, (int, np.integer)):
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise OverflowError(f"random.key: seed {seed} does not fit in 64 bits")
        seed %= 2**64
        return wrap(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32))
    if isinstance(seed, float):
        raise TypeError(f"random.key: the seed must be an integer, got the float {seed!r}")
    seed = _as_tensor(seed)
    if not dtypes.is_integer(seed.dtype):
        raise TypeError(f"random.key: the seed must be an integer, got dtype "
                        f"{seed.dtype.name}")
    if seed.shape != ():
        raise ValueError(f"random.key: the seed must be a scalar, got shape {seed.shape} "
                         "(use fg.vmap(random.key) for many seeds)")
    low = ew.convert_element_type(seed, dtypes.uint32)
    if seed.dtype.itemsize == 8:
        shifted = ew.shift_right_logical_p.bind(seed, st.full((), 32, seed.dtype))
        high = ew.convert_element_type(shifted, dtypes.uint32)
    elif seed.dtype.kind == "i":  # sign-extend: the seed's value as a 64-bit integer
        as32 = ew.convert_element_type(seed, dtypes.int32)
        sign = ew.shift_right_arithmetic_p.bind(as32, st.full((), 31, dtypes.int32))
        high = ew.convert_element_type(sign, dtypes.uint32)
    else:
        high = st.full((), 0, dtypes.uint32)
    return st.concatenate([st.reshape(high, (1,)), st.reshape(low, (1,))], 0)


PRNGKey = key


def split(key, num: int | Sequence[int] = 2) -> Tensor:
    """``num`` new independent keys from ``key``, as a ``uint32[num, 2]`` tensor.

    ``num`` may also be a shape: ``split(key, (2, 3))`` has shape ``(2, 3, 2)``.

    >>> k1, k2 = fg.random.split(fg.random.key(0))
    >>> fg.random.split(fg.random.key(0), 4).shape
    (4, 2)
    """
    key = _check_key("split", key)
    shape = _shape("split", num)
    y0, y1 = _encrypt_positions(key, shape)
    return _stack_words(y0, y1)


def fold_in(key, data) -> Tensor:
    """A new key from ``key`` and an integer ``data`` (a step number, a layer index...).

    A Python int must fit in 32 bits (signed or unsigned) and is taken modulo ``2**32``;
    an integer tensor of shape ``()`` (also traced) is converted to uint32 (wrapping).

    >>> step_key = fg.random.fold_in(fg.random.key(0), 7)
    >>> step_key.shape, step_key.dtype
    ((2,), dtype('uint32'))
    """
    key = _check_key("fold_in", key)
    if isinstance(data, (bool, np.bool_)):
        raise TypeError("fold_in: data must be an integer, got a bool")
    if isinstance(data, (int, np.integer)):
        data = int(data)
        if not -(2**31) <= data < 2**32:
            raise OverflowError(f"fold_in: data {data} does not fit in 32 bits (fold in the "
                                "high and low words one after the other)")
        word = wrap(np.asarray(data % 2**32, dtype=np.uint32))
    else:
        data = _as_tensor(data)
        if not dtypes.is_integer(data.dtype) or data.shape != ():
            raise TypeError(f"fold_in: data must be an integer scalar, got "
                            f"{data.dtype.name}{list(data.shape)}")
        word = ew.convert_element_type(data, dtypes.uint32)
    k0, k1 = _key_words(key, ())
    y0, y1 = _threefry2x32(k0, k1, st.full((), 0, dtypes.uint32), word)
    return _stack_words(y0, y1)


# --- bits ---------------------------------------------------------------------------------


def _random_bits(key: Tensor, bit_width: int, shape: tuple) -> Tensor:
    """Unsigned integers of ``bit_width`` bits: one Threefry block per element."""
    y0, y1 = _encrypt_positions(key, shape)
    if bit_width == 64:
        high = ew.convert_element_type(y0, dtypes.uint64)
        low = ew.convert_element_type(y1, dtypes.uint64)
        shifted = ew.shift_left_p.bind(high, st.full(shape, 32, dtypes.uint64))
        return ew.or_p.bind(shifted, low)
    mixed = ew.xor_p.bind(y0, y1)
    if bit_width == 32:
        return mixed
    return ew.convert_element_type(mixed, _UINT[bit_width])


def bits(key, shape: Sequence[int] = (), dtype=dtypes.uint32) -> Tensor:
    """Uniformly random unsigned integers: every bit independent and fair.

    ``dtype`` is one of ``uint8, uint16, uint32, uint64``.

    >>> fg.random.bits(fg.random.key(0), (3,)).dtype
    dtype('uint32')
    """
    key = _check_key("bits", key)
    shape = _shape("bits", shape)
    dtype = dtypes.canonicalize(dtype)
    if dtype.kind != "u":
        raise TypeError(f"bits: dtype must be an unsigned integer dtype (uint8, uint16, "
                        f"uint32, uint64), got {dtype.name}")
    return _random_bits(key, dtype.itemsize * 8, shape)


# --- continuous distributions -------------------------------------------------------------


def uniform(key, shape: Sequence[int] = (), dtype=dtypes.float32, minval=0.0,
            maxval=1.0) -> Tensor:
    """Uniform floats in ``[minval, maxval)``.

    Arguments:
        key: a key from :func:`key` / :func:`split`.
        shape: the sample shape; ``minval`` and ``maxval`` broadcast to it.
        dtype: a floating dtype (float16, bfloat16, float32, float64).
        minval, maxval: bounds (numbers or tensors).

    The float is built from the random bits' top mantissa-width bits with exponent 0
    (a number in [1, 2)) minus 1, so every representable multiple of ``2**-nmant`` is
    equally likely (52 random bits for float64).

    >>> fg.random.uniform(fg.random.key(0), (2,), minval=-1.0, maxval=1.0).shape
    (2,)
    """
    key = _check_key("uniform", key)
    shape = _shape("uniform", shape)
    dtype = _float_dtype("uniform", dtype)
    if _is_python_constant(minval, 0.0) and _is_python_constant(maxval, 1.0):
        return _uniform(key, shape, dtype)
    minval = _as_dtype(minval, dtype)
    maxval = _as_dtype(maxval, dtype)
    _check_broadcast("uniform", shape, minval.shape, maxval.shape)
    return _uniform(key, shape, dtype, minval, maxval)


def _uniform(key, shape, dtype, minval=None, maxval=None):
    """Uniform in [0, 1) without bounds, else in [minval, maxval) (tensors of ``dtype``)."""
    import funcgrad.numpy as fnp

    info = dtypes.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    rng_bits = 8 if nmant < 8 else nbits  # bfloat16 has 7 mantissa bits: draw 8
    uint = _UINT[nbits]
    raw = _random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        raw = ew.convert_element_type(raw, uint)
    one_bits = int(np.array(1.0, dtype=dtype).view(uint))
    mantissa = ew.shift_right_logical_p.bind(raw, st.full(shape, rng_bits - nmant, uint))
    float_bits = ew.or_p.bind(mantissa, st.full(shape, one_bits, uint))
    floats = ew.sub(bitcast_convert_type(float_bits, dtype), st.full(shape, 1, dtype))
    if minval is None:
        return floats
    scaled = fnp.add(fnp.multiply(floats, fnp.subtract(maxval, minval)), minval)
    return _broadcast(fnp.maximum(minval, scaled), shape)


def normal(key, shape: Sequence[int] = (), dtype=dtypes.float32) -> Tensor:
    """Standard normal samples (mean 0, variance 1); complex dtypes give E|z|^2 = 1.

    Computed as ``sqrt(2) * erf_inv(u)`` with ``u`` uniform in ``(-1, 1)``.

    >>> fg.random.normal(fg.random.key(0), (1000,)).std() > 0.9
    tensor(True, dtype=bool)
    """
    key = _check_key("normal", key)
    shape = _shape("normal", shape)
    dtype = dtypes.canonicalize(dtype)
    if dtypes.is_complex(dtype):
        real_dtype = dtypes.real_dtype(dtype)
        key_re, key_im = _two_keys(key)
        re = _normal_real(key_re, shape, real_dtype)
        im = _normal_real(key_im, shape, real_dtype)
        half = st.full(shape, math.sqrt(0.5), real_dtype)
        return ew.complex_(ew.mul(re, half), ew.mul(im, half))
    return _normal_real(key, shape, _float_dtype("normal", dtype))


def _normal_real(key, shape, dtype):
    lo = st.full((), -1.0 + float(dtypes.finfo(dtype).epsneg), dtype)  # nextafter(-1, 0)
    u = _uniform(key, shape, dtype, lo, st.full((), 1.0, dtype))
    return ew.mul(ew.erf_inv(u), st.full(shape, math.sqrt(2), dtype))


def truncated_normal(key, lower, upper, shape: Sequence[int] | None = None,
                     dtype=dtypes.float32) -> Tensor:
    """Standard normal samples conditioned on ``lower < x < upper``.

    ``lower`` and ``upper`` broadcast to ``shape`` (by default their broadcast shape) and
    may be infinite.

    >>> x = fg.random.truncated_normal(fg.random.key(0), -2.0, 2.0, (100,))
    >>> bool((x.min() > -2) & (x.max() < 2))
    True
    """
    import funcgrad.numpy as fnp

    key = _check_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    lower = _as_dtype(lower, dtype)
    upper = _as_dtype(upper, dtype)
    if shape is None:
        shape = _broadcast_shapes("truncated_normal", lower.shape, upper.shape)
    else:
        shape = _shape("truncated_normal", shape)
        _check_broadcast("truncated_normal", shape, lower.shape, upper.shape)
    if (type(lower) is Tensor and type(upper) is Tensor
            and np.any(lower.numpy() > upper.numpy())):  # concrete bounds only
        raise ValueError("truncated_normal: lower must not exceed upper (samples outside "
                         "the interval came out)")
    sqrt2 = math.sqrt(2)
    a = ew.erf(ew.div(lower, st.full(lower.shape, sqrt2, dtype)))
    b = ew.erf(ew.div(upper, st.full(upper.shape, sqrt2, dtype)))
    u = _uniform(key, shape, dtype, a, b)
    out = ew.mul(ew.erf_inv(u), st.full(shape, sqrt2, dtype))
    # rounding (or u == a) could land on a bound: clamp into the open interval
    low = _nextafter(lower, toward_positive=True)
    high = _nextafter(upper, toward_positive=False)
    return _broadcast(fnp.minimum(fnp.maximum(out, low), high), shape)


def _nextafter(x: Tensor, toward_positive: bool) -> Tensor:
    """The next representable float after ``x`` toward +inf or -inf (``x`` finite or inf)."""
    info = dtypes.finfo(x.dtype)
    uint = _UINT[info.bits]
    bits_ = bitcast_convert_type(x, uint)
    one = st.full(x.shape, 1, uint)
    up, down = ew.add(bits_, one), ew.sub(bits_, one)
    zero = st.full(x.shape, 0, x.dtype)
    # the bit pattern grows away from zero: moving up means +1 for x > 0, -1 for x < 0
    if toward_positive:
        moved = bitcast_convert_type(ew.select_n(ew.lt(x, zero), up, down), x.dtype)
        smallest = float(info.smallest_subnormal)
    else:
        moved = bitcast_convert_type(ew.select_n(ew.gt(x, zero), up, down), x.dtype)
        smallest = -float(info.smallest_subnormal)
    # +0 and -0 both step to the smallest subnormal of the right sign
    return ew.select_n(ew.eq(x, zero), moved, st.full(x.shape, smallest, x.dtype))


def exponential(key, shape: Sequence[int] = (), dtype=dtypes.float32) -> Tensor:
    """Exponential samples with rate 1 (mean 1): ``-log(1 - u)``.

    >>> fg.random.exponential(fg.random.key(0), (3,)).shape
    (3,)
    """
    key = _check_key("exponential", key)
    shape = _shape("exponential", shape)
    dtype = _float_dtype("exponential", dtype)
    u = _uniform(key, shape, dtype)
    return ew.neg(ew.log1p(ew.neg(u)))


def gumbel(key, shape: Sequence[int] = (), dtype=dtypes.float32) -> Tensor:
    """Standard Gumbel samples: ``-log(-log(u))`` with ``u`` uniform in ``[tiny, 1)``.

    >>> fg.random.gumbel(fg.random.key(0), (3,)).shape
    (3,)
    """
    key = _check_key("gumbel", key)
    shape = _shape("gumbel", shape)
    dtype = _float_dtype("gumbel", dtype)
    return _gumbel(key, shape, dtype)


def _gumbel(key, shape, dtype):
    tiny = st.full((), float(dtypes.finfo(dtype).tiny), dtype)
    u = _uniform(key, shape, dtype, tiny, st.full((), 1.0, dtype))
    return ew.neg(ew.log(ew.neg(ew.log(u))))


# --- discrete distributions ---------------------------------------------------------------


def bernoulli(key, p=0.5, shape: Sequence[int] | None = None) -> Tensor:
    """Random booleans, True with probability ``p``.

    ``p`` is a float or a float tensor broadcasting to ``shape`` (default: ``p``'s shape).

    >>> fg.random.bernoulli(fg.random.key(0), 0.3, (4,)).dtype
    dtype('bool')
    """
    import funcgrad.numpy as fnp

    key = _check_key("bernoulli", key)
    if isinstance(p, float):
        p = wrap(np.asarray(p, dtype=np.float32))
    elif isinstance(p, (bool, int)):
        raise TypeError(f"bernoulli: probability p must be a float, got {p!r}; write "
                        f"{float(p)!r}")
    p = _as_tensor(p)
    if not dtypes.is_float(p.dtype):
        raise TypeError(f"bernoulli: probability p must have a floating dtype, got "
                        f"{p.dtype.name}")
    if shape is None:
        shape = p.shape
    else:
        shape = _shape("bernoulli", shape)
        _check_broadcast("bernoulli", shape, p.shape)
    u = _uniform(key, shape, p.dtype)
    return fnp.less(u, p)


def randint(key, shape: Sequence[int], minval, maxval, dtype=dtypes.int32) -> Tensor:
    """Uniform integers in ``[minval, maxval)``.

    ``minval``/``maxval`` are integers or integer tensors broadcasting to ``shape``; they
    are clipped to ``dtype``'s range, and ``maxval`` one past ``dtype``'s maximum is
    allowed (``randint(k, s, 0, 256, fg.uint8)``).  Where ``maxval <= minval`` the result
    is ``minval`` (as JAX).  Two words of random bits per sample keep the modulo bias
    small.

    >>> fg.random.randint(fg.random.key(0), (5,), 0, 10).dtype
    dtype('int32')
    """
    import funcgrad.numpy as fnp

    key = _check_key("randint", key)
    shape = _shape("randint", shape)
    dtype = dtypes.canonicalize(dtype)
    if not dtypes.is_integer(dtype):
        raise TypeError(f"randint: dtype must be an integer dtype, got {dtype.name} (use "
                        "random.uniform for floats)")
    info = dtypes.iinfo(dtype)
    nbits = info.bits
    if nbits < 32:
        # sampled in 32 bits and cast, as JAX (less modulo bias; the same values)
        import funcgrad.numpy as _fnp

        def bound(value, extra):
            value = _as_tensor(value) if not isinstance(value, (int, np.integer, float)) \
                else value
            if isinstance(value, (int, np.integer, float)):
                return int(min(max(int(value), int(info.min)), int(info.max) + extra))
            return _fnp.clip(ew.convert_element_type(value, dtypes.int32), int(info.min),
                             int(info.max) + extra)

        wide = randint(key, shape, bound(minval, 0), bound(maxval, 1), dtypes.int32)
        return ew.convert_element_type(wide, dtype)
    minval, _ = _integer_bound("randint", "minval", minval, dtype)
    maxval, maxval_out_of_range = _integer_bound("randint", "maxval", maxval, dtype)
    _check_broadcast("randint", shape, minval.shape, maxval.shape)
    minval, maxval = _broadcast(minval, shape), _broadcast(maxval, shape)
    maxval_out_of_range = _broadcast(maxval_out_of_range, shape)

    key_high, key_low = _two_keys(key)
    higher_bits = _random_bits(key_high, nbits, shape)
    lower_bits = _random_bits(key_low, nbits, shape)
    uint = _UINT[nbits]

    def const(value):
        return st.full(shape, value, uint)

    span = ew.convert_element_type(ew.sub(maxval, minval), uint)
    empty = ew.le(maxval, minval)
    span = ew.select_n(empty, span, const(1))  # minval is returned where maxval <= minval
    # a maxval past dtype's maximum was clipped: the span is one larger than computed
    grow = fnp.logical_and(maxval_out_of_range, ew.not_p.bind(empty))
    span = ew.select_n(grow, span, ew.add(span, const(1)))
    # a span of 0 means 2**nbits (the whole range): any nbits random bits will do
    whole_range = ew.eq(span, const(0))
    span = ew.select_n(whole_range, span, const(1))
    # 2**nbits % span without overflow: (a * b) % n == ((a % n) * (b % n)) % n
    multiplier = ew.rem(const(2 ** (nbits // 2)), span)
    multiplier = ew.rem(ew.mul(multiplier, multiplier), span)
    offset = ew.add(ew.mul(ew.rem(higher_bits, span), multiplier), ew.rem(lower_bits, span))
    offset = ew.select_n(whole_range, ew.rem(offset, span), lower_bits)
    return ew.add(minval, ew.convert_element_type(offset, dtype))


def _integer_bound(name, what, value, dtype):
    """``value`` clipped to ``dtype``'s range and converted, and whether it was above it."""
    info = dtypes.iinfo(dtype)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: {what} must be an integer, got a bool")
    if isinstance(value, (int, np.integer)):
        value = int(value)
        above = value > info.max
        clipped = min(max(value, int(info.min)), int(info.max))
        return (wrap(np.asarray(clipped, dtype=dtype)),
                wrap(np.asarray(above, dtype=np.bool_)))
    if isinstance(value, float):
        value_int = int(value)
        return _integer_bound(name, what, value_int, dtype)
    value = _as_tensor(value)
    if dtypes.is_float(value.dtype):
        value = ew.convert_element_type(value, dtypes.int32)
    elif not dtypes.is_integer(value.dtype):
        raise TypeError(f"{name}: {what} must be an integer, got dtype {value.dtype.name}")
    src = dtypes.iinfo(value.dtype)
    lo, hi = max(int(src.min), int(info.min)), min(int(src.max), int(info.max))
    src_dtype = value.dtype
    above = ew.gt(value, st.full(value.shape, hi, src_dtype))
    if hi < src.max:
        value = ew.min(value, st.full(value.shape, hi, src_dtype))
    if lo > src.min:
        value = ew.max(value, st.full(value.shape, lo, src_dtype))
    return ew.convert_element_type(value, dtype), above


def permutation(key, x, axis: int = 0, independent: bool = False) -> Tensor:
    """A random permutation of ``arange(x)`` (int ``x``), or ``x`` shuffled along ``axis``.

    With ``independent=True`` every 1-d slice along ``axis`` is shuffled independently;
    otherwise whole slices move together.

    >>> fg.random.permutation(fg.random.key(0), 5).shape
    (5,)
    """
    import funcgrad.numpy as fnp

    key = _check_key("permutation", key)
    if (x.ndim if isinstance(x, Tensor) else np.ndim(x)) == 0 and axis not in (0, -1):
        raise ValueError(f"permutation: axis {axis} is out of range for an integer x (a "
                         "permutation of arange(x) has one axis, 0)")
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return _shuffle(key, st.iota(dtypes.int32, (_count("permutation", x),), 0), 0)
    x = _as_tensor(x)
    if x.ndim == 0:
        if not dtypes.is_integer(x.dtype):
            raise TypeError(f"permutation: x must be an integer or at least 1-d, got a "
                            f"{x.dtype.name} scalar")
        if type(x) is not Tensor:
            raise TypeError("permutation: an integer x must be concrete (the output length "
                            "depends on it); pass a Python int")
        return _shuffle(key, st.iota(dtypes.int32, (_count("permutation", int(x)),), 0), 0)
    axis = _normalize_axis("permutation", axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, st.iota(dtypes.int32, (x.shape[axis],), 0), 0)
    return fnp.take(x, order, axis=axis)


def _shuffle(key, x, axis):
    """Sort ``x`` along ``axis`` by random 32-bit keys, in enough rounds that ties are rare.

    With n elements, one round leaves a tie with probability about n^2 / 2^33; rounds
    repeat until n^3 < 2^(32 * rounds), as JAX does.
    """
    rounds = math.ceil(3 * math.log(max(1, x.size)) / math.log(2**32 - 1))
    for _ in range(rounds):
        key, subkey = _two_keys(key)
        sort_keys = _random_bits(subkey, 32, x.shape)
        _, x = _sort((sort_keys, x), axis, 1)
    return x


def choice(key, a, shape: Sequence[int] = (), replace: bool = True, p=None,
           axis: int = 0) -> Tensor:
    """Random draws from ``arange(a)`` (int ``a``) or from the slices of ``a`` along ``axis``.

    Arguments:
        a: an int n (draw from ``0..n-1``) or a tensor.
        shape: the shape of the draws.
        replace: draw with replacement (default) or without.
        p: optional probabilities of the n entries (need not be normalized).
        axis: the axis of ``a`` to draw slices along.

    >>> fg.random.choice(fg.random.key(0), 10, (3,), replace=False).shape
    (3,)
    """
    import funcgrad.numpy as fnp

    key = _check_key("choice", key)
    shape = _shape("choice", shape)
    if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)):
        arr = None
        n_inputs = int(a)
    else:
        arr = _as_tensor(a)
        if arr.ndim == 0:
            if type(arr) is not Tensor or not dtypes.is_integer(arr.dtype):
                raise TypeError("choice: a scalar a must be a concrete integer")
            n_inputs, arr = int(arr), None
        else:
            axis = _normalize_axis("choice", axis, arr.ndim)
            n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    out_dtype = dtypes.int32 if arr is None else arr.dtype
    final_shape = shape if arr is None else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    if n_draws == 0:
        return st.full(final_shape, 0, out_dtype)
    if n_inputs <= 0:
        raise ValueError(f"choice: a must be positive unless no samples are taken, got "
                         f"{n_inputs} entries")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"choice: cannot take a larger sample (size {n_draws}) than the "
                         f"population (size {n_inputs}) when replace=False")
    if p is None:
        if replace:
            index = randint(key, shape, 0, n_inputs)
        else:
            index = st.slice_(permutation(key, n_inputs), (0,), (n_draws,))
    else:
        p = _as_tensor(p)
        if not dtypes.is_inexact(p.dtype):
            p = ew.convert_element_type(p, dtypes.float32)
        if p.shape != (n_inputs,):
            raise ValueError(f"choice: p must have shape ({n_inputs},) to match a, got "
                             f"{p.shape}")
        if replace:
            cumulative = fnp.cumsum(p)
            total = st.reshape(st.slice_(cumulative, (n_inputs - 1,), (n_inputs,)), ())
            u = _uniform(key, shape, p.dtype)
            r = fnp.multiply(total, fnp.subtract(1, u))  # in (0, total]
            index = fnp.minimum(fnp.searchsorted(cumulative, r), n_inputs - 1)
        else:
            # Gumbel top-k: the n_draws largest of log p + Gumbel noise
            g = fnp.add(_gumbel(key, (n_inputs,), p.dtype), fnp.log(p))
            order = fnp.argsort(g, descending=True)
            index = st.slice_(order, (0,), (n_draws,))
    index = st.reshape(index, shape) if index.shape != shape else index
    index = ew.convert_element_type(index, dtypes.int32)
    if arr is None:
        return index
    flat = st.reshape(index, (n_draws,))
    picked = fnp.take(arr, flat, axis=axis)
    return st.reshape(picked, final_shape)


def categorical(key, logits, axis: int = -1, shape: Sequence[int] | None = None) -> Tensor:
    """Samples of category indices with probabilities ``softmax(logits)`` along ``axis``.

    Uses the Gumbel-max trick: ``argmax(logits + gumbel noise)``.  ``shape`` (default:
    the logits' shape without ``axis``) may add leading batch dimensions.

    >>> fg.random.categorical(fg.random.key(0), fg.tensor([0.0, 1.0, 2.0]), shape=(4,)).shape
    (4,)
    """
    import funcgrad.numpy as fnp

    key = _check_key("categorical", key)
    logits = _as_tensor(logits)
    if not dtypes.is_float(logits.dtype):
        logits = ew.convert_element_type(logits, dtypes.float32)
    if logits.ndim == 0:
        raise ValueError("categorical: logits must have at least one axis (the categories)")
    axis = _normalize_axis("categorical", axis, logits.ndim) - logits.ndim  # negative
    batch_shape = tuple(np.delete(np.array(logits.shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape("categorical", shape)
        if not _broadcasts_to(batch_shape, shape):
            raise ValueError(f"categorical: shape {shape} must end with (a broadcast of) the "
                             f"logits' batch shape {batch_shape}")
    prefix = shape[:len(shape) - len(batch_shape)]
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % logits.ndim, logits.shape[axis])
    noise = _gumbel(key, (*prefix, *logits_shape), logits.dtype)
    expanded = st.reshape(logits, (1,) * len(prefix) + logits.shape)
    return fnp.argmax(fnp.add(noise, expanded), axis=axis)


# --- helpers ------------------------------------------------------------------------------

def _is_python_constant(value, constant) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and value == constant)


def _check_key(name: str, key) -> Tensor:
    """``key`` as a uint32[2] Tensor, or a TypeError/ValueError saying what is wrong."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        raise TypeError(f"{name}: expected a key (uint32[2] tensor), got the int {key}; make "
                        f"one with random.key({key})")
    if isinstance(key, np.ndarray):
        key = wrap(np.array(key))
    if not isinstance(key, Tensor):
        raise TypeError(f"{name}: expected a key (uint32[2] tensor from random.key or "
                        f"random.split), got {type(key).__name__}")
    if key.dtype != dtypes.uint32:
        raise TypeError(f"{name}: a key must have dtype uint32, got {key.dtype.name}"
                        f"{list(key.shape)}; make keys with random.key(seed)")
    if key.shape != (2,):
        if key.ndim > 1 and key.shape[-1] == 2:
            raise ValueError(f"{name}: takes a single key of shape (2,), got a batch of keys "
                             f"of shape {key.shape}; use fg.vmap to map over keys, or index "
                             "one key out")
        raise ValueError(f"{name}: a key has shape (2,), got shape {key.shape}")
    return key


def _two_keys(key: Tensor) -> tuple[Tensor, Tensor]:
    """``split(key)`` as two (2,) keys."""
    y0, y1 = _encrypt_positions(key, (2,))
    keys = []
    for i in range(2):
        words = [st.slice_(y, (i,), (i + 1,)) for y in (y0, y1)]
        keys.append(st.concatenate(words, 0))
    return keys[0], keys[1]


def _shape(name: str, shape) -> tuple:
    if (isinstance(shape, (int, np.integer)) and not isinstance(shape, bool)) or (
            isinstance(shape, Tensor) and shape.ndim == 0):  # split(key, fg.tensor(3)): JAX too
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
    out = []
    for d in shape:
        if isinstance(d, Tensor) and type(d) is not Tensor:
            raise TypeError(f"{name}: shape {shape} holds a traced value; shapes must be "
                            "concrete (mark the argument static under jit)")
        if isinstance(d, bool) or not isinstance(d, (int, np.integer, Tensor)) or (
                isinstance(d, Tensor) and not dtypes.is_integer(d.dtype)):
            raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}")
        d = int(d)
        if d < 0:
            raise ValueError(f"{name}: negative dimension in shape {shape}")
        out.append(d)
    return tuple(out)


def _count(name: str, n) -> int:
    n = int(n)
    if n < 0:
        raise ValueError(f"{name}: the length must be non-negative, got {n}")
    return n


def _normalize_axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for a tensor of rank {ndim}")
    return axis % ndim


def _float_dtype(name: str, dtype) -> np.dtype:
    dtype = dtypes.canonicalize(dtype)
    if not dtypes.is_float(dtype):
        raise TypeError(f"{name}: dtype must be a floating dtype (float16, bfloat16, "
                        f"float32, float64), got {dtype.name}")
    return dtype


def _as_tensor(x) -> Tensor:
    if isinstance(x, Tensor):
        return x
    from funcgrad.numpy._util import asarray

    return asarray(x)


def _as_dtype(x, dtype) -> Tensor:
    if isinstance(x, (bool, int, float)):
        return wrap(np.asarray(x, dtype=dtype))
    return ew.convert_element_type(_as_tensor(x), dtype)


def _broadcast_shapes(name: str, *shapes) -> tuple:
    from funcgrad.numpy._util import broadcast_shapes

    return broadcast_shapes(name, *shapes)


def _check_broadcast(name: str, shape: tuple, *arg_shapes) -> None:
    """The arguments (bounds, probabilities) must broadcast to the sample ``shape``."""
    for arg_shape in arg_shapes:
        if not _broadcasts_to(arg_shape, shape):
            raise ValueError(f"{name}: an argument of shape {arg_shape} does not broadcast "
                             f"to the requested shape {shape}")


def _broadcasts_to(arg_shape: tuple, shape: tuple) -> bool:
    """Whether NumPy broadcasting takes ``arg_shape`` to exactly ``shape``."""
    if len(arg_shape) > len(shape):
        return False
    tail = shape[len(shape) - len(arg_shape):]
    return all(a in (1, s) for a, s in zip(arg_shape, tail, strict=True))


def _broadcast(x: Tensor, shape: tuple) -> Tensor:
    from funcgrad.numpy._util import broadcast_to

    return broadcast_to(x, shape)
