"""cond/switch, scan, while_loop and fori_loop: values, derivatives, batching, composition."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.test_util import check_grads


def f64(*values):
    return fg.tensor(np.array(values, dtype=np.float64))


def _branchy(x):
    return fg.cond(x.sum() > 0, lambda y: fnp.sin(y) * 2, lambda y: y ** 2, x)


def _rnn_step(carry, x):
    h = fnp.tanh(carry * 0.5 + x)
    return h, h * x


def _rnn(x):
    return fg.scan(_rnn_step, x[0], x)


# --- eager values -------------------------------------------------------------------------


def test_cond_eager_picks_branch():
    assert float(fg.cond(True, lambda x: x + 1, lambda x: x - 1, 1.0)) == 2.0
    assert float(fg.cond(fg.tensor(False), lambda x: x + 1, lambda x: x - 1, 1.0)) == 0.0


def test_switch_clamps_index():
    branches = [lambda x: x, lambda x: x * 2, lambda x: x * 3]
    assert float(fg.switch(7, branches, 2.0)) == 6.0
    assert float(fg.switch(-3, branches, 2.0)) == 2.0


def test_scan_matches_python_loop():
    xs = np.linspace(-1, 1, 7)
    carry, ys = fg.scan(_rnn_step, fg.tensor(0.3, dtype=fg.float64), fg.tensor(xs))
    h, expect = 0.3, []
    for x in xs:
        h = np.tanh(h * 0.5 + x)
        expect.append(h * x)
    np.testing.assert_allclose(np.asarray(ys), expect, rtol=1e-12)
    np.testing.assert_allclose(float(carry), h, rtol=1e-12)


def test_scan_reverse_and_length():
    carry, ys = fg.scan(lambda c, x: (c + x, c), 0.0, f64(1, 2, 3), reverse=True)
    assert float(carry) == 6.0
    np.testing.assert_allclose(np.asarray(ys), [5.0, 3.0, 0.0])
    carry, ys = fg.scan(lambda c, _: (c * 2, c), fg.tensor(1), None, length=4)
    assert int(carry) == 16
    assert np.asarray(ys).tolist() == [1, 2, 4, 8]


def test_while_and_fori_eager():
    assert int(fg.while_loop(lambda x: x < 10, lambda x: x * 2, fg.tensor(1))) == 16
    assert int(fg.fori_loop(0, 5, lambda i, t: t + i, fg.tensor(0))) == 10
    assert int(fg.fori_loop(0, 5, lambda i, t: t + i, fg.tensor(0), unroll=2)) == 10  # JAX's


def test_traced_control_flow_matches_eager():
    x = f64(0.5, -1.0, 2.0)
    traced = fg.vmap(lambda v: _branchy(v), in_axes=None, axis_size=1)(x)
    np.testing.assert_allclose(np.asarray(traced)[0], np.asarray(_branchy(x)))
    ys = fg.vmap(lambda v: _rnn(v)[1], in_axes=None, axis_size=2)(x)
    np.testing.assert_allclose(np.asarray(ys)[1], np.asarray(_rnn(x)[1]), rtol=1e-12)


# --- derivatives ----------------------------------------------------------------------------


def test_grad_of_cond_both_branches():
    check_grads(_branchy, (f64(0.5, 1.0, 1.5),), order=2)
    check_grads(_branchy, (f64(-0.5, -1.0, 0.2),), order=2)


@pytest.mark.parametrize("part", [0, 1])
def test_grad_of_scan(part):
    check_grads(lambda x: _rnn(x)[part], (f64(0.5, -0.3, 0.8, 0.1),), order=2)


def test_grad_of_reverse_scan():
    check_grads(lambda x: fg.scan(_rnn_step, x[0], x, reverse=True)[1],
                (f64(0.5, -0.3, 0.8),), order=2)


def test_grad_of_scan_with_closed_over_weights():
    w = f64(0.3, -0.2, 0.5)

    def loss(w, xs):
        def step(h, x):
            h = fnp.tanh(w * h + x)
            return h, (h ** 2).sum()
        return fg.scan(step, fnp.zeros(3, dtype=fg.float64), xs)[1].sum()

    xs = fg.tensor(np.random.default_rng(0).standard_normal((5, 3)))
    check_grads(lambda w: loss(w, xs), (w,), order=2)
    check_grads(lambda xs: loss(w, xs), (xs,), order=1)


def test_grad_of_fori_loop_static_trip_count():
    g = fg.grad(lambda x: fg.fori_loop(0, 3, lambda i, v: v * x, x))(2.0)
    assert float(g) == pytest.approx(4 * 2.0 ** 3)
    check_grads(lambda x: fg.fori_loop(1, 4, lambda i, v: fnp.sin(v) * i, x), (f64(0.3, 0.7),))


def test_while_loop_forward_mode():
    h = lambda x: fg.while_loop(lambda v: v.sum() < 10, lambda v: v * 2, x)
    out, tangent = fg.jvp(h, (f64(1, 2, 3),), (f64(1, 1, 1),))
    np.testing.assert_allclose(np.asarray(out), [2, 4, 6])
    np.testing.assert_allclose(np.asarray(tangent), [2, 2, 2])
    check_grads(h, (f64(1, 2, 3),), order=2, modes=("fwd",))


def test_while_loop_reverse_mode_error_names_fix():
    h = lambda x: fg.while_loop(lambda v: v.sum() < 10, lambda v: v * 2, x).sum()
    with pytest.raises(TypeError, match="fori_loop"):
        fg.grad(h)(f64(1, 2, 3))


# --- batching -------------------------------------------------------------------------------


def test_vmap_of_cond_with_batched_predicate_selects():
    out = fg.vmap(lambda v: fg.cond(v > 1, lambda y: y * 10, lambda y: -y, v))(f64(0.5, 1, 1.5))
    np.testing.assert_allclose(np.asarray(out), [-0.5, -1.0, 15.0])


def test_vmap_of_cond_with_unbatched_predicate():
    f = lambda p, v: fg.cond(p, lambda y: y * 10, lambda y: -y, v)
    out = fg.vmap(f, in_axes=(None, 0))(fg.tensor(True), f64(1, 2))
    np.testing.assert_allclose(np.asarray(out), [10.0, 20.0])


def test_vmap_of_switch_batched_index():
    branches = [lambda y: y, lambda y: y * 2, lambda y: y * 3]
    out = fg.vmap(lambda i, v: fg.switch(i, branches, v))(fg.tensor([0, 1, 2, 5]), f64(1, 1, 1, 1))
    np.testing.assert_allclose(np.asarray(out), [1, 2, 3, 3])


def test_gradient_of_a_batched_cond_ignores_the_branch_not_taken():
    # under a batched predicate every branch runs on every element; a branch's infinite
    # derivative where it is not taken (log at 0, sqrt at -1) gave NaN gradients (JAX: 0)
    xs = f64(-1.0, 0.0, 2.0)
    for fun in (lambda a: fg.cond(a > 0, fnp.log, fnp.zeros_like, a),
                lambda a: fg.switch((a > 0).astype(fg.int32), [fnp.zeros_like, fnp.sqrt], a)):
        want = [fg.grad(fun)(x) for x in xs]  # one element at a time: one branch runs
        loss = lambda a, fun=fun: fnp.sum(fg.vmap(fun)(a))  # noqa: E731
        np.testing.assert_allclose(fg.grad(loss)(xs), want, rtol=1e-15)
        np.testing.assert_allclose(fg.jit(fg.grad(loss))(xs), want, rtol=1e-15)
    # a closed-over (unbatched) weight gets the gradient of the branches taken only
    w = fg.tensor(np.float64(1.5))

    def weighted(w, a):
        return fg.cond(a > 0, lambda v: fnp.log(v) * w, lambda v: fnp.sqrt(v) + w, a)

    want = sum(fg.grad(weighted)(w, x) for x in f64(-1.0, 0.0, 2.0, 3.0))
    got = fg.grad(lambda w: fnp.sum(fg.vmap(lambda a: weighted(w, a))(f64(-1.0, 0.0, 2.0,
                                                                            3.0))))(w)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_vmap_of_while_loop_runs_until_every_lane_done():
    out = fg.vmap(lambda v: fg.while_loop(lambda v: v < 10, lambda v: v * 2, v))(f64(1, 3, 20))
    np.testing.assert_allclose(np.asarray(out), [16, 12, 20])


def test_vmap_of_scan_matches_loop():
    xs = fg.tensor(np.random.default_rng(1).standard_normal((4, 6)))
    batched = fg.vmap(_rnn)(xs)
    for i in range(4):
        carry, ys = _rnn(xs[i])
        np.testing.assert_allclose(np.asarray(batched[0][i]), np.asarray(carry), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(batched[1][i]), np.asarray(ys), rtol=1e-12)


def test_vmap_of_scan_with_batch_on_other_axis():
    xs = fg.tensor(np.random.default_rng(2).standard_normal((6, 3)))
    out = fg.vmap(lambda col: _rnn(col)[1], in_axes=1, out_axes=1)(xs)
    for j in range(3):
        np.testing.assert_allclose(np.asarray(out[:, j]), np.asarray(_rnn(xs[:, j])[1]),
                                   rtol=1e-12)


# --- composition ----------------------------------------------------------------------------


def test_vmap_of_grad_and_grad_of_vmap_through_scan():
    xs = fg.tensor(np.arange(6.0).reshape(2, 3) / 6)
    per_row = fg.vmap(fg.grad(lambda x: _rnn(x)[0]))(xs)
    total = fg.grad(lambda x: fg.vmap(lambda r: _rnn(r)[0])(x).sum())(xs)
    np.testing.assert_allclose(np.asarray(per_row), np.asarray(total), rtol=1e-12)
    for i in range(2):
        np.testing.assert_allclose(np.asarray(per_row[i]),
                                   np.asarray(fg.grad(lambda x: _rnn(x)[0])(xs[i])), rtol=1e-12)


def test_hessian_through_scan_is_symmetric_and_matches_jacfwd_jacrev():
    x = f64(0.5, 1.0, 1.5)
    h1 = np.asarray(fg.hessian(lambda x: _rnn(x)[0])(x))
    h2 = np.asarray(fg.jacrev(fg.jacfwd(lambda x: _rnn(x)[0]))(x))
    np.testing.assert_allclose(h1, h1.T, rtol=1e-10)
    np.testing.assert_allclose(h1, h2, rtol=1e-10)


def test_control_flow_in_ir():
    text = str(fg.make_ir(_branchy)(f64(1, 2)))
    assert "cond[" in text and "sin" in text and "integer_pow" in text
    text = str(fg.make_ir(lambda x: _rnn(x)[1])(f64(1, 2)))
    assert "scan[" in text and "tanh" in text


def test_branch_type_mismatch_is_a_clear_error():
    with pytest.raises(TypeError, match="false_fun returns .* but true_fun returns"):
        fg.vmap(lambda v: fg.cond(v > 0, lambda y: y, lambda y: fnp.stack([y, y]), v))(f64(1, 2))
    with pytest.raises(TypeError, match="branch 0 returns .* but branch 1 returns"):
        fg.jit(lambda i, v: fg.switch(i, [lambda y: y, lambda y: y.sum()], v))(
            fg.tensor(0), fg.ones(3))


def test_scan_carry_type_change_is_a_clear_error():
    with pytest.raises(TypeError, match="carry"):
        fg.vmap(lambda v: fg.scan(lambda c, x: (c.astype(fg.float32), x), v[0], v),
                in_axes=None, axis_size=1)(f64(1, 2))


def test_eager_loops_return_tensors_for_python_number_carries():
    # as JAX: the carry is an array even when the initial value is a Python int
    assert isinstance(fg.while_loop(lambda c: c < 10, lambda c: c + 1, 0), fg.Tensor)
    carry, _ = fg.scan(lambda c, r: (c + 1, r * c), 0, fg.ones(3))
    assert isinstance(carry, fg.Tensor) and carry.dtype == fg.int32 and carry.item() == 3
    assert isinstance(fg.fori_loop(0, 3, lambda i, c: c + i, 0), fg.Tensor)


def test_eager_control_flow_checks_types_as_jit_would():
    # as JAX: code that would fail under jit fails eagerly too, naming the two sides
    with pytest.raises(TypeError, match="true_fun is .*float32\\[2\\].* false_fun is"):
        fg.cond(fg.tensor(True), lambda x: x, lambda x: x[:1], fg.ones(2))
    int0 = fg.tensor(0, dtype=fg.int32)  # strongly typed (fg.tensor(0) is weak, as JAX's)
    with pytest.raises(TypeError, match="scan: the initial carry is \\(int32\\[\\]\\)"):
        fg.scan(lambda c, x: (c + x, c), int0, fg.ones(3))
    with pytest.raises(TypeError, match="fori_loop: init_val"):
        fg.fori_loop(0, 3, lambda i, c: c + 0.5, int0)
    with pytest.raises(TypeError, match="while_loop: init_val"):
        fg.while_loop(lambda c: c < 3, lambda c: c + 0.5, int0)
    # a Python-number start takes the body's dtype (JAX's weak-type promotion), also jitted
    assert fg.fori_loop(0, 3, lambda i, c: c + 0.5, 0).item() == 1.5
    assert fg.jit(lambda: fg.fori_loop(0, 3, lambda i, c: c + 0.5, 0))().item() == 1.5
    assert fg.jit(lambda n: fg.while_loop(lambda c: c < n, lambda c: c + 0.5, 0))(
        fg.tensor(3.0)).item() == 3.0
    assert fg.scan(lambda c, x: (c + x, c), 0, fg.ones(3))[0].dtype == fg.float32
    with pytest.raises(TypeError, match="branch 1 is .* but branch 0 is"):
        fg.switch(1, [lambda x: x, lambda x: x.sum()], fg.ones(2))
    assert fg.fori_loop(0, 3, lambda i, c: c + i, 0).item() == 3
    assert fg.cond(fg.tensor(False), lambda x: x * 2, lambda x: x, fg.ones(2)).tolist() == [1, 1]


@pytest.mark.parametrize("taken", [0, 1])
def test_eager_branches_match_exactly_whichever_runs(taken):
    # a Python number from the branch that runs does not adopt the other branch's dtype
    # (that is for loop carries): it raised only when the float64 branch ran
    x = fg.tensor(np.array(1.5))
    with pytest.raises(TypeError, match="float64.* but .*float32|float32.* but .*float64"):
        fg.cond(bool(taken), lambda: 0.0, lambda: x)
    with pytest.raises(TypeError, match="int32.* but .*float32|float32.* but .*int32"):
        fg.switch(taken, [lambda: 1.5, lambda: 2])
    assert fg.cond(bool(taken), lambda: 0.0, lambda: fg.tensor(1.0)).dtype == fg.float32


def test_eager_cond_and_switch_return_tensors_and_reject_float_indices_as_jax():
    out = fg.cond(True, lambda a: a + 1, lambda a: a - 1, 1.0)
    assert isinstance(out, fg.Tensor) and out.dtype == fg.float32 and float(out) == 2.0
    out = fg.switch(0, [lambda a: a * 2, lambda a: a], 3)
    assert isinstance(out, fg.Tensor) and out.dtype == fg.int32 and int(out) == 6
    with pytest.raises(TypeError, match="integer scalar"):
        fg.switch(fg.tensor(1.0), [lambda a: a + 1, lambda a: a - 1], 1.0)


def test_linearize_through_a_while_loop_as_jax():
    # forward mode works through while_loop; linearize runs the JVP for each tangent
    def f(x):
        return fg.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, fnp.sin(c[1])), (0, x))[1]

    x = fg.tensor([0.3, -0.4, 0.25])
    y, f_jvp = fg.linearize(f, x)
    want_y, want_t = fg.jvp(f, (x,), (fg.tensor([1.0, 2.0, -1.0]),))
    np.testing.assert_allclose(y.numpy(), want_y.numpy())
    np.testing.assert_allclose(f_jvp(fg.tensor([1.0, 2.0, -1.0])).numpy(), want_t.numpy())
    with pytest.raises(TypeError, match="Reverse-mode"):
        fg.grad(lambda x: f(x).sum())(x)


def test_python_number_starts_take_the_bodys_dtype_under_jit_too():
    # traced, a 0.0 start was a strong float32 and float16 xs never promoted it (eagerly and
    # in JAX the carry is float16)
    x16 = fg.tensor(np.array([1, 2, 3], np.float16))

    def loops(x):
        total, partial = fg.scan(lambda c, a: (c + a, c), 0.0, x)
        looped = fg.fori_loop(0, 3, lambda i, c: c + x[i], 0.0)
        _, waited = fg.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + x[c[0]]),
                                  (0, 0.0))
        return total, partial, looped, waited

    for got in (loops(x16), fg.jit(loops)(x16)):
        assert [t.dtype for t in got] == [fg.float16] * 4
        assert got[0].item() == 6.0 and got[3].item() == 6.0


def test_fori_loop_index_has_the_bounds_dtype():
    # int64 bounds gave an int32 index, refused as the value of an int64 carry
    body = lambda i, c: i  # noqa: E731
    got = fg.fori_loop(np.int64(0), np.int64(3), body, np.int64(0))
    assert got.dtype == np.int64 and got.item() == 2
    traced = fg.jit(lambda n: fg.fori_loop(np.int64(0), n, body, np.int64(0)))
    assert traced(fg.tensor(np.int64(4))).item() == 3
    with pytest.raises(TypeError, match="lower and upper must be integers"):
        fg.fori_loop(0.0, 3, body, 0)
