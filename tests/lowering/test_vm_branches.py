"""VM branches that pass one buffer twice (IREE 3.13 nulls one: funcgrad.lowering.vm_branches).

The rewrite is checked on VM assembly, and end to end on the loop programs that failed at
run time with "indirect buffer reference slot 0 is out range" before it (random-program
sweep seeds 7192 and 7264, minimized).
"""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.lowering.vm_branches import separate_repeated_branch_refs

BUF = "!vm.ref<!hal.buffer>"


def test_a_repeated_buffer_gets_its_own_value():
    line = f"      vm.br ^bb1(%c0, %ref_12, %ref_12, %c0 : i32, {BUF}, {BUF}, i32)"
    text, count = separate_repeated_branch_refs(line)
    lines = text.splitlines()
    assert count == 1
    assert lines[-1] == (f"      vm.br ^bb1(%c0, %ref_12, %fg_repeated_ref1, %c0 : i32, {BUF}, "
                         f"{BUF}, i32)")  # the repeated i32 is left alone
    assert lines[:-1] == [
        f"      %fg_repeated_ref1_nonnull = vm.cmp.nz.ref %ref_12 : {BUF}",
        f"      %fg_repeated_ref1_null = vm.const.ref.zero : {BUF}",
        f"      %fg_repeated_ref1 = vm.select.ref %fg_repeated_ref1_nonnull, %ref_12, "
        f"%fg_repeated_ref1_null : {BUF}",
    ]


def test_each_successor_of_a_conditional_branch_is_rewritten_on_its_own():
    fence = "!vm.ref<!hal.fence>"
    line = (f"vm.cond_br %c, ^bb2(%a, %a, %a : {BUF}, {BUF}, {BUF}), "
            f"^bb3(%a, %f : {BUF}, {fence})")
    text, count = separate_repeated_branch_refs(line)
    assert count == 2
    assert text.splitlines()[-1] == (
        f"vm.cond_br %c, ^bb2(%a, %fg_repeated_ref1, %fg_repeated_ref2 : {BUF}, {BUF}, {BUF}), "
        f"^bb3(%a, %f : {BUF}, {fence})")


def test_nested_types_and_distinct_operands_are_left_as_they_are():
    lists = "!vm.ref<!vm.list<!vm.ref<?>>>"
    text = (f"  vm.br ^bb4(%l, %m : {lists}, {lists})\n"
            f"  vm.call @hal.command_buffer.copy_buffer(%cb, %b, %b) : ({BUF}, {BUF}, {BUF})\n"
            "  vm.br ^bb5")
    assert separate_repeated_branch_refs(text) == (text, 0)


KM = np.linspace(-1.0, 1.0, 30).reshape(6, 5)
X = np.array([0.3, -0.7, 1.1, 0.45, -0.2])


def _scan_of_a_cond(x):
    """Sweep seed 7192: the carry starts from x and passes through a cond."""
    def body(carry, xi):
        c = fg.cond(fnp.sum(fnp.exp(0.1 * fnp.tanh(carry))) > -0.22,
                    lambda a: a, lambda a: fnp.sin(a), carry)
        return c, fnp.exp(0.1 * fnp.tanh(fnp.tanh(xi[4])))
    c, ys = fg.scan(body, x, fg.tensor(KM[:2]))
    return fnp.sum(0.76 * c + 0.58 * fnp.sum(ys))


def _fori_of_a_cond_and_checkpoint(x):
    """Sweep seed 7264: three carries, one reset to a constant by a cond."""
    s0 = fg.tensor(np.float64(0.7))

    def body(i, carry):
        c0, c1, c2 = carry
        c0 = fg.cond(fnp.sum(c2 * fnp.tanh(x)) > -0.49, lambda a: s0, lambda a: a, c0)
        c0 = fg.checkpoint(lambda a, b: b * fnp.tanh(fnp.sin(x[3])))(c0, c0)
        c2 = x * c1 * fnp.tanh(x) * (x[3] + c0)
        return c0, c1, c2
    c0, _, c2 = fg.fori_loop(0, 3, body, (x[3], fnp.sum(x), fg.tensor(np.zeros(5))))
    return fnp.sum(1.49 * c0 + 1.23 * c2)


@pytest.mark.parametrize("f", [_scan_of_a_cond, _fori_of_a_cond_and_checkpoint])
@pytest.mark.parametrize("mode", ["jit", "jit(grad)", "grad(jit)"])
def test_loops_whose_carries_share_a_buffer_run(f, mode):
    x = fg.tensor(X)
    reference = (f if mode == "jit" else fg.grad(f))(x)
    compiled = {"jit": fg.jit(f), "jit(grad)": fg.jit(fg.grad(f)),
                "grad(jit)": fg.grad(fg.jit(f))}[mode]
    np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(reference),
                               rtol=1e-12, atol=1e-12)


def test_a_rewrite_iree_rejects_falls_back_to_the_branches_as_they_were(
        monkeypatch, tmp_path, caplog):
    import funcgrad.lowering.vm_branches as vm_branches
    from funcgrad.lowering import compiler

    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_MEMORY_CACHE", {})  # compiled here, not found
    monkeypatch.setattr(vm_branches, "separate_repeated_branch_refs",
                        lambda text: (text + "\nthis is not MLIR\n", 1))
    f = fg.jit(lambda x: fg.fori_loop(0, 3, lambda i, c: c * 2.0 + 1.0, x))
    with caplog.at_level("INFO", logger="funcgrad.jit"):
        np.testing.assert_array_equal(f(fg.tensor([1.0, 2.0])).numpy(), [15.0, 23.0])
    assert "rejected the rewritten VM branches" in caplog.text
