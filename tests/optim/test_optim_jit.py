"""Every optimizer's update traces: jit(opt.update) gives the eager result."""

import numpy as np

import funcgrad as fg
from funcgrad import optim, tree


def test_jit_update_equals_eager():
    rng = np.random.default_rng(0)
    params = {"w": fg.tensor(rng.normal(size=(3, 2)).astype(np.float32)),
              "b": fg.tensor(rng.normal(size=(2,)).astype(np.float32))}
    grads = [tree.map(lambda p: fg.tensor(rng.normal(size=p.shape).astype(np.float32)),
                      params) for _ in range(3)]
    schedule = optim.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=2, decay_steps=10)
    # one chain holding every transformation, so a single compilation covers them all
    opt = optim.chain(
        optim.clip_by_global_norm(1.0),
        optim.scale_by_adam(),
        optim.add_decayed_weights(1e-2),
        optim.trace(decay=0.9, nesterov=True),
        optim.scale_by_rms(),
        optim.scale_by_stddev(),
        optim.scale_by_rss(),
        optim.scale_by_lion(),
        optim.scale_by_learning_rate(schedule),
        optim.exponential_decay(1.0, 5, 0.5) and optim.scale_by_schedule(
            optim.exponential_decay(1.0, 5, 0.5, staircase=True)),
    )
    jitted = fg.jit(opt.update)
    state_eager = state_jit = opt.init(params)
    for g in grads:
        u_eager, state_eager = opt.update(g, state_eager, params)
        u_jit, state_jit = jitted(g, state_jit, params)
        for a, b in zip(tree.leaves((u_eager, state_eager)), tree.leaves((u_jit, state_jit)),
                        strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-6)
    assert int(state_jit[1].count) == 3
