"""make_ir: the traced program, its printed form (one line per equation with shapes and
dtypes), captured constants, evaluation, and the IR of transformed functions."""

import re

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.ir import IR, eval_ir
from funcgrad.core.prims.elementwise import mul_p, sin_p

EQUATION = re.compile(r"^    ([a-z]+:[a-z]+\d*\[[\d,]*\] ?)+ = [a-z_]+(\[.*\])?( \S+)*$")


def t64(x):
    return fg.tensor(np.asarray(x, dtype=np.float64))


def _equation_lines(text):
    return [line for line in text.splitlines()[1:-1]]


def test_print_simple_program():
    ir = fg.make_ir(lambda x: fnp.sin(x).sum())(fg.ones(3))
    assert isinstance(ir, IR)
    assert str(ir) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[] = reduce_sum[axes=(0,)] b\n"
        "  in (c,) }")
    assert repr(ir) == str(ir)


def test_one_line_per_equation_with_shapes_and_dtypes():
    def f(x, y):
        z = x @ y
        return fnp.exp(z).astype(fnp.float64), (z > 0).astype(fnp.int32)

    ir = fg.make_ir(f)(fg.ones((2, 3)), fg.ones((3, 4)))
    text = str(ir)
    lines = _equation_lines(text)
    assert len(lines) == len(ir.equations)
    for line in lines:
        assert EQUATION.match(line), line
    assert text.splitlines()[0] == "{ lambda ; a:f32[2,3] b:f32[3,4]. let"
    assert "dot_general" in text and ":f32[2,4] = dot_general" in text
    assert ":f64[2,4] = convert_element_type[new_dtype=float64" in text
    assert ":bool[2,4] = gt" in text
    assert ":i32[2,4] = convert_element_type[new_dtype=int32" in text
    assert [a.shape for a in ir.out_avals] == [(2, 4), (2, 4)]
    assert [str(a.dtype) for a in ir.out_avals] == ["float64", "int32"]
    assert [a.shape for a in ir.in_avals] == [(2, 3), (3, 4)]


def test_constants_are_captured():
    c = t64(np.arange(3.0))
    ir = fg.make_ir(lambda x: x * c + 2.0)(t64([1.0, 1.0, 1.0]))
    assert len(ir.consts) == 1 and ir.consts[0] is c
    assert len(ir.const_vars) == 1
    header = str(ir).splitlines()[0]
    assert header == "{ lambda a:f64[3]; b:f64[3]. let"
    # a Python scalar appears inline as a literal
    assert any("2.0" in line for line in _equation_lines(str(ir)))
    (out,) = eval_ir(ir, t64([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 8.0])
    # the same constant used twice is captured once
    ir2 = fg.make_ir(lambda x: x * c + c)(t64([1.0, 1.0, 1.0]))
    assert len(ir2.consts) == 1


def test_equations_record_primitives_and_params():
    ir = fg.make_ir(lambda x: fnp.sin(x) * x)(fg.ones(2))
    assert [e.prim for e in ir.equations] == [sin_p, mul_p]
    ir = fg.make_ir(lambda x: fnp.transpose(x, (1, 0)))(fg.ones((2, 3)))
    assert ir.equations[0].params == {"permutation": (1, 0)}
    assert "transpose[permutation=(1, 0)]" in str(ir)


def test_pytree_arguments_and_outputs_are_flattened():
    ir = fg.make_ir(lambda d: {"s": d["a"] @ d["b"], "t": d["a"]})(
        {"a": fg.ones((2, 3)), "b": fg.ones((3,))})
    assert [a.shape for a in ir.in_avals] == [(2, 3), (3,)]
    assert len(ir.outputs) == 2
    s, t = eval_ir(ir, fg.ones((2, 3)) * 2, fg.ones(3))
    np.testing.assert_allclose(s.numpy(), [6.0, 6.0])


def test_eval_ir_matches_function_and_checks_arity():
    f = lambda x: fnp.tanh(x) * fnp.cumsum(x) - x.max()
    x = t64([0.3, -1.2, 2.0])
    ir = fg.make_ir(f)(x)
    (out,) = eval_ir(ir, x)
    np.testing.assert_allclose(out.numpy(), f(x).numpy())
    try:
        eval_ir(ir, x, x)
    except TypeError as e:
        assert "takes 1 inputs, got 2" in str(e)
    else:
        raise AssertionError("eval_ir accepted the wrong number of inputs")


def test_eval_ir_composes_with_transformations():
    ir = fg.make_ir(lambda x: fnp.sin(x) * x)(t64([0.0, 0.0]))
    g = fg.grad(lambda x: eval_ir(ir, x)[0].sum())(t64([0.5, 1.0]))
    xn = np.array([0.5, 1.0])
    np.testing.assert_allclose(g.numpy(), np.cos(xn) * xn + np.sin(xn))
    batched = fg.vmap(lambda x: eval_ir(ir, x)[0])(t64([[0.5, 1.0], [1.5, 2.0]]))
    np.testing.assert_allclose(batched.numpy(), np.sin([[0.5, 1.0], [1.5, 2.0]])
                               * np.array([[0.5, 1.0], [1.5, 2.0]]))


def test_ir_of_grad():
    ir = fg.make_ir(fg.grad(lambda x: (fnp.sin(x) * x).sum()))(fg.ones(3))
    text = str(ir)
    prims = [e.prim.name for e in ir.equations]
    # the forward pass (sin) and the derivative (cos), and no transpose-only leftovers
    assert "sin" in prims and "cos" in prims
    assert text.splitlines()[0] == "{ lambda ; a:f32[3]. let"
    assert ir.out_avals[0].shape == (3,) and ir.out_avals[0].dtype == np.float32
    for line in _equation_lines(text):
        assert EQUATION.match(line), line
    x = t64([0.1, 0.7, -0.4])
    ir64 = fg.make_ir(fg.grad(lambda x: (fnp.sin(x) * x).sum()))(x)
    (g,) = eval_ir(ir64, x)
    np.testing.assert_allclose(g.numpy(), np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy()))


def test_ir_of_vmap_has_batched_shapes():
    ir = fg.make_ir(fg.vmap(lambda r: r @ r))(fg.ones((4, 3)))
    assert ir.in_avals[0].shape == (4, 3)
    assert ir.out_avals[0].shape == (4,)
    assert "dot_general" in str(ir)


def test_ir_of_jvp_and_nested_tracing():
    ir = fg.make_ir(lambda x, t: fg.jvp(fnp.exp, (x,), (t,)))(fg.ones(2), fg.ones(2))
    assert [e.prim.name for e in ir.equations].count("exp") == 1
    assert len(ir.outputs) == 2
    captured = {}

    def outer(x):
        captured["ir"] = fg.make_ir(fnp.sin)(x * 2.0)
        return fnp.cos(x)

    outer_ir = fg.make_ir(outer)(fg.ones(2))
    # tracing inside tracing: the inner make_ir sees the outer tracer's shape and dtype
    assert str(captured["ir"]).splitlines()[1] == "    b:f32[2] = sin a"
    names = [e.prim.name for e in outer_ir.equations]
    assert "mul" in names and names[-1] == "cos" and "sin" not in names


def test_names_keep_going_past_z():
    def f(x):
        for _ in range(30):
            x = x + 1.0
        return x

    text = str(fg.make_ir(f)(fg.ones(())))
    assert "ba:f32[]" in text or "aa:f32[]" in text
    assert len(_equation_lines(text)) == 30
