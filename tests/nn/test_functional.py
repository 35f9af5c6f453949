"""nn.functional and the activation modules against NumPy (float64)."""

import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad import nn
from funcgrad.test_util import check_grads


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_log_softmax(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


_erf = np.vectorize(math.erf)

ACTIVATIONS = [
    (F.relu, nn.ReLU(), lambda x: np.maximum(x, 0)),
    (F.gelu, nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    (lambda x: F.gelu(x, approximate="tanh"), nn.GELU("tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    (F.silu, nn.SiLU(), lambda x: x * np_sigmoid(x)),
    (F.sigmoid, nn.Sigmoid(), np_sigmoid),
    (F.tanh, nn.Tanh(), np.tanh),
    (lambda x: F.softmax(x, dim=0), nn.Softmax(dim=0),
     lambda x: np.exp(np_log_softmax(x, 0))),
    (lambda x: F.log_softmax(x, dim=-1), nn.LogSoftmax(dim=-1),
     lambda x: np_log_softmax(x, -1)),
    (lambda x: F.leaky_relu(x, 0.2), nn.LeakyReLU(0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    (F.elu, nn.ELU(), lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    (F.softplus, nn.Softplus(), lambda x: np.log1p(np.exp(x))),
]


@pytest.mark.parametrize("fn,module,reference", ACTIVATIONS)
def test_activations_match_numpy(fn, module, reference):
    x = rand(3, 4) * 2 + 0.01  # away from relu's kink at 0
    np.testing.assert_allclose(fn(fg.tensor(x)), reference(x), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(module(fg.tensor(x)), reference(x), rtol=1e-10, atol=1e-14)
    check_grads(fn, (fg.tensor(x),), order=2)


def test_activation_modules_accept_pytorchs_inplace():
    x = fg.tensor(np.array([-1.0, 2.0]))
    for module in (nn.ReLU(inplace=True), nn.ReLU(True), nn.SiLU(inplace=True),
                   nn.LeakyReLU(0.1, inplace=True), nn.ELU(1.0, True)):
        plain = type(module)()
        np.testing.assert_allclose(module(x), plain(x) if not isinstance(module, nn.LeakyReLU)
                                   else nn.LeakyReLU(0.1)(x))
    assert x.tolist() == [-1.0, 2.0]  # tensors are immutable: nothing changed in place


KINKS = [  # (function, its derivative at 0 as PyTorch's autograd gives it)
    (F.relu, 0.0),
    (lambda x: F.leaky_relu(x, 0.2), 0.2),
    (lambda x: F.elu(x, alpha=1.5), 1.5),
    (F.softplus, 0.5),
]


@pytest.mark.parametrize("fn,slope", KINKS)
@pytest.mark.parametrize("wrap", [lambda f: f, fg.jit], ids=["eager", "jit"])
def test_activation_derivatives_at_zero_are_pytorchs(fn, slope, wrap):
    x = fg.tensor(np.array([0.0, -0.0, 2.0]))
    grad = wrap(fg.grad(lambda x: fn(x).sum()))(x).numpy()
    np.testing.assert_allclose(grad[:2], [slope, slope], rtol=1e-12)


@pytest.mark.parametrize("wrap", [lambda f: f, fg.jit], ids=["eager", "jit"])
def test_loss_gradients_at_ties_are_pytorchs(wrap):
    zeros, target = fg.tensor(np.zeros(4)), fg.tensor(np.array([1.0, 0.0, 1.0, 0.3]))
    # d/dx of BCE with logits is (sigmoid(x) - t) / n, also at x = 0
    bce = wrap(fg.grad(F.binary_cross_entropy_with_logits))(zeros, target)
    np.testing.assert_allclose(bce.numpy(), (0.5 - target.numpy()) / 4, rtol=1e-12)
    weighted = wrap(fg.grad(lambda x: F.binary_cross_entropy_with_logits(
        x, target, pos_weight=fg.tensor(np.full(4, 3.0)))))(zeros)
    np.testing.assert_allclose(weighted.numpy(),
                               (0.5 * (1 + 2 * target.numpy()) - 3 * target.numpy()) / 4)
    # l1_loss: sign(input - target) / n, 0 where they are equal
    l1 = wrap(fg.grad(F.l1_loss))(fg.tensor([0.0, 1.0, 2.0]), fg.tensor([0.0, 1.0, 0.0]))
    np.testing.assert_allclose(l1.numpy(), [0.0, 0.0, 1 / 3])


def test_activations_keep_float32():
    x = fg.ones(3)
    for fn, _, _ in ACTIVATIONS:
        assert fn(x).dtype == np.float32


def test_one_hot():
    np.testing.assert_array_equal(F.one_hot(fg.tensor([0, 2, 1]), 3), np.eye(3)[[0, 2, 1]])
    assert F.one_hot(fg.tensor([[1, 3]])).shape == (1, 2, 4)
    assert F.one_hot(fg.tensor([1]), 2, dtype=fg.float32).dtype == np.float32
    with pytest.raises(TypeError, match="integer"):
        F.one_hot(fg.tensor([1.0]), 2)


def np_cross_entropy(logits, target, weight=None, ignore_index=-100, reduction="mean",
                     label_smoothing=0.0):
    """PyTorch's cross_entropy with integer targets (class axis 1, or 0 when 1-d)."""
    axis = 0 if logits.ndim == 1 else 1
    logp = np.moveaxis(np_log_softmax(logits, axis), axis, -1)
    c = logp.shape[-1]
    w = np.ones(c) if weight is None else weight
    kept = target != ignore_index
    safe = np.where(kept, target, 0)
    picked = np.take_along_axis(logp, safe[..., None], -1)[..., 0]
    wt = w[safe] * kept
    nll = -wt * picked
    smooth = -(logp * w).sum(-1) * kept
    if reduction == "mean":
        nll = nll.sum() / wt.sum()
        smooth = smooth.sum() / (wt.sum() if weight is not None else kept.sum())
    elif reduction == "sum":
        nll, smooth = nll.sum(), smooth.sum()
    return (1 - label_smoothing) * nll + label_smoothing / c * smooth


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_integer_targets(reduction, weighted, label_smoothing):
    logits = rand(6, 4)
    target = np.array([0, 3, 1, -100, 2, 3])
    weight = np.array([0.5, 1.0, 2.0, 1.5]) if weighted else None
    got = F.cross_entropy(fg.tensor(logits), fg.tensor(target),
                          weight=None if weight is None else fg.tensor(weight),
                          reduction=reduction, label_smoothing=label_smoothing)
    want = np_cross_entropy(logits, target, weight, reduction=reduction,
                            label_smoothing=label_smoothing)
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int8, np.int64])
def test_integer_labels_of_any_dtype(dtype):
    # PyTorch takes byte labels; uint8 labels come straight from image datasets
    logits = rand(4, 3)
    labels = np.array([0, 1, 2, 1])
    want = np_cross_entropy(logits, labels, None, reduction="mean", label_smoothing=0.0)
    got = F.cross_entropy(fg.tensor(logits), fg.tensor(labels.astype(dtype)))
    np.testing.assert_allclose(got, want, rtol=1e-10)
    nll = F.nll_loss(F.log_softmax(fg.tensor(logits), 1), fg.tensor(labels.astype(dtype)))
    np.testing.assert_allclose(nll, want, rtol=1e-10)


def test_cross_entropy_shapes_probabilities_and_known_value():
    got = F.cross_entropy(fg.tensor([[2.0, 0.5, -1.0]]), fg.tensor([0]))
    np.testing.assert_allclose(got, math.log(math.exp(2) + math.exp(0.5) + math.exp(-1)) - 2,
                               rtol=1e-6)
    # (N, C, d) logits and (N, d) targets; unbatched (C,) with a scalar target
    logits, target = rand(2, 3, 5), np.random.default_rng(1).integers(0, 3, (2, 5))
    np.testing.assert_allclose(F.cross_entropy(fg.tensor(logits), fg.tensor(target)),
                               np_cross_entropy(logits, target), rtol=1e-10)
    np.testing.assert_allclose(F.cross_entropy(fg.tensor(logits[0, :, 0]), fg.tensor(target[0, 0])),
                               np_cross_entropy(logits[0, :, 0], target[0, 0]), rtol=1e-10)
    # probability targets, with smoothing and weights
    probs = np.exp(np_log_softmax(rand(4, 3, seed=2), 1))
    logits = rand(4, 3, seed=3)
    w = np.array([1.0, 2.0, 0.5])
    smoothed = probs * 0.9 + 0.1 / 3
    want = -(np_log_softmax(logits, 1) * w * smoothed).sum(1).mean()
    got = F.cross_entropy(fg.tensor(logits), fg.tensor(probs), weight=fg.tensor(w),
                          label_smoothing=0.1)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    check_grads(lambda x: F.cross_entropy(x, fg.tensor(np.array([0, 2, 1, 1]))),
                (fg.tensor(logits),), order=2)
    with pytest.raises(ValueError, match="targets of shape"):
        F.cross_entropy(fg.tensor(logits), fg.tensor(np.array([0, 1])))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(fg.tensor(logits), fg.tensor(np.array([0, 1, 1, 1])), reduction="avg")


def test_nll_loss():
    logp = np_log_softmax(rand(5, 3), 1)
    target = np.array([0, 2, -100, 1, 1])
    w = np.array([1.0, 3.0, 0.5])
    kept = target != -100
    safe = np.where(kept, target, 0)
    want = -(w[safe] * kept * logp[np.arange(5), safe]).sum() / (w[safe] * kept).sum()
    np.testing.assert_allclose(F.nll_loss(fg.tensor(logp), fg.tensor(target), fg.tensor(w)),
                               want, rtol=1e-10)
    np.testing.assert_allclose(F.nll_loss(fg.tensor(logp), fg.tensor(target), reduction="none"),
                               -logp[np.arange(5), safe] * kept, rtol=1e-10)


def test_binary_cross_entropy_with_logits():
    x, t = rand(4, 3) * 3, np.random.default_rng(1).random((4, 3))
    pw, w = np.array([1.0, 2.0, 0.5]), rand(4, 3, seed=2) ** 2
    want = -(pw * t * np.log(np_sigmoid(x)) + (1 - t) * np.log(1 - np_sigmoid(x))) * w
    got = F.binary_cross_entropy_with_logits(fg.tensor(x), fg.tensor(t), weight=fg.tensor(w),
                                             reduction="none", pos_weight=fg.tensor(pw))
    np.testing.assert_allclose(got, want, rtol=1e-10)
    plain = -(t * np.log(np_sigmoid(x)) + (1 - t) * np.log(1 - np_sigmoid(x)))
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(fg.tensor(x), fg.tensor(t)),
                               plain.mean(), rtol=1e-10)
    # stable for large logits
    big = F.binary_cross_entropy_with_logits(fg.tensor([1000.0, -1000.0]), fg.tensor([0.0, 1.0]),
                                             reduction="none")
    np.testing.assert_allclose(big, [1000.0, 1000.0])
    np.testing.assert_allclose(F.binary_cross_entropy(fg.tensor(np_sigmoid(x)), fg.tensor(t)),
                               plain.mean(), rtol=1e-8)
    check_grads(lambda x: F.binary_cross_entropy_with_logits(x, fg.tensor(t)), (fg.tensor(x),))


def test_mse_and_l1_loss():
    a, b = rand(3, 4), rand(3, 4, seed=1)
    np.testing.assert_allclose(F.mse_loss(fg.tensor(a), fg.tensor(b)), ((a - b) ** 2).mean())
    np.testing.assert_allclose(F.mse_loss(fg.tensor(a), fg.tensor(b), reduction="sum"),
                               ((a - b) ** 2).sum())
    np.testing.assert_allclose(F.l1_loss(fg.tensor(a), fg.tensor(b), reduction="none"),
                               np.abs(a - b))
    check_grads(lambda a: F.mse_loss(a, fg.tensor(b)), (fg.tensor(a),))
    with pytest.raises(ValueError, match="shape"):
        F.mse_loss(fg.tensor(a), fg.tensor(b[0]))


def test_dropout_scaling_and_determinism():
    x = fg.ones((200, 50), dtype=fg.float64)
    key = fg.random.key(7)
    y = F.dropout(x, 0.3, key=key)
    values = np.unique(np.asarray(y))
    np.testing.assert_allclose(values, [0.0, 1 / 0.7])
    assert abs((np.asarray(y) == 0).mean() - 0.3) < 0.02
    assert abs(np.asarray(y).mean() - 1.0) < 0.03  # inverted dropout keeps the mean
    np.testing.assert_array_equal(F.dropout(x, 0.3, key=key), y)
    assert not np.array_equal(F.dropout(x, 0.3, key=fg.random.key(8)), y)
    assert F.dropout(x, 0.3, training=False) is not None
    np.testing.assert_array_equal(F.dropout(x, 0.3, training=False), x)
    np.testing.assert_array_equal(F.dropout(x, 1.0, key=key), np.zeros((200, 50)))
    drop = nn.Dropout(0.3)
    np.testing.assert_array_equal(drop(x, key=key), y)
    np.testing.assert_array_equal(drop(x, inference=True), x)
    np.testing.assert_array_equal(nn.Dropout(0.3, inference=True)(x), x)
    with pytest.raises(ValueError, match="key"):
        drop(x)
    # gradient: the mask scaled by 1 / (1 - p)
    g = fg.grad(lambda x: drop(x, key=key).sum())(x)
    np.testing.assert_allclose(g, y)


def test_dropout_inference_is_keyword_only():
    # PyTorch's second positional argument is `inplace`: Dropout(0.5, True) must not silently
    # mean inference=True.
    with pytest.raises(TypeError):
        nn.Dropout(0.5, True)
    assert nn.Dropout(0.5, inference=True).inference


@pytest.mark.parametrize("module,reference", [
    (nn.Softmax, lambda x, axis: np.exp(np_log_softmax(x, axis))),
    (nn.LogSoftmax, np_log_softmax),
])
@pytest.mark.parametrize("shape,axis", [((), 0), ((4,), 0), ((2, 3), 1), ((2, 3, 4), 0),
                                        ((2, 3, 4, 5), 1)])
def test_softmax_modules_dim_none_pick_pytorch_legacy_dim(module, reference, shape, axis):
    x = rand(*shape)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        got = module(dim=None)(fg.tensor(x))
    np.testing.assert_allclose(got, reference(x, axis), rtol=1e-10, atol=1e-14)


def test_layer_norm_functional():
    x = rand(2, 5)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(F.layer_norm(fg.tensor(x), (5,)), want, rtol=1e-10)
    with pytest.raises(ValueError, match="trailing"):
        F.layer_norm(fg.tensor(x), (4,))


def test_concrete_out_of_range_labels_raise_as_pytorch():
    logits = fg.ones((4, 5))
    for labels in ([0, 1, -3, 2], [0, 1, 7, 2]):
        with pytest.raises(IndexError, match="out of bounds for 5 classes"):
            F.cross_entropy(logits, fg.tensor(labels))
        with pytest.raises(IndexError, match="out of bounds"):
            F.nll_loss(logits, fg.tensor(labels))
    # the ignore_index is no error
    assert np.isfinite(float(F.cross_entropy(logits, fg.tensor([0, -100, 1, 2]))))


@pytest.mark.parametrize("loss", [
    lambda x, t: F.cross_entropy(x, t),
    lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
    lambda x, t: F.cross_entropy(x, t, weight=fg.tensor([1.0, 2.0, 0.5]), label_smoothing=0.2),
    lambda x, t: F.nll_loss(F.log_softmax(x, dim=1), t),
])
def test_mean_loss_of_only_ignored_targets_is_nan_with_zero_gradient(loss):
    # PyTorch: the loss is 0/0 = NaN, the gradient zero; funcgrad's gradient was NaN
    # (inf * 0), and one fully padded batch then made every parameter NaN
    x = fg.tensor(np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32))
    t = fg.tensor(np.array([-100, -100]))
    value = loss(x, t)
    assert value.dtype == np.float32 and np.isnan(value.item())
    for grad in (fg.grad(loss)(x, t), fg.jit(fg.grad(loss))(x, t)):
        np.testing.assert_array_equal(grad.numpy(), np.zeros((2, 3), np.float32))


def test_one_hot_of_concrete_out_of_range_classes_raises():
    # a bad class gave a row of zeros (PyTorch raises); traced ones still do, as JAX
    for labels in ([1, 5], [-1]):
        with pytest.raises(IndexError, match="out of bounds for num_classes=3"):
            F.one_hot(fg.tensor(labels), 3)
    assert fg.jit(lambda t: F.one_hot(t, 3))(fg.tensor([1, 5])).tolist() == [[0, 1, 0],
                                                                           [0, 0, 0]]


def test_bad_sizes_and_dims_are_named():
    with pytest.raises(ValueError, match="Linear: in_features must be a non-negative int"):
        nn.Linear(-4, 2, key=fg.random.key(0))  # was "math domain error"
    with pytest.raises(ValueError, match="Linear: in_features must be a non-negative int"):
        nn.Linear(4.0, 2, key=fg.random.key(0))
    with pytest.raises(ValueError, match="softmax: dim: axis 3 is out of bounds"):
        nn.Softmax(3)(fg.ones((2, 3)))  # was reported by max
    with pytest.raises(ValueError, match="log_softmax: dim: axis 5"):
        F.log_softmax(fg.ones((2, 3)), dim=5)


def test_nll_loss_names_float_labels():
    with pytest.raises(TypeError, match="nll_loss: target must be integer class indices"):
        F.nll_loss(fg.zeros((2, 3)), fg.tensor([0.0, 1.0]))  # named take_along_axis
