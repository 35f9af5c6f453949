"""Giving each repeated reference operand of a VM branch its own value (IREE 3.13 bug).

IREE 3.13's VM register allocator mishandles a branch that passes the same reference
twice, e.g. ``vm.br ^bb1(%buf, %buf : ...)``: when one occurrence is coalesced with its
block argument's register, the other is encoded as a MOVE out of that same register,
which clears it, and the coalesced block argument arrives null (IREE issue 24753, fix
proposed in IREE PR 24781; IREE 3.11 had no such bug but cannot link float64 math).  It
happens when several loop carries share a buffer, which IREE's stream allocation does on
its own (it packs a loop's starting values into one allocation), so funcgrad cannot avoid
it in the StableHLO it emits.  At run time the null buffer fails as
``OUT_OF_RANGE; indirect buffer reference slot 0 is out range``.

``compiler`` therefore compiles to the VM dialect, rewrites the branches here and
finishes the compile from there.  The rewrite hands the repeated occurrences a fresh
value that is the same reference, ``select(ref != null, ref, null)``, which IREE does not
fold: the allocator then gives it a register of its own and both block arguments receive
the buffer.

Example:
    >>> text = "    vm.br ^bb1(%a, %a : !vm.ref<!hal.buffer>, !vm.ref<!hal.buffer>)"
    >>> fixed, count = separate_repeated_branch_refs(text)
    >>> count
    1
    >>> fixed.splitlines()[-1].strip()
    'vm.br ^bb1(%a, %fg_repeated_ref1 : !vm.ref<!hal.buffer>, !vm.ref<!hal.buffer>)'
"""

from __future__ import annotations

import re

# the VM's branches (a stablehlo.case becomes a chain of vm.cond_br; a vm.br_table printed
# over several lines would be left as it is)
_BRANCH_OPS = ("vm.br ", "vm.cond_br ", "vm.br_table ")
# one successor with operands: ^bb3(%a, %b : i32, !vm.ref<!hal.buffer>)
_SUCCESSOR = re.compile(r"(\^[\w.$-]+)\(([^()]*?) : ([^()]*)\)")


def _split_types(text: str) -> list[str]:
    """The comma-separated types of a successor's operand list (commas inside ``<>``,
    as in ``!vm.ref<!vm.list<?>>``, do not split)."""
    types, depth, current = [], 0, []
    for ch in text:
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            types.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        types.append("".join(current).strip())
    return types


def separate_repeated_branch_refs(vm_text: str) -> tuple[str, int]:
    """Rewrite VM-dialect assembly so that no branch passes one reference value to two
    block arguments of the same successor; returns the text and how many operands changed.
    """
    out: list[str] = []
    count = 0
    for line in vm_text.split("\n"):
        op = line.lstrip()
        if not op.startswith(_BRANCH_OPS):
            out.append(line)
            continue
        indent = line[: len(line) - len(op)]
        copies: list[str] = []
        pieces, end = [], 0
        for match in _SUCCESSOR.finditer(line):
            pieces += [line[end:match.start()],
                       _separate(match, indent, copies, count + len(copies) // 3)]
            end = match.end()
        count += len(copies) // 3
        out.extend(copies)
        out.append("".join(pieces) + line[end:])
    return "\n".join(out), count


def _separate(match: re.Match, indent: str, copies: list[str], numbered: int) -> str:
    """One successor's operands with each repeated reference replaced by a new value; the
    ops defining those values are appended to ``copies`` (three per value, names numbered
    after ``numbered``)."""
    operands = [o.strip() for o in match.group(2).split(",")]
    types = _split_types(match.group(3))
    if len(operands) != len(types):  # not the syntax this expects: leave it
        return match.group(0)
    seen = set()
    for i, (value, kind) in enumerate(zip(operands, types, strict=True)):
        if not kind.startswith("!vm.ref"):
            continue
        if value in seen:
            numbered += 1
            name = f"%fg_repeated_ref{numbered}"
            copies.extend([
                f"{indent}{name}_nonnull = vm.cmp.nz.ref {value} : {kind}",
                f"{indent}{name}_null = vm.const.ref.zero : {kind}",
                f"{indent}{name} = vm.select.ref {name}_nonnull, {value}, {name}_null : {kind}",
            ])
            operands[i] = name
        seen.add(value)
    return f"{match.group(1)}({', '.join(operands)} : {match.group(3)})"
