"""Schedules against their formulas (Optax's definitions)."""

import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import optim

STEPS = [0, 1, 3, 5, 10, 17, 50, 100, 150]


def values(schedule, steps=STEPS):
    return np.array([float(schedule(fg.tensor(s, dtype=fg.int32))) for s in steps])


def test_constant():
    np.testing.assert_allclose(values(optim.constant_schedule(0.3)), 0.3, rtol=1e-7)


@pytest.mark.parametrize("begin", [0, 5])
def test_linear(begin):
    init, end, n = 1.0, 0.1, 20
    expected = [init + (end - init) * min(max(s - begin, 0), n) / n for s in STEPS]
    got = values(optim.linear_schedule(init_value=init, end_value=end, transition_steps=n,
                                       transition_begin=begin))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("alpha,exponent", [(0.0, 1.0), (0.1, 2.0)])
def test_cosine_decay(alpha, exponent):
    init, n = 0.5, 100
    expected = []
    for s in STEPS:
        c = 0.5 * (1 + math.cos(math.pi * min(s, n) / n))
        expected.append(init * ((1 - alpha) * c**exponent + alpha))
    got = values(optim.cosine_decay_schedule(init_value=init, decay_steps=n, alpha=alpha,
                                             exponent=exponent))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_warmup_cosine_decay():
    init, peak, warmup, decay, end = 0.0, 1.0, 10, 110, 0.05
    expected = []
    for s in STEPS:
        if s < warmup:
            expected.append(init + (peak - init) * s / warmup)
        else:
            t = min(s - warmup, decay - warmup)
            c = 0.5 * (1 + math.cos(math.pi * t / (decay - warmup)))
            expected.append(end + (peak - end) * c)
    got = values(optim.warmup_cosine_decay_schedule(
        init_value=init, peak_value=peak, warmup_steps=warmup, decay_steps=decay,
        end_value=end))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("staircase", [False, True])
@pytest.mark.parametrize("begin,end_value", [(0, None), (5, 0.2)])
def test_exponential_decay(staircase, begin, end_value):
    init, n, rate = 1.0, 10, 0.5
    expected = []
    for s in STEPS:
        p = (s - begin) / n
        if staircase:
            p = math.floor(p)
        v = init if s - begin <= 0 else init * rate**p
        expected.append(v if end_value is None else max(v, end_value))
    got = values(optim.exponential_decay(init_value=init, transition_steps=n, decay_rate=rate,
                                         transition_begin=begin, staircase=staircase,
                                         end_value=end_value))
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_schedules_take_python_ints_and_return_weak_float64():
    # like a Python float: full precision, and the dtype of what it scales wins
    out = optim.linear_schedule(1.0, 0.0, 10)(3)
    assert isinstance(out, fg.Tensor) and out.dtype == fg.float64 and out.weak_type
    assert float(out) == 1.0 - 3 / 10
    assert (out * fg.ones(2, dtype=fg.float32)).dtype == fg.float32
    assert (out * fg.ones(2, dtype=fg.bfloat16)).dtype == fg.bfloat16
    assert float(optim.constant_schedule(0.1)(0)) == 0.1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_schedule_steps_as_exactly_as_its_number(dtype):
    # a float64 model stepped with constant_schedule(0.1) moves as with 0.1 itself (a
    # float32 schedule was 1.5e-9 off); float32 models stay float32
    params = {"w": fg.tensor(np.array([1.0, -2.0], dtype))}
    grads = {"w": fg.tensor(np.array([1.0, 3.0], dtype))}
    steps = {}
    for name, lr in [("number", 0.1), ("schedule", optim.constant_schedule(0.1))]:
        for make in (optim.sgd, optim.adam):
            opt = make(lr)
            updates, _ = fg.jit(opt.update)(grads, opt.init(params), params)
            steps[name, make] = updates["w"]
    for make in (optim.sgd, optim.adam):
        assert steps["schedule", make].dtype == dtype
        np.testing.assert_array_equal(steps["schedule", make], steps["number", make])


def test_invalid_arguments():
    with pytest.raises(ValueError, match="decay_steps"):
        optim.cosine_decay_schedule(1.0, decay_steps=0)
    with pytest.raises(ValueError, match="warmup_steps"):
        optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=10, decay_steps=5)


def test_schedule_count_advances_in_state():
    seen = []
    opt = optim.scale_by_schedule(lambda count: (seen.append(int(count)), 1.0)[1])
    params = {"w": fg.ones(2)}
    state = opt.init(params)
    for _ in range(3):
        _, state = opt.update(params, state, params)
    assert seen == [0, 1, 2] and int(state.count) == 3
