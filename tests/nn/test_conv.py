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


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_conv_padding_modes_pad_the_input_that_way(mode, np_mode):
    # PyTorch's padding_mode: the input padded by `padding` in that mode, then convolved
    conv = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode, key=KEY, dtype=fg.float64)
    x = rand(2, 2, 6, 5)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=np_mode)
    want = np_conv2d(padded, conv.weight.numpy(), conv.bias.numpy(), (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(conv(fg.tensor(x)), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(conv(fg.tensor(x[1])), want[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fg.jit(conv)(fg.tensor(x)), want, rtol=1e-10, atol=1e-12)
    same = nn.Conv1d(2, 2, 3, padding="same", padding_mode=mode, key=KEY, dtype=fg.float64)
    x1 = rand(1, 2, 7)
    p1 = np.pad(x1, ((0, 0), (0, 0), (1, 1)), mode=np_mode)[:, :, None, :]
    want1 = np_conv2d(p1, same.weight.numpy()[:, :, None, :], same.bias.numpy(), (1, 1),
                      (0, 0), (1, 1), 1)[:, :, 0]
    np.testing.assert_allclose(same(fg.tensor(x1)), want1, rtol=1e-10, atol=1e-12)
    check_grads(lambda v: conv(v), (fg.tensor(x[:1]),), order=1)


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
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror", key=KEY)


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
    np.testing.assert_allclose(F.avg_pool2d(fg.tensor(x), k, s, p,
                                            count_include_pad=count_include_pad), want,
                               rtol=1e-12)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kind", ["max", "avg_pad", "avg_nopad"])
@pytest.mark.parametrize("k,s,p", [(2, 2, 0), (3, 2, 1), (3, 2, 0), (2, 3, 1), (3, 1, 1)])
def test_pooling_matches_pytorch_formulas_with_ceil_mode(k, s, p, kind, ceil_mode):
    # PyTorch's output size: floor or ceil of (L + 2p - k) / s + 1, and a last window must
    # start inside the input or its left padding; averages count padding (count_include_pad)
    # but never the ceil_mode extension
    x = rand(1, 2, 7, 8)
    sizes = []
    for length in x.shape[2:]:
        out = -(-(length + 2 * p - k) // s) + 1 if ceil_mode else (length + 2 * p - k) // s + 1
        if ceil_mode and (out - 1) * s >= length + p:
            out -= 1
        sizes.append(out)
    want = np.zeros((1, 2, *sizes))
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            r0, c0 = i * s - p, j * s - p
            r1, c1 = min(r0 + k, x.shape[2] + p), min(c0 + k, x.shape[3] + p)
            window = x[:, :, max(r0, 0):min(r1, x.shape[2]), max(c0, 0):min(c1, x.shape[3])]
            if kind == "max":
                want[:, :, i, j] = window.max(axis=(2, 3))
            elif kind == "avg_pad":
                want[:, :, i, j] = window.sum(axis=(2, 3)) / ((r1 - r0) * (c1 - c0))
            else:
                want[:, :, i, j] = window.mean(axis=(2, 3))
    if kind == "max":
        got = F.max_pool2d(fg.tensor(x), k, s, p, ceil_mode=ceil_mode)
        layer = nn.MaxPool2d(k, s, p, ceil_mode=ceil_mode)
    else:
        include = kind == "avg_pad"
        got = F.avg_pool2d(fg.tensor(x), k, s, p, ceil_mode=ceil_mode, count_include_pad=include)
        layer = nn.AvgPool2d(k, s, p, ceil_mode=ceil_mode, count_include_pad=include)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(layer(fg.tensor(x)), want, rtol=1e-12)


def test_max_pool_gradient_goes_to_the_first_maximum_of_a_window():
    # PyTorch routes the gradient of a tied maximum to its first element, not split evenly
    grad = fg.grad(lambda x: F.max_pool2d(x, 2).sum())(fg.ones((1, 1, 4, 4)))
    want = np.zeros((4, 4))
    want[::2, ::2] = 1.0
    np.testing.assert_array_equal(grad[0, 0], want)
    jitted = fg.jit(fg.grad(lambda x: F.max_pool2d(x, 2, ceil_mode=True).sum()))
    np.testing.assert_array_equal(jitted(fg.ones((1, 1, 4, 4)))[0, 0], want)


def test_avg_pool_divisor_override_and_unsupported_indices():
    x = fg.tensor(rand(1, 1, 4, 4))
    got = nn.AvgPool2d(2, divisor_override=3)(x)
    np.testing.assert_allclose(got, np.asarray(F.avg_pool2d(x, 2)) * 4 / 3, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="return_indices"):
        F.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(ValueError, match="divisor_override"):
        F.avg_pool2d(x, 2, divisor_override=0)


def test_pool_grads_and_vmap():
    x = fg.tensor(rand(2, 2, 6, 6))
    check_grads(nn.MaxPool2d(2), (x,), order=2)
    check_grads(nn.AvgPool2d(3, stride=2, padding=1), (x,), order=2)
    np.testing.assert_allclose(fg.vmap(nn.MaxPool2d(2))(x), nn.MaxPool2d(2)(x))
    with pytest.raises(ValueError, match="half the kernel"):
        nn.MaxPool2d(2, padding=2)(x)


@pytest.mark.parametrize("make", [
    lambda: nn.Conv2d(1, 1, 3, dilation=0, key=fg.random.key(0)),
    lambda: nn.Conv2d(1, 1, 3, stride=0, key=fg.random.key(0)),
    lambda: nn.Conv2d(1, 1, 0, key=fg.random.key(0)),
    lambda: nn.Conv2d(1, 1, 3, padding=-1, key=fg.random.key(0)),
    lambda: nn.MaxPool2d(2, stride=0),
    lambda: nn.AvgPool2d(0),
    lambda: F.max_pool2d(fg.ones((1, 1, 5, 5)), 2, dilation=0),
    lambda: F.conv2d(fg.ones((1, 1, 5, 5)), fg.ones((1, 1, 3, 3)), stride=(1, 0)),
])
def test_window_arguments_below_their_least_value_raise(make):
    # dilation 0 gave a wrong output shape silently; stride 0 a ZeroDivisionError
    with pytest.raises(ValueError, match="must be at least"):
        make()


def test_a_bias_of_the_wrong_size_is_named():
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \(out_channels,\) = "
                                         r"\(4,\), got \(5,\)"):
        F.conv2d(fg.ones((1, 3, 8, 8)), fg.ones((4, 3, 3, 3)), fg.ones(5))
    with pytest.raises(ValueError, match=r"bias must have shape \(out_channels,\) = \(3,\)"):
        F.conv_transpose2d(fg.ones((1, 2, 4, 4)), fg.ones((2, 3, 3, 3)), fg.ones(2))
