"""Compiling a large program in parts, one ``iree-compile`` per core at the same time.

``iree-compile`` spends nearly all of its time in one thread, configuring and translating
the program's dispatches one after the other (about 0.1 s each on a 2-core Zen 3), so a
training step of some twenty dispatches takes seconds to compile cold while other cores
idle.  A program with enough dispatch-making operations is cut into consecutive parts of
about equal weight; the parts compile side by side and run one after the other, each
passing the values later parts need as device buffers.  Nothing changes but where the
program is cut: the operations, and so the results, are the same.  (A cut value is written
to memory once more, the cost of one buffer per carried value.)
"""

from __future__ import annotations

from funcgrad.core.ir import IR, Literal, Var

# operations that make a dispatch of their own (elementwise and shape operations fuse
# into these); loops, branches and calls count their bodies
_HEAVY = ("dot_general", "reduce_", "argmax", "argmin", "cum", "sort", "gather", "scatter",
          "fft", "cholesky", "triangular_solve", "lu", "qr", "svd", "eigh", "conv")

# below this many dispatch-making operations a program compiles in one piece: a part
# costs a fixed ~0.2-0.4 s (an empty module takes 0.16 s to compile) and a call
MIN_WEIGHT = 12


def weight(program: IR) -> int:
    """About how many dispatches ``program`` makes IREE compile."""
    return sum(_equation_weight(eqn) for eqn in program.equations)


def _equation_weight(eqn) -> int:
    inner = 0
    for value in eqn.params.values():
        for sub in value if isinstance(value, tuple) else (value,):
            if isinstance(sub, IR):
                inner += weight(sub)
    if inner:
        return inner
    return 1 if eqn.prim.name.startswith(_HEAVY) else 0


def plan(program: IR, workers: int) -> list[IR] | None:
    """``program`` cut into up to ``workers`` consecutive parts of about equal weight, or
    None when it is too light to be worth cutting.  Part ``k`` takes the program's inputs
    and the earlier parts' values it uses; it returns the values later parts (or the
    program's outputs) use; the last part returns the program's outputs."""
    if workers < 2 or program.const_vars or getattr(program, "_is_part", False):
        return None
    weights = [_equation_weight(eqn) for eqn in program.equations]
    total = sum(weights)
    if total < MIN_WEIGHT:
        return None
    count = min(workers, total // (MIN_WEIGHT // 2))
    before = [0]  # weight of the equations before each cut position
    for w in weights:
        before.append(before[-1] + w)
    carried = _carried_bytes(program)
    cuts = []
    for k in range(1, count):
        # near the k-th equal share of the weight, where the fewest bytes cross the cut
        lo, hi = total * (k / count - 0.1), total * (k / count + 0.1)
        window = [i for i in range(max(cuts, default=0) + 1, len(weights))
                  if lo <= before[i] <= hi]
        if window:
            cuts.append(min(window, key=lambda i: (carried[i], abs(before[i] - total * k
                                                                   / count))))
    if not cuts:
        return None
    bounds = [0, *cuts, len(program.equations)]
    return _parts(program, bounds)


def _carried_bytes(program: IR) -> list[int]:
    """For each cut position i (before equation i), the bytes of the values defined before
    it that equations after it, or the outputs, use (the program's inputs every part has)."""
    end = len(program.equations)
    last_use = _last_uses(program)
    defined = {v: i for i, eqn in enumerate(program.equations) for v in eqn.outputs}
    change = [0] * (end + 2)
    for v, d in defined.items():
        u = last_use.get(v, d)
        if u > d:  # crosses the cuts d+1 .. u
            size = v.aval.size * v.aval.dtype.itemsize
            change[d + 1] += size
            change[u + 1] -= size
    carried, running = [], 0
    for i in range(end + 1):
        running += change[i]
        carried.append(running)
    return carried


def _last_uses(program: IR) -> dict:
    """The index of the last equation using each value; the program's outputs count as used
    after the last equation."""
    last_use = {}
    for i, eqn in enumerate(program.equations):
        for v in eqn.inputs:
            if isinstance(v, Var):
                last_use[v] = i
    for v in program.outputs:
        if isinstance(v, Var):
            last_use[v] = len(program.equations)
    return last_use


def _parts(program: IR, bounds) -> list[IR]:
    equations = program.equations
    last_use = _last_uses(program)
    last = len(bounds) - 2
    parts, available = [], list(program.in_vars)
    for index in range(len(bounds) - 1):
        body = equations[bounds[index]:bounds[index + 1]]
        defined = [v for eqn in body for v in eqn.outputs]
        if index == last:
            outputs = list(program.outputs)
        else:  # what later parts (or the outputs) use
            outputs = [v for v in defined if last_use.get(v, -1) >= bounds[index + 1]]
        defined_here = set(defined)
        needed = {v for eqn in body for v in eqn.inputs if isinstance(v, Var)}
        needed |= {v for v in outputs if isinstance(v, Var) and v not in defined_here}
        part = IR([v for v in available if v in needed], body, outputs)
        part._is_part = True  # compiled as it is, not cut again
        parts.append(part)
        known = set(available)
        available = available + [v for v in outputs if isinstance(v, Var) and v not in known]
    return parts


class PipelineExecutable:
    """The executables of a program's parts, called one after the other: each gets the
    program's inputs and the earlier parts' results it takes (device buffers)."""

    def __init__(self, program: IR, parts: list[IR], executables):
        # where each value comes from: (0, i) argument i, (k + 1, j) output j of part k
        source = {v: (0, i) for i, v in enumerate(program.in_vars)}
        self.parts = []
        for k, (part, exe) in enumerate(zip(parts, executables, strict=True)):
            self.parts.append((exe, [source[v] for v in part.in_vars]))
            source.update({v: (k + 1, j) for j, v in enumerate(part.outputs)
                           if not isinstance(v, Literal)})
        # the run-time and host upload of the first part serve callers (benchmarks)
        self.rt = executables[0].rt
        self.to_device = executables[0].to_device

    def __call__(self, args):
        values = [list(args)]
        for exe, positions in self.parts:
            values.append(exe([values[stage][i] for stage, i in positions]))
        return values[-1]
