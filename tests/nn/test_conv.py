"""Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d against NumPy loops (float64)."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad import nn
from funcgrad.test_util import check_grads

KEY = fg.random.key(0)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def np_conv2d(x, w, b, stride, padding, dilation, groups):
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for i in range(ho):
            for j in range(wo):
                patch = xp[:, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                           j * sw:j * sw + dw * (kw - 1) + 1:dw]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out if b is None else out + b[None, :, None, None]


def np_conv_transpose2d(x, w, b, stride, padding, output_padding, dilation, groups):
    """The scatter definition: every input pixel adds its kernel-weighted copy."""
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph,
                     (wd - 1) * sw + dw * (kw - 1) + 1 + opw))
    cg = cin // groups
    for ic in range(cin):
        g = ic // cg
        for oc in range(og):
            for a in range(kh):
                for bb in range(kw):
                    full[:, g * og + oc, a * dh:a * dh + (h - 1) * sh + 1:sh,
                         bb * dw:bb * dw + (wd - 1) * sw + 1:sw] += x[:, ic] * w[ic, oc, a, bb]
    ho = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    wo = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = full[:, :, ph:ph + ho, pw:pw + wo]
    return out if b is None else out + b[None, :, None, None]


def np_pool(x, k, s, p, kind, dilation=(1, 1), count_include_pad=True):
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=fill)
    ones = np.pad(np.ones((h, w)), ((p[0], p[0]), (p[1], p[1])))
    ho = (h + 2 * p[0] - dilation[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (w + 2 * p[1] - dilation[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            rows = slice(i * s[0], i * s[0] + dilation[0] * (k[0] - 1) + 1, dilation[0])
            cols = slice(j * s[1], j * s[1] + dilation[1] * (k[1] - 1) + 1, dilation[1])
            win = xp[:, :, rows, cols]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = k[0] * k[1] if count_include_pad else ones[rows, cols].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out


CONV_CASES = [
    # in, out, kernel, stride, padding, dilation, groups
    (3, 4, (3, 3), (1, 1), (0, 0), (1, 1), 1),
    (2, 4, (3, 2), (2, 1), (1, 2), (1, 1), 1),
    (4, 6, (3, 3), (1, 2), (2, 1), (2, 1), 2),
    (4, 4, (2, 2), (2, 2), (0, 0), (1, 1), 4),
]


@pytest.mark.parametrize("cin,cout,k,s,p,d,g", CONV_CASES)
def test_conv2d_matches_numpy(cin, cout, k, s, p, d, g):
    conv = nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, key=KEY,
                     dtype=fg.float64)
    assert conv.weight.shape == (cout, cin // g, *k)
    x = rand(2, cin, 7, 8)
    want = np_conv2d(x, conv.weight.numpy(), conv.bias.numpy(), s, p, d, g)
    got = conv(fg.tensor(x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(conv(fg.tensor(x[0])), want[0], rtol=1e-10, atol=1e-12)


def test_conv2d_functional_same_padding_and_no_bias():
    x, w = rand(1, 2, 6, 5), rand(3, 2, 3, 3, seed=1)
    got = F.conv2d(fg.tensor(x), fg.tensor(w), padding="same")
    np.testing.assert_allclose(got, np_conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 1),
                               rtol=1e-10, atol=1e-12)
    assert F.conv2d(fg.tensor(x), fg.tensor(w), padding="valid").shape == (1, 3, 4, 3)


def test_conv1d_matches_numpy():
    conv = nn.Conv1d(2, 3, 3, stride=2, padding=1, dilation=2, key=KEY, dtype=fg.float64)
    x = rand(2, 2, 11)
    w = conv.weight.numpy()[:, :, None, :]
    want = np_conv2d(x[:, :, None, :], w, conv.bias.numpy(), (1, 2), (0, 1), (1, 2), 1)[:, :, 0]
    np.testing.assert_allclose(conv(fg.tensor(x)), want, rtol=1e-10, atol=1e-12)
    assert conv(fg.tensor(x[0])).shape == want.shape[1:]


def test_conv_default_init_bound():
    conv = nn.Conv2d(3, 64, 5, key=KEY)
    bound = 1 / np.sqrt(3 * 25)
    assert np.abs(conv.weight.numpy()).max() <= bound
    assert np.abs(conv.weight.numpy()).max() > 0.95 * bound
    assert np.abs(conv.bias.numpy()).max() <= bound


def test_conv2d_errors():
    conv = nn.Conv2d(3, 4, 3, key=KEY)
    with pytest.raises(ValueError, match=r"Conv2d: expected input of shape \(N, 3, H, W\)"):
        conv(fg.ones((2, 5, 8, 8)))
    with pytest.raises(ValueError, match="Conv2d"):
        conv(fg.ones((8, 8)))
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2d(3, 4, 3, groups=2, key=KEY)


CONVT_CASES = [
    # in, out, kernel, stride, padding, output_padding, dilation, groups
    (2, 3, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (2, 3, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    (4, 2, (2, 3), (2, 3), (0, 1), (0, 2), (1, 1), 2),
    (2, 2, (3, 2), (1, 2), (2, 0), (0, 1), (2, 1), 1),
]


@pytest.mark.parametrize("cin,cout,k,s,p,op,d,g", CONVT_CASES)
def test_conv_transpose2d_matches_numpy(cin, cout, k, s, p, op, d, g):
    conv = nn.ConvTranspose2d(cin, cout, k, stride=s, padding=p, output_padding=op, groups=g,
                              dilation=d, key=KEY, dtype=fg.float64)
    assert conv.weight.shape == (cin, cout // g, *k)
    x = rand(2, cin, 4, 5)
    want = np_conv_transpose2d(x, conv.weight.numpy(), conv.bias.numpy(), s, p, op, d, g)
    got = conv(fg.tensor(x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(conv(fg.tensor(x[1])), want[1], rtol=1e-10, atol=1e-12)


def test_conv_transpose_is_the_input_gradient_of_conv():
    x, w = fg.tensor(rand(1, 3, 7, 7)), fg.tensor(rand(2, 3, 3, 3, seed=1))
    y, pullback = fg.vjp(lambda x: F.conv2d(x, w, stride=2, padding=1), x)
    ct = fg.tensor(rand(*y.shape, seed=2))
    np.testing.assert_allclose(pullback(ct)[0],
                               F.conv_transpose2d(ct, w, stride=2, padding=1),
                               rtol=1e-10, atol=1e-12)


def test_conv_grads_and_vmap():
    conv = nn.Conv2d(2, 2, 3, stride=2, padding=1, key=KEY, dtype=fg.float64)
    x = fg.tensor(rand(2, 2, 5, 5))
    check_grads(lambda m, x: m(x), (conv, x), order=2)
    np.testing.assert_allclose(fg.vmap(conv)(x), conv(x), rtol=1e-12)
    up = nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1, key=KEY, dtype=fg.float64)
    check_grads(lambda m, x: m(x), (up, x), order=1)
    np.testing.assert_allclose(fg.vmap(up)(x), up(x), rtol=1e-12)


POOL_CASES = [((2, 2), None, (0, 0), (1, 1)), ((3, 3), (2, 2), (1, 1), (1, 1)),
              ((3, 2), (1, 2), (1, 0), (1, 1)), ((2, 2), (1, 1), (0, 0), (2, 2))]


@pytest.mark.parametrize("k,s,p,d", POOL_CASES)
def test_max_pool2d_matches_numpy(k, s, p, d):
    pool = nn.MaxPool2d(k, stride=s, padding=p, dilation=d)
    x = rand(2, 3, 7, 6)
    want = np_pool(x, k, s or k, p, "max", d)
    np.testing.assert_allclose(pool(fg.tensor(x)), want)
    np.testing.assert_allclose(pool(fg.tensor(x[0])), want[0])
    np.testing.assert_allclose(F.max_pool2d(fg.tensor(x), k, s, p, d), want)


@pytest.mark.parametrize("k,s,p,_", POOL_CASES[:3])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_matches_numpy(k, s, p, _, count_include_pad):
    pool = nn.AvgPool2d(k, stride=s, padding=p, count_include_pad=count_include_pad)
    x = rand(2, 3, 7, 6)
    want = np_pool(x, k, s or k, p, "avg", count_include_pad=count_include_pad)
    np.testing.assert_allclose(pool(fg.tensor(x)), want, rtol=1e-12)
    np.testing.assert_allclose(F.avg_pool2d(fg.tensor(x), k, s, p, count_include_pad), want,
                               rtol=1e-12)


def test_pool_grads_and_vmap():
    x = fg.tensor(rand(2, 2, 6, 6))
    check_grads(nn.MaxPool2d(2), (x,), order=2)
    check_grads(nn.AvgPool2d(3, stride=2, padding=1), (x,), order=2)
    np.testing.assert_allclose(fg.vmap(nn.MaxPool2d(2))(x), nn.MaxPool2d(2)(x))
    with pytest.raises(ValueError, match="half the kernel"):
        nn.MaxPool2d(2, padding=2)(x)
