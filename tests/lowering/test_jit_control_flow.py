"""Control flow under jit that IREE 3.13 handled wrongly when lowered naively: conds inside
loops (jit(grad) of a scan or fori_loop holding a cond crashed with "indirect buffer
reference ... out of range" or never returned), long chains of conds, effects in branches.
Small branches are lowered as selects; these tests pin the values against eager runs."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

XS = fg.tensor([0.3, -0.5, 0.9])


def _scan_cond(w):
    body = lambda c, x: (fg.cond(x > 0, lambda u: u + 1, lambda u: u * x, c), None)  # noqa: E731
    return fg.scan(body, w, XS)[0]


def _fori_cond(w):
    return fg.fori_loop(0, 3, lambda i, c: fg.cond(i > 0, lambda u: u + 1, lambda u: u * 2, c),
                        w)


def _scan_switch(w):
    def body(c, x):
        index = (x > 0).astype(fg.int32) + (x > 0.5).astype(fg.int32)
        return fg.switch(index, [lambda u: u + 1, lambda u: u * x, fnp.sin], c), None
    return fg.scan(body, w, XS)[0]


def _switch_on_saved_indices(w):
    # a forward scan stacking int outputs, then a reverse scan switching on them
    def forward(carry, _):
        step, value = carry
        taken = (step > 0).astype(fg.int32)
        return (step + 1, fg.switch(taken, [lambda v: v * 2, lambda v: v + 1], value)), taken
    (_, value), taken = fg.scan(forward, (fg.tensor(0), w), None, length=3)
    back, _ = fg.scan(lambda c, i: (fg.switch(i, [lambda v: v * 2, lambda v: v], c), None),
                      value, taken, reverse=True)
    return back


@pytest.mark.timeout(240)
@pytest.mark.parametrize("fun", [_scan_cond, _fori_cond, _scan_switch, _switch_on_saved_indices])
def test_conds_in_loops_under_jit_and_grad(fun):
    w = fg.tensor(0.2)
    np.testing.assert_allclose(fg.jit(fun)(w), fun(w), rtol=1e-6)
    np.testing.assert_allclose(fg.jit(fg.grad(fun))(w), fg.grad(fun)(w), rtol=1e-6)


@pytest.mark.timeout(240)
def test_a_long_chain_of_conds_in_straight_line_code():
    y = fg.tensor(np.full(8, 3.0, np.float32))

    def f(x):
        total = fnp.zeros(())
        for i in range(60):
            x, total = fg.cond(x.sum() > i, lambda v, t: (v * 0.5, t + 1.0),
                               lambda v, t: (y, fnp.zeros(())), x, total)
        return x, total

    x = fg.tensor(np.ones(8, np.float32))
    for got, want in zip(fg.jit(f)(x), f(x), strict=True):
        np.testing.assert_allclose(got, want)


def test_an_effect_in_a_branch_happens_only_when_taken(capsys):
    def f(x):
        return fg.cond(x > 0, lambda v: (fg.debug.print("positive {v}", v=v), v)[1],
                       lambda v: (fg.debug.print("negative {v}", v=v), -v)[1], x)

    assert float(fg.jit(f)(fg.tensor(2.0))) == 2.0
    out = capsys.readouterr().out
    assert "positive" in out and "negative" not in out


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_outputs_that_do_not_vary_per_step(reverse):
    # IREE 3.13 refused a reverse loop writing a constant into its stacked outputs (an
    # invalid stream.async.fill range); such outputs are now computed once, outside
    def f(h, w):
        return fg.scan(lambda c, x: (c * w + x, (fg.tensor(2.0), w * 3, c, fnp.sin(w))), h,
                       fg.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3)),
                       reverse=reverse)

    h, w = fg.ones(3), fg.tensor([0.5, -1.0, 2.0])
    for got, want in zip(fg.tree.leaves(fg.jit(f)(h, w)), fg.tree.leaves(f(h, w)), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_grad_of_reverse_scan_under_jit():
    # the backward pass saves the constant 0.99 per step: a stacked constant, as above
    def loss(r):
        returns = fg.scan(lambda g, rt: (rt + 0.99 * g, rt + 0.99 * g), fg.zeros(3), r,
                          reverse=True)[1]
        return returns.sum()

    r = fg.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    want = fg.grad(loss)(r).numpy()
    np.testing.assert_allclose(fg.jit(fg.grad(loss))(r).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(fg.grad(fg.jit(loss))(r).numpy(), want, rtol=1e-6)


# --- loops whose carries start from one value ------------------------------------------------
# IREE 3.13 shared one buffer between two loop outputs that start from the same value (two
# zero-filled per-step outputs of the forward scan): jit(grad) and grad(jit) were wrong.
# A backward scan carrying its cotangent through unchanged and writing it to every row
# failed to compile (an invalid stream.async.fill range).

_A = fg.tensor([0.5, 1.5, -0.3, 0.8, 1.1, -0.7])


def _scan_from_own_first(a):
    return fg.scan(lambda c, v: (c * v, None), a[0], a)[0]


def _scan_from_own_first_per_step(a):
    return fg.scan(lambda c, v: (c * v, c), a[0], a)[1].sum()


def _fori_twice_the_same(a):
    return fg.fori_loop(0, 5, lambda i, c: (c[0] * c[1], c[1]), (a, a))[0].sum()


def _scan_without_xs_twice_the_same(a):
    return fg.scan(lambda c, _: ((c[0] * c[1], c[1]), None), (a, a), None, length=4)[0][0].sum()


def _scan_additive(a):
    return fg.scan(lambda c, v: (c + v, None), fg.tensor(0.5), a)[0]


def _scan_additive_scaled(a):
    return fg.scan(lambda c, v: (c + 2.0 * v, None), fg.tensor(0.5), a)[0]


@pytest.mark.parametrize("fun", [_scan_from_own_first, _scan_from_own_first_per_step,
                                 _fori_twice_the_same, _scan_without_xs_twice_the_same,
                                 _scan_additive, _scan_additive_scaled],
                         ids=lambda f: f.__name__.strip("_"))
def test_gradients_of_loops_whose_carries_start_from_one_value(fun):
    want = fg.grad(fun)(_A).numpy()
    h = 1e-3  # the eager gradient itself, against central differences in float64
    a64 = _A.numpy().astype(np.float64)
    fd = [(fun(fg.tensor(a64 + h * e)).item() - fun(fg.tensor(a64 - h * e)).item()) / (2 * h)
          for e in np.eye(a64.size)]
    np.testing.assert_allclose(want, fd, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(fg.jit(fg.grad(fun))(_A).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fg.grad(fg.jit(fun))(_A).numpy(), want, rtol=1e-5, atol=1e-6)
