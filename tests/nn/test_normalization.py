"""LayerNorm, RMSNorm and BatchNorm (state updates as PyTorch's) against NumPy."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad import nn, tree
from funcgrad.test_util import check_grads


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("normalized_shape", [4, (3, 4)])
def test_layer_norm_matches_numpy(normalized_shape):
    ln = nn.LayerNorm(normalized_shape, eps=1e-5, dtype=fg.float64)
    ln = ln.replace(weight=fg.tensor(rand(*ln.weight.shape, seed=1)),
                    bias=fg.tensor(rand(*ln.bias.shape, seed=2)))
    x = rand(2, 3, 4)
    axes = tuple(range(3 - len(ln.normalized_shape), 3))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5) * ln.weight.numpy() + ln.bias.numpy()
    np.testing.assert_allclose(ln(fg.tensor(x)), want, rtol=1e-10)
    check_grads(lambda m, x: m(x), (ln, fg.tensor(x)), order=2)
    np.testing.assert_allclose(fg.vmap(ln)(fg.tensor(x)), want, rtol=1e-10)


def test_layer_norm_without_affine_and_errors():
    ln = nn.LayerNorm(3, elementwise_affine=False)
    assert tree.leaves(ln) == []
    with pytest.raises(ValueError, match=r"LayerNorm: expected input with trailing dimensions "
                                         r"\(3,\), got shape \(2, 4\)"):
        ln(fg.ones((2, 4)))


def test_rms_norm_matches_numpy():
    rms = nn.RMSNorm(5, dtype=fg.float64)
    assert rms.eps == 1e-6
    rms = rms.replace(weight=fg.tensor(rand(5, seed=3)))
    x = rand(3, 5)
    want = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * rms.weight.numpy()
    np.testing.assert_allclose(rms(fg.tensor(x)), want, rtol=1e-10)
    check_grads(lambda m, x: m(x), (rms, fg.tensor(x)), order=2)


@pytest.mark.parametrize("dtype", [fg.float32, fg.float64])
def test_rms_norm_eps_none_is_machine_epsilon(dtype):
    rms = nn.RMSNorm(4, eps=None, elementwise_affine=False)
    eps = np.finfo(np.dtype(dtype.name)).eps
    x = (np.array([[1.0, -2.0, 3.0, 0.0]]) * np.sqrt(eps)).astype(np.dtype(dtype.name))
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + eps)
    got = rms(fg.tensor(x))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == fg.float32 else 1e-12)


def test_rms_norm_eps_none_in_bfloat16():
    # np.finfo does not know bfloat16: "data type bfloat16 not inexact"
    x = fg.tensor([[1.0, -2.0, 3.0, 0.5]]).astype(fg.bfloat16)
    got = F.rms_norm(x, (4,))
    assert got.dtype == fg.bfloat16
    want = x.numpy().astype(np.float64) / np.sqrt((x.numpy().astype(np.float64) ** 2).mean())
    np.testing.assert_allclose(got.astype(fg.float64).numpy(), want, rtol=1e-2)


def np_batch_norm(x, running_mean, running_var, count, weight, bias, eps, momentum):
    """PyTorch's training-mode batch norm and running-average update."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    n = x.size // x.shape[1]
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    y = y * weight.reshape(shape) + bias.reshape(shape)
    factor = 1.0 / (count + 1) if momentum is None else momentum
    running_mean = (1 - factor) * running_mean + factor * mean
    running_var = (1 - factor) * running_var + factor * var * n / (n - 1)
    return y, running_mean, running_var, count + 1


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_training_and_state_updates(shape, momentum):
    bn = nn.BatchNorm(3, eps=1e-5, momentum=momentum, dtype=fg.float64)
    bn = bn.replace(weight=fg.tensor(rand(3, seed=1)), bias=fg.tensor(rand(3, seed=2)))
    state = bn.initial_state()
    assert state.num_batches_tracked.dtype == np.int32
    rm, rv, count = np.zeros(3), np.ones(3), 0
    for step in range(3):
        x = rand(*shape, seed=10 + step) * 2 + 1
        y, state = bn(fg.tensor(x), state)
        want, rm, rv, count = np_batch_norm(x, rm, rv, count, bn.weight.numpy(),
                                            bn.bias.numpy(), 1e-5, momentum)
        np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(state.running_mean, rm, rtol=1e-12)
        np.testing.assert_allclose(state.running_var, rv, rtol=1e-12)
        assert int(state.num_batches_tracked) == count
    # inference: running statistics, state returned unchanged
    x = rand(*shape, seed=99)
    y, same = bn(fg.tensor(x), state, inference=True)
    shape1 = (1, -1) + (1,) * (len(shape) - 2)
    want = (x - rm.reshape(shape1)) / np.sqrt(rv.reshape(shape1) + 1e-5)
    want = want * bn.weight.numpy().reshape(shape1) + bn.bias.numpy().reshape(shape1)
    np.testing.assert_allclose(y, want, rtol=1e-10)
    assert same is state


def test_batch_norm_without_running_stats_uses_the_batch_in_inference_too():
    bn = nn.BatchNorm(3, track_running_stats=False, dtype=fg.float64)
    state = bn.initial_state()
    x = rand(4, 3, 5, seed=3) * 2 + 1
    want = np_batch_norm(x, np.zeros(3), np.ones(3), 0, np.ones(3), np.zeros(3), 1e-5, 0.1)[0]
    for inference in (False, True):
        y, same = bn(fg.tensor(x), state, inference=inference)
        np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-12)
        assert same is state and int(same.num_batches_tracked) == 0


def test_batch_norm_takes_an_unbatched_image_so_models_compose_with_vmap():
    bn = nn.BatchNorm(3, dtype=fg.float64)
    _, state = bn(fg.tensor(rand(6, 3, 4, 5, seed=1) * 2 + 1), bn.initial_state())
    images = fg.tensor(rand(2, 3, 4, 5, seed=2))
    batched, _ = bn(images, state, inference=True)
    per_example = fg.vmap(lambda x: bn(x, state, inference=True)[0])(images)
    np.testing.assert_allclose(per_example, batched, rtol=1e-12)
    y, one = bn(images[0], state)  # training on one image: a batch of one
    np.testing.assert_allclose(y, bn(images[:1], state)[0][0], rtol=1e-12)
    assert int(one.num_batches_tracked) == 2
    # (N, C, L) with N == C stays the batched reading
    assert bn(fg.ones((3, 3, 2)), state, inference=True)[0].shape == (3, 3, 2)


def test_batch_norm_grad_jit_and_errors():
    bn = nn.BatchNorm(2, dtype=fg.float64)
    state = bn.initial_state()
    x = fg.tensor(rand(5, 2, 3))
    # the module holds only float parameters: grad needs no filtering; state is aux output
    check_grads(lambda m, x: m(x, state)[0], (bn, x), order=1)
    grads, new_state = fg.grad(lambda m: (lambda y, s: ((y ** 3).sum(), s))(*m(x, state)),
                               has_aux=True)(bn)
    assert isinstance(grads, nn.BatchNorm) and int(new_state.num_batches_tracked) == 1
    with pytest.raises(ValueError, match=r"BatchNorm: expected input of shape \(N, 2, ...\)"):
        bn(fg.ones((4, 3)), state)


def test_another_layers_state_is_named():
    # was "add: shapes (5,) and (4,) cannot be broadcast together"
    with pytest.raises(ValueError, match=r"state.running_mean has shape \(5,\), this "
                                         r"layer's is \(4,\)"):
        nn.BatchNorm(4)(fg.ones((8, 4)), nn.BatchNorm(5).initial_state())
