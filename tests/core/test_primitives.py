"""The primitive registry: every primitive declares its rules, and each foundation
primitive's NumPy impl agrees with its shape/dtype rule (shape, dtype and weak type)."""

import numpy as np
import pytest

import funcgrad as fg  # noqa: F401  (registers every primitive)
from funcgrad.core import prims
from funcgrad.core.abstract import ShapedArray, aval_of
from funcgrad.core.primitive import Primitive, registry
from funcgrad.core.tensor import wrap

# the families written with the foundation; other families (linalg, fft, bitcast, ...) are
# still checked by the registry-wide tests below
FOUNDATION_FAMILIES = ("elementwise", "structural", "reductions", "indexing", "sorting", "dot")


def _family(name):
    module = getattr(prims, name)
    return {v.name: v for v in vars(module).values() if isinstance(v, Primitive)}


FOUNDATION = {n: p for fam in FOUNDATION_FAMILIES for n, p in _family(fam).items()}
COMPLETE = sorted(n for n, p in registry.items() if p.impl is not None
                  and p.abstract_eval is not None)


def test_registry_is_populated():
    assert len(registry) >= 80
    for name in ("add", "mul", "exp", "dot_general", "reduce_sum", "gather", "scatter",
                 "broadcast_in_dim", "reshape", "transpose", "slice", "pad", "concatenate",
                 "select_n", "convert_element_type", "sort", "iota", "argmax", "cumsum"):
        assert name in registry, name
        assert registry[name].name == name
    assert set(FOUNDATION) <= set(COMPLETE)


def test_declaring_twice_is_an_error():
    with pytest.raises(ValueError, match="declared twice"):
        Primitive("add")


@pytest.mark.parametrize("name", COMPLETE)
def test_every_primitive_has_its_rules(name):
    prim = registry[name]
    missing = [rule for rule in ("impl", "abstract_eval", "jvp", "batch")
               if getattr(prim, rule) is None]
    assert not missing, f"primitive {name!r} lacks {missing}"
    if prim.linear:
        assert prim.transpose is not None, f"linear primitive {name!r} lacks a transpose rule"


_LINEAR = {"add", "sub", "neg", "mul", "div", "real", "imag", "conj", "complex",
           "convert_element_type", "select_n", "broadcast_in_dim", "reshape", "transpose",
           "slice", "pad", "concatenate", "rev", "reduce_sum", "cumsum", "dot_general",
           "gather", "scatter", "dynamic_slice", "dynamic_update_slice"}


@pytest.mark.parametrize("name", sorted(_LINEAR))
def test_linear_primitives_are_marked_linear(name):
    assert registry[name].linear and registry[name].transpose is not None


# --- impl versus shape rule on sample inputs --------------------------------------------

F32 = np.arange(1, 7, dtype=np.float32).reshape(2, 3) / 7
F64 = F32.astype(np.float64)
I32 = np.array([[3, -1, 2], [0, 5, -4]], np.int32)
U8 = np.array([[3, 1, 2], [0, 5, 4]], np.uint8)
B = np.array([[True, False, True], [False, False, True]])
C64 = (F32 + 1j * F32[::-1]).astype(np.complex64)

_UNARY_FLOAT = ["exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
                "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "sqrt", "rsqrt",
                "erf", "erf_inv", "floor", "ceil", "round", "sign", "neg", "abs", "is_finite"]
_BINARY_NUMBER = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "eq", "ne", "lt",
                  "le", "gt", "ge"]


def _samples():
    s = []
    for n in _UNARY_FLOAT:
        s += [(n, (F32,), {}), (n, (F64,), {})]
    s += [("acosh", (F32 + 1,), {}), ("exp", (C64,), {}), ("real", (C64,), {}),
          ("imag", (C64,), {}), ("conj", (C64,), {}), ("abs", (I32,), {}), ("neg", (I32,), {}),
          ("sign", (I32,), {}), ("not", (B,), {}), ("not", (I32,), {}),
          ("is_finite", (C64,), {})]
    for n in _BINARY_NUMBER:
        s += [(n, (F32, F32[::-1]), {}), (n, (I32, np.abs(I32) + 1), {})]
    for n in ("and", "or", "xor"):
        s += [(n, (B, B[::-1]), {}), (n, (I32, I32[::-1]), {})]
    for n in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        s += [(n, (I32, np.abs(I32)), {}), (n, (U8, U8 % 3), {})]
    s += [
        ("atan2", (F32, F32[::-1]), {}), ("complex", (F32, F32), {}),
        ("complex", (F64, F64), {}), ("eq", (B, B), {}), ("max", (B, B[::-1]), {}),
        ("integer_pow", (F32,), {"y": 3}), ("integer_pow", (I32,), {"y": 2}),
        ("integer_pow", (F64,), {"y": -2}),
        ("select_n", (B, F32, F32 * 2), {}), ("select_n", (np.array(True), I32, I32), {}),
        ("select_n", (np.array([[0, 1, 2], [2, 1, 0]], np.int32), F32, F32, F32), {}),
        ("convert_element_type", (F32,), {"new_dtype": np.dtype(np.int32)}),
        ("convert_element_type", (C64,), {"new_dtype": np.dtype(np.float64)}),
        ("convert_element_type", (I32,), {"new_dtype": np.dtype(np.bool_)}),
        ("broadcast_in_dim", (F32,), {"shape": (4, 2, 3), "broadcast_dimensions": (1, 2)}),
        ("broadcast_in_dim", (np.float32(2),), {"shape": (2,), "broadcast_dimensions": ()}),
        ("reshape", (F32,), {"new_sizes": (3, 2)}),
        ("transpose", (F32,), {"permutation": (1, 0)}),
        ("slice", (F32,), {"start_indices": (0, 1), "limit_indices": (2, 3),
                           "strides": (1, 2)}),
        ("pad", (F32, np.float32(0)), {"padding_config": ((1, 2, 1), (-1, 0, 0))}),
        ("concatenate", (F32, F32, F32), {"dimension": 1}),
        ("rev", (F32,), {"dimensions": (0, 1)}),
        ("iota", (), {"dtype": np.dtype(np.int32), "shape": (2, 3), "dimension": 1}),
        ("gather", (F32, np.array([[1], [0], [1]], np.int32)), {"axes": (0,)}),
        ("gather", (F32, np.array([[1, 2], [0, 0]], np.int32)), {"axes": (0, 1)}),
        ("scatter", (F32, np.array([[1], [0]], np.int32), F32[::-1]),
         {"axes": (0,), "mode": "add"}),
        ("scatter", (I32, np.array([[2], [0]], np.int32), I32[:, :2]),
         {"axes": (1,), "mode": "set"}),
        ("dynamic_slice", (F32, np.int32(1), np.int32(-4)), {"slice_sizes": (1, 2)}),
        ("dynamic_slice", (I32, np.int64(9), np.uint8(1)), {"slice_sizes": (2, 0)}),
        ("dynamic_update_slice", (F32, F32[:1, 1:], np.int32(5), np.int32(0)), {}),
        ("dynamic_update_slice", (B, B[:, :1], np.int16(0), np.int32(2)), {}),
        ("sort", (F32[::-1],), {"dimension": 1, "num_keys": 1}),
        ("sort", (I32, F32), {"dimension": 0, "num_keys": 1}),
        ("dot_general", (F32, F32.T.copy()), {"dimension_numbers": (((1,), (0,)), ((), ()))}),
        ("dot_general", (I32, I32), {"dimension_numbers": (((1,), (1,)), ((0,), (0,)))}),
        ("dot_general", (F32, F32), {"dimension_numbers": (((1,), (1,)), ((), ())),
                                     "preferred_element_type": np.dtype(np.float64)}),
    ]
    for n in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        s += [(n, (F32,), {"axes": (0,)}), (n, (I32,), {"axes": (0, 1)}),
              (n, (np.zeros((0, 3), np.float32),), {"axes": (0,)})]
    for n in ("reduce_and", "reduce_or"):
        s += [(n, (B,), {"axes": (1,)})]
    for n in ("argmax", "argmin"):
        s += [(n, (F32,), {"axis": 1, "index_dtype": np.dtype(np.int32)})]
    for n in ("cumsum", "cumprod", "cummax", "cummin"):
        s += [(n, (F32,), {"axis": 1, "reverse": False}), (n, (I32,), {"axis": 0, "reverse": True})]
    return s


SAMPLES = _samples()


def test_every_foundation_primitive_has_a_sample():
    sampled = {name for name, _, _ in SAMPLES}
    assert sorted(set(FOUNDATION) - sampled) == []


@pytest.mark.parametrize("name,args,params", SAMPLES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(SAMPLES)])
@pytest.mark.parametrize("weak", [False, True])
def test_impl_agrees_with_shape_rule(name, args, params, weak):
    prim = registry[name]
    tensors = [wrap(np.asarray(a), weak) for a in args]
    expected = prim.abstract_eval(*[aval_of(t) for t in tensors], **params)
    with np.errstate(all="ignore"):
        got = prim.bind(*tensors, **params)
    expected = list(expected) if prim.multiple_results else [expected]
    got = list(got) if prim.multiple_results else [got]
    assert len(got) == len(expected)
    for want, have in zip(expected, got, strict=True):
        assert isinstance(want, ShapedArray)
        assert have.shape == want.shape and have.dtype == want.dtype, (have.aval, want)
        if args:  # eager weak typing must agree with the rule
            assert have.weak_type == want.weak_type, (have.aval, want)


def test_strong_numpy_constant_gives_strong_result():
    # a raw NumPy constant operand is strongly typed, as its abstract value says
    out = registry["broadcast_in_dim"].bind(np.float32(1), shape=(2,), broadcast_dimensions=())
    assert not out.weak_type
    assert not fg.ones(2, dtype=fg.int8).weak_type
    # full is strong, unlike jnp.full: it builds parameters, which must not change their
    # promotion (or a jit signature) when an update makes them strong
    assert not fg.full(3, 2.0).weak_type
    # a Python number made a tensor stays weak, as jnp.array(2.0)
    assert fg.tensor(2.0).weak_type and not fg.tensor(2.0, dtype=fg.float32).weak_type
    assert (fg.ones(2, dtype=fg.float16) + fg.tensor(2.0)).dtype == fg.float16


@pytest.mark.parametrize("name,args,params,error", [
    ("add", (F32, F32[:, :2]), {}, ValueError),
    ("add", (F32, F64), {}, TypeError),
    ("sin", (I32,), {}, TypeError),
    ("and", (F32, F32), {}, TypeError),
    ("reshape", (F32,), {"new_sizes": (4,)}, ValueError),
    ("transpose", (F32,), {"permutation": (0, 0)}, ValueError),
    ("slice", (F32,), {"start_indices": (0, 0), "limit_indices": (3, 3), "strides": (1, 1)},
     ValueError),
    ("concatenate", (F32, F32.T.copy()), {"dimension": 0}, ValueError),
    ("dot_general", (F32, F32), {"dimension_numbers": (((1,), (0,)), ((), ()))}, ValueError),
    ("gather", (F32, np.array([[0.0]], np.float32)), {"axes": (0,)}, TypeError),
    ("scatter", (F32, np.array([[0]], np.int32), F32), {"axes": (0,), "mode": "set"},
     ValueError),
    ("argmax", (np.zeros((0, 2), np.float32),), {"axis": 0, "index_dtype": np.dtype(np.int32)},
     ValueError),
    ("dynamic_slice", (F32, np.int32(0)), {"slice_sizes": (1, 1)}, ValueError),
    ("dynamic_slice", (F32, np.float32(0), np.int32(0)), {"slice_sizes": (1, 1)}, TypeError),
    ("dynamic_slice", (F32, np.int32(0), np.int32(0)), {"slice_sizes": (3, 1)}, ValueError),
    ("dynamic_update_slice", (F32, F64[:1], np.int32(0), np.int32(0)), {}, TypeError),
    ("dynamic_update_slice", (F32, F32[:, :1].ravel(), np.int32(0), np.int32(0)), {},
     ValueError),
])
def test_shape_rules_reject_bad_operands(name, args, params, error):
    with pytest.raises(error, match=name):
        registry[name].abstract_eval(*[aval_of(np.asarray(a)) for a in args], **params)


def test_suite_runs_with_shape_rule_checks_on():
    # tests/conftest.py turns check_avals on, so every eager primitive above was checked
    assert fg.config.check_avals is True


def test_eager_erf_inv_is_accurate_near_plus_minus_one_and_zero():
    # Newton on erf(x) - y cancelled to nothing near +-1 (erfinv(1 - 2**-53) was 5.456,
    # not 5.864) and erf's 1e-16 absolute error swamped tiny y (erfinv(0) was -1e-16);
    # values from mpmath at 40 digits
    from funcgrad.core.prims import elementwise as ew

    y = [1 - 2.0 ** -53, -(1 - 2.0 ** -52), 1 - 1e-10, 0.999, 0.5, 0.3, 1e-3, 1e-300, 0.0]
    want = [5.8635847487551676, -5.805018683193453, 4.572824958544925, 2.3267537655135246,
            0.4769362762044699, 0.2724627147267543, 0.0008862271574665521,
            8.86226925452758e-301, 0.0]
    np.testing.assert_allclose(ew.erf_inv(fg.tensor(np.array(y))).numpy(), want, rtol=2e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eager_erf_is_accurate_relative_to_small_arguments(dtype):
    # 1 - erfc(|x|) carried erfc's 1e-16 absolute error: erf(0) and erf(1e-20) were 1.1e-16
    import math

    from funcgrad.core.prims import elementwise as ew

    x = np.array([0.0, -0.0, 1e-20, -1e-30, 1e-8, 0.3, -0.5, 0.50001, 2.0, -6.0, np.inf],
                 dtype)
    got = ew.erf(fg.tensor(x)).numpy()
    want = np.array([math.erf(v) for v in x.astype(np.float64)]).astype(dtype)
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # erf(-0.0) is -0.0
