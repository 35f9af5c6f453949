"""einsum: Einstein summation lowered to diagonals, sums and pairwise dot_generals.

Each operand first loses its repeated labels (diagonals) and the labels nobody else
needs (sums); operands are then contracted two at a time (greedily, smallest result
first, or left to right with ``optimize=False``) by ``dot_general``, whose batch axes
are the labels both share and still need; a final transpose orders the output.
"""

from __future__ import annotations

import math
import string

from funcgrad.core import dtypes
from funcgrad.core.prims.dot import dot_general
from funcgrad.core.prims.elementwise import convert_element_type
from funcgrad.core.prims.reductions import reduce_sum
from funcgrad.core.prims.structural import broadcast_in_dim, transpose
from funcgrad.numpy._util import promote

__all__ = ["einsum"]

_LETTERS = set(string.ascii_letters)


def einsum(subscripts, *operands, optimize="greedy", precision=None,
           preferred_element_type=None):
    """Einstein summation over ``operands`` as ``numpy.einsum``.

    ``subscripts`` like ``"ij,jk->ik"`` (explicit output), ``"ij,jk"`` (implicit: labels
    seen once, sorted), with ``...`` for broadcast axes and repeated labels for diagonals;
    the interleaved form ``einsum(x, [0, 1], y, [1, 2], [0, 2])`` works too.
    ``optimize=False`` contracts left to right, anything else greedily.

    >>> fnp.einsum("ij,jk->ik", fnp.ones((2, 3)), fnp.ones((3, 4))).shape
    (2, 4)
    >>> fnp.einsum("ii", fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor(5., dtype=float32)
    """
    del precision  # accepted for JAX compatibility; eager products are exact
    if not isinstance(subscripts, str):
        subscripts, operands = _from_interleaved(subscripts, operands)
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    operands = promote("einsum", *operands)
    if operands[0].dtype == dtypes.bool_ and preferred_element_type is None:
        # as NumPy: products are ANDs and sums ORs; counted in int32 (a bool reduce_sum
        # does not exist under jit)
        counts = einsum(subscripts, *[convert_element_type(x, dtypes.int32) for x in operands],
                        optimize=optimize)
        return convert_element_type(counts, dtypes.bool_)
    if preferred_element_type is not None:
        # accumulate in the wider type (int8 products summed in int32), not cast afterwards
        operands = [convert_element_type(x, preferred_element_type) for x in operands]
    inputs, output = _parse(subscripts, operands)
    terms = [_prepare(x, labels, inputs, i, output) for i, (x, labels) in
             enumerate(zip(operands, inputs, strict=True))]
    terms = _broadcast_shared(terms)
    while len(terms) > 1:
        i, j = (0, 1) if optimize is False else _greedy_pair(terms, output)
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        needed = set(output).union(*(labels for _, labels in rest))
        terms = [_contract(terms[i], terms[j], needed)] + rest
    x, labels = terms[0]
    x, labels = _sum_out(x, labels, set(output))
    return transpose(x, [labels.index(label) for label in output])


def _from_interleaved(first, rest):
    """``(x, [0, 1], y, [1, 2], [0, 2])`` as a subscripts string and the operands."""
    args = [first, *rest]
    output = args.pop() if len(args) % 2 else None
    operands, specs = args[0::2], args[1::2]
    letters = string.ascii_letters

    def spell(spec):
        return "".join("..." if s is Ellipsis else letters[int(s)] for s in spec)

    subscripts = ",".join(spell(s) for s in specs)
    if output is not None:
        subscripts += "->" + spell(output)
    return subscripts, tuple(operands)


def _parse(subscripts, operands):
    """Labels of each operand and of the output, with ``...`` spelled out."""
    subscripts = subscripts.replace(" ", "")
    explicit = "->" in subscripts
    lhs, out = subscripts.split("->", 1) if explicit else (subscripts, None)
    specs = lhs.split(",")
    if len(specs) != len(operands):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(specs)} operands, got "
                         f"{len(operands)}")
    ellipsis_rank = 0
    inputs = []
    for spec, x in zip(specs, operands, strict=True):
        labels = _labels(subscripts, spec)
        named = sum(1 for label in labels if label != "...")
        rank = x.ndim - named
        if rank < 0 or (rank > 0 and "..." not in labels):
            raise ValueError(f"einsum: operand of shape {x.shape} does not match subscripts "
                             f"{spec!r} ({named} labels for {x.ndim} axes)")
        ellipsis_rank = max(ellipsis_rank, rank if "..." in labels else 0)
        inputs.append((labels, rank))
    # broadcast axes get private labels, right-aligned across operands as NumPy does
    hidden = [chr(0x100 + k) for k in range(ellipsis_rank)]
    expanded = []
    for labels, rank in inputs:
        dots = hidden[ellipsis_rank - rank:] if "..." in labels else []
        expanded.append(_expand(labels, dots))
    if out is None:
        counts = {}
        for labels in expanded:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        output = hidden + sorted(label for label, c in counts.items()
                                 if c == 1 and label in _LETTERS)
    else:
        output = _expand(_labels(subscripts, out), hidden)
        if len(set(output)) != len(output):
            raise ValueError(f"einsum: output subscripts {out!r} repeat a label")
        seen = set().union(*expanded)
        for label in output:
            if label not in seen:
                raise ValueError(f"einsum: output label {label!r} in {subscripts!r} appears in "
                                 "no input")
    return expanded, output


def _labels(subscripts, spec):
    labels, i = [], 0
    while i < len(spec):
        if spec.startswith("...", i):
            if "..." in labels:
                raise ValueError(f"einsum: more than one '...' in {spec!r}")
            labels.append("...")
            i += 3
        elif spec[i] in _LETTERS:
            labels.append(spec[i])
            i += 1
        else:
            raise ValueError(f"einsum: invalid subscript {spec[i]!r} in {subscripts!r} (labels "
                             "are letters, '...' broadcasts)")
    return labels


def _expand(labels, dots):
    out = []
    for label in labels:
        out.extend(dots if label == "..." else [label])
    return out


def _prepare(x, labels, inputs, index, output):
    """Take diagonals of repeated labels, then sum labels used nowhere else."""
    labels = list(labels)
    for label in dict.fromkeys(labels):
        while labels.count(label) > 1:
            first = labels.index(label)
            second = labels.index(label, first + 1)
            if x.shape[first] != x.shape[second]:
                raise ValueError(f"einsum: repeated label {label!r} has sizes "
                                 f"{x.shape[first]} and {x.shape[second]} in shape {x.shape}")
            from funcgrad.numpy._shape import diagonal

            x = diagonal(x, 0, first, second)
            labels = [lb for k, lb in enumerate(labels) if k not in (first, second)] + [label]
    others = set(output).union(*(set(other) for k, other in enumerate(inputs) if k != index))
    return _sum_out(x, labels, others)


def _sum_out(x, labels, needed):
    axes = tuple(k for k, label in enumerate(labels) if label not in needed)
    if not axes:
        return x, labels
    return reduce_sum(x, axes), [label for label in labels if label in needed]


def _broadcast_shared(terms):
    """Check label sizes agree, broadcasting size-1 axes (NumPy's rule)."""
    sizes = {}
    for x, labels in terms:
        for size, label in zip(x.shape, labels, strict=True):
            known = sizes.get(label, 1)
            if size != 1 and known != 1 and size != known:
                shapes = ", ".join(str(t[0].shape) for t in terms)
                raise ValueError(f"einsum: label {_show(label)} has sizes {known} and {size} "
                                 f"(operand shapes {shapes})")
            sizes[label] = known if size == 1 else size  # a 0 beats a 1, as in NumPy
    out = []
    for x, labels in terms:
        shape = tuple(sizes[label] for label in labels)
        if shape != x.shape:
            from funcgrad.core.prims.structural import reshape

            kept = tuple(k for k, d in enumerate(x.shape) if d != 1)
            squeezed = reshape(x, tuple(x.shape[k] for k in kept))
            x = broadcast_in_dim(squeezed, shape, kept)
        out.append((x, labels))
    return out


def _show(label):
    return repr(label) if label in _LETTERS else "'...'"


def _result_labels(a_labels, b_labels, needed):
    batch = [label for label in a_labels if label in b_labels and label in needed]
    free_a = [label for label in a_labels if label not in b_labels]
    free_b = [label for label in b_labels if label not in a_labels]
    return batch + free_a + free_b


def _size(term_a, term_b, needed):
    sizes = dict(zip(term_a[1], term_a[0].shape, strict=True))
    sizes.update(zip(term_b[1], term_b[0].shape, strict=True))
    return math.prod(sizes[label] for label in _result_labels(term_a[1], term_b[1], needed))


def _greedy_pair(terms, output):
    """The pair whose contraction gives the smallest result (ties: leftmost)."""
    best, best_size = (0, 1), None
    for i in range(len(terms)):
        for j in range(i + 1, len(terms)):
            rest = [t for k, t in enumerate(terms) if k not in (i, j)]
            needed = set(output).union(*(labels for _, labels in rest))
            size = _size(terms[i], terms[j], needed)
            if best_size is None or size < best_size:
                best, best_size = (i, j), size
    return best


def _contract(term_a, term_b, needed):
    (a, a_labels), (b, b_labels) = term_a, term_b
    # labels only one side has and nobody needs were summed in _prepare; sum any left
    a, a_labels = _sum_out(a, a_labels, needed | set(b_labels))
    b, b_labels = _sum_out(b, b_labels, needed | set(a_labels))
    empty = {label for label, size in zip(a_labels, a.shape, strict=True)
             if size == 0 and label in b_labels and label not in needed}
    if empty:
        # a sum over nothing: zeros of each side's rest, then a contraction-free product
        # (a dot_general contracting a size-0 axis does not compile in IREE)
        a, a_labels = _sum_out(a, a_labels, set(a_labels) - empty)
        b, b_labels = _sum_out(b, b_labels, set(b_labels) - empty)
    shared = [label for label in a_labels if label in b_labels]
    contract = [label for label in shared if label not in needed]
    batch = [label for label in shared if label in needed]
    numbers = ((tuple(a_labels.index(x) for x in contract),
                tuple(b_labels.index(x) for x in contract)),
               (tuple(a_labels.index(x) for x in batch),
                tuple(b_labels.index(x) for x in batch)))
    out = dot_general(a, b, numbers)
    return out, _result_labels(a_labels, b_labels, needed)
