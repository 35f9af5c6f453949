"""Errors from transformations: wrong outputs/inputs for grad, inconsistent or invalid vmap
axes, tracers used where Python needs concrete values, tracer reprs, leaked tracers."""

import re

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.interpreter import ConcretizationError, LeakedTracerError, Tracer


def t64(x):
    return fg.tensor(np.asarray(x, dtype=np.float64))


# --- grad: what it differentiates -----------------------------------------------------------


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vmap", "jacfwd", "jacrev",
                                  "hessian", "jit", "checkpoint", "make_ir", "custom_jvp",
                                  "custom_vjp"])
def test_transforming_a_non_callable_fails_at_once(name):
    # as JAX: fg.jit(f(x)) used to fail only at the first call, far from the mistake
    with pytest.raises(TypeError, match=rf"{name}: expected a function .*got int 5"):
        getattr(fg, name)(5)


def test_jvp_vjp_linearize_of_a_non_callable():
    x = fg.tensor(1.0)
    for call in (lambda: fg.jvp(5, (x,), (x,)), lambda: fg.vjp(5, x),
                 lambda: fg.linearize(5, x)):
        with pytest.raises(TypeError, match="expected a function"):
            call()


def test_grad_of_non_scalar_output_names_shape_and_dtype():
    with pytest.raises(TypeError, match=r"scalar.*got shape \(2, 3\) and dtype float64"):
        fg.grad(lambda x: x * 2)(t64(np.ones((2, 3))))


def test_grad_of_integer_output_names_dtype():
    with pytest.raises(TypeError, match=r"got shape \(\) and dtype int32"):
        fg.grad(lambda x: (x > 0).sum())(t64([1.0, -1.0]))


def test_grad_of_bool_output():
    with pytest.raises(TypeError, match=r"dtype bool"):
        fg.grad(lambda x: (x > 0).all())(t64([1.0]))


def test_grad_of_multiple_outputs_is_rejected():
    with pytest.raises(TypeError, match="single scalar"):
        fg.grad(lambda x: (x.sum(), x.sum()))(t64([1.0]))


def test_value_and_grad_same_checks():
    with pytest.raises(TypeError, match=r"^value_and_grad requires .* shape \(3,\)"):
        fg.value_and_grad(lambda x: x)(t64([1.0, 2.0, 3.0]))


def test_grad_with_respect_to_integer_input():
    with pytest.raises(TypeError, match="int32"):
        fg.grad(lambda x: x.astype(fnp.float32).sum())(fg.tensor([1, 2]))
    with pytest.raises(TypeError, match="int"):
        fg.grad(lambda x, n: x * n, argnums=1)(t64(1.0), 3)
    with pytest.raises(TypeError, match="int64"):
        fg.grad(lambda p: p["n"].astype(fnp.float64).sum())({"n": fg.tensor(np.arange(2))})


def test_allow_int_gives_zero_gradients_of_integer_inputs_as_jax():
    f = lambda x, n: (x * n).sum()  # noqa: E731
    with pytest.raises(TypeError, match="allow_int=True"):
        fg.grad(f, argnums=1)(t64(1.0), fg.tensor([3, 4]))
    gx, gn = fg.grad(f, argnums=(0, 1), allow_int=True)(fg.tensor([1.0, 2.0]), fg.tensor([3, 4]))
    assert gx.tolist() == [3.0, 4.0] and gn.dtype == fg.int32 and gn.tolist() == [0, 0]
    value, gb = fg.value_and_grad(lambda b: b.sum() * 1.0, allow_int=True)(
        fg.tensor([True, False]))
    assert float(value) == 1.0 and gb.dtype == fg.bool_ and gb.tolist() == [False, False]
    jx, jn = fg.jacrev(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(
        fg.tensor([1.0, 2.0]), fg.tensor([3, 4]))
    assert jx.tolist() == [[3.0, 0.0], [0.0, 4.0]] and jn.shape == (2, 2) and not jn.numpy().any()


def test_jacobians_reject_integer_inputs():
    for jac in (fg.jacfwd, fg.jacrev, fg.hessian):
        with pytest.raises(TypeError, match="int32"):
            jac(lambda x: x * 1.0)(fg.tensor([1, 2]))


def test_grad_argnums_out_of_range():
    with pytest.raises(ValueError, match="argnums"):
        fg.grad(lambda x: x, argnums=1)(t64(1.0))
    with pytest.raises(ValueError, match="argnums"):
        fg.grad(lambda x, y: x * y, argnums=(0, 2))(t64(1.0), t64(2.0))


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"pair \(output, aux\), got a tensor of shape \(\)"):
        fg.grad(lambda x: x * 2, has_aux=True)(t64(1.0))
    with pytest.raises(TypeError, match="got a tuple of 3"):
        fg.grad(lambda x: (x, x, x), has_aux=True)(t64(1.0))


def test_jvp_argument_checks():
    with pytest.raises(TypeError, match="tuples"):
        fg.jvp(fnp.sin, t64(1.0), t64(1.0))
    with pytest.raises(ValueError, match=r"tangent shape \(3,\) differs from primal shape \(2,\)"):
        fg.jvp(fnp.sin, (t64([1.0, 2.0]),), (t64([1.0, 2.0, 3.0]),))
    with pytest.raises(ValueError, match="structure"):
        fg.jvp(lambda a, b: a * b, (t64(1.0), t64(1.0)), (t64(1.0),))


def test_vjp_cotangent_checks():
    _, pullback = fg.vjp(fnp.sin, t64([1.0, 2.0]))
    with pytest.raises(ValueError,
                       match=r"cotangent shape \(3,\) differs from output shape \(2,\)"):
        pullback(t64([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="structure"):
        pullback((t64([1.0, 2.0]), t64(1.0)))
    # a complex cotangent for a real output silently lost its imaginary part: refused
    with pytest.raises(TypeError, match=r"complex cotangent \(complex128\) for the real "
                                        r"output float64\[2\] would lose its imaginary part"):
        pullback(fg.tensor(np.ones(2, np.complex128)))
    # other real dtypes are converted (NumPy keeps float64, JAX's default would not)
    np.testing.assert_allclose(pullback(fg.tensor(np.array([1.0, 2.0], np.float32)))[0],
                               np.cos([1.0, 2.0]) * [1, 2])


def test_linearized_function_checks_its_tangents():
    _, f_jvp = fg.linearize(fnp.sin, t64([0.5, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"linearize: tangent shape \(2, 3\) differs from "
                                         r"primal shape \(3,\)"):
        f_jvp(t64(np.ones((2, 3))))  # it used to broadcast
    with pytest.raises(TypeError, match="linearize: primal and tangent dtypes must be equal"):
        f_jvp(fg.tensor(np.ones(3, np.float32)))
    np.testing.assert_allclose(f_jvp(t64([1.0, 2.0, 3.0])), np.cos([0.5, 1.0, 2.0]) * [1, 2, 3])


# --- vmap axes -------------------------------------------------------------------------------


def test_vmap_inconsistent_sizes_names_each_argument():
    with pytest.raises(ValueError) as info:
        fg.vmap(lambda a, b: a + b)(fg.ones((2, 4)), fg.ones((3, 4)))
    message = str(info.value)
    assert "inconsistent sizes" in message
    assert re.search(r"argument a of shape \(2, 4\) has size 2", message)
    assert re.search(r"argument b of shape \(3, 4\) has size 3", message)


def test_vmap_maps_keyword_arguments_over_axis_0():
    # as JAX: keyword arguments are always mapped (in_axes covers the positional ones)
    a = fg.tensor(np.arange(6.0).reshape(2, 3))
    out = fg.vmap(lambda r, s: r * s)(a, s=a)
    np.testing.assert_array_equal(out, np.asarray(a) ** 2)
    np.testing.assert_array_equal(fg.vmap(lambda x: x.sum())(x=a), [3.0, 12.0])
    np.testing.assert_array_equal(fg.vmap(lambda r, s: r + s, in_axes=(None,))(a[0], s=a),
                                  np.asarray(a) + np.asarray(a[0]))
    with pytest.raises(ValueError, match="argument s of shape \\(3, 3\\)"):
        fg.vmap(lambda r, s: r + s)(a, s=fg.ones((3, 3)))


def test_vmap_inconsistent_sizes_in_pytree_and_axes():
    with pytest.raises(ValueError) as info:
        fg.vmap(lambda d: d["a"] + d["b"].T, in_axes=({"a": 0, "b": 1},))(
            {"a": fg.ones((2, 4)), "b": fg.ones((4, 5))})
    message = str(info.value)
    assert "size 2" in message and "size 5" in message and "'a'" in message and "'b'" in message


def test_vmap_axis_size_conflict():
    with pytest.raises(ValueError, match="axis_size=4"):
        fg.vmap(lambda a: a, axis_size=4)(fg.ones((3,)))


def test_vmap_nothing_mapped_without_axis_size():
    with pytest.raises(ValueError, match="axis_size"):
        fg.vmap(lambda a: a, in_axes=None)(fg.ones(3))


@pytest.mark.parametrize("axis", [2, -3, 5])
def test_vmap_in_axes_out_of_range(axis):
    with pytest.raises(ValueError, match=rf"in_axes={axis} out of range.*shape \(2, 3\)"):
        fg.vmap(lambda a: a, in_axes=axis)(fg.ones((2, 3)))


def test_vmap_mapping_a_scalar():
    with pytest.raises(ValueError, match="out of range"):
        fg.vmap(lambda a: a)(fg.tensor(1.0))


def test_vmap_in_axes_length_and_structure():
    with pytest.raises(ValueError, match="in_axes has 1 entries.*2 positional"):
        fg.vmap(lambda a, b: a, in_axes=(0,))(fg.ones(2), fg.ones(2))
    with pytest.raises(ValueError, match="prefix"):
        fg.vmap(lambda d: d["a"], in_axes=({"a": 0, "b": 0, "c": 0},))({"a": fg.ones(2)})
    with pytest.raises(TypeError, match="int or None"):
        fg.vmap(lambda a: a, in_axes=("0",))(fg.ones(2))


def test_vmap_out_axes_errors():
    with pytest.raises(ValueError, match="out_axes=None"):
        fg.vmap(lambda a: a * 2, out_axes=None)(fg.ones(3))
    with pytest.raises(ValueError, match="out_axes 3 out of range"):
        fg.vmap(lambda a: a, out_axes=3)(fg.ones((3, 2)))


# --- tracers where Python needs concrete values -----------------------------------------------


def _assert_names_fix(error):
    message = str(error)
    assert "fg.cond" in message and "static_argnums" in message


def test_tracer_as_bool_in_vmap():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError) as info:
        fg.vmap(f)(t64([1.0, -1.0]))
    assert isinstance(info.value, TypeError)
    _assert_names_fix(info.value)
    assert "bool" in str(info.value) and "vmap" in str(info.value)


def test_tracer_as_bool_in_grad():
    def f(x):
        return x * 2 if x else x

    with pytest.raises(ConcretizationError) as info:
        fg.grad(f)(t64(1.0))
    _assert_names_fix(info.value)


def test_comparison_in_grad_is_concrete_as_in_jax():
    # comparisons have no tangent, so Python control flow on them works under grad
    f = lambda x: x ** 2 if x > 0 else -x
    np.testing.assert_allclose(fg.grad(f)(t64(3.0)).numpy(), 6.0)
    np.testing.assert_allclose(fg.grad(f)(t64(-3.0)).numpy(), -1.0)


@pytest.mark.parametrize("transform", ["grad", "vmap", "make_ir"])
@pytest.mark.parametrize("use", ["int", "float", "index", "item", "numpy", "array"])
def test_tracer_concretization(transform, use):
    uses = {
        "int": lambda x: int(x),
        "float": lambda x: float(x),
        "index": lambda x: [1.0, 2.0, 3.0][x],
        "item": lambda x: x.item(),
        "numpy": lambda x: x.numpy(),
        "array": lambda x: np.asarray(x),
    }

    def f(x):
        uses[use](x)
        return x

    with pytest.raises(ConcretizationError) as info:
        if transform == "grad":
            fg.grad(f)(t64(1.0))
        elif transform == "vmap":
            fg.vmap(f)(t64([1.0, 2.0]))
        else:
            fg.make_ir(f)(t64(1.0))
    assert isinstance(info.value, TypeError)
    _assert_names_fix(info.value)


def test_batched_integer_index_works_as_gather():
    table = t64([10.0, 20.0, 30.0])
    got = fg.vmap(lambda i: table[i])(fg.tensor([2, 0]))
    np.testing.assert_allclose(got.numpy(), [30.0, 10.0])


def test_boolean_mask_index_under_vmap_names_where():
    with pytest.raises(TypeError, match="where"):
        fg.vmap(lambda x: x[x > 0])(t64([[1.0, -1.0]]))


# --- tracer repr -------------------------------------------------------------------------------


def test_tracer_repr_shows_shape_dtype_and_transformation():
    seen = {}

    def record(name):
        def f(x):
            seen[name] = repr(x)
            assert str(x) == repr(x)
            return (x * 1.0).sum()

        return f

    fg.grad(record("grad"))(t64(np.ones((2, 3))))
    fg.vmap(record("vmap"))(fg.ones((4, 3)))
    fg.make_ir(record("make_ir"))(fg.ones((5,), dtype=fg.int32))
    fg.jvp(record("jvp"), (t64([1.0]),), (t64([1.0]),))
    assert seen["grad"] == "Tracer<f64[2,3]>(made by jvp)"
    assert seen["vmap"] == "Tracer<f32[3]>(made by vmap)"
    assert seen["make_ir"] == "Tracer<i32[5]>(made by make_ir)"
    assert seen["jvp"] == "Tracer<f64[1]>(made by jvp)"


def test_tracer_shape_and_dtype_attributes():
    def f(x):
        assert isinstance(x, Tracer) and isinstance(x, fg.Tensor)
        assert x.shape == (3,) and x.ndim == 1 and x.size == 3 and x.dtype == fg.float64
        return x

    fg.vmap(f)(t64(np.ones((2, 3))))
    fg.grad(lambda x: f(x).sum())(t64(np.ones(3)))


# --- leaked tracers ----------------------------------------------------------------------------


@pytest.mark.parametrize("transform", ["grad", "vmap", "make_ir", "jvp"])
def test_leaked_tracer_raises_when_used(transform):
    store = []

    def f(x):
        store.append(x)
        return (x * 2.0).sum()

    x = t64([1.0, 2.0])
    if transform == "grad":
        fg.grad(f)(x)
    elif transform == "vmap":
        fg.vmap(f)(t64([[1.0, 2.0]]))
    elif transform == "make_ir":
        fg.make_ir(f)(x)
    else:
        fg.jvp(f, (x,), (x,))
    (leaked,) = store
    assert isinstance(leaked, Tracer)
    with pytest.raises(LeakedTracerError, match="leaked tracer.*Return it"):
        leaked + 1.0
    with pytest.raises(LeakedTracerError):
        fnp.sin(leaked)
    # also when the leaked tracer meets a later transformation
    with pytest.raises(LeakedTracerError):
        fg.grad(lambda y: (y * leaked).sum())(x)
    with pytest.raises(LeakedTracerError):
        fg.vmap(lambda y: y * leaked)(t64([[1.0, 2.0]]))
    # asking for its numbers says it leaked too (it advised fg.cond / static_argnums)
    with pytest.raises(LeakedTracerError, match="leaked tracer"):
        leaked.numpy()
    with pytest.raises(LeakedTracerError, match="leaked tracer"):
        bool(leaked[0])


def test_leaked_tracer_from_vjp_closure():
    store = []

    def f(x):
        store.append(fnp.sin(x))
        return x * 3.0

    _, pullback = fg.vjp(f, t64(1.0))
    np.testing.assert_allclose(pullback(t64(1.0))[0].numpy(), 3.0)
    with pytest.raises(LeakedTracerError):
        store[0] * 2.0


def test_grad_and_jacrev_refuse_complex_boolean_and_pytree_outputs():
    # as JAX: grad needs a real scalar array, jacrev real floating outputs
    x = fg.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="complex64"):
        fg.grad(lambda a: (a * 1j).sum())(x)
    with pytest.raises(TypeError, match="list"):
        fg.grad(lambda a: [a.sum()])(x)
    with pytest.raises(TypeError, match="complex64"):
        fg.jacrev(lambda a: a * 1j)(x)
    with pytest.raises(TypeError, match="bool"):
        fg.jacrev(lambda a: a > 0)(x)
    # complex intermediates are fine
    np.testing.assert_allclose(fg.grad(lambda a: fnp.abs(fnp.fft.fft(a)).sum())(x), [0.0, 2.0])


def test_jvp_tangent_dtype_must_match_the_primal():
    x = fg.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="float32.*int32"):
        fg.jvp(lambda a: a * a, (x,), (fg.tensor([1, 2]),))
    with pytest.raises(TypeError, match="float32.*float64"):
        fg.jvp(lambda a: a * a, (x,), (fg.tensor(np.ones(2)),))
    _, tangent = fg.jvp(lambda a: a * a, (fg.tensor(3.0),), (1.0,))  # a weak Python float
    assert tangent.item() == 6.0


def test_traced_shapes_and_axes_name_static_argnums():
    x = fg.ones((2, 2))
    with pytest.raises(TypeError, match="shape.*argument n.*static_argnums"):
        fg.jit(lambda a, n: a.reshape(n))(x, fg.tensor(4))
    with pytest.raises(TypeError, match="axis.*argument n.*static_argnums"):
        fg.jit(lambda a, n: fnp.sum(a, axis=n))(x, fg.tensor(1))


def test_integer_leaf_in_a_differentiated_module_is_named():
    from funcgrad import nn

    class Tagged(nn.Module):
        weight: fg.Tensor
        positions: fg.Tensor

        def __init__(self):
            self.weight = fg.ones(2)
            self.positions = fnp.arange(2)

        def forward(self, x):
            return (self.weight * x).sum()

    with pytest.raises(TypeError, match="argument 0.positions of dtype int32"):
        fg.grad(lambda m: m(1.0))(Tagged())
