"""Scans that run as one CPU kernel (funcgrad.lowering.fused_scan): which scans qualify,
that their values match eager runs and NumPy, and that a refused kernel falls back to
host loops."""

import logging

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.lowering import compiler
from funcgrad.lowering.compiler import session_for
from funcgrad.lowering.mlir import lower_module

RNG = np.random.default_rng(7)


def _data(hidden, steps):
    w = (RNG.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    xs = RNG.standard_normal((steps, hidden)).astype(np.float32)
    h0 = RNG.standard_normal(hidden).astype(np.float32)
    return w, xs, h0


def _rnn(w, xs, h0):
    return fg.scan(lambda h, x: (fnp.tanh(w @ h + x), None), h0, xs)[0]


def _rnn_numpy(w, xs, h0, reverse=False):
    h = h0.astype(np.float64)
    for x in (xs[::-1] if reverse else xs):
        h = np.tanh(w.astype(np.float64) @ h + x)
    return h


def _fused_count(fun, *args):
    program = fg.jit(fun).lower(*args)._entry.program
    holder = session_for("cpu")
    with holder.lock, holder.session.context:
        module, fused = lower_module(program, holder.session.context, fuse_scans=True)
        text = str(module)
    assert ("flow.dispatch.region" in text) == bool(fused)
    return fused


@pytest.mark.parametrize("hidden,steps", [(128, 1000), (37, 9), (200, 6), (16, 2)])
def test_rnn_matches_numpy_and_eager(hidden, steps):
    w, xs, h0 = _data(hidden, steps)
    args = (fg.tensor(w), fg.tensor(xs), fg.tensor(h0))
    assert _fused_count(_rnn, *args) == 1
    got = np.asarray(fg.jit(_rnn)(*args))
    np.testing.assert_allclose(got, _rnn_numpy(w, xs, h0), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got, np.asarray(_rnn(*args)), rtol=2e-5, atol=2e-5)


def test_vector_times_matrix_reverse_and_several_carries():
    # h @ W (the matrix already has its contracted axis first), a reverse scan, a second
    # carry updated elementwise, two sequences of inputs
    w, xs, h0 = _data(24, 7)
    gates = RNG.uniform(0, 1, (7, 24)).astype(np.float32)

    def run(w, xs, gates, h0):
        def body(carry, inputs):
            h, total = carry
            x, g = inputs
            new = g * fnp.tanh(h @ w + x) + (1 - g) * h
            return (new, total + new * 0.5), None
        return fg.scan(body, (h0, fnp.zeros_like(h0)), (xs, gates), reverse=True)[0]

    args = [fg.tensor(a) for a in (w, xs, gates, h0)]
    assert _fused_count(run, *args) == 1
    h, total = fg.jit(run)(*args)
    h_ref, total_ref = h0.astype(np.float64), np.zeros(24)
    for x, g in zip(xs[::-1], gates[::-1], strict=True):
        h_ref = g * np.tanh(h_ref @ w + x) + (1 - g) * h_ref
        total_ref = total_ref + h_ref * 0.5
    np.testing.assert_allclose(np.asarray(h), h_ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(total), total_ref, rtol=2e-5, atol=2e-5)


def test_lstm_gates_sliced_from_one_product():
    hidden, steps = 10, 7
    w = (RNG.standard_normal((4 * hidden, hidden)) / 3).astype(np.float32)
    xs = RNG.standard_normal((steps, 4 * hidden)).astype(np.float32)
    sigmoid = fg.nn.functional.sigmoid

    def lstm(w, xs, h0, c0):
        def body(carry, x):
            h, c = carry
            z = w @ h + x
            i, f = sigmoid(z[:hidden]), sigmoid(z[hidden:2 * hidden])
            g, o = fnp.tanh(z[2 * hidden:3 * hidden]), sigmoid(z[3 * hidden:])
            c = f * c + i * g
            return (o * fnp.tanh(c), c), None
        return fg.scan(body, (h0, c0), xs)[0]

    args = (fg.tensor(w), fg.tensor(xs), fg.zeros(hidden), fg.zeros(hidden))
    assert _fused_count(lstm, *args) == 1
    h, c = np.zeros(hidden), np.zeros(hidden)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for x in xs:
        z = w @ h + x
        c = sig(z[hidden:2 * hidden]) * c + sig(z[:hidden]) * np.tanh(z[2 * hidden:3 * hidden])
        h = sig(z[3 * hidden:]) * np.tanh(c)
    got_h, got_c = fg.jit(lstm)(*args)
    np.testing.assert_allclose(np.asarray(got_h), h, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(got_c), c, rtol=2e-5, atol=2e-5)


def test_per_step_outputs_are_stacked_in_the_kernel():
    w, xs, h0 = _data(20, 6)
    args = (fg.tensor(w), fg.tensor(xs), fg.tensor(h0))

    def states(w, xs, h0):
        def body(h, x):
            new = fnp.tanh(w @ h + x)
            return new, (new * 2, new > 0)
        return fg.scan(body, h0, xs, reverse=True)

    assert _fused_count(states, *args) == 1
    h, (doubled, positive) = fg.jit(states)(*args)
    ref, stacked = h0.astype(np.float64), np.zeros((6, 20))
    for t in reversed(range(6)):
        ref = np.tanh(w @ ref + xs[t])
        stacked[t] = ref
    np.testing.assert_allclose(np.asarray(h), ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(doubled), 2 * stacked, rtol=2e-5, atol=2e-5)
    np.testing.assert_array_equal(np.asarray(positive), stacked > 0)


def test_gradients_through_a_fused_forward_scan():
    w, xs, h0 = _data(16, 8)
    args = (fg.tensor(w), fg.tensor(xs), fg.tensor(h0))
    loss = lambda w, xs, h0: (_rnn(w, xs, h0) ** 2).sum()  # noqa: E731
    got = fg.jit(fg.grad(loss, argnums=(0, 2)))(*args)
    want = fg.grad(loss, argnums=(0, 2))(*args)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_fused_scan_inside_a_loop_and_under_vmap_of_the_inputs():
    w, xs, h0 = _data(32, 5)
    args = (fg.tensor(w), fg.tensor(xs), fg.tensor(h0))

    def twice(w, xs, h0):
        return fg.fori_loop(0, 2, lambda i, h: _rnn(w, xs, h), h0)

    expected = _rnn_numpy(w, xs, _rnn_numpy(w, xs, h0).astype(np.float32))
    np.testing.assert_allclose(np.asarray(fg.jit(twice)(*args)), expected, rtol=3e-5,
                               atol=3e-5)
    # vmap over the initial state turns the product into a matrix product: host loop
    batch = fg.tensor(np.stack([h0, -h0]))
    got = fg.jit(fg.vmap(_rnn, in_axes=(None, None, 0)))(args[0], args[1], batch)
    np.testing.assert_allclose(np.asarray(got)[1], _rnn_numpy(w, xs, -h0), rtol=2e-5,
                               atol=2e-5)


def _two_products(w, xs, h0):
    return fg.scan(lambda h, x: (fnp.tanh(w @ h + w.T @ x), None), h0, xs)[0]


def _reduced_outputs(w, xs, h0):
    return fg.scan(lambda h, x: (fnp.tanh(w @ h + x), h.sum()), h0, xs)


def _matrix_used_twice(w, xs, h0):
    return fg.scan(lambda h, x: (fnp.tanh(w @ h + x) + w[0], None), h0, xs)[0]


def _reduction_in_body(w, xs, h0):
    return fg.scan(lambda h, x: (fnp.tanh(w @ h + x) / (1 + h.sum() ** 2), None), h0, xs)[0]


@pytest.mark.parametrize("fun", [_two_products, _reduced_outputs, _matrix_used_twice,
                                 _reduction_in_body])
def test_other_scans_keep_host_loops_and_their_values(fun):
    w, xs, h0 = _data(8, 4)
    args = (fg.tensor(w), fg.tensor(xs), fg.tensor(h0))
    assert _fused_count(fun, *args) == 0
    fg.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b),
                                                        rtol=2e-5, atol=2e-5),
                fg.jit(fun)(*args), fun(*args))


def test_float64_scans_are_not_fused():
    w, xs, h0 = (a.astype(np.float64) for a in _data(8, 4))
    args = (fg.tensor(w), fg.tensor(xs), fg.tensor(h0))
    assert _fused_count(_rnn, *args) == 0
    np.testing.assert_allclose(np.asarray(fg.jit(_rnn)(*args)), _rnn_numpy(w, xs, h0),
                               rtol=1e-12)


def test_a_refused_kernel_is_compiled_again_with_host_loops(monkeypatch, caplog):
    real = compiler.compile_module
    refused = []

    def refuse_fused(module, holder, name="main", key=None, retry=True):
        if "flow.dispatch.region" in str(module):
            refused.append(name)
            raise compiler.CompileError("IREE refused the kernel (test)")
        return real(module, holder, name, key, retry)

    monkeypatch.setattr(compiler, "compile_module", refuse_fused)
    w, xs, h0 = _data(12, 3)  # a shape (so a cache key) no other test compiles
    with caplog.at_level(logging.INFO, logger="funcgrad.jit"):
        got = fg.jit(_rnn)(fg.tensor(w), fg.tensor(xs), fg.tensor(h0))
    assert refused
    assert "lowering its scans as host loops" in caplog.text
    np.testing.assert_allclose(np.asarray(got), _rnn_numpy(w, xs, h0), rtol=2e-5, atol=2e-5)


def test_exported_mlir_stays_portable_stablehlo():
    w, xs, h0 = _data(8, 4)
    text = fg.jit(_rnn).lower(fg.tensor(w), fg.tensor(xs), fg.tensor(h0)).as_text()
    assert "stablehlo.while" in text and "flow." not in text
