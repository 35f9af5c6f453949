"""dtypes: names, canonicalization, JAX's promotion lattice with weak Python scalars,
finfo/iinfo."""

import ml_dtypes
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

# JAX's documented promotion table (jax.readthedocs.io, "Type promotion semantics"),
# written out by hand.  i*, f*, c* are weakly typed Python int, float and complex.  With
# funcgrad's defaults a weak result that is still weak takes the default dtype of its kind:
# i* -> int32, f* -> float32, c* -> complex64.
_COLUMNS = "b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c4 c8 i* f* c*".split()
_TABLE = """
b1  b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c4 c8 i* f* c*
u1  u1 u1 u2 u4 u8 i2 i2 i4 i8 bf f2 f4 f8 c4 c8 u1 f* c*
u2  u2 u2 u2 u4 u8 i4 i4 i4 i8 bf f2 f4 f8 c4 c8 u2 f* c*
u4  u4 u4 u4 u4 u8 i8 i8 i8 i8 bf f2 f4 f8 c4 c8 u4 f* c*
u8  u8 u8 u8 u8 u8 f* f* f* f* bf f2 f4 f8 c4 c8 u8 f* c*
i1  i1 i2 i4 i8 f* i1 i2 i4 i8 bf f2 f4 f8 c4 c8 i1 f* c*
i2  i2 i2 i4 i8 f* i2 i2 i4 i8 bf f2 f4 f8 c4 c8 i2 f* c*
i4  i4 i4 i4 i8 f* i4 i4 i4 i8 bf f2 f4 f8 c4 c8 i4 f* c*
i8  i8 i8 i8 i8 f* i8 i8 i8 i8 bf f2 f4 f8 c4 c8 i8 f* c*
bf  bf bf bf bf bf bf bf bf bf bf f4 f4 f8 c4 c8 bf bf c4
f2  f2 f2 f2 f2 f2 f2 f2 f2 f2 f4 f2 f4 f8 c4 c8 f2 f2 c4
f4  f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 c4 c8 f4 f4 c4
f8  f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 c8 c8 f8 f8 c8
c4  c4 c4 c4 c4 c4 c4 c4 c4 c4 c4 c4 c4 c8 c4 c8 c4 c4 c4
c8  c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8
i*  i* u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c4 c8 i* f* c*
f*  f* f* f* f* f* f* f* f* f* bf f2 f4 f8 c4 c8 f* f* c*
c*  c* c* c* c* c* c* c* c* c* c4 c4 c4 c8 c4 c8 c* c* c*
"""
_NAMES = {
    "b1": np.dtype(np.bool_), "u1": np.dtype(np.uint8), "u2": np.dtype(np.uint16),
    "u4": np.dtype(np.uint32), "u8": np.dtype(np.uint64), "i1": np.dtype(np.int8),
    "i2": np.dtype(np.int16), "i4": np.dtype(np.int32), "i8": np.dtype(np.int64),
    "bf": np.dtype(ml_dtypes.bfloat16), "f2": np.dtype(np.float16),
    "f4": np.dtype(np.float32), "f8": np.dtype(np.float64), "c4": np.dtype(np.complex64),
    "c8": np.dtype(np.complex128),
    "i*": np.dtype(np.int32), "f*": np.dtype(np.float32), "c*": np.dtype(np.complex64),
}
_WEAK_SCALAR = {"i*": 3, "f*": 1.5, "c*": 1 + 2j}


def _table():
    rows = {}
    for line in _TABLE.strip().splitlines():
        name, *cells = line.split()
        assert len(cells) == len(_COLUMNS)
        rows[name] = dict(zip(_COLUMNS, cells, strict=True))
    return rows


TABLE = _table()
STRONG = [c for c in _COLUMNS if not c.endswith("*")]
ALL_PAIRS = [(a, b) for a in _COLUMNS for b in _COLUMNS]


def _operand(code):
    """A value of the lattice node ``code``: a Python scalar for weak nodes, else a tensor."""
    if code in _WEAK_SCALAR:
        return _WEAK_SCALAR[code]
    return fg.ones((2,), dtype=_NAMES[code])


def _expected(a, b):
    """The table's result for ``a`` and ``b``, but float64/complex128 where a strongly
    typed 64-bit integer meets a result that the table leaves weak (funcgrad's one
    departure: 64-bit integers are NumPy data, and ``int64 * 1.0`` is float64 in NumPy and
    in JAX with 64-bit types, not the default float32)."""
    got = TABLE[a][b]
    if got in ("f*", "c*") and {a, b} & {"i8", "u8"}:
        return {"f*": "f8", "c*": "c8"}[got]
    return got


def test_table_is_symmetric():
    for a, b in ALL_PAIRS:
        assert TABLE[a][b] == TABLE[b][a], (a, b)


@pytest.mark.parametrize("a", STRONG)
@pytest.mark.parametrize("b", STRONG)
def test_promote_types_matches_jax_table(a, b):
    assert fg.promote_types(_NAMES[a], _NAMES[b]) == _NAMES[_expected(a, b)]


@pytest.mark.parametrize("a,b", ALL_PAIRS)
def test_result_type_matches_jax_table(a, b):
    got = fg.result_type(_operand(a), _operand(b))
    assert got == _NAMES[_expected(a, b)], (a, b, got)


@pytest.mark.parametrize("a", STRONG)
@pytest.mark.parametrize("weak", ["i*", "f*"])
def test_binary_op_with_weak_scalar_follows_table(a, weak):
    """`t + 3` / `t * 1.5`: the operator itself produces the table's dtype."""
    x = fg.ones((2,), dtype=_NAMES[a])
    out = x * _WEAK_SCALAR[weak] if a != "b1" else fnp.multiply(x, _WEAK_SCALAR[weak])
    assert out.dtype == _NAMES[_expected(a, weak)]


@pytest.mark.parametrize("a,b", [(a, b) for a in STRONG for b in STRONG if a != "b1" or b != "b1"])
def test_binary_op_between_tensors_follows_table(a, b):
    out = fnp.add(fg.ones((2,), dtype=_NAMES[a]), fg.ones((1,), dtype=_NAMES[b]))
    assert out.dtype == _NAMES[_expected(a, b)]
    assert out.shape == (2,)


def test_weak_scalars_keep_tensor_dtype():
    x = fg.ones(3, dtype=fg.float16)
    assert (x * 2.0).dtype == fg.float16
    assert (2.0 * x).dtype == fg.float16
    assert (x + 1).dtype == fg.float16
    b = fg.ones(3, dtype=fg.bfloat16)
    assert (b / 3.0).dtype == fg.bfloat16
    i = fg.ones(3, dtype=fg.int8)
    assert (i + 1).dtype == fg.int8
    assert (i * 2.5).dtype == fg.float32  # int with weak float -> default float
    wide = fg.tensor(np.array([2**40 + 1], np.int64))
    assert (wide * 1.0).dtype == fg.float64 and not (wide * 1.0).weak_type
    assert float((wide * 1.0)[0]) == 2**40 + 1  # float32 lost the 1
    assert fg.jit(lambda t: t * 1.0)(wide).dtype == fg.float64
    assert (wide * 1j).dtype == fg.complex128
    assert fnp.logsumexp(wide).dtype == fg.float64  # as sin, mean, true division
    u = fg.ones(3, dtype=fg.uint8)
    assert (u + 1).dtype == fg.uint8


def test_weak_result_stays_weak_until_it_meets_a_strong_type():
    # a weak scalar combined with a weak scalar stays weak: it still yields to float16
    w = fnp.multiply(fg.ones((), dtype=fg.float32), 1.0)
    assert w.dtype == fg.float32
    half = fg.ones(2, dtype=fg.float16)
    assert fg.result_type(half, 2.0, 3) == fg.float16


def test_tensors_of_one_dtype_keep_promotion_rules():
    # two tensors of one dtype and shape take an eager shortcut past promotion: what they
    # give must be what promotion gives (weakness, bools, integer division, comparisons)
    weak = fnp.asarray(2.0)
    strong = fg.ones((), dtype=fg.float32)
    assert fnp.add(weak, weak).weak_type and fnp.add(weak, weak).dtype == fg.float32
    assert not fnp.add(weak, strong).weak_type and not fnp.add(strong, weak).weak_type
    assert not fnp.less(weak, weak).weak_type and fnp.less(weak, weak).dtype == fg.bool_
    half = fg.ones(2, dtype=fg.float16)
    assert (fnp.multiply(weak, weak) * half).dtype == fg.float16
    i = fg.tensor([7, 8])
    assert fnp.divide(i, i).dtype == fg.float32
    np.testing.assert_array_equal(fnp.floor_divide(i, fg.tensor([2, 3])), [3, 2])
    t = fg.tensor([True, False])
    assert fnp.add(t, t).dtype == fg.bool_
    np.testing.assert_array_equal(fnp.add(t, t), [True, False])
    np.testing.assert_array_equal(fnp.less(t, fg.tensor([False, True])), [False, True])
    np.testing.assert_array_equal(fnp.left_shift(t, t), [2, 0])
    with pytest.raises(TypeError, match="bit shifts need integer"):
        fnp.left_shift(half, half)
    with pytest.raises(TypeError, match="bitwise_and"):
        fnp.bitwise_and(half, half)


def test_weak_int_and_weak_float_make_a_weak_float_eagerly_as_traced():
    # the int is converted with weak_type=True: the eager result was strong, so it then
    # turned a float16 tensor into float32 (JAX: float16), unlike the same code traced
    a, b = fnp.asarray(2), fnp.asarray(2.5)
    eager = fnp.add(a, b)
    (traced,) = fg.make_ir(fnp.add)(a, b).out_avals
    assert eager.weak_type and traced.weak_type
    assert (eager * fg.ones(2, dtype=fg.float16)).dtype == fg.float16


def test_python_scalar_defaults():
    assert fg.tensor(1.0).dtype == fg.float32
    assert fg.tensor(1).dtype == fg.int32
    assert fg.tensor(True).dtype == fg.bool_
    assert fg.tensor(1j).dtype == fg.complex64
    assert fg.tensor([1.0, 2.0]).dtype == fg.float32
    assert fg.tensor([[1, 2], [3, 4]]).dtype == fg.int32
    assert fg.tensor([1, 2.5]).dtype == fg.float32
    assert fg.tensor([True, False]).dtype == fg.bool_


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64, np.int8,
                                   np.uint8, np.bool_, np.complex128, np.complex64])
def test_numpy_arrays_keep_their_dtype(dtype):
    arr = np.zeros((2, 3), dtype=dtype)
    t = fg.tensor(arr)
    assert t.dtype == np.dtype(dtype)
    assert fg.asarray(arr).dtype == np.dtype(dtype)
    assert fnp.asarray(arr).dtype == np.dtype(dtype)


def test_numpy_scalars_keep_their_dtype():
    assert fg.tensor(np.float64(2.0)).dtype == fg.float64
    assert fg.tensor(np.int64(2)).dtype == fg.int64
    assert fg.tensor(np.float16(2.0)).dtype == fg.float16
    assert fg.tensor([np.float64(1.0), np.float64(2.0)]).dtype == fg.float64


def test_float64_computation_stays_float64():
    x = fg.tensor(np.linspace(0.0, 1.0, 5))
    assert (x * 2.0).dtype == fg.float64
    assert fnp.sin(x).dtype == fg.float64
    assert fnp.sum(x).dtype == fg.float64
    assert (x + fg.ones(5)).dtype == fg.float64


_DTYPE_NAMES = {
    "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
    "float64": np.float64, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "uint8": np.uint8, "bool": np.bool_, "complex64": np.complex64,
    "complex128": np.complex128,
}


@pytest.mark.parametrize("name,np_type", list(_DTYPE_NAMES.items()))
def test_dtype_objects_and_names(name, np_type):
    attr = "bool_" if name == "bool" else name
    dt = getattr(fg, attr)
    assert dt == np.dtype(np_type)
    assert getattr(fnp, attr) == dt
    t = fg.zeros((2,), dtype=name)
    assert t.dtype == dt
    assert t.dtype.name == name
    assert fg.zeros((2,), dtype=dt).dtype == dt
    assert fg.zeros((2,), dtype=np_type).dtype == dt


@pytest.mark.parametrize("py_type,expected", [(float, "float32"), (int, "int32"),
                                              (bool, "bool"), (complex, "complex64")])
def test_python_types_as_dtypes(py_type, expected):
    assert fg.zeros(2, dtype=py_type).dtype.name == expected


@pytest.mark.parametrize("bad", ["float128", "floot32", "string", "object"])
def test_unknown_dtype_string_lists_valid_ones(bad):
    with pytest.raises(ValueError, match="valid dtypes") as info:
        fg.tensor([1.0], dtype=bad)
    message = str(info.value)
    for name in ("float32", "bfloat16", "int8", "complex64", "bool"):
        assert name in message


def test_unsupported_dtype_object_raises_value_error():
    with pytest.raises(ValueError, match="valid dtypes"):
        fg.zeros(2, dtype=np.dtype("U5"))
    # also a TypeError, as JAX's and NumPy's "data type not understood"
    with pytest.raises(TypeError, match="unsupported dtype"):
        fg.tensor(np.array(["a"]))
    with pytest.raises(TypeError, match="unknown dtype 'floot32'"):
        fg.zeros(2, dtype="floot32")
    with pytest.raises(ValueError, match="valid dtypes"):
        fg.zeros(2, dtype=np.float128 if hasattr(np, "float128") else np.dtype("M8[s]"))


def test_promote_types_accepts_names_and_is_commutative():
    assert fg.promote_types("int8", "uint8") == fg.int16
    assert fg.promote_types(np.float16, "bfloat16") == fg.float32
    with pytest.raises(ValueError):
        fg.promote_types("nope", "int8")


def test_python_types_promote_as_weak_values_and_numpy_codes_are_dtypes():
    # as jnp.promote_types: int/float/complex stand for weakly typed values
    assert fg.promote_types(float, fg.float16) == fg.float16
    assert fg.promote_types(fg.int8, int) == fg.int8
    assert fg.promote_types(float, fg.int8) == fg.float32
    assert fg.promote_types(fg.float64, fg.float16) == fg.float64  # dtype == float holds
    for code, dtype in [("f4", fg.float32), ("<f8", fg.float64), ("i4", fg.int32),
                        ("u1", fg.uint8), ("?", fg.bool_), ("c16", fg.complex128)]:
        assert fg.ones(2).astype(code).dtype == dtype
        assert fg.tensor([1], dtype=code).dtype == dtype
    with pytest.raises(ValueError, match="valid dtypes"):
        fg.ones(2).astype("U3")


def test_result_type_of_tensors_arrays_and_dtypes():
    assert fg.result_type(fg.ones(2, dtype=fg.float16), np.ones(2, np.float32)) == fg.float32
    assert fg.result_type(fg.int8, fg.uint8, fg.float16) == fg.float16
    assert fg.result_type(fg.ones(2, dtype=fg.int32)) == fg.int32
    assert fg.result_type(2) == fg.int32
    assert fg.result_type(2.0) == fg.float32
    with pytest.raises(ValueError):
        fg.result_type()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_finfo(dtype):
    info = fg.finfo(dtype)
    expected = ml_dtypes.finfo(_DTYPE_NAMES[dtype])
    assert info.eps == expected.eps
    assert info.max == expected.max
    assert info.bits == np.dtype(_DTYPE_NAMES[dtype]).itemsize * 8
    assert fg.finfo(getattr(fg, dtype)).tiny == expected.tiny


def test_finfo_known_values():
    assert fg.finfo(fg.float32).eps == np.float32(2.0 ** -23)
    assert float(fg.finfo(fg.bfloat16).eps) == 2.0 ** -7
    assert float(fg.finfo(fg.float16).max) == 65504.0


@pytest.mark.parametrize("dtype,lo,hi", [("int8", -128, 127), ("int16", -2**15, 2**15 - 1),
                                         ("int32", -2**31, 2**31 - 1),
                                         ("int64", -2**63, 2**63 - 1), ("uint8", 0, 255)])
def test_iinfo(dtype, lo, hi):
    info = fg.iinfo(getattr(fg, dtype))
    assert (info.min, info.max) == (lo, hi)
    assert fg.iinfo(dtype).bits == np.dtype(dtype).itemsize * 8


def test_finfo_and_iinfo_reject_the_wrong_kind():
    with pytest.raises(ValueError):
        fg.finfo(fg.int32)
    with pytest.raises(ValueError):
        fg.iinfo(fg.float32)


@pytest.mark.parametrize("src", ["float32", "float64", "int32", "uint8", "bool", "bfloat16",
                                 "float16", "complex64"])
@pytest.mark.parametrize("dst", ["float32", "float64", "int8", "int32", "bool", "bfloat16",
                                 "complex128"])
def test_astype_matches_numpy(src, dst):
    base = np.array([0.0, 1.0, 2.0, 3.0, 7.0])
    arr = base.astype(_DTYPE_NAMES[src])
    got = fg.tensor(arr).astype(dst)
    assert got.dtype == np.dtype(_DTYPE_NAMES[dst])
    expected = arr.astype(_DTYPE_NAMES[dst]) if src[:7] != "complex" or dst[:7] == "complex" \
        else arr.real.astype(_DTYPE_NAMES[dst])
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_python_types_are_weak_in_result_type():
    """As jnp.result_type: the types int, float and complex are weak like their values."""
    assert fg.result_type(int, fg.int8) == fg.int8
    assert fg.result_type(float, fg.float16) == fg.float16
    assert fg.result_type(complex, fg.float32) == fg.complex64
    assert fg.result_type(bool, fg.int8) == fg.int8
    assert fg.result_type(int) == fg.int32 and fg.result_type(float) == fg.float32
