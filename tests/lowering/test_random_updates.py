"""Random straight-line programs that read and update length-5 vectors at traced indices
(the loop counter's stand-in ``i``, shifted, or an argmax), next to matmuls and
elementwise math: ``jit`` and ``jit(grad)`` must match eager evaluation for every ``i``.

The seeds are fixed (the programs are the same in every run); 58, 80 and 154 gave wrong
gradients under jit before the transpose of dynamic_update_slice stopped zeroing the
cotangent in place (IREE 3.13 ran that before a matmul reading the cotangent)."""

import random

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

_W = fnp.asarray(np.arange(25.0).reshape(5, 5) / 50 - 0.2)
_X = np.array([0.3, -0.7, 1.1, 0.45, -0.2])


def _program(seed: int) -> str:
    """The source of ``f(x, i)``: two to seven assignments, then a sum of squares."""
    r = random.Random(seed)
    names, lines = ["x"], ["def f(x, i):"]
    for k in range(r.randint(2, 7)):
        v, u = r.choice(names), r.choice(names)
        index = r.choice(["i", "(i + 1) % 5", "(i + 3) % 5", f"fnp.argmax({u})",
                          str(r.randrange(5))])
        value = r.choice([f"fnp.sum({u}) * 0.2", f"{u}[{index}]", "0.5",
                          f"fnp.tanh({u}[{r.randrange(5)}])", f"{u}[i] * {v}[2]"])
        lines.append(f"    v{k} = " + r.choice([
            f"{v}.at[{index}].add({value})", f"{v}.at[{index}].set({value})",
            f"{v}.at[{index}].mul(fnp.tanh({value}))", f"W @ {v}", f"fnp.sin({v} * 0.8)",
            f"fnp.tanh({v}) * {u}", f"{v} + {value}",
            f"fnp.sum(fnp.outer({v}, {u}), axis=0) * 0.3", f"fnp.cumsum({v})[::-1] * 0.2",
            f"{v}.at[{index}].add({value}) + W @ {u}",
            f"fnp.sin({v}.at[{index}].add({value}) * 0.8) + W @ {u}",
            f"fnp.where({v} > 0.1, {u}, fnp.sin({v}))"]))
        names.append(f"v{k}")
    terms = r.sample(names[1:], min(len(names) - 1, 3))
    lines.append(f"    return fnp.sum(({' + '.join(terms)}) ** 2)")
    return "\n".join(lines)


@pytest.mark.parametrize("seed", [58, 80, 154, 0, 7, 21, 33, 64, 99, 120])
def test_jit_and_jit_grad_match_eager(seed):
    source = _program(seed)
    namespace = {"fnp": fnp, "W": _W}
    exec(source, namespace)
    f = namespace["f"]
    x = fnp.asarray(_X)
    value, gradient = fg.jit(f), fg.jit(fg.grad(f))
    for i in range(5):
        np.testing.assert_allclose(value(x, fnp.int32(i)), f(x, i), rtol=1e-12,
                                   err_msg=source)
        np.testing.assert_allclose(gradient(x, fnp.int32(i)), fg.grad(f)(x, i),
                                   rtol=1e-10, atol=1e-12, err_msg=source)
