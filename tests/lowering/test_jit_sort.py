"""``fg.jit`` of sorts over long rows (the bitonic network lowering) agrees with NumPy.

Rows here are long enough for ``_lower_sort`` to pick the sorting network over
stablehlo.sort (see ``_NETWORK_MIN_WORK``); a few short rows check that they still get
stablehlo.sort. Each shape and dtype compiles once (about a second), so cases share jitted
functions where they can.
"""

import ml_dtypes
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.prims import sorting


def _sort_and_argsort(x, axis):
    return fnp.sort(x, axis=axis), fnp.argsort(x, axis=axis)


def _check_sort_and_argsort(x, axis=-1):
    tensor = fg.tensor(x)
    got_sorted, got_order = fg.jit(_sort_and_argsort, static_argnums=1)(tensor, axis)
    # NumPy does not sort bfloat16 NaNs: the float32 values order the same
    exact = x.astype(np.float32) if x.dtype == ml_dtypes.bfloat16 else x
    want_order = np.argsort(exact, axis=axis, kind="stable")
    np.testing.assert_array_equal(np.asarray(got_order), want_order)
    want_sorted = np.take_along_axis(exact, want_order, axis)
    got_sorted = np.asarray(got_sorted).astype(exact.dtype)
    np.testing.assert_array_equal(got_sorted, want_sorted)
    if exact.dtype.kind == "f":
        # the elements themselves come back, -0.0 and 0.0 in their stable order
        np.testing.assert_array_equal(np.signbit(got_sorted), np.signbit(want_sorted))
    np.testing.assert_array_equal(np.asarray(tensor).astype(exact.dtype), exact)  # unchanged


def _awkward_floats(shape, dtype, seed=0):
    """Few distinct values (stability matters), NaNs, infinities and zeros of both signs."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-20, 20, shape).astype(np.float64) / 4
    picks = rng.random(shape)
    x[picks < 0.05] = np.nan
    x[(picks >= 0.05) & (picks < 0.1)] = -0.0
    x[(picks >= 0.1) & (picks < 0.15)] = 0.0
    x[(picks >= 0.15) & (picks < 0.17)] = np.inf
    x[(picks >= 0.17) & (picks < 0.19)] = -np.inf
    return x.astype(dtype)


def test_long_rows_use_the_network_and_short_rows_stablehlo_sort():
    def lowered(shape, axis=-1):
        x = fg.tensor(np.zeros(shape, np.float32))
        return fg.jit(lambda a: fnp.argsort(a, axis=axis)).lower(x).as_text()

    assert "stablehlo.sort" in lowered((4, 7)) and "stablehlo.reverse" not in lowered((4, 7))
    assert "stablehlo.sort" in lowered((4096, 8))  # rows shorter than 16: never the network
    assert "stablehlo.sort" not in lowered((3, 1100))
    assert "stablehlo.sort" not in lowered((1100, 3), axis=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_long_float_rows_with_nans_zeros_and_duplicates(dtype):
    x = _awkward_floats((3, 1100), dtype)
    _check_sort_and_argsort(x)
    np.testing.assert_array_equal(np.asarray(fnp.argsort(fg.tensor(x))),  # eager agrees
                                  np.argsort(x.astype(np.float64), kind="stable"))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.bool_])
def test_long_integer_and_bool_rows(dtype):
    rng = np.random.default_rng(1)
    if dtype == np.bool_:
        x = rng.random((3, 700)) < 0.5
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (3, 700), dtype=dtype, endpoint=True)
        x[:, :50] = info.min
        x[:, 50:100] = info.max
        x[:, 100:300] = x[:, 100:110].repeat(20, axis=1)  # duplicates: stability
    _check_sort_and_argsort(x)


@pytest.mark.parametrize("length", [1024, 1500])
def test_long_vectors_power_of_two_or_not(length):
    _check_sort_and_argsort(_awkward_floats((length,), np.float32, seed=length))


@pytest.mark.parametrize("shape, axis", [((700, 2, 3), 0), ((5, 600, 2), 1), ((2, 3, 700), 2)])
def test_long_rows_along_any_axis(shape, axis):
    _check_sort_and_argsort(_awkward_floats(shape, np.float32, seed=len(shape) + axis), axis)


def test_complex_keys_sort_as_numpy_does():
    # IREE 3.13 crashes compiling a stablehlo.sort of complex keys: they always take the
    # network; NumPy's order is real then imaginary part, with [R + Rj, R + nanj,
    # nan + Rj, nan + nanj] classes
    nan = np.nan
    z = np.array([1 + 2j, 1 + 1j, complex(nan, 0), 0j, -1j, complex(0, nan), 1 + 1j,
                  complex(nan, nan), complex(-0.0, 1), complex(nan, -1), complex(2, nan)],
                 np.complex64)
    _check_sort_and_argsort(z)
    rng = np.random.default_rng(2)
    w = (rng.integers(-3, 3, (2, 600)) + 1j * rng.integers(-3, 3, (2, 600))).astype(np.complex128)
    w[0, :30] = complex(nan, 1)
    _check_sort_and_argsort(w)


def test_several_keys_sort_lexicographically_and_carry_the_other_operands():
    rng = np.random.default_rng(3)
    first = rng.integers(0, 4, (2, 800)).astype(np.int32)
    second = _awkward_floats((2, 800), np.float64, seed=3)
    values = rng.standard_normal((2, 800)).astype(np.float32)
    got = fg.jit(lambda a, b, c: sorting.sort((a, b, c), 1, 2))(
        fg.tensor(first), fg.tensor(second), fg.tensor(values))
    order = np.stack([np.lexsort((s, f)) for f, s in zip(first, second, strict=True)])
    for have, want in zip(got, (first, second, values), strict=True):
        np.testing.assert_array_equal(np.asarray(have), np.take_along_axis(want, order, 1))


def test_vmap_of_jit_of_argsort():
    x = _awkward_floats((4, 1100), np.float32, seed=4)
    got = fg.vmap(fg.jit(fnp.argsort))(fg.tensor(x))
    np.testing.assert_array_equal(np.asarray(got), np.argsort(x, axis=1, kind="stable"))


def test_grad_through_a_long_sort_under_jit():
    x = fg.tensor(np.random.default_rng(5).standard_normal(1500).astype(np.float32))
    weights = fg.tensor(np.linspace(-1, 1, 1500, dtype=np.float32))

    def top(a):
        return fnp.sort(a)[-3:].sum() + (fnp.sort(a) * weights).sum()

    np.testing.assert_allclose(np.asarray(fg.jit(fg.grad(top))(x)), np.asarray(fg.grad(top)(x)),
                               rtol=1e-6)


def test_jit_grad_of_top_k_by_argsort_on_rows():
    # the gradient sorts the positions twice (equal payloads): IREE 3.13 refused the module
    x = fg.tensor(np.random.default_rng(0).random((3, 4)).astype(np.float32))

    def top2(x):
        return fnp.take_along_axis(x, fnp.argsort(-x, axis=1)[:, :2], axis=1).sum()

    want = fg.grad(top2)(x).numpy()
    assert want.sum() == 6.0
    np.testing.assert_array_equal(fg.jit(fg.grad(top2))(x).numpy(), want)


def test_sort_of_computed_values_that_were_padded():
    # IREE 3.13 folded sort's own padding (one value more along the axis) into the input's
    # pad and then could not sort the computed result in place ("write affecting operations
    # on global resources"); found by a fuzz of data-movement chains
    x = fg.tensor(np.random.default_rng(4).uniform(-1, 1, (4, 6, 8)))
    cases = [lambda t: fnp.sort(fnp.pad(fnp.sin(t), 1), axis=-1),
             lambda t: fnp.sort(fnp.pad(fnp.sin(t) * 2.0 + t, [(0, 0), (0, 2), (0, 2)])[None],
                                axis=3)]
    for case in cases:
        np.testing.assert_allclose(fg.jit(case)(x), case(x), rtol=1e-14)  # sin: an ulp
        loss = lambda t, case=case: fnp.sum(case(t) ** 2)  # noqa: E731
        np.testing.assert_allclose(fg.jit(fg.grad(loss))(x), fg.grad(loss)(x), rtol=1e-12)


def test_gradient_of_a_sort_along_a_size_one_axis_of_moved_data():
    # the gradient sorts the positions twice (payload and tie-breaker); along a size-1 axis
    # both were padded with 1, merged by CSE into one buffer sorted twice in place: "write
    # affecting operations on global resources".  Found by a fuzz of data-movement chains
    x = fg.tensor(np.random.default_rng(0).uniform(-1, 1, (4, 6, 8)))

    def loss(x):
        v = fnp.flip(fnp.roll(fnp.concatenate([x, x[::-1]], axis=0), 3, axis=1), axis=0)
        v = fnp.pad(v[None], [(0, 0), (1, 0), (0, 0), (0, 0)])
        return fnp.sum(fnp.sort(v, axis=0) ** 2)

    np.testing.assert_allclose(fg.jit(fg.grad(loss))(x), fg.grad(loss)(x), rtol=1e-14)
