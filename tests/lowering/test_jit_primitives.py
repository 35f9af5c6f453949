"""Every primitive lowers to MLIR, and ``fg.jit`` of each agrees with the eager result.

Samples: the primitive samples of tests/core/test_primitives.py, the elementwise
primitives over every dtype each accepts (bool, signed and unsigned integers, float16,
bfloat16, float32/64, complex64/128), 0-d and empty operands, and compositions for the
primitives that only appear through a transformation (control flow, custom rules, ...).
Samples are batched into a few jitted functions (one per family or dtype) because each
compilation costs about a second.
"""

import contextlib
import importlib.util
import itertools
import pathlib

import ml_dtypes
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core import prims
from funcgrad.core.primitive import Primitive, registry
from funcgrad.core.tensor import wrap
from funcgrad.lowering import host_calls


def _core_samples():
    path = pathlib.Path(__file__).parents[1] / "core" / "test_primitives.py"
    spec = importlib.util.spec_from_file_location("_core_primitive_samples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SAMPLES


def _family_of():
    family = {}
    for name in ("elementwise", "structural", "reductions", "indexing", "sorting", "dot",
                 "linalg", "fft", "bitcast"):
        for value in vars(getattr(prims, name)).values():
            if isinstance(value, Primitive):
                family[value.name] = name
    return family


FAMILY = _family_of()

# --- lowering rules present --------------------------------------------------------------


def test_every_primitive_has_a_lowering_rule():
    missing = sorted(name for name, prim in registry.items() if prim.lower is None)
    assert not missing, f"primitives without an MLIR lowering rule (prim.lower): {missing}"


# --- dtype pool for the elementwise primitives ---------------------------------------------

_BASE = np.arange(1, 7, dtype=np.float64).reshape(2, 3) / 7
_SIGNED = np.array([[3, -1, 2], [0, 5, -4]])
_UNSIGNED = np.array([[3, 1, 2], [0, 5, 4]])
POOL = {
    "bool": np.array([[True, False, True], [False, False, True]]),
    "int8": _SIGNED.astype(np.int8),
    "int32": _SIGNED.astype(np.int32),
    "int64": _SIGNED.astype(np.int64),
    "uint8": _UNSIGNED.astype(np.uint8),
    "uint32": _UNSIGNED.astype(np.uint32),
    "float16": _BASE.astype(np.float16),
    "bfloat16": _BASE.astype(ml_dtypes.bfloat16),
    "float32": _BASE.astype(np.float32),
    "float64": _BASE,
    "complex64": (_BASE + 1j * _BASE[::-1]).astype(np.complex64),
    "complex128": _BASE + 1j * _BASE[::-1],
}
_SKIP_GENERATED = {"select_n", "convert_element_type", "integer_pow", "complex"}


def _second_operand(x):
    """A partner for binary ops: nonzero, and a valid shift amount for integers."""
    if x.dtype == np.bool_:
        return x[::-1]
    if x.dtype.kind in "iu":
        return (np.abs(x[::-1]) % 3 + 1).astype(x.dtype)
    return (x[::-1] + np.asarray(0.25, x.dtype)).astype(x.dtype)


def _accepts(prim, args):
    from funcgrad.core.abstract import aval_of

    try:
        prim.abstract_eval(*[aval_of(np.asarray(a)) for a in args])
    except (TypeError, ValueError):
        return False
    return True


def _elementwise_samples(dtype_name):
    x = POOL[dtype_name]
    samples = []
    for name, family in sorted(FAMILY.items()):
        if family != "elementwise" or name in _SKIP_GENERATED:
            continue
        prim = registry[name]
        args = (x,) if prim.arity == 1 else (x, _second_operand(x))
        if name in ("abs", "rem") and x.dtype.kind == "c":
            continue  # eager abs/rem of complex disagree with their shape rules (reported)
        if _accepts(prim, args):
            samples.append((name, args, {}))
    return samples


def _edge_samples():
    """0-d and empty operands, conversions between dtypes, select over dtypes."""
    s = []
    scalar = np.asarray(np.float32(0.75))
    empty = np.zeros((0, 3), np.float32)
    for name in ("exp", "neg", "sin", "sqrt", "abs", "is_finite"):
        s += [(name, (scalar,), {}), (name, (empty,), {})]
    for name in ("add", "mul", "max", "lt", "eq"):
        s += [(name, (scalar, scalar), {}), (name, (empty, empty), {})]
    s += [("add", (np.asarray(np.int32(3)), np.asarray(np.int32(4))), {}),
          ("reduce_sum", (scalar,), {"axes": ()}), ("reduce_max", (empty,), {"axes": (0, 1)}),
          ("reduce_prod", (empty,), {"axes": (1,)}),
          ("reshape", (empty,), {"new_sizes": (3, 0)}),
          ("broadcast_in_dim", (scalar,), {"shape": (2, 0), "broadcast_dimensions": ()}),
          ("transpose", (empty,), {"permutation": (1, 0)}),
          ("concatenate", (empty, np.ones((2, 3), np.float32)), {"dimension": 0}),
          ("integer_pow", (POOL["complex64"],), {"y": 3}),
          ("integer_pow", (POOL["float16"],), {"y": 2}),
          ("select_n", (POOL["bool"], POOL["uint8"], POOL["uint8"][::-1]), {}),
          ("select_n", (POOL["bool"], POOL["complex128"], POOL["complex128"][::-1]), {}),
          ("select_n", (POOL["bool"], POOL["bfloat16"], POOL["bfloat16"][::-1]), {})]
    conversions = [("float32", "bfloat16"), ("bfloat16", "float32"), ("float64", "float16"),
                   ("float32", "uint8"), ("int32", "float64"), ("uint32", "int8"),
                   ("bool", "float32"), ("float32", "bool"), ("int64", "int32"),
                   ("float64", "complex128"), ("complex64", "float32"), ("int8", "uint32")]
    for src, dst in conversions:
        x = POOL[src]
        if src.startswith("float") and dst[0] in "iub":
            x = (x * 10).astype(x.dtype)  # avoid truncation ties at 0
        s.append(("convert_element_type", (x,), {"new_dtype": np.dtype(POOL[dst].dtype)}))
    for dt in ("float32", "float64", "int32", "uint32"):
        wide = {"float32": "uint32", "float64": "int64", "int32": "float32",
                "uint32": "float32"}[dt]
        s.append(("bitcast_convert_type", (POOL[dt],), {"new_dtype": np.dtype(POOL[wide].dtype)}))
    s.append(("bitcast_convert_type", (POOL["bfloat16"],), {"new_dtype": np.dtype(np.int16)}))
    s.append(("bitcast_convert_type", (POOL["float16"],), {"new_dtype": np.dtype(np.uint16)}))
    return s


def _spd(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _linalg_samples(dtype, full=True, host=True):
    rng = np.random.default_rng(1)
    spd = _spd((2, 4, 4), dtype)
    b = rng.standard_normal((2, 4, 3)).astype(dtype)
    tall = rng.standard_normal((5, 3)).astype(dtype)
    wide = rng.standard_normal((2, 3, 5)).astype(dtype)
    square = rng.standard_normal((4, 4)).astype(dtype)
    s = [("cholesky", (spd,), {}),
         ("triangular_solve", (spd, b), dict(left_side=True, lower=True, transpose_a=False,
                                             unit_diagonal=False)),
         ("lu", (wide,), {}), ("qr", (tall,), {"full_matrices": False}),
         ("eigh", (spd,), {}),
         ("svd", (tall,), {"full_matrices": False, "compute_uv": True})]
    if full:
        s += [("triangular_solve", (square, np.swapaxes(b, -1, -2)[0]),
               dict(left_side=False, lower=False, transpose_a=True, unit_diagonal=True)),
              ("lu", (tall,), {}), ("qr", (wide,), {"full_matrices": True}),
              ("eigh", (square,), {}),  # reads the lower triangle only
              ("svd", (wide,), {"full_matrices": True, "compute_uv": True}),
              ("svd", (tall,), {"full_matrices": True, "compute_uv": True}),
              ("svd", (square,), {"full_matrices": False, "compute_uv": False})]
    if host:  # eig has no compiled algorithm: the CPU's LAPACK computes it
        s.append(("eig", (square,), {}))
    return s


def _fft_samples():
    rng = np.random.default_rng(2)
    x64 = rng.standard_normal((2, 4, 6))
    c128 = x64 + 1j * rng.standard_normal(x64.shape)
    x32, c64 = x64[0].astype(np.float32), c128[0].astype(np.complex64)
    long = rng.standard_normal((2, 300))
    return [("fft", (c128,), {"fft_type": "FFT", "fft_lengths": (6,)}),
            ("fft", (c128,), {"fft_type": "IFFT", "fft_lengths": (4, 6)}),
            ("fft", (x64,), {"fft_type": "RFFT", "fft_lengths": (4, 6)}),
            ("fft", (c128[..., :4],), {"fft_type": "IRFFT", "fft_lengths": (4, 6)}),
            ("fft", (c128[..., :3],), {"fft_type": "IRFFT", "fft_lengths": (5,)}),
            ("fft", (c64,), {"fft_type": "FFT", "fft_lengths": (4, 6)}),
            ("fft", (x32,), {"fft_type": "RFFT", "fft_lengths": (6,)}),
            ("fft", (c64[..., :4],), {"fft_type": "IRFFT", "fft_lengths": (6,)}),
            # long enough to run as a host call on the CPU (funcgrad.core.prims.fft)
            ("fft", (long,), {"fft_type": "RFFT", "fft_lengths": (300,)}),
            ("fft", (long.astype(np.complex128),), {"fft_type": "IFFT", "fft_lengths": (300,)})]


def _groups():
    groups = {}
    for name, args, params in _core_samples():
        groups.setdefault(f"core-{FAMILY[name]}", []).append((name, args, params))
    for dtype_name in POOL:
        groups[f"elementwise-{dtype_name}"] = _elementwise_samples(dtype_name)
    groups["edge-cases"] = _edge_samples()
    groups["linalg-float64"] = _linalg_samples(np.float64)
    groups["linalg-float32"] = _linalg_samples(np.float32, full=False)
    # the column algorithms and DFT products GPUs compile (host calls on the CPU)
    groups["linalg-float64-compiled"] = _linalg_samples(np.float64, host=False)
    groups["linalg-float32-compiled"] = _linalg_samples(np.float32, full=False, host=False)
    groups["fft"] = _fft_samples()
    return groups


GROUPS = _groups()


def _tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype in (np.float16, ml_dtypes.bfloat16):
        return dict(rtol=2e-2, atol=1e-2)
    if dtype in (np.float32, np.complex64):
        return dict(rtol=2e-5, atol=2e-6)
    if dtype in (np.float64, np.complex128):
        return dict(rtol=1e-12, atol=1e-13)
    return dict(rtol=0, atol=0)


def _compare(expected, got):
    """A description of the mismatch, or None."""
    want, have = np.asarray(expected), np.asarray(got)
    if want.shape != have.shape or want.dtype != have.dtype:
        return f"got {have.dtype}{list(have.shape)}, expected {want.dtype}{list(want.shape)}"
    tol = _tolerance(want.dtype)
    if want.dtype.kind in "fcV" or want.dtype == ml_dtypes.bfloat16:
        wide = np.complex128 if want.dtype.kind == "c" else np.float64
        a, b = want.astype(wide), have.astype(wide)
        if np.allclose(b, a, equal_nan=True, **tol):
            return None
        err = np.nanmax(np.abs(a - b)) if a.size else 0
        return f"max abs error {err:.3g} ({tol})"
    if not np.array_equal(want, have):
        return f"values differ:\n{have}\nexpected\n{want}"
    return None


def _results(prim, out):
    return list(out) if prim.multiple_results else [out]


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_jit_matches_eager(group):
    samples = GROUPS[group]
    assert samples
    inputs = [[wrap(np.array(a)) for a in args] for _, args, _ in samples]

    def run(all_inputs):
        return [registry[name].bind(*xs, **params)
                for (name, _, params), xs in zip(samples, all_inputs, strict=True)]

    with np.errstate(all="ignore"):
        eager = run(inputs)
    compiled = group.endswith("-compiled")
    with host_calls.without_host_calls() if compiled else contextlib.nullcontext():
        jitted = fg.jit(run)(inputs)
        host_called = "fghost." in fg.jit(run).lower(inputs).as_text()
    assert host_called == (group == "fft" or (group.startswith("linalg") and not compiled))
    failures = []
    for (name, args, params), want, have in zip(samples, eager, jitted, strict=True):
        prim = registry[name]
        for i, (w, h) in enumerate(zip(_results(prim, want), _results(prim, have), strict=True)):
            problem = _compare(w, h)
            if problem:
                types = [f"{np.asarray(a).dtype}{list(np.shape(a))}" for a in args]
                failures.append(f"{name}{types} {params} output {i}: {problem}")
    assert not failures, "jit differs from eager:\n" + "\n".join(failures)


def test_every_primitive_is_sampled():
    sampled = {name for samples in GROUPS.values() for name, _, _ in samples}
    sampled |= TRANSFORM_PRIMITIVES
    assert sorted(set(registry) - sampled) == []


# --- primitives that appear through transformations and funcgrad.numpy ----------------------

TRANSFORM_PRIMITIVES = {"cond", "scan", "while_loop", "custom_jvp_call", "custom_vjp_call",
                        "custom_lin", "checkpoint", "stop_gradient", "debug_print", "jit_call"}


@fg.custom_jvp
def _soft_clip(x):
    return fnp.tanh(x) * 2


@_soft_clip.defjvp
def _soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _soft_clip(x), t * 2 * (1 - fnp.tanh(x) ** 2)


@fg.custom_vjp
def _scaled(x):
    return fnp.sin(x) * 3


def _scaled_fwd(x):
    return _scaled(x), fnp.cos(x)


def _scaled_bwd(cos_x, g):
    return (g * 3 * cos_x,)


_scaled.defvjp(_scaled_fwd, _scaled_bwd)


def _with_transform_primitives(x, xs):
    inner = fg.jit(lambda v: v * 2 + 1)
    picked = fg.cond(fnp.sum(x) > 0, lambda v: v * 2, lambda v: v - 1, x)
    branch = fg.switch(1, [lambda v: v + 1, lambda v: v * v, lambda v: -v], x)
    total, prefix = fg.scan(lambda c, v: (c + v, c * v), fnp.zeros_like(xs[0]), xs)
    count, grown = fg.while_loop(
        lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (fg.tensor(0), x)
    )
    looped = fg.fori_loop(0, 3, lambda i, v: v + i.astype(v.dtype), x)
    fg.debug.print("x = {x}", x=x)
    return {
        "cond": picked, "switch": branch, "scan": (total, prefix), "while": (count, grown),
        "fori": looped, "jit_call": inner(x), "stop_gradient": fg.stop_gradient(x) * x,
        "custom_jvp": _soft_clip(x), "custom_vjp": _scaled(x),
        "checkpoint": fg.checkpoint(lambda v: fnp.sin(fnp.cos(v)))(x),
        "grads": fg.grad(lambda v: fnp.sum(_soft_clip(v) + _scaled(v)
                                           + fg.checkpoint(fnp.exp)(v)
                                           + fg.stop_gradient(v) * v))(x),
        "grad_loops": fg.grad(lambda v: fnp.sum(fg.scan(lambda c, u: (c * u, c), v, xs)[0])
                              + fnp.sum(fg.cond(v[0] > 0, fnp.sin, fnp.cos, v)))(x),
    }


def test_transform_primitives_jit_matches_eager(capsys):
    x = fg.tensor(np.array([0.5, -1.0, 2.0]))
    xs = fg.tensor(np.arange(12, dtype=np.float64).reshape(4, 3) / 10)
    eager = _with_transform_primitives(x, xs)
    capsys.readouterr()
    jitted = fg.jit(_with_transform_primitives)(x, xs)
    printed = capsys.readouterr().out
    assert "x = " in printed, printed
    want, have = fg.tree.leaves(eager), fg.tree.leaves(jitted)
    assert len(want) == len(have)
    failures = [p for p in map(_compare, want, have) if p]
    assert not failures, failures


def _numpy_compositions(a, b, x, key):
    return {
        "solve": fnp.linalg.solve(a, b), "inv": fnp.linalg.inv(a), "det": fnp.linalg.det(a),
        "slogdet": tuple(fnp.linalg.slogdet(a)), "norm": fnp.linalg.norm(a),
        "pinv": fnp.linalg.pinv(a), "fft": fnp.fft.fft(x), "rfft": fnp.fft.rfft(x),
        "irfft": fnp.fft.irfft(fnp.fft.rfft(x), n=x.shape[-1]), "ifft": fnp.fft.ifft(x),
        "sort": fnp.sort(x), "argsort": fnp.argsort(x), "cumsum": fnp.cumsum(x),
        "einsum": fnp.einsum("ij,jk->ik", a, b), "take": fnp.take(x, fnp.array([3, 0, 1])),
        "softmax": fnp.exp(x - fnp.logaddexp(x[0], x[1])), "where": fnp.where(x > 0, x, -x),
        "normal": fg.random.normal(key, (3, 2)), "uniform": fg.random.uniform(key, (4,)),
        "bits": fg.random.bits(key, (2,)),
    }


def test_numpy_compositions_jit_matches_eager():
    rng = np.random.default_rng(3)
    a = fg.tensor(_spd((3, 3), np.float64) + rng.standard_normal((3, 3)))
    b = fg.tensor(rng.standard_normal((3, 2)))
    x = fg.tensor(rng.standard_normal(6).astype(np.float32))
    key = fg.random.key(0)
    eager = _numpy_compositions(a, b, x, key)
    jitted = fg.jit(_numpy_compositions)(a, b, x, key)
    failures = [
        f"{path}: {problem}"
        for path, w, h in zip(
            fg.tree.leaves_with_path(eager),
            fg.tree.leaves(eager),
            fg.tree.leaves(jitted),
            strict=False,
        )
        for problem in [_compare(w, h)]
        if problem
    ]
    assert not failures, failures


def test_jit_edge_cases_found_by_user_style_probes():
    # each of these compiled to a wrong value or failed to compile at some point
    x = fg.tensor(np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0], np.float32))
    np.testing.assert_array_equal(fg.jit(fnp.argsort)(x), [1, 3, 0, 2, 4, 5])  # stable
    grid = fg.tensor(np.random.default_rng(0).integers(0, 3, (4, 7)).astype(np.float32))
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.argsort(a, axis=0))(grid),
                                  np.argsort(np.asarray(grid), axis=0, kind="stable"))
    nans = fg.tensor(np.array([3.0, np.nan, 1.0, np.nan], np.float32))
    assert int(fg.jit(fnp.argmax)(nans)) == 1 and int(fg.jit(fnp.argmin)(nans)) == 1
    image = fg.tensor(np.arange(6, dtype=np.uint8).reshape(2, 3))
    np.testing.assert_array_equal(fg.jit(lambda a: a[:, ::-1])(image), [[2, 1, 0], [5, 4, 3]])
    ones = fg.ones(3, dtype=fg.complex128)
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.full_like(a, 2 + 1j))(ones), [2 + 1j] * 3)
    empty = fg.ones((0, 3), dtype=fg.complex128)
    np.testing.assert_array_equal(fg.jit(lambda a: a.sum(axis=0))(empty), [0j] * 3)
    z = fg.tensor(np.array([1.7 + 2j, -3.2 - 1j, 1j, 0j], np.complex64))
    for dtype in (fg.int32, fg.bool_, fg.float32):
        np.testing.assert_array_equal(fg.jit(lambda a: a.astype(dtype))(z),  # noqa: B023
                                      z.astype(dtype))
    np.testing.assert_array_equal(z.astype(fg.bool_), [True, True, True, False])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_pad_and_extrema_compile_and_match_numpy(dtype):
    z = fg.tensor(np.array([1 + 2j, 3 - 1j], dtype))
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.pad(a, (1, 2), constant_values=5j))(z),
                                  np.pad(np.asarray(z), (1, 2), constant_values=5j))
    a = np.array([1 + 1j, 2 + 0j, complex(np.nan, 0), 1 + 5j, complex(0, np.nan)], dtype)
    b = np.array([1 + 2j, 1 + 9j, 5 + 5j, complex(np.nan, 1), 2 + 2j], dtype)
    for ours, theirs in ((fnp.maximum, np.maximum), (fnp.minimum, np.minimum)):
        got = fg.jit(ours)(fg.tensor(a), fg.tensor(b))
        np.testing.assert_array_equal(got, theirs(a, b))  # (NaNs compare equal here)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_order_under_jit_is_numpys(dtype):
    # by real part, then imaginary part; IREE compared the real parts alone, so
    # 1+1j >= 1+2j was True under jit
    values = [1 + 1j, 1 + 2j, 2 + 0j, complex(np.nan, 1), complex(1, np.nan), -1 - 1j]
    a, b = (np.array(v, dtype) for v in zip(*itertools.product(values, values), strict=True))
    with np.errstate(invalid="ignore"):
        for ours, theirs in ((fnp.less, np.less), (fnp.less_equal, np.less_equal),
                             (fnp.greater, np.greater), (fnp.greater_equal, np.greater_equal)):
            np.testing.assert_array_equal(fg.jit(ours)(fg.tensor(a), fg.tensor(b)),
                                          theirs(a, b))
    z = fg.tensor(np.array([1 + 2j, 1 + 1j], dtype))
    np.testing.assert_array_equal(fg.jit(lambda u: (u >= 1, u <= 1 + 1j))(z),
                                  [[True, True], [False, True]])


def test_more_jit_edge_cases_found_by_user_style_probes():
    # sort must not sort the caller's tensor in place (IREE sorts its operand buffers)
    x = fg.tensor(np.array([3.0, 1.0, 2.0], np.float32))
    np.testing.assert_array_equal(fg.jit(fnp.sort)(x), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x, [3.0, 1.0, 2.0])
    m = fg.tensor(np.random.default_rng(0).standard_normal((3, 4)))
    np.testing.assert_array_equal(fg.jit(fg.vmap(fnp.argsort))(m),
                                  np.argsort(np.asarray(m), axis=1, kind="stable"))
    cube = fg.tensor(np.random.default_rng(1).standard_normal((2, 3, 4)))
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.argmax(a, axis=-1).T)(cube),
                                  np.argmax(np.asarray(cube), -1).T)
    stacked = fg.tensor(np.random.default_rng(2).standard_normal((2, 3, 3)) + 3 * np.eye(3))
    for fun in (lambda a: fnp.linalg.det(a).sum(), lambda a: fnp.einsum("bii->bi", a).sum()):
        np.testing.assert_allclose(fg.jit(fg.grad(fun))(stacked), fg.grad(fun)(stacked),
                                   rtol=1e-6)


def test_gathers_and_flips_of_strided_slices_compile():
    # IREE 3.13 failed to compile a gather or a reverse fused with a slice leaving a
    # strided innermost axis ("LLVM Translation failed for operation:
    # builtin.unrealized_conversion_cast"), among others jit(vmap(solve)) with a
    # right-hand side sliced from the matrix
    x = fg.tensor(np.arange(8.0))
    cube = fg.tensor(np.arange(24.0).reshape(2, 3, 4))
    i = fg.tensor([0, 3, 1, 2, 2])
    cases = [lambda: x[::2][i], lambda: fnp.take(x[1::3], i % 2),
             lambda: cube[:, :, :1][i % 2, i % 3, 0],
             lambda: fnp.take_along_axis(x[::2], i % 4, axis=0),
             lambda: fg.vmap(lambda r: r[::2][i % 2])(cube.reshape(6, 4))]
    for case in cases:
        np.testing.assert_array_equal(fg.jit(case)(), case())
    cases += [lambda: fnp.flip(cube[:, :, ::2], axis=2), lambda: fnp.flip(x[1::3], axis=0),
              lambda: fnp.flip(cube[:, :, :1], axis=0),
              lambda: fnp.flip(fnp.transpose(cube, (0, 2, 1))[:, :, 1::2], axis=0)[i % 2]]
    for case in cases[5:]:
        np.testing.assert_array_equal(fg.jit(case)(), case())
    mats = fg.tensor(np.random.default_rng(0).standard_normal((3, 4, 4)) + 4 * np.eye(4))
    solve_first_column = fg.vmap(lambda m: fnp.linalg.solve(m, m[:, 0]))
    np.testing.assert_allclose(fg.jit(solve_first_column)(mats), solve_first_column(mats),
                               rtol=1e-12)


def test_pads_of_pads_and_of_reshaped_slices_under_jit():
    # IREE 3.13 folded a pad of a pad with interior padding into one pad wrongly (x[0] at
    # 2, not 3: silent wrong values, here in the gradients of strided slices padded) and
    # failed to compile a pad of a reshaped one-element slice; found by a gather fuzz
    from funcgrad.core.prims.structural import pad  # the primitive: interior padding

    x, zero = fg.tensor(np.arange(1.0, 7.0)), fg.tensor(np.float64(0.0))
    cases = [lambda t: fnp.pad(t[2:3].reshape(1, 1), 1),
             lambda t: pad(fnp.pad(t, (1, 0)), zero, [(1, 0, 1)]),
             lambda t: pad(pad(t, zero, [(0, 0, 1)]), zero, [(2, 1, 0)])]
    for case in cases:
        np.testing.assert_array_equal(fg.jit(case)(x), case(x))
    cube = fg.tensor(np.random.default_rng(3).standard_normal((4, 6, 8)))
    rows = fg.tensor([0, 5, 2, 2, 7])
    pieces = [lambda t: fnp.pad(t[:, :, 1::2][:, :, 3:4], [(0, 0), (0, 0), (2, 0)]),
              lambda t: fnp.pad(t[0, 0, 7:8], [(2, 0)]),
              lambda t: (fnp.sin(fnp.flip(t, 0)) + t)[:, 0:1, :][1::2]]
    k = fg.tensor(3)
    pieces += [lambda t: t[0::2][k % 2], lambda t: t[::-1][0::2][k % 2],
               lambda t: t[0, ::-1][0::2][k % 3]]  # a dynamic_update_slice padded
    for piece in pieces:
        def loss(t, piece=piece):
            out = piece(t)
            return fnp.sum(fnp.take(out, rows % out.shape[-1], axis=-1) ** 2)

        np.testing.assert_allclose(fg.jit(fg.grad(loss))(cube), fg.grad(loss)(cube),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_pads_of_pads_under_jit(dtype):
    # a complex pad is a pad of each part, and those missed the barriers above: the
    # gradient of x[:, ::2][:, 1:3] under jit was wrong (its transpose: a pad of a pad with
    # interior padding); found by a complex64 variant of the view-chain fuzz
    from funcgrad.core.prims.structural import pad

    rng = np.random.default_rng(6)
    x = fg.tensor((rng.standard_normal((4, 12)) + 1j * rng.standard_normal((4, 12))).astype(dtype))
    zero = fg.tensor(dtype(0))
    for case in (lambda t: pad(fnp.pad(t, [(0, 0), (1, 0)]), zero, [(0, 0, 0), (1, 0, 1)]),
                 lambda t: pad(pad(t, zero, [(0, 0, 0), (0, 0, 1)]), zero, [(0, 0, 0), (2, 1, 0)])):
        np.testing.assert_array_equal(fg.jit(case)(x), case(x))
    for piece in (lambda t: t[:, ::2][:, 1:3], lambda t: t[:, ::-2][:, 4:5]):
        def loss(t, piece=piece):
            return fnp.sum(fnp.abs(piece(fnp.sin(t) * 2.0 + t)) ** 2)

        np.testing.assert_allclose(fg.jit(fg.grad(loss))(x), fg.grad(loss)(x), rtol=1e-5)


def test_gradients_through_a_flip_merged_into_other_axes_compile_quickly():
    # IREE 3.13 compiled these float64 gradients for over ten minutes (a reverse feeding a
    # reshape that merges the reversed axis, with deep math around it); found by the
    # view-chain fuzz (seed 243)
    x = fg.tensor(np.random.default_rng(5).uniform(-1, 1, (4, 6, 8)))
    rows = fg.tensor([0, 5, 2])
    losses = [lambda t: fnp.sum(fnp.sin(fnp.sin(t[:, ::-1, :].reshape(4, -1))) ** 2),
              lambda t: fnp.sum(fnp.sin(fnp.sin(t[:, ::-1, :].reshape(4, -1)))[rows % 4] ** 2)]
    for loss in losses:
        np.testing.assert_allclose(fg.jit(fg.grad(loss))(x), fg.grad(loss)(x), rtol=1e-12,
                                   atol=1e-14)


def test_sort_of_a_thousand_wide_rows_compiles():
    # the unused positions operand was sorted in a stack temporary (over IREE's limit)
    a = np.random.default_rng(0).standard_normal((4, 1000)).astype(np.float32)
    got = fg.jit(lambda x: fg.numpy.sort(x, axis=1))(fg.tensor(a))
    np.testing.assert_array_equal(np.asarray(got), np.sort(a, axis=1))


def test_gather_from_a_splat_then_reduced_under_jit():
    # IREE 3.13 miscompiled a gather from a splat followed by a reduction (the sum of
    # ones(4)[i] was 1): the lowering broadcasts the splat's value instead
    rows = fg.tensor([0, 2, 3])
    assert float(fg.jit(lambda i: fnp.ones(4)[i].sum())(rows)) == 3.0
    assert float(fg.jit(lambda i: fnp.full((4, 5), 2.5)[i].sum())(rows)) == 37.5

    def loss(b):
        return fnp.sum(fnp.zeros(5).at[rows].set(b) * 2.0)

    assert float(fg.jit(fg.grad(loss))(fg.tensor(1.5))) == float(fg.grad(loss)(fg.tensor(1.5)))
    assert float(fg.grad(loss)(fg.tensor(1.5))) == 6.0


def test_gathers_from_complex_constants_lower():
    # the MLIR bindings cannot read a complex constant's elements (TypeError), which the
    # splat check met: jit(inv) of a complex64 matrix (a gather from the identity) failed
    rows = fg.tensor([0, 2, 3])
    assert complex(fg.jit(lambda i: fnp.full(4, 1 + 2j, dtype=fg.complex64)[i].sum())(rows)) \
        == 3 + 6j
    table = fg.tensor(np.array([1, 2j, 3, 4j]))
    assert complex(fg.jit(lambda i: table[i].sum())(rows)) == 4 + 4j
    a = fg.tensor(np.array([[2, 1j], [-1j, 3]], np.complex64))
    np.testing.assert_allclose(fg.jit(fnp.linalg.inv)(a), np.linalg.inv(np.asarray(a)),
                               atol=1e-6)


def test_grad_of_jit_through_a_single_element_update():
    # the known half of grad(jit(f)) returned the scatter position, a slice of an iota, and
    # IREE 3.13 crashed on it; small constant subprograms are now folded while lowering
    x = fg.tensor([0.3, -0.7, 1.1, 0.45])
    for update in (lambda x: x.at[1].set(x[0]), lambda x: x.at[2].mul(x[0]),
                   lambda x: x.at[0].max(x[3])):
        def loss(x, update=update):
            return fnp.sum(update(x) ** 2)

        want = fg.grad(loss)(x).numpy()
        np.testing.assert_allclose(fg.grad(fg.jit(loss))(x).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(fg.vjp(fg.jit(loss), x)[1](fg.tensor(1.0))[0].numpy(), want,
                                   rtol=1e-6)


@pytest.mark.parametrize("lhs, rhs", [((2, 0), (0, 3)), ((0, 4), (4, 2)), ((3, 0), (0,)),
                                      ((5, 2, 0), (5, 0, 1))])
def test_products_with_an_empty_axis(lhs, rhs):
    """A contraction of length 0 is zeros (IREE 3.13 fails to compile one); an empty free
    axis is an empty result."""
    a, b = np.ones(lhs, np.float32), np.ones(rhs, np.float32)
    got = fg.jit(fnp.matmul)(fg.tensor(a), fg.tensor(b)).numpy()
    assert got.shape == np.matmul(a, b).shape
    np.testing.assert_array_equal(got, np.matmul(a, b))


def test_gathers_and_products_over_empty_axes():
    empty = fg.tensor(np.zeros((0, 0), np.float32))
    assert fg.jit(fnp.diagonal)(empty).shape == (0,)
    rows = fg.tensor(np.ones((2, 3), np.float32))
    none = fg.tensor(np.zeros((2, 0), np.int32))
    assert fg.jit(lambda a, i: fnp.take_along_axis(a, i, axis=1))(rows, none).shape == (2, 0)
    x = fg.tensor(np.ones((0, 2), np.float32))
    prod_sum = lambda a: fnp.prod(a, axis=0).sum()  # noqa: E731  (prod of nothing: 1)
    for grad in (fg.grad(prod_sum), fg.jit(fg.grad(prod_sum))):
        assert grad(x).shape == (0, 2)
    np.testing.assert_array_equal(fg.jit(lambda a: fnp.prod(a, axis=0))(x).numpy(), [1, 1])


@pytest.mark.parametrize("index, axes", [([2], (1,)), ([[7, -2]], (2, 0)), ([[[1]]], (0,)),
                                         ([1, 3, 0], (0, 1, 2))])
def test_a_gather_of_one_index_row_under_jit(index, axes):
    # lowered as a dynamic_slice (IREE 3.13 failed to compile a one-row gather fused into a
    # reduction's dispatch); out-of-range starts are clamped as by the gather
    from funcgrad.core.prims.indexing import gather

    x = fg.tensor(np.arange(60.0).reshape(4, 5, 3))
    idx = fg.tensor(np.array(index, np.int32))
    f = lambda x, i: gather(x, i, axes)  # noqa: E731
    want = f(x, idx).numpy()
    np.testing.assert_array_equal(fg.jit(f)(x, idx).numpy(), want)
    np.testing.assert_array_equal(fg.jit(lambda x, i: f(x, i).sum() + x.sum())(x, idx).numpy(),
                                  want.sum() + 1770.0)


def test_gradient_of_an_indexed_set_in_nested_scans_compiles():
    # random-program sweep seed 9225, minimized: IREE 3.13 failed to compile the one-row
    # gather of the transposed x.at[1].set(v) ("'arith.cmpi' op requires all operands to
    # have the same type")
    k1 = fg.tensor(np.array([1.0, 0.5, -0.5, 0.25, 0.75]))

    def f(x):
        def outer(carry, _):
            c0, c1 = carry

            def inner(carry, xi):
                d0, d1 = carry
                d0 = fnp.where(c0 > 0.2, c1 * xi, fnp.exp(0.1 * fnp.tanh(k1 * c1[0])))
                return (d0.at[1].set(xi), d1), None

            (d0, d1), _ = fg.scan(inner, (x, fnp.sin(x)), x)
            return (d1, c1), None

        (c0, _), _ = fg.scan(outer, (fg.tensor(np.zeros(5)), k1), None, length=5)
        return fnp.sum((1.08 * c0) ** 2)

    x = fg.tensor(np.array([0.3, -0.7, 1.1, 0.45, -0.2]))
    np.testing.assert_allclose(fg.grad(fg.jit(f))(x).numpy(), fg.grad(f)(x).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(x).numpy(), fg.grad(f)(x).numpy(),
                               rtol=1e-12)


def test_bool_products_are_ors_of_ands_under_jit():
    # an i1 contraction summed modulo 2: entries where two products met came out False
    m = fg.tensor(np.array([[True, True], [False, True]]))
    fun = lambda m: ((m @ m.T).astype(fg.int32), fnp.einsum("ij->j", m),  # noqa: E731
                     fnp.einsum("ij,kj->ik", m, m))
    for got, want in zip(fg.jit(fun)(m), fun(m), strict=True):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert fun(m)[0].tolist() == [[1, 1], [1, 1]]


def test_uint8_converted_to_float_feeds_a_matmul_unsigned():
    # IREE 3.13 folded the uint8 -> float32 convert into the matmul as a signed extension
    x = fg.tensor(np.array([[3, 254, 0, 7], [200, 1, 2, 255]], np.uint8))
    w = fg.tensor(np.ones((4, 3), np.float32))
    got = fg.jit(lambda x, w: x.astype(fg.float32) @ w)(x, w)
    np.testing.assert_array_equal(got.numpy(), np.full((2, 3), [[264.0], [458.0]]))
    np.testing.assert_allclose(fg.jit(fnp.fft.rfft)(x[0]).numpy(),
                               np.fft.rfft(x[0].numpy().astype(np.float64)), atol=1e-4)


@pytest.mark.parametrize("dtype", [fg.complex64, fg.complex128])
def test_real_to_complex_converts_under_jit(dtype):
    # IREE 3.13's int -> complex128 convert gave a constant-folded linspace imaginary parts
    got = fg.jit(lambda: fnp.linspace(0, 1, 5, dtype=dtype))()
    np.testing.assert_array_equal(got.numpy(), np.linspace(0, 1, 5).astype(dtype))
    x = fg.tensor(np.array([3, 254, 7], np.uint8))
    np.testing.assert_array_equal(fg.jit(lambda x: x.astype(dtype) * 1j)(x).numpy(),
                                  np.array([3j, 254j, 7j], dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16])
def test_vmap_solve_of_narrow_integers_converted_to_float_compiles(dtype):
    # "LLVM Translation failed for operation: builtin.unrealized_conversion_cast" when the
    # int8/int16 -> float32 convert was fused into the kernels of vmap(solve)
    a = fg.tensor(np.array([[[7, 2, 0], [5, 5, 4], [2, 6, 1]]], dtype))
    fun = fg.vmap(lambda a: fnp.linalg.solve(a.astype(fg.float32), a[:, 0].astype(fg.float32)))
    np.testing.assert_allclose(fg.jit(fun)(a).numpy(), [[1.0, 0.0, 0.0]], atol=1e-5)
