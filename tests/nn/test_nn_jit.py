"""A small CNN through fg.jit: forward and gradient compile and match eager."""

import numpy as np

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad import nn


def make_cnn(key):
    keys = fg.random.split(key, 3)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, key=keys[0]), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=2, key=keys[1]), nn.GELU(),
        nn.AvgPool2d(2, stride=1), nn.Flatten(), nn.Dropout(0.2),
        nn.Linear(4, 5, key=keys[2]))


def loss_fn(model, x, y):
    logits = model(x, inference=True)
    return F.cross_entropy(logits, y), logits


def test_jit_cnn_forward_and_grad_match_eager():
    model = make_cnn(fg.random.key(0))
    x = fg.random.normal(fg.random.key(1), (3, 1, 8, 8))
    y = fg.tensor([0, 4, 2])
    # one compile (jit is the costly part of this suite): loss, logits and gradient
    traces = []
    value_and_grad = fg.value_and_grad(loss_fn, has_aux=True)
    step = fg.jit(lambda m, x, y: (traces.append(1), value_and_grad(m, x, y))[1])
    (loss, logits), grads = step(model, x, y)
    (loss_e, logits_e), grads_e = fg.value_and_grad(loss_fn, has_aux=True)(model, x, y)
    np.testing.assert_allclose(logits, logits_e, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, loss_e, rtol=1e-5)
    assert isinstance(grads, nn.Sequential)
    assert len(nn.parameters(grads)) == 6
    for g, ge in zip(nn.parameters(grads), nn.parameters(grads_e), strict=True):
        np.testing.assert_allclose(g, ge, rtol=1e-4, atol=1e-6)
    # a plain SGD step on the model pytree reuses the compiled step (same structure)
    new = fg.tree.map(lambda p, g: p - 0.1 * g, model, grads)
    (new_loss, _), _ = step(new, x, y)
    assert float(new_loss) < float(loss)
    assert len(traces) == 1
    per_example = fg.vmap(lambda x: new[:6](x))(x)
    np.testing.assert_allclose(per_example, new[:6](x), rtol=1e-5, atol=1e-6)
