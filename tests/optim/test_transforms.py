"""chain, clipping, weight decay and the extra-argument protocol."""

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import optim, tree


def t(x):
    return fg.tensor(np.asarray(x, dtype=np.float64))


@pytest.mark.parametrize("max_norm", [1.0, 100.0])
def test_clip_by_global_norm(max_norm):
    g = {"a": t([3.0, 0.0]), "b": t([[4.0]])}
    out, _ = optim.clip_by_global_norm(max_norm).update(g, optim.EmptyState())
    scale = min(1.0, max_norm / 5.0)
    np.testing.assert_allclose(np.asarray(out["a"]), [3.0 * scale, 0.0])
    np.testing.assert_allclose(np.asarray(out["b"]), [[4.0 * scale]])
    np.testing.assert_allclose(float(optim.global_norm(g)), 5.0)


def test_clip_by_global_norm_zero_gradient():
    out, _ = optim.clip_by_global_norm(1.0).update({"a": t([0.0, 0.0])}, optim.EmptyState())
    np.testing.assert_array_equal(np.asarray(out["a"]), [0.0, 0.0])


def test_clip():
    out, _ = optim.clip(0.5).update([t([-2.0, 0.1, 3.0])], optim.EmptyState())
    np.testing.assert_allclose(np.asarray(out[0]), [-0.5, 0.1, 0.5])


def test_add_decayed_weights_and_mask():
    p = {"w": t([1.0, 2.0]), "b": t([3.0])}
    g = {"w": t([0.5, 0.5]), "b": t([1.0])}
    out, _ = optim.add_decayed_weights(0.1).update(g, optim.EmptyState(), p)
    np.testing.assert_allclose(np.asarray(out["w"]), [0.6, 0.7])
    np.testing.assert_allclose(np.asarray(out["b"]), [1.3])
    masked = optim.add_decayed_weights(0.1, mask=lambda params: {"w": True, "b": False})
    out, _ = masked.update(g, optim.EmptyState(), p)
    np.testing.assert_allclose(np.asarray(out["b"]), [1.0])
    with pytest.raises(ValueError, match="params"):
        optim.add_decayed_weights(0.1).update(g, optim.EmptyState())


def test_weight_decay_masks_by_a_prefix_and_follows_a_schedule():
    # as Optax: a mask may be a prefix of the parameters (a bool per subtree), and the
    # coefficient a schedule of the step count, kept in the state
    p = {"enc": {"w": t([1.0, 2.0]), "b": t([3.0])}, "dec": {"w": t([4.0])}}
    g = tree.map(lambda x: x * 0, p)
    out, _ = optim.add_decayed_weights(0.5, mask={"enc": True, "dec": False}).update(
        g, optim.EmptyState(), p)
    np.testing.assert_allclose(np.asarray(out["enc"]["w"]), [0.5, 1.0])
    np.testing.assert_allclose(np.asarray(out["dec"]["w"]), [0.0])
    opt = optim.add_decayed_weights(optim.linear_schedule(1.0, 0.0, 4))
    state = opt.init(p)
    for step in range(3):
        out, state = fg.jit(opt.update)(g, state, p) if step else opt.update(g, state, p)
        np.testing.assert_allclose(np.asarray(out["dec"]["w"]), [4.0 * (1 - step / 4)])
    assert int(state.count) == 3
    masked = optim.adamw(0.1, weight_decay=optim.exponential_decay(0.1, 10, 0.5),
                         mask={"enc": False, "dec": True})
    updates, _ = masked.update(g, masked.init(p), p)
    np.testing.assert_allclose(np.asarray(updates["enc"]["b"]), [0.0])
    np.testing.assert_allclose(np.asarray(updates["dec"]["w"]), [-0.1 * 0.1 * 4.0])


def test_chain_equals_sequential_application():
    p = {"w": t([1.0, -2.0, 3.0])}
    grads = [{"w": t([10.0, 0.0, -5.0])}, {"w": t([1.0, 2.0, 3.0])}]
    chained = optim.chain(optim.clip_by_global_norm(1.0), optim.add_decayed_weights(0.01),
                          optim.scale_by_adam(), optim.scale_by_learning_rate(0.1))
    state = chained.init(p)
    assert isinstance(state, tuple) and len(state) == 4
    parts = [optim.clip_by_global_norm(1.0), optim.add_decayed_weights(0.01),
             optim.scale_by_adam(), optim.scale_by_learning_rate(0.1)]
    states = [part.init(p) for part in parts]
    for g in grads:
        u1, state = chained.update(g, state, p)
        u2 = g
        for i, part in enumerate(parts):
            u2, states[i] = part.update(u2, states[i], p)
        np.testing.assert_allclose(np.asarray(u1["w"]), np.asarray(u2["w"]), rtol=1e-12)


def test_chain_passes_extra_args_only_to_transforms_that_take_them():
    seen = {}

    def update_with_extra(updates, state, params=None, **extra):
        seen.update(extra)
        return updates, state

    def update_plain(updates, state, params=None):
        return updates, state

    init = lambda params: optim.EmptyState()
    opt = optim.chain(optim.GradientTransformation(init, update_plain),
                      optim.GradientTransformation(init, update_with_extra))
    opt.update({"w": t([1.0])}, opt.init(None), None, value=3.0)
    assert seen == {"value": 3.0}


def test_chain_rejects_non_transformations():
    with pytest.raises(TypeError, match="argument 1"):
        optim.chain(optim.sgd(0.1), 0.1)


def test_apply_updates_keeps_dtype_and_none():
    p = {"w": fg.ones(2, dtype=fg.bfloat16), "n": None}
    out = optim.apply_updates(p, {"w": fg.ones(2, dtype=fg.float32), "n": None})
    assert out["w"].dtype == fg.bfloat16 and out["n"] is None
    np.testing.assert_allclose(np.asarray(out["w"]).astype(np.float32), [2.0, 2.0])


def test_set_to_zero_and_identity():
    g = {"w": t([1.0])}
    assert float(optim.set_to_zero().update(g, optim.EmptyState())[0]["w"][0]) == 0.0
    assert optim.identity().update(g, optim.EmptyState())[0] is g


def test_adam_nesterov_formula():
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.1
    p0 = np.array([1.0, -1.0])
    gs = [np.array([0.3, -0.2]), np.array([0.1, 0.4])]
    m = v = np.zeros(2)
    p = p0
    for k, g in enumerate(gs, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = b1 * m / (1 - b1 ** (k + 1)) + (1 - b1) * g / (1 - b1**k)
        p = p - lr * m_hat / (np.sqrt(v / (1 - b2**k)) + eps)
    opt = optim.adam(lr, nesterov=True)
    params = t(p0)
    state = opt.init(params)
    for g in gs:
        u, state = opt.update(t(g), state, params)
        params = optim.apply_updates(params, u)
    np.testing.assert_allclose(np.asarray(params), p, rtol=1e-12)


def test_count_saturates_at_int32_max():
    opt = optim.scale_by_adam()
    p = t([1.0])
    state = opt.init(p)._replace(count=fg.tensor(2**31 - 1, dtype=fg.int32))
    _, state = opt.update(p, state, p)
    assert int(state.count) == 2**31 - 1


def test_tree_leaves_of_states_are_tensors():
    p = {"w": t([1.0, 2.0])}
    for opt in [optim.sgd(0.1, 0.9), optim.adamw(0.1), optim.lion(0.1), optim.lbfgs(),
                optim.rmsprop(0.1, centered=True, momentum=0.5), optim.adagrad(0.1),
                optim.sgd(optim.exponential_decay(0.1, 10, 0.5))]:
        assert all(isinstance(x, fg.Tensor) for x in tree.leaves(opt.init(p)))


@pytest.mark.parametrize("learning_rate", ["0.1", [0.1], None, True, np.ones(2)])
def test_a_learning_rate_that_is_not_a_number_raises_at_construction(learning_rate):
    # "0.1" * -1 was string repetition at the first update, a list broadcast
    with pytest.raises(TypeError, match="learning_rate must be a number"):
        optim.sgd(learning_rate)


def test_negative_clip_norm_raises():
    with pytest.raises(ValueError, match="max_norm must be >= 0"):
        optim.clip_by_global_norm(-1.0)  # it flipped the gradients' sign


def test_gradients_that_do_not_match_the_params_name_the_leaf():
    # the arithmetic's own error named neither: "add: shapes (4,) and (3,) cannot be ..."
    params = {"w": fg.ones(3)}
    opt = optim.adam(1e-3)
    state = opt.init(params)
    with pytest.raises(ValueError, match=r"update: updates\['w'\] has shape \(4,\) but "
                                         r"params\['w'\] has shape \(3,\)"):
        opt.update({"w": fg.ones(4)}, state, params)
    with pytest.raises(ValueError, match="different tree structures"):
        opt.update({"w": fg.ones(3), "b": fg.ones(1)}, state, params)
    with pytest.raises(ValueError, match=r"apply_updates: updates\['w'\] has shape \(4,\)"):
        optim.apply_updates(params, {"w": fg.ones(4)})


def test_another_optimizers_state_is_named():
    # was AttributeError: 'EmptyState' object has no attribute 'mu'
    params = {"w": fg.ones(3)}
    state = optim.sgd(0.1).init(params)
    with pytest.raises(ValueError, match=r"cannot use the state it was given \(EmptyState\); "
                                         r"was the state made by this optimizer's init"):
        optim.adam(1e-3).update(params, state, params)
