"""fnp.einsum against numpy.einsum, derivatives against finite differences, vmap against
a Python loop."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.test_util import check_grads

# subscripts and operand shapes
CASES = [
    ("ij,jk->ik", (2, 3), (3, 4)),
    ("ij,jk", (2, 3), (3, 4)),
    ("ii", (3, 3)),
    ("ii->i", (3, 3)),
    ("iji->j", (3, 2, 3)),
    ("iii->i", (2, 2, 2)),
    ("ij->", (2, 3)),
    ("ij->ji", (2, 3)),
    ("ij", (2, 3)),
    ("ji", (2, 3)),
    ("i,i", (3,), (3,)),
    ("i,i->i", (3,), (3,)),
    ("i,j->ij", (3,), (4,)),
    ("i,j", (3,), (4,)),
    (",ij->ij", (), (2, 3)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("bij,bjk->bki", (2, 3, 4), (2, 4, 5)),
    ("...ij,...jk->...ik", (5, 2, 3), (5, 3, 4)),
    ("...ij,jk->...ik", (5, 1, 2, 3), (3, 4)),
    ("...i,...i->...", (2, 1, 3), (4, 3)),
    ("i...->...", (3, 2, 2)),
    ("...ii->...i", (2, 3, 3)),
    ("...", (2, 3)),
    ("ij...,jk...->ik...", (2, 3, 4), (3, 5, 4)),
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
    ("abc,cd,bd->a", (2, 3, 4), (4, 5), (3, 5)),
    ("ab,ab,ab->", (2, 3), (2, 3), (2, 3)),
    ("ij,ij->ij", (2, 3), (2, 3)),
    ("ij,ij->", (2, 3), (1, 3)),
    ("iij,jkk->ik", (3, 3, 2), (2, 4, 4)),
    ("ea,fb,abcd,gc,hd->efgh", (2, 3), (2, 3), (3, 3, 3, 3), (2, 3), (2, 3)),
    ("ij,kl->", (2, 3), (4, 5)),
    ("i,i,i->", (4,), (4,), (4,)),
]


def _operands(shapes, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("optimize", [False, "greedy", True])
@pytest.mark.parametrize("case", CASES, ids=[c[0] or "scalar" for c in CASES])
def test_matches_numpy(case, optimize):
    subscripts, *shapes = case
    ops = _operands(shapes)
    got = fnp.einsum(subscripts, *[fg.tensor(o) for o in ops], optimize=optimize)
    want = np.einsum(subscripts, *ops)
    assert got.shape == want.shape
    assert got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES[::3], ids=[c[0] or "scalar" for c in CASES[::3]])
def test_float32(case):
    subscripts, *shapes = case
    ops = _operands(shapes, np.float32)
    got = fnp.einsum(subscripts, *ops)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.einsum(subscripts, *ops), rtol=1e-5,
                               atol=1e-5)


def test_integers_and_promotion():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(3, dtype=np.int32)
    got = fnp.einsum("ij,j->i", a, b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.einsum("ij,j->i", a, b))
    mixed = fnp.einsum("ij,j->i", a, b.astype(np.float32))
    assert mixed.dtype == np.float32


def test_interleaved_form_and_options():
    a, b = _operands([(2, 3), (3, 4)])
    got = fnp.einsum(fg.tensor(a), [0, 1], fg.tensor(b), [1, 2], [0, 2])
    np.testing.assert_allclose(np.asarray(got), a @ b)
    got = fnp.einsum(fg.tensor(a), [Ellipsis, 1], fg.tensor(b), [1, 2])
    np.testing.assert_allclose(np.asarray(got), a @ b)
    out = fnp.einsum("ij,jk->ik", a, b, precision=None, preferred_element_type=fg.float32)
    assert out.dtype == np.float32
    assert fnp.einsum(" i j , j k -> i k ", a, b).shape == (2, 4)


@pytest.mark.parametrize("subscripts, shapes, message", [
    ("ij,jk->ik", [(2, 3), (4, 4)], "label 'j' has sizes 3 and 4"),
    ("ij", [(3,)], r"shape \(3,\) does not match"),
    ("ij,jk->iq", [(2, 3), (3, 4)], "'q'"),
    ("ij->ii", [(2, 2)], "repeat"),
    ("i1", [(2, 2)], "invalid subscript"),
    ("ij,j", [(2, 3)], "2 operands"),
    ("ii", [(2, 3)], "repeated label 'i'"),
    ("...i...", [(2, 3)], r"more than one '\.\.\.'"),
])
def test_errors(subscripts, shapes, message):
    with pytest.raises(ValueError, match=message):
        fnp.einsum(subscripts, *_operands(shapes))


GRAD_CASES = ["ij,jk->ik", "ii->i", "ij->", "bij,bjk->bki", "...ij,jk->...ik",
              "ij,jk,kl->il", "abc,cd,bd->a", "iij,jkk->ik", "ij,ij->"]


@pytest.mark.parametrize("subscripts", GRAD_CASES)
def test_grads(subscripts):
    shapes = next(c[1:] for c in CASES if c[0] == subscripts)
    ops = tuple(fg.tensor(o) for o in _operands(shapes))
    check_grads(lambda *xs: fnp.einsum(subscripts, *xs), ops, order=2)


@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 2)])
def test_vmap_matches_loop(in_axes):
    a, b = _operands([(4, 2, 3), (3, 5, 4)])
    a = a if in_axes[0] is not None else a[0]
    b = b if in_axes[1] is not None else b[..., 0]
    if in_axes[0] == 1:
        a = np.moveaxis(a, 0, 1)
    if in_axes[1] is not None:
        b = np.moveaxis(b, -1, in_axes[1])
    fn = lambda x, y: fnp.einsum("ij,jk->ki", x, y)  # noqa: E731
    got = fg.vmap(fn, in_axes=in_axes)(fg.tensor(a), fg.tensor(b))
    pick = lambda x, ax, i: x if ax is None else np.take(x, i, axis=ax)  # noqa: E731
    want = np.stack([np.einsum("ij,jk->ki", pick(a, in_axes[0], i), pick(b, in_axes[1], i))
                     for i in range(4)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


EMPTY_CASES = [
    ("ij,kj->ik", (2, 0), (2, 0)),
    ("i,i->", (0,), (0,)),
    ("ij,jk->ik", (3, 0), (0, 4)),
    ("bij,bjk->bik", (2, 3, 0), (2, 0, 4)),
    ("ij,jk,kl->il", (2, 0), (0, 3), (3, 4)),
    ("ij,j->i", (2, 0), (1,)),
    ("ij,kj->ik", (2, 1), (3, 0)),
    ("ij,jk->ik", (0, 3), (3, 2)),
]


@pytest.mark.parametrize("case", EMPTY_CASES, ids=[c[0] for c in EMPTY_CASES])
def test_size_zero_axes_match_numpy(case):
    # a sum over a size-0 axis is 0: eager, under jit, and its gradient is empty or 0
    subscripts, *shapes = case
    ops = _operands(shapes)
    want = np.einsum(subscripts, *ops)
    fn = lambda *xs: fnp.einsum(subscripts, *xs)  # noqa: E731
    for got in (fn(*map(fg.tensor, ops)), fg.jit(fn)(*map(fg.tensor, ops))):
        assert got.shape == want.shape and got.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(got), want)
    grads = fg.grad(lambda *xs: fnp.sum(fn(*xs)), argnums=tuple(range(len(ops))))(
        *map(fg.tensor, ops))
    for g, o in zip(grads, ops, strict=True):
        assert g.shape == o.shape
        np.testing.assert_array_equal(np.asarray(g), np.zeros_like(o))  # all sums are empty


def test_preferred_element_type_accumulates_wide():
    a, b = np.full((2, 4), 100, np.int8), np.full((4, 2), 2, np.int8)
    out = fnp.einsum("ij,jk->ik", fg.tensor(a), fg.tensor(b), preferred_element_type=np.int32)
    assert out.dtype == fg.int32
    np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 800))
