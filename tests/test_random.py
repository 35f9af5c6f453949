"""Tests of funcgrad.random: the cipher against an independent reference and published
values, reproducibility, distributions' moments, shapes and dtypes, errors, tracing."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import random
from funcgrad.core import interpreter as interp
from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.config import config
from funcgrad.core.prims.bitcast import bitcast_convert_type, bitcast_convert_type_p
from funcgrad.core.tensor import Tensor

N = 100_000  # samples for the moment tests


@pytest.fixture(autouse=True)
def _check_shape_rules():
    """Every eager primitive's output is checked against its shape/dtype rule."""
    previous = config.check_avals
    config.check_avals = True
    yield
    config.check_avals = previous


# --- an independent reference: Threefry-2x32-20 on Python ints ----------------------------

_MASK = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & _MASK


def reference_threefry(key, counter):
    """Threefry-2x32 with 20 rounds, straight from the Random123 specification."""
    k0, k1 = key
    ks = [k0, k1, k0 ^ k1 ^ 0x1BD11BDA]
    x = [(counter[0] + ks[0]) & _MASK, (counter[1] + ks[1]) & _MASK]
    rotations = [13, 15, 26, 6, 17, 29, 16, 24]
    for i in range(20):
        x[0] = (x[0] + x[1]) & _MASK
        x[1] = _rotl(x[1], rotations[i % 8]) ^ x[0]
        if i % 4 == 3:
            s = i // 4 + 1
            x[0] = (x[0] + ks[s % 3]) & _MASK
            x[1] = (x[1] + ks[(s + 1) % 3] + s) & _MASK
    return x[0], x[1]


def reference_bits32(key, n):
    return [a ^ b for a, b in (reference_threefry(key, (0, i)) for i in range(n))]


# Known-answer vectors of Threefry-2x32-20 from Random123's kat_vectors.
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def _key(words):
    return fg.tensor(np.array(words, dtype=np.uint32))


@pytest.mark.parametrize("key, counter, expected", KAT)
def test_reference_matches_known_answers(key, counter, expected):
    assert reference_threefry(key, counter) == expected


@pytest.mark.parametrize("key, counter, expected", KAT)
def test_threefry_2x32_matches_known_answers(key, counter, expected):
    out = random.threefry_2x32(_key(key), fg.tensor(np.array(counter, np.uint32)))
    assert out.dtype == np.uint32
    assert tuple(int(v) for v in out.numpy()) == expected


def test_threefry_2x32_many_counters():
    counts = np.arange(10, dtype=np.uint32)  # words (0..4) and (5..9)
    out = random.threefry_2x32(_key((7, 9)), fg.tensor(counts)).numpy()
    pairs = [reference_threefry((7, 9), (i, i + 5)) for i in range(5)]
    assert out.tolist() == [p[0] for p in pairs] + [p[1] for p in pairs]


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 + 5])
def test_bits_match_reference(seed):
    key = random.key(seed)
    words = (seed >> 32, seed & _MASK)
    assert random.bits(key, (4,)).numpy().tolist() == reference_bits32(words, 4)
    assert random.bits(key, (2, 3)).numpy().ravel().tolist() == reference_bits32(words, 6)


def test_bits_pinned_values():
    assert random.bits(random.key(0), (4,)).numpy().tolist() == [
        4070199207, 4202968722, 1427181096, 2012915765]


def test_split_and_fold_in_match_reference():
    key = random.key(3)
    keys = random.split(key, 5).numpy()
    assert keys.shape == (5, 2)
    for i in range(5):
        assert tuple(keys[i]) == reference_threefry((0, 3), (0, i))
    assert tuple(random.fold_in(key, 11).numpy()) == reference_threefry((0, 3), (0, 11))
    assert tuple(random.fold_in(key, -1).numpy()) == reference_threefry((0, 3), (0, _MASK))


def test_uniform_float64_matches_reference():
    key = random.key(5)
    got = random.uniform(key, (3,), dtype=fg.float64).numpy()
    words = [reference_threefry((0, 5), (0, i)) for i in range(3)]
    bits64 = np.array([(hi << 32) | lo for hi, lo in words], dtype=np.uint64)
    expected = ((bits64 >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64) - 1
    np.testing.assert_array_equal(got, expected)


def test_values_agree_with_jax():
    """Outputs JAX (0.5+, partitionable threefry) gives for key 0: the same layout."""
    key = random.key(0)
    assert random.split(key, 3).numpy().tolist() == [
        [1797259609, 2579123966], [928981903, 3453687069], [4146024105, 2718843009]]
    np.testing.assert_allclose(random.uniform(key, (4,)).numpy(),
                               [0.9476670027, 0.9785798788, 0.3322914839, 0.4686684608],
                               rtol=1e-7)
    assert random.randint(key, (8,), 0, 20).numpy().tolist() == [9, 0, 12, 13, 11, 7, 12, 3]
    assert random.bernoulli(key, 0.3, (8,)).numpy().tolist() == [
        False, False, False, False, False, True, False, False]
    np.testing.assert_allclose(float(random.normal(key)), 1.6226422, rtol=1e-6)


# --- keys -----------------------------------------------------------------------------------


def test_key_words():
    assert random.key(0).numpy().tolist() == [0, 0]
    assert random.key(42).numpy().tolist() == [0, 42]
    assert random.key(2**32 + 5).numpy().tolist() == [1, 5]
    assert random.key(-1).numpy().tolist() == [_MASK, _MASK]
    assert random.key(2**64 - 1).numpy().tolist() == [_MASK, _MASK]
    assert random.PRNGKey is random.key
    k = random.key(np.int64(7))
    assert k.dtype == np.uint32 and k.shape == (2,)


@pytest.mark.parametrize("seed", [0, 7, -3, 2**31 - 1, -(2**31)])
def test_key_from_tensor_matches_int(seed):
    np.testing.assert_array_equal(random.key(fg.tensor(seed)).numpy(),
                                  random.key(seed).numpy())
    np.testing.assert_array_equal(random.key(fg.tensor(np.int64(seed))).numpy(),
                                  random.key(seed).numpy())
    big = 2**40 + 9
    np.testing.assert_array_equal(random.key(fg.tensor(np.int64(big))).numpy(),
                                  random.key(big).numpy())


def test_same_key_same_numbers():
    key = random.key(123)
    for fn in (lambda k: random.normal(k, (50,)), lambda k: random.uniform(k, (7, 3)),
               lambda k: random.randint(k, (20,), 0, 100), lambda k: random.permutation(k, 30),
               lambda k: random.split(k, 4)):
        np.testing.assert_array_equal(fn(key).numpy(), fn(random.key(123)).numpy())
    assert not np.array_equal(random.normal(random.key(1), (50,)).numpy(),
                              random.normal(random.key(2), (50,)).numpy())


def test_split_num_as_shape():
    keys = random.split(random.key(0), (2, 3))
    assert keys.shape == (2, 3, 2)
    np.testing.assert_array_equal(keys.numpy().reshape(6, 2),
                                  random.split(random.key(0), 6).numpy())
    # a concrete 0-d integer tensor counts as its int (as JAX); a float one is refused
    assert random.split(random.key(0), fg.tensor(3)).tolist() == \
        random.split(random.key(0), 3).tolist()
    with pytest.raises(TypeError, match="shape must be a tuple of ints"):
        random.split(random.key(0), fg.tensor(2.0))


def test_split_keys_independent():
    k1, k2 = random.split(random.key(0))
    a = random.normal(k1, (N,)).numpy().astype(np.float64)
    b = random.normal(k2, (N,)).numpy().astype(np.float64)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.02
    # the children differ from each other and from the parent stream
    parent = random.normal(random.key(0), (N,)).numpy().astype(np.float64)
    assert abs(np.corrcoef(a, parent)[0, 1]) < 0.02
    keys = random.split(random.key(0), 1000).numpy()
    assert len({tuple(k) for k in keys}) == 1000


def test_fold_in_distinct():
    key = random.key(9)
    folded = {tuple(random.fold_in(key, i).numpy()) for i in range(100)}
    assert len(folded) == 100
    np.testing.assert_array_equal(random.fold_in(key, fg.tensor(5)).numpy(),
                                  random.fold_in(key, 5).numpy())


# --- distributions: shapes, dtypes, moments -------------------------------------------------

FLOATS = [fg.float16, fg.bfloat16, fg.float32, fg.float64]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_float_samplers_shapes_dtypes(dtype, shape):
    key = random.key(0)
    for fn in (random.uniform, random.normal, random.exponential, random.gumbel):
        out = fn(key, shape, dtype)
        assert out.shape == shape and out.dtype == dtype, fn.__name__
        assert np.all(np.isfinite(out.numpy().astype(np.float64))), fn.__name__
    out = random.truncated_normal(key, -1.0, 1.0, shape, dtype)
    assert out.shape == shape and out.dtype == dtype


@pytest.mark.parametrize("dtype", [fg.uint8, fg.uint16, fg.uint32, fg.uint64])
def test_bits_dtypes(dtype):
    out = random.bits(random.key(1), (3, 4), dtype)
    assert out.shape == (3, 4) and out.dtype == dtype


@pytest.mark.parametrize("dtype", [fg.int8, fg.int16, fg.int32, fg.int64, fg.uint8,
                                   fg.uint32])
def test_randint_dtypes_and_range(dtype):
    out = random.randint(random.key(2), (1000,), 3, 17, dtype).numpy()
    assert out.dtype == dtype and out.shape == (1000,)
    assert out.min() == 3 and out.max() == 16


def test_uniform_moments_and_range():
    x = random.uniform(random.key(0), (N,)).numpy().astype(np.float64)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005
    assert abs(x.var() - 1 / 12) < 0.002
    y = random.uniform(random.key(1), (N,), minval=-2.0, maxval=3.0).numpy()
    assert y.min() >= -2 and y.max() < 3 and abs(y.mean() - 0.5) < 0.03


def test_uniform_tensor_bounds_broadcast():
    lo = fg.tensor([0.0, 10.0, 100.0])
    x = random.uniform(random.key(0), (1000, 3), minval=lo, maxval=lo + 1).numpy()
    assert x.shape == (1000, 3)
    for j, base in enumerate([0, 10, 100]):
        assert base <= x[:, j].min() and x[:, j].max() < base + 1


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_normal_moments(dtype):
    x = random.normal(random.key(0), (N,), dtype).numpy().astype(np.float64)
    assert abs(x.mean()) < 0.015
    assert abs(x.var() - 1) < 0.02
    assert abs(np.mean(x**3)) < 0.05  # symmetric
    assert abs(np.mean(x**4) - 3) < 0.1  # normal kurtosis
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01


def test_normal_complex():
    z = random.normal(random.key(0), (N,), fg.complex64).numpy()
    assert z.dtype == np.complex64
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.02
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.02


def test_truncated_normal_moments():
    lower, upper = -1.0, 2.0
    x = random.truncated_normal(random.key(0), lower, upper, (N,)).numpy().astype(np.float64)
    assert x.min() > lower and x.max() < upper

    def pdf(t):
        return math.exp(-t * t / 2) / math.sqrt(2 * math.pi)

    def cdf(t):
        return 0.5 * (1 + math.erf(t / math.sqrt(2)))

    z = cdf(upper) - cdf(lower)
    mean = (pdf(lower) - pdf(upper)) / z
    var = 1 + (lower * pdf(lower) - upper * pdf(upper)) / z - mean**2
    assert abs(x.mean() - mean) < 0.01
    assert abs(x.var() - var) < 0.01


def test_truncated_normal_bounds_shapes_and_infinities():
    x = random.truncated_normal(random.key(1), fg.tensor([-1.0, 0.0]), 1.0).numpy()
    assert x.shape == (2,)
    y = random.truncated_normal(random.key(1), 0.0, float("inf"), (1000,)).numpy()
    assert y.min() > 0 and np.all(np.isfinite(y))
    # a very narrow interval: samples stay strictly inside even after rounding
    z = random.truncated_normal(random.key(2), 1.0, 1.0 + 1e-6, (100,)).numpy()
    assert np.all((z > 1.0) & (z < np.float32(1.0 + 1e-6)))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_bernoulli_moments(p):
    x = random.bernoulli(random.key(0), p, (N,)).numpy()
    assert x.dtype == np.bool_
    assert abs(x.mean() - p) < 0.006


def test_bernoulli_tensor_p_and_default_shape():
    p = fg.tensor([0.0, 1.0, 0.5])
    x = random.bernoulli(random.key(0), p)
    assert x.shape == (3,)
    assert not x.numpy()[0] and x.numpy()[1]
    many = random.bernoulli(random.key(0), p, (N, 3)).numpy()
    np.testing.assert_allclose(many.mean(axis=0), [0, 1, 0.5], atol=0.006)


def test_randint_moments():
    lo, hi = -5, 7
    x = random.randint(random.key(0), (N,), lo, hi).numpy().astype(np.float64)
    n = hi - lo
    assert x.min() == lo and x.max() == hi - 1
    assert abs(x.mean() - (lo + hi - 1) / 2) < 0.05
    assert abs(x.var() - (n * n - 1) / 12) < 0.3
    counts = np.bincount((x - lo).astype(int), minlength=n)
    assert counts.min() > N / n * 0.95 and counts.max() < N / n * 1.05


def test_randint_edge_ranges():
    key = random.key(0)
    x = random.randint(key, (5000,), 0, 256, fg.uint8).numpy()  # maxval one past uint8 max
    assert x.min() == 0 and x.max() == 255 and len(np.unique(x)) == 256
    full = random.randint(key, (1000,), -(2**31), 2**31 - 1).numpy()
    assert full.min() < -(2**30) and full.max() > 2**30
    # maxval <= minval returns minval (as JAX)
    assert random.randint(key, (4,), 5, 5).numpy().tolist() == [5] * 4
    assert random.randint(key, (4,), 9, 2).numpy().tolist() == [9] * 4
    # bounds clipped to the dtype's range
    y = random.randint(key, (1000,), -1000, 1000, fg.int8).numpy()
    assert y.min() >= -128 and y.max() <= 127
    # per-element bounds
    lo = fg.tensor([0, 100, 1000])
    z = random.randint(key, (500, 3), lo, lo + 3).numpy()
    for j, base in enumerate([0, 100, 1000]):
        assert set(np.unique(z[:, j])) == {base, base + 1, base + 2}


def test_exponential_and_gumbel_moments():
    e = random.exponential(random.key(0), (N,)).numpy().astype(np.float64)
    assert e.min() >= 0 and abs(e.mean() - 1) < 0.02 and abs(e.var() - 1) < 0.05
    g = random.gumbel(random.key(1), (N,)).numpy().astype(np.float64)
    assert abs(g.mean() - 0.5772156649) < 0.02
    assert abs(g.var() - math.pi**2 / 6) < 0.05


def test_categorical_frequencies():
    logits = fg.tensor([0.0, 1.0, 2.0, -1.0])
    x = random.categorical(random.key(0), logits, shape=(N,)).numpy()
    assert x.dtype == np.int32 and x.shape == (N,)
    probs = np.exp(logits.numpy()) / np.exp(logits.numpy()).sum()
    np.testing.assert_allclose(np.bincount(x, minlength=4) / N, probs, atol=0.006)


def test_categorical_batched_logits_and_axis():
    logits = fg.tensor([[10.0, -10.0, -10.0], [-10.0, -10.0, 10.0]])
    assert random.categorical(random.key(0), logits).numpy().tolist() == [0, 2]
    assert random.categorical(random.key(0), logits, shape=(4, 2)).shape == (4, 2)
    by_column = random.categorical(random.key(0), logits.T, axis=0)
    assert by_column.numpy().tolist() == [0, 2]
    with pytest.raises(ValueError, match="batch shape"):
        random.categorical(random.key(0), logits, shape=(3,))


def test_float64_has_more_than_24_mantissa_bits():
    x = random.uniform(random.key(0), (10_000,), dtype=fg.float64).numpy()
    scaled = x * 2.0**24
    below_24_bits = scaled - np.floor(scaled)
    assert np.mean(below_24_bits > 0) > 0.99
    low_bits = (x * 2.0**52).astype(np.uint64) & np.uint64(2**28 - 1)
    assert len(np.unique(low_bits)) > 9_900
    n = random.normal(random.key(0), (10_000,), fg.float64).numpy()
    assert len(np.unique(n.astype(np.float32))) > 9_900
    assert np.any(n != n.astype(np.float32).astype(np.float64))


# --- permutation and choice ------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 10, 2000])
def test_permutation_is_a_permutation(n):
    p = random.permutation(random.key(n), n).numpy()
    assert p.dtype == np.int32
    assert sorted(p.tolist()) == list(range(n))
    if n >= 10:
        assert p.tolist() != list(range(n))


def test_permutation_shuffles_a_tensor():
    x = fg.arange(24).reshape(4, 6)
    rows = random.permutation(random.key(0), x).numpy()
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, x.numpy().tolist()))
    cols = random.permutation(random.key(0), x, axis=1).numpy()
    order = cols[0]  # whole columns move together
    np.testing.assert_array_equal(cols, x.numpy()[:, order])
    indep = random.permutation(random.key(0), x, axis=1, independent=True).numpy()
    for row, original in zip(indep, x.numpy(), strict=True):
        assert sorted(row) == sorted(original)
    assert random.permutation(random.key(0), fg.tensor(5)).shape == (5,)
    with pytest.raises(ValueError, match="axis 1 is out of range for an integer x"):
        random.permutation(random.key(0), 5, axis=1)  # was ignored


def test_permutation_is_uniform():
    n = 6000
    keys = random.split(random.key(0), n)
    perms = np.asarray(_vmap_over_keys(lambda k: random.permutation(k, 3), keys))
    assert np.all(np.sort(perms, axis=1) == np.arange(3))
    # every element lands in every position with probability 1/3
    counts = np.stack([np.bincount(perms[:, i], minlength=3) for i in range(3)])
    np.testing.assert_allclose(counts / n, 1 / 3, atol=0.025)
    # and all 6 orders are equally likely
    codes = perms[:, 0] * 3 + perms[:, 1]
    assert np.all(np.abs(np.bincount(codes, minlength=9)[[1, 2, 3, 5, 6, 7]] / n - 1 / 6)
                  < 0.02)


def test_choice():
    key = random.key(0)
    x = random.choice(key, 5, (N,)).numpy()
    np.testing.assert_allclose(np.bincount(x, minlength=5) / N, 0.2, atol=0.006)
    no_repeat = random.choice(key, 10, (10,), replace=False).numpy()
    assert sorted(no_repeat.tolist()) == list(range(10))
    a = fg.tensor([10.0, 20.0, 30.0])
    p = fg.tensor([0.2, 0.0, 0.8])
    w = random.choice(key, a, (N,), p=p).numpy()
    assert set(np.unique(w)) <= {10.0, 30.0}
    assert abs(np.mean(w == 30.0) - 0.8) < 0.006
    wo = random.choice(key, 4, (2,), replace=False, p=fg.tensor([0.0, 0.5, 0.5, 0.0]))
    assert sorted(wo.numpy().tolist()) == [1, 2]
    rows = random.choice(key, fg.arange(12).reshape(4, 3), (2, 5)).numpy()
    assert rows.shape == (2, 5, 3) and np.all(rows % 3 == np.arange(3))
    assert random.choice(key, 3, (0,)).shape == (0,)
    with pytest.raises(ValueError, match="larger sample"):
        random.choice(key, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="p must have shape"):
        random.choice(key, 3, (2,), p=fg.tensor([0.5, 0.5]))


# --- errors -----------------------------------------------------------------------------------


def test_bad_keys():
    with pytest.raises(TypeError, match=r"random.key\(0\)"):
        random.normal(0, (2,))
    with pytest.raises(TypeError, match="uint32"):
        random.normal(fg.tensor([0, 0]), (2,))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        random.normal(fg.tensor(np.zeros(3, np.uint32)), (2,))
    with pytest.raises(ValueError, match="vmap"):
        random.split(random.split(random.key(0), 3))
    with pytest.raises(TypeError, match="key"):
        random.uniform("seed")
    with pytest.raises(TypeError, match="integer"):
        random.key(1.5)
    with pytest.raises(TypeError, match="bool"):
        random.key(True)
    with pytest.raises(ValueError, match="scalar"):
        random.key(fg.tensor([1, 2]))
    # a NumPy uint32 key works
    np.testing.assert_array_equal(random.uniform(np.zeros(2, np.uint32), (3,)).numpy(),
                                  random.uniform(random.key(0), (3,)).numpy())


def test_bad_dtypes_and_arguments():
    key = random.key(0)
    with pytest.raises(TypeError, match="integer dtype"):
        random.randint(key, (2,), 0, 10, dtype=fg.float32)
    with pytest.raises(TypeError, match="floating dtype"):
        random.uniform(key, (2,), dtype=fg.int32)
    with pytest.raises(TypeError, match="floating dtype"):
        random.normal(key, (2,), dtype=fg.int32)
    with pytest.raises(TypeError, match="unsigned"):
        random.bits(key, (2,), dtype=fg.int32)
    with pytest.raises(TypeError, match="float"):
        random.bernoulli(key, 1, (2,))
    with pytest.raises(TypeError, match="floating dtype"):
        random.bernoulli(key, fg.tensor([1, 0]))
    with pytest.raises(ValueError, match="broadcast"):
        random.uniform(key, (3,), minval=fg.zeros(4))
    with pytest.raises(ValueError, match="negative"):
        random.normal(key, (-1,))
    with pytest.raises(TypeError, match="shape"):
        random.normal(key, (2.0,))
    with pytest.raises(TypeError, match="1-d"):
        random.permutation(key, fg.tensor(2.0))
    with pytest.raises(OverflowError):
        random.fold_in(key, 2**40)


# --- the bitcast primitive --------------------------------------------------------------------


def test_bitcast_convert_type():
    one = bitcast_convert_type(fg.tensor(np.float32(1.0)), fg.uint32)
    assert one.dtype == np.uint32 and int(one) == 0x3F800000
    back = bitcast_convert_type(fg.tensor(np.array([0x3F800000, 0xBF800000], np.uint32)),
                                fg.float32)
    assert back.numpy().tolist() == [1.0, -1.0]
    assert bitcast_convert_type(fg.tensor(np.float64(2.0)), fg.int64).dtype == np.int64
    with pytest.raises(TypeError, match="width"):
        bitcast_convert_type(fg.tensor(np.float32(1.0)), fg.uint64)
    out, tangent = bitcast_convert_type_p.jvp((fg.tensor(np.float32(1.0)),),
                                              (fg.tensor(np.float32(1.0)),),
                                              new_dtype=np.dtype(np.uint32))
    assert tangent is None and int(out) == 0x3F800000
    x = fg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    batched, dim = bitcast_convert_type_p.batch(2, [x], [1], new_dtype=np.dtype(np.int32))
    assert dim == 1 and batched.dtype == np.int32
    assert bitcast_convert_type_p.abstract_eval(
        ShapedArray((2,), np.float16), new_dtype=np.dtype(np.uint16)) == ShapedArray(
            (2,), np.uint16)


# --- tracing: shape-only evaluation (as jit traces) and batching over keys --------------------
# Small stand-ins for fg.jit's tracer and fg.vmap, so these tests do not depend on the
# transformations; they check that random functions never need concrete values of the key
# and that every primitive they use has working shape and batching rules.


class _ShapeTracer(interp.Tracer):
    __slots__ = ("_aval",)

    def __init__(self, interpreter, aval):
        self._interp = interpreter
        self._aval = aval

    @property
    def aval(self):
        return self._aval


class _ShapeInterpreter(interp.Interpreter):
    name = "shape-only test tracer"

    def process(self, prim, args, params):
        if not any(isinstance(a, _ShapeTracer) and a._interp is self for a in args):
            return self.forward(prim, args, params)
        out = prim.abstract_eval(*[aval_of(a) for a in args], **params)
        if prim.multiple_results:
            return [_ShapeTracer(self, o) for o in out]
        return _ShapeTracer(self, out)


def _abstract_eval(fn, key, *args):
    interpreter = _ShapeInterpreter(interp.current())
    with interp.using(interpreter):
        out = fn(_ShapeTracer(interpreter, aval_of(key)), *args)
    return out.aval


class _BatchTracer(interp.Tracer):
    __slots__ = ("_value", "_dim")

    def __init__(self, interpreter, value, dim):
        self._interp = interpreter
        self._value = value
        self._dim = dim

    @property
    def aval(self):
        a = aval_of(self._value)
        shape = list(a.shape)
        del shape[self._dim]
        return ShapedArray(shape, a.dtype, a.weak_type)


class _BatchInterpreter(interp.Interpreter):
    name = "batching test tracer"

    def __init__(self, parent, axis_size):
        super().__init__(parent)
        self.axis_size = axis_size

    def process(self, prim, args, params):
        if not any(isinstance(a, _BatchTracer) and a._interp is self for a in args):
            return self.forward(prim, args, params)
        values, dims = [], []
        for a in args:
            mine = isinstance(a, _BatchTracer) and a._interp is self
            values.append(a._value if mine else a)
            dims.append(a._dim if mine else None)
        with interp.using(self.parent):
            out, out_dim = prim.batch(self.axis_size, values, dims, **params)
        if prim.multiple_results:
            return [o if d is None else _BatchTracer(self, o, d)
                    for o, d in zip(out, out_dim, strict=True)]
        return out if out_dim is None else _BatchTracer(self, out, out_dim)


def _vmap_over_keys(fn, keys, *args):
    """``fn`` mapped over the leading axis of ``keys`` (fg.vmap, or the stand-in)."""
    vmap = getattr(fg, "vmap", None)
    if vmap is not None:
        return vmap(lambda k: fn(k, *args))(keys)
    interpreter = _BatchInterpreter(interp.current(), keys.shape[0])
    with interp.using(interpreter):
        out = fn(_BatchTracer(interpreter, keys, 0), *args)
    if isinstance(out, _BatchTracer):
        value = out._value
        return fg.tensor(np.moveaxis(np.asarray(value), out._dim, 0))
    return fg.tensor(np.broadcast_to(np.asarray(out), (keys.shape[0], *out.shape)))


SAMPLERS = {
    "split": lambda k: random.split(k, 3),
    "fold_in": lambda k: random.fold_in(k, 4),
    "bits": lambda k: random.bits(k, (2, 3)),
    "bits64": lambda k: random.bits(k, (3,), fg.uint64),
    "uniform": lambda k: random.uniform(k, (4,), minval=-1.0, maxval=2.0),
    "uniform64": lambda k: random.uniform(k, (4,), fg.float64),
    "normal": lambda k: random.normal(k, (2, 2)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 1.5, (5,)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (6,)),
    "randint": lambda k: random.randint(k, (6,), -3, 9),
    "permutation": lambda k: random.permutation(k, 7),
    "shuffle": lambda k: random.permutation(k, fg.arange(12).reshape(3, 4), axis=1),
    "choice": lambda k: random.choice(k, 6, (3,), replace=False),
    "choice_p": lambda k: random.choice(k, 3, (4,), p=fg.tensor([0.2, 0.3, 0.5])),
    "categorical": lambda k: random.categorical(k, fg.tensor([[0.0, 1.0], [2.0, 0.5]])),
    "gumbel": lambda k: random.gumbel(k, (3,)),
    "exponential": lambda k: random.exponential(k, (3,)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_traceable_with_abstract_key(name):
    fn = SAMPLERS[name]
    eager = fn(random.key(0))
    traced = _abstract_eval(fn, random.key(0))
    assert traced.shape == eager.shape and traced.dtype == eager.dtype


@pytest.mark.skipif(not hasattr(fg, "make_ir"), reason="fg.make_ir not available yet")
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_traced_program_gives_the_eager_numbers(name):
    from funcgrad.transforms.tracing import ir_as_function

    fn = SAMPLERS[name]
    key = random.key(7)
    ir = fg.make_ir(fn)(key)
    (out,) = ir_as_function(ir)(key)
    np.testing.assert_array_equal(np.asarray(out), fn(key).numpy())


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_batched_over_keys_matches_loop(name):
    fn = SAMPLERS[name]
    keys = random.split(random.key(1), 3)
    batched = _vmap_over_keys(fn, keys)
    looped = np.stack([fn(fg.tensor(k)).numpy() for k in keys.numpy()])
    np.testing.assert_array_equal(np.asarray(batched), looped)


def test_key_from_traced_seed():
    seeds = fg.tensor(np.array([0, 5, -1], np.int32))
    got = np.asarray(_vmap_over_keys(lambda s: random.key(s), seeds))
    np.testing.assert_array_equal(got, [random.key(s).numpy() for s in (0, 5, -1)])
    assert isinstance(random.key(3), Tensor)


@pytest.mark.parametrize("dtype,low,high,want", [
    # JAX 0.10.2's values for key(0), shape (6,): 8/16-bit dtypes are sampled in 32 bits
    (np.int8, -5, 5, [4, -5, -3, -2, -4, 2]),
    (np.int16, 0, 1000, [789, 0, 712, 373, 771, 347]),
    (np.uint16, 3, 70000, [60992, 28482, 27128, 45758, 6720, 24105]),
])
def test_randint_small_dtypes_match_jax(dtype, low, high, want):
    got = random.randint(random.key(0), (6,), low, high, dtype)
    assert got.dtype == dtype and got.tolist() == want


def test_truncated_normal_refuses_lower_above_upper():
    # it returned -2.0000002, outside the interval
    with pytest.raises(ValueError, match="lower must not exceed upper"):
        random.truncated_normal(random.key(0), 2.0, -2.0, (3,))
