"""Long sums under jit are as accurate as NumPy's pairwise sums: IREE 3.13's CPU code adds
each result's terms one after another (jit(sum) of 16M float32 values was 15% off), so
funcgrad sums in stages and float32 in float64 (reductions._staged_sum), and lowers
products of few results from many terms (x @ x) as a multiply and such a sum."""

import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

RNG = np.random.default_rng(7)


def _exact_sum(a, axis=None):
    """float64 sums of float64 copies, each over at most a few thousand terms."""
    return np.sum(np.asarray(a, np.float64), axis=axis)


def test_a_long_float32_sum_of_equal_values_is_exact():
    x = fg.tensor(np.full(2 ** 20, 0.1, np.float32))
    want = 2 ** 20 * float(np.float32(0.1))
    got = fg.jit(fnp.sum)(x)
    assert got.dtype == fg.float32
    assert abs(float(got) - want) <= 1e-7 * want  # adding in order: 1% off
    assert abs(float(fg.jit(fnp.mean)(x)) - float(np.float32(0.1))) <= 1e-8
    assert float(fg.jit(fnp.var)(x)) < 1e-12


@pytest.mark.parametrize("shape,axis", [
    ((10007 * 3,), None),            # a prime factor: padded to whole blocks
    ((7, 3, 5000), (0, 2)),
    ((7, 3, 5000), 2),
    ((7, 3, 5000), 0),
    ((64, 9000), None),              # several reduced axes over a block
    ((3, 70000), 1),                 # a long axis split into blocks
])
def test_float32_sums_under_jit_match_float64_sums(shape, axis):
    a = RNG.standard_normal(shape).astype(np.float32) + 0.5
    got = fg.jit(lambda v: fnp.sum(v, axis=axis))(fg.tensor(a))
    want = _exact_sum(a, axis)
    assert got.dtype == fg.float32 and got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-7,
                               atol=2e-7 * np.max(np.abs(want)))


def test_long_float64_sums_match_fsum():
    a = RNG.uniform(0, 1, 300_001)
    got = float(fg.jit(fnp.sum)(fg.tensor(a)))
    assert abs(got - math.fsum(a)) <= 1e-14 * math.fsum(a)


def test_keepdims_half_precision_and_transformations_of_long_sums():
    a = RNG.uniform(-1, 1, (21, 5000)).astype(np.float32)
    got = fg.jit(lambda v: fnp.sum(v, axis=1, keepdims=True))(fg.tensor(a))
    assert got.shape == (21, 1)
    np.testing.assert_allclose(np.asarray(got)[:, 0], _exact_sum(a, 1), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(np.asarray(fg.jit(fg.vmap(fnp.sum))(fg.tensor(a))),
                               _exact_sum(a, 1), rtol=1e-6, atol=1e-5)
    g = fg.jit(fg.grad(lambda v: fnp.sum(v * v)))(fg.tensor(a))
    np.testing.assert_allclose(np.asarray(g), 2 * a, rtol=1e-6)
    h = fg.tensor(np.full(20000, 0.25, np.float16))
    got = fg.jit(fnp.sum)(h)
    assert got.dtype == fg.float16 and float(got) == 5000.0


def test_long_products_with_few_results():
    x = np.full(10 ** 6, 0.1, np.float32)
    got = fg.jit(lambda v: v @ v)(fg.tensor(x))
    assert abs(float(got) - 10 ** 6 * float(np.float32(0.1)) ** 2) <= 1e-6 * 1e4
    a = RNG.standard_normal((5, 30011)).astype(np.float32)
    v = RNG.standard_normal(30011).astype(np.float32)
    got = fg.jit(lambda p, q: p @ q)(fg.tensor(a), fg.tensor(v))
    want = a.astype(np.float64) @ v.astype(np.float64)
    assert got.dtype == fg.float32 and got.shape == (5,)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-4)
    b, c = RNG.standard_normal((3, 4, 9000)), RNG.standard_normal((3, 9000, 2))
    got = fg.jit(fnp.matmul)(fg.tensor(b), fg.tensor(c))
    np.testing.assert_allclose(np.asarray(got), b @ c, rtol=1e-12, atol=1e-11)
    # and differentiated, batched: the transposes of these products are matmuls again
    ga = fg.jit(fg.grad(lambda p: fnp.sum(p @ fg.tensor(v))))(fg.tensor(a))
    np.testing.assert_allclose(np.asarray(ga), np.broadcast_to(v, a.shape), rtol=1e-6)
    rows = fg.jit(fg.vmap(lambda r: r @ fg.tensor(v)))(fg.tensor(a))
    np.testing.assert_allclose(np.asarray(rows), want, rtol=1e-6, atol=1e-4)


def test_reductions_of_values_computed_from_constants():
    # IREE 3.13 folded the constants into the reduction and added one element per vector
    # (125 for fnp.ones(1000) * 2 summed; an API audit found it through the bias gradient
    # of a jitted conv(x).mean()): rules.computed_from_constants
    n = 1000

    def reductions(x):
        e = fnp.exp(fnp.ones(n))
        return [(fnp.ones(n) * 2).sum() + x, fnp.exp(fnp.ones(n, fg.float64)).sum(), e.sum(),
                fnp.exp(fnp.ones((40, 50))).sum(), (e > 2).sum(), e.max(), e.prod(),
                fnp.exp(fnp.ones((n, 3))).sum(axis=0)]

    x = fg.tensor(0.0)
    for want, got in zip(reductions(x), fg.jit(reductions)(x), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    bias_grad = lambda b, v: fg.grad(lambda b: fnp.mean(v + b), argnums=0)(b)  # noqa: E731
    v = fg.tensor(np.random.default_rng(0).standard_normal((2, 3, 20, 20)).astype(np.float32))
    np.testing.assert_allclose(fg.jit(bias_grad)(fg.zeros(20), v).numpy(),
                               np.full(20, 1 / 20, np.float32), rtol=1e-6)
