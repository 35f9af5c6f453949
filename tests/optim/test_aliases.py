"""Each optimizer against a hand-written NumPy implementation of the published update."""

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import optim, tree

RNG = np.random.default_rng(0)
PARAMS = {"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=(4,))}
GRADS = [{k: RNG.normal(size=v.shape) for k, v in PARAMS.items()} for _ in range(5)]


def run(opt, params=PARAMS, grads=GRADS):
    """Apply ``opt`` to float64 params over the gradient sequence; return the params."""
    params = tree.map(fg.tensor, params)
    state = opt.init(params)
    for g in grads:
        updates, state = opt.update(tree.map(fg.tensor, g), state, params)
        params = optim.apply_updates(params, updates)
    return tree.map(np.asarray, params)


def reference(step, init_state):
    """Run a NumPy ``step(p, g, state, t) -> (p, state)`` leaf by leaf (t counts from 1)."""
    out = {}
    for k, p in PARAMS.items():
        state = init_state(p)
        for t, g in enumerate(GRADS, start=1):
            p, state = step(p, g[k], state, t)
        out[k] = p
    return out


def assert_trees_close(actual, expected, rtol=1e-10, atol=1e-12):
    for k in expected:
        np.testing.assert_allclose(actual[k], expected[k], rtol=rtol, atol=atol, err_msg=k)


def test_sgd():
    expected = reference(lambda p, g, s, t: (p - 0.1 * g, s), lambda p: None)
    assert_trees_close(run(optim.sgd(0.1)), expected)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum(nesterov):
    lr, mu = 0.05, 0.9

    def step(p, g, trace, t):
        trace = g + mu * trace
        direction = g + mu * trace if nesterov else trace  # Optax's Nesterov form
        return p - lr * direction, trace

    expected = reference(step, np.zeros_like)
    assert_trees_close(run(optim.sgd(lr, momentum=mu, nesterov=nesterov)), expected)


@pytest.mark.parametrize("b1,b2,eps", [(0.9, 0.999, 1e-8), (0.5, 0.9, 1e-3)])
def test_adam(b1, b2, eps):
    lr = 1e-2

    def step(p, g, state, t):
        m, v = state
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        return p - lr * m_hat / (np.sqrt(v_hat) + eps), (m, v)

    expected = reference(step, lambda p: (np.zeros_like(p), np.zeros_like(p)))
    assert_trees_close(run(optim.adam(lr, b1=b1, b2=b2, eps=eps)), expected)


def test_adam_first_step_is_learning_rate_times_sign():
    out = run(optim.adam(1e-3), grads=GRADS[:1])
    for k in PARAMS:
        np.testing.assert_allclose(out[k], PARAMS[k] - 1e-3 * np.sign(GRADS[0][k]), rtol=1e-6)


def test_adamw_decoupled_weight_decay():
    lr, wd, b1, b2, eps = 1e-2, 0.1, 0.9, 0.999, 1e-8

    def step(p, g, state, t):
        m, v = state
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        # the decay is added to Adam's direction, not to the gradient
        return p - lr * (m_hat / (np.sqrt(v_hat) + eps) + wd * p), (m, v)

    expected = reference(step, lambda p: (np.zeros_like(p), np.zeros_like(p)))
    assert_trees_close(run(optim.adamw(lr, weight_decay=wd)), expected)


def test_adamw_mask():
    opt = optim.adamw(1e-2, weight_decay=0.5, mask={"w": True, "b": False})
    masked = run(opt, grads=GRADS[:1])
    plain = run(optim.adam(1e-2), grads=GRADS[:1])
    np.testing.assert_allclose(masked["b"], plain["b"], rtol=1e-12)
    np.testing.assert_allclose(masked["w"], plain["w"] - 1e-2 * 0.5 * PARAMS["w"], rtol=1e-12)


@pytest.mark.parametrize("momentum", [None, 0.9])
def test_rmsprop(momentum):
    lr, decay, eps = 1e-2, 0.9, 1e-8

    def step(p, g, state, t):
        nu, trace = state
        nu = decay * nu + (1 - decay) * g * g
        update = lr * g / np.sqrt(nu + eps)  # Optax: eps inside the square root
        if momentum is not None:
            trace = update + momentum * trace
            update = trace
        return p - update, (nu, trace)

    expected = reference(step, lambda p: (np.zeros_like(p), np.zeros_like(p)))
    assert_trees_close(run(optim.rmsprop(lr, momentum=momentum)), expected)


def test_rmsprop_centered():
    lr, decay, eps = 1e-2, 0.9, 1e-8

    def step(p, g, state, t):
        mu, nu = state
        mu = decay * mu + (1 - decay) * g
        nu = decay * nu + (1 - decay) * g * g
        return p - lr * g / np.sqrt(nu - mu * mu + eps), (mu, nu)

    expected = reference(step, lambda p: (np.zeros_like(p), np.zeros_like(p)))
    assert_trees_close(run(optim.rmsprop(lr, centered=True)), expected, rtol=1e-8)


def test_adagrad():
    lr, init, eps = 0.1, 0.1, 1e-7

    def step(p, g, s, t):
        s = s + g * g
        return p - lr * g / np.sqrt(s + eps), s

    expected = reference(step, lambda p: np.full_like(p, init))
    assert_trees_close(run(optim.adagrad(lr)), expected)


def test_lion():
    lr, b1, b2, wd = 1e-3, 0.9, 0.99, 1e-3

    def step(p, g, m, t):
        direction = np.sign((1 - b1) * g + b1 * m)
        m = b2 * m + (1 - b2) * g
        return p - lr * (direction + wd * p), m

    expected = reference(step, np.zeros_like)
    assert_trees_close(run(optim.lion(lr)), expected)


def test_defaults_match_optax():
    import inspect

    def defaults(f):
        return {k: v.default for k, v in inspect.signature(f).parameters.items()
                if v.default is not inspect.Parameter.empty}

    assert defaults(optim.sgd).items() >= {"momentum": None, "nesterov": False}.items()
    assert defaults(optim.adam).items() >= {"b1": 0.9, "b2": 0.999, "eps": 1e-8}.items()
    assert defaults(optim.adamw).items() >= {"weight_decay": 1e-4, "b1": 0.9}.items()
    assert defaults(optim.rmsprop).items() >= {"decay": 0.9, "eps": 1e-8,
                                               "momentum": None}.items()
    assert defaults(optim.adagrad).items() >= {"initial_accumulator_value": 0.1,
                                               "eps": 1e-7}.items()
    assert defaults(optim.lion).items() >= {"b1": 0.9, "b2": 0.99,
                                            "weight_decay": 1e-3}.items()
    assert defaults(optim.lbfgs).items() >= {"learning_rate": None, "memory_size": 10}.items()


def test_schedule_as_learning_rate():
    schedule = optim.linear_schedule(0.1, 0.0, transition_steps=4)
    expected = {}
    for k, p in PARAMS.items():
        for t, g in enumerate(GRADS):
            p = p - np.float32(max(0.1 * (1 - t / 4), 0.0)) * g[k]
        expected[k] = p
    assert_trees_close(run(optim.sgd(schedule)), expected, rtol=1e-6, atol=1e-7)


def test_state_is_a_pytree_of_tensors_with_int32_count():
    state = optim.adam(1e-3).init(tree.map(fg.tensor, PARAMS))
    leaves = tree.leaves(state)
    assert all(isinstance(x, fg.Tensor) for x in leaves)
    assert state[0].count.dtype == fg.int32 and state[0].count.shape == ()


def test_dtypes_are_kept():
    params = {"a": fg.ones(3, dtype=fg.float32), "b": fg.ones(2, dtype=fg.bfloat16)}
    for opt in [optim.adam(1e-3), optim.sgd(optim.cosine_decay_schedule(0.1, 10), 0.9),
                optim.lion(1e-3), optim.rmsprop(1e-3), optim.adagrad(1e-2)]:
        state = opt.init(params)
        updates, state = opt.update(params, state, params)
        new = optim.apply_updates(params, updates)
        assert new["a"].dtype == fg.float32 and new["b"].dtype == fg.bfloat16


def test_works_on_registered_nodes_and_nested_containers():
    import dataclasses

    @tree.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Linear:
        weight: object
        bias: object

    params = [Linear(fg.ones((2, 2)), fg.zeros(2)), (fg.ones(3), None)]
    opt = optim.adamw(0.1)
    state = opt.init(params)
    updates, state = opt.update(tree.map(fg.ones_like, params), state, params)
    new = optim.apply_updates(params, updates)
    assert isinstance(new[0], Linear) and new[1][1] is None
    np.testing.assert_allclose(np.asarray(new[0].bias), -0.1 * np.ones(2), rtol=1e-5)


def test_training_reduces_a_loss():
    import funcgrad.numpy as fnp

    x = fg.tensor(RNG.normal(size=(32, 3)))
    y = x @ fg.tensor(np.array([1.0, -2.0, 0.5]))
    loss = lambda p: fnp.mean((x @ p["w"] + p["b"] - y) ** 2)
    for opt in [optim.adam(0.1), optim.sgd(0.1, momentum=0.9), optim.rmsprop(0.03)]:
        params = {"w": fg.zeros(3, dtype=fg.float64), "b": fg.zeros((), dtype=fg.float64)}
        state = opt.init(params)
        for _ in range(100):
            grads = fg.grad(loss)(params)
            updates, state = opt.update(grads, state, params)
            params = optim.apply_updates(params, updates)
        assert float(loss(params)) < 1e-2
