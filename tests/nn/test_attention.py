"""MultiheadAttention and F.scaled_dot_product_attention against NumPy, with masks."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad import nn
from funcgrad.test_util import check_grads

KEY = fg.random.key(0)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mha(mha, q, k, v, additive=None):
    """PyTorch's multi-head attention (batch_first) in NumPy; ``additive`` broadcasts to
    (N, H, L, S)."""
    e, h = mha.embed_dim, mha.num_heads
    d = e // h
    w, b = mha.in_proj_weight.numpy(), mha.in_proj_bias.numpy()

    def project(x, i):
        y = x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e]
        return y.reshape(*y.shape[:2], h, d).transpose(0, 2, 1, 3)

    qh, kh, vh = project(q, 0), project(k, 1), project(v, 2)
    scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d)
    if additive is not None:
        scores = scores + additive
    weights = np_softmax(scores)
    out = (weights @ vh).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    out = out @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy()
    return out, weights


@pytest.fixture(scope="module")
def mha():
    m = nn.MultiheadAttention(8, 2, key=KEY, dtype=fg.float64)
    # non-zero biases so the test sees them (PyTorch initializes them to zero)
    return m.replace(in_proj_bias=fg.tensor(rand(24, seed=5) * 0.1),
                     out_proj=m.out_proj.replace(bias=fg.tensor(rand(8, seed=6) * 0.1)))


def test_mha_parameters_and_init():
    m = nn.MultiheadAttention(8, 2, key=KEY)
    assert m.in_proj_weight.shape == (24, 8) and m.out_proj.weight.shape == (8, 8)
    np.testing.assert_array_equal(m.in_proj_bias, np.zeros(24))
    np.testing.assert_array_equal(m.out_proj.bias, np.zeros(8))
    bound = np.sqrt(6 / (24 + 8))  # xavier_uniform on the (3E, E) matrix
    assert np.abs(m.in_proj_weight.numpy()).max() <= bound
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(8, 3, key=KEY)
    assert len(nn.parameters(nn.MultiheadAttention(8, 2, bias=False, key=KEY))) == 2


def test_mha_self_and_cross_attention(mha):
    q, kv = rand(2, 4, 8), rand(2, 6, 8, seed=1)
    want, weights = np_mha(mha, q, kv, kv)
    got = mha(fg.tensor(q), fg.tensor(kv), fg.tensor(kv))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    out, w = mha(fg.tensor(q), fg.tensor(kv), fg.tensor(kv), need_weights=True)
    np.testing.assert_allclose(w, weights.mean(1), rtol=1e-10, atol=1e-12)
    _, w_heads = mha(fg.tensor(q), fg.tensor(kv), fg.tensor(kv), need_weights=True,
                     average_attn_weights=False)
    np.testing.assert_allclose(w_heads, weights, rtol=1e-10, atol=1e-12)
    # unbatched (L, E) inputs
    out0, w0 = mha(fg.tensor(q[1]), fg.tensor(kv[1]), fg.tensor(kv[1]), need_weights=True)
    np.testing.assert_allclose(out0, want[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w0, weights.mean(1)[1], rtol=1e-10, atol=1e-12)


def test_mha_masks(mha):
    n, length, source = 2, 4, 5
    q, kv = rand(n, length, 8), rand(n, source, 8, seed=1)
    t = lambda a: fg.tensor(a)  # noqa: E731
    # boolean attn_mask: True = NOT allowed (PyTorch's MultiheadAttention)
    bool_mask = np.random.default_rng(2).random((length, source)) < 0.3
    bool_mask[:, 0] = False  # keep every row attending somewhere
    want, weights = np_mha(mha, q, kv, kv, np.where(bool_mask, -np.inf, 0.0))
    out, w = mha(t(q), t(kv), t(kv), attn_mask=t(bool_mask), need_weights=True)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w, weights.mean(1), rtol=1e-10, atol=1e-12)
    assert np.all(np.asarray(w)[:, bool_mask] == 0)
    # float mask added, per (batch * head)
    float_mask = rand(n * 2, length, source, seed=3)
    want, _ = np_mha(mha, q, kv, kv, float_mask.reshape(n, 2, length, source))
    np.testing.assert_allclose(mha(t(q), t(kv), t(kv), attn_mask=t(float_mask)), want,
                               rtol=1e-10, atol=1e-12)
    # key padding mask: True = ignore that key
    pad = np.zeros((n, source), bool)
    pad[0, -2:] = True
    want, _ = np_mha(mha, q, kv, kv, np.where(pad, -np.inf, 0.0)[:, None, None, :])
    np.testing.assert_allclose(mha(t(q), t(kv), t(kv), key_padding_mask=t(pad)), want,
                               rtol=1e-10, atol=1e-12)
    # causal
    x = rand(n, length, 8, seed=4)
    causal = np.triu(np.ones((length, length), bool), 1)
    want, weights = np_mha(mha, x, x, x, np.where(causal, -np.inf, 0.0))
    out, w = mha(t(x), t(x), t(x), is_causal=True, need_weights=True)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.triu(np.asarray(w)[0], 1), 0.0)
    with pytest.raises(ValueError, match="attn_mask must have shape"):
        mha(t(q), t(kv), t(kv), attn_mask=t(bool_mask.T))


def test_mha_grads_vmap_and_dropout(mha):
    x = fg.tensor(rand(2, 3, 8))
    check_grads(lambda m, x: m(x, x, x, is_causal=True), (mha, x), order=1)
    np.testing.assert_allclose(fg.vmap(lambda x: mha(x, x, x))(x), mha(x, x, x), rtol=1e-10)
    drop = mha.replace(dropout=0.5)
    np.testing.assert_allclose(drop(x, x, x), mha(x, x, x), rtol=1e-12)  # no key: no dropout
    key = fg.random.key(1)
    np.testing.assert_allclose(drop(x, x, x, dropout_key=key, inference=True), mha(x, x, x),
                               rtol=1e-12)
    np.testing.assert_allclose(drop.replace(inference=True)(x, x, x, dropout_key=key),
                               mha(x, x, x), rtol=1e-12)
    a = drop(x, x, x, dropout_key=fg.random.key(1))
    b = drop(x, x, x, dropout_key=fg.random.key(1))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, mha(x, x, x))
    with pytest.raises(ValueError, match=r"MultiheadAttention: expected query"):
        mha(fg.ones((2, 3, 7)), x, x)


def np_sdpa(q, k, v, allowed=None, additive=None, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if additive is not None:
        s = s + additive
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    return np_softmax(s) @ v


def test_a_query_allowed_nothing_gets_zeros_and_finite_gradients():
    # PyTorch's safe softmax (2.5+): a fully masked row was NaN, and its NaN reached the
    # gradients of every key and value through the backward pass
    q, k, v = rand(3, 4), rand(5, 4, seed=1), rand(5, 2, seed=2)
    allowed = np.random.default_rng(3).random((3, 5)) < 0.6
    allowed[0], allowed[1:, 1] = False, True
    t = fg.tensor
    out = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(allowed))
    want = np_sdpa(q[1:], k, v, allowed=allowed[1:])
    np.testing.assert_allclose(out.numpy(), np.concatenate([np.zeros((1, 2)), want]),
                               rtol=1e-10)
    bias = np.where(allowed, 0.0, -np.inf)
    np.testing.assert_allclose(F.scaled_dot_product_attention(t(q), t(k), t(v),
                                                              attn_mask=t(bias)), out)
    sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=t(allowed))  # noqa: E731
    check_grads(sdpa, (t(q), t(k), t(v)), order=1)
    grads = fg.jit(fg.grad(lambda q, k, v: sdpa(q, k, v).sum(), argnums=(0, 1, 2)))(
        t(q), t(k), t(v))
    assert all(np.isfinite(g.numpy()).all() for g in grads) and not grads[0][0].numpy().any()


def test_scaled_dot_product_attention():
    q, k, v = rand(2, 3, 4, 8), rand(2, 3, 5, 8, seed=1), rand(2, 3, 5, 6, seed=2)
    t = fg.tensor
    np.testing.assert_allclose(F.scaled_dot_product_attention(t(q), t(k), t(v)),
                               np_sdpa(q, k, v), rtol=1e-10)
    # boolean mask: True = allowed (PyTorch's scaled_dot_product_attention)
    allowed = np.random.default_rng(3).random((4, 5)) < 0.7
    allowed[:, 0] = True
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(allowed)),
        np_sdpa(q, k, v, allowed=allowed), rtol=1e-10)
    bias = rand(4, 5, seed=4)
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(bias), scale=0.3),
        np_sdpa(q, k, v, additive=bias, scale=0.3), rtol=1e-10)
    x = rand(3, 4, 8, seed=5)
    np.testing.assert_allclose(
        F.scaled_dot_product_attention(t(x), t(x), t(x), is_causal=True),
        np_sdpa(x, x, x, allowed=np.tril(np.ones((4, 4), bool))), rtol=1e-10)
    check_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                (t(x), t(x * 0.5), t(x * 2)), order=2)
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(t(x), t(x), t(x), attn_mask=t(bias), is_causal=True)
    with pytest.raises(ValueError, match="dropout_key"):
        F.scaled_dot_product_attention(t(x), t(x), t(x), dropout_p=0.1)


def test_integer_masks_are_refused():
    # a 0/1 int mask was added to the scores (+1), masking nothing; PyTorch refuses it
    mha = nn.MultiheadAttention(8, 2, key=fg.random.key(0))
    x = fg.random.normal(fg.random.key(1), (1, 4, 8))
    ints = fg.tensor(np.triu(np.ones((4, 4), np.int32), 1))
    with pytest.raises(TypeError, match="bool or floating.*int32"):
        mha(x, x, x, attn_mask=ints)
    with pytest.raises(TypeError, match="bool or floating"):
        mha(x, x, x, key_padding_mask=fg.tensor(np.zeros((1, 4), np.int32)))
    with pytest.raises(TypeError, match="bool or floating"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=ints)
    # fnp.triu of a bool matrix stays bool (it was int32, an additive mask): it masks
    causal = fg.numpy.triu(fg.ones((4, 4), dtype=fg.bool_), 1)
    assert causal.dtype == np.bool_
    np.testing.assert_allclose(mha(x, x, x, attn_mask=causal).numpy(),
                               mha(x, x, x, is_causal=True).numpy(), rtol=1e-6)


def test_a_mask_of_the_wrong_shape_names_the_scores_shape():
    x = fg.ones((2, 4, 8))
    with pytest.raises(ValueError, match=r"attn_mask of shape \(3, 3\) does not broadcast "
                                         r"to the scores' shape \(2, 4, 4\)"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=fg.ones((3, 3)) > 0)
