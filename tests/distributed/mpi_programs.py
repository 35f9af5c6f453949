"""Programs the distributed tests launch under ``mpiexec``; each rank pickles what it saw.

Run as ``mpiexec -n 2 python mpi_programs.py NAME OUT_DIR``; rank ``r`` writes
``OUT_DIR/NAME.r.pkl``.  ``make_tree`` is imported by the tests too, to compute the
expected results from every rank's inputs.
"""

import os
import pickle
import sys
import time

import numpy as np

import funcgrad as fg

REDUCE_DTYPES = {
    "sum": ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8",
            "complex64"],
    "mean": ["float32", "float64", "float16", "bfloat16", "complex64"],
    "max": ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"],
}
SHAPES = [(3, 4), (5,), (), (2, 1, 3)]


def rank_values(rank: int, dtype: str, shape: tuple) -> np.ndarray:
    """Rank ``rank``'s leaf of ``dtype`` and ``shape`` (distinct per rank, exact in bf16)."""
    n = int(np.prod(shape))
    base = (np.arange(n) % 7 + 1).reshape(shape)
    if dtype == "bool":
        return (base + rank) % 2 == 0
    if dtype.startswith("complex"):
        return (base * (rank + 1) + 1j * (rank - base)).astype(dtype)
    if dtype == "bfloat16":
        return (base * (rank + 1) - rank * 2).astype(fg.bfloat16)
    return (base * (rank + 1) + (rank % 3)).astype(dtype)


def make_tree(rank: int, dtypes: list[str]) -> dict:
    """A nested pytree with one leaf per dtype (cycling through ``SHAPES``) and a None."""
    leaves = {d: rank_values(rank, d, SHAPES[i % len(SHAPES)]) for i, d in enumerate(dtypes)}
    names = sorted(leaves)
    half = len(names) // 2
    return {"layer": [{k: leaves[k] for k in names[:half]}, None],
            "head": tuple(leaves[k] for k in names[half:])}


def as_tensors(tree):
    return fg.tree.map(fg.tensor, tree)


def as_arrays(tree):
    """Host copies (dtype and shape included), after checking every leaf is a Tensor."""
    assert all(type(t) is fg.Tensor for t in fg.tree.leaves(tree))
    return fg.tree.map(lambda t: np.asarray(t).copy(), tree)


def collectives(dist):
    r = dist.rank()
    out = {"rank": r, "world_size": dist.world_size()}
    for op, dtypes in REDUCE_DTYPES.items():
        out[f"all_reduce_{op}"] = as_arrays(dist.all_reduce(as_tensors(make_tree(r, dtypes)),
                                                            op=op))
    every = sorted(set(sum(REDUCE_DTYPES.values(), [])))
    for root in (0, 1):
        out[f"broadcast_{root}"] = as_arrays(dist.broadcast(as_tensors(make_tree(r, every)),
                                                            root=root))
    out["all_gather"] = as_arrays(dist.all_gather(as_tensors(make_tree(r, every))))
    # non-Tensor leaves (NumPy arrays, Python numbers) are accepted and come back as Tensors
    out["numpy_leaves"] = as_arrays(dist.all_reduce({"x": np.float32(r), "y": [1.0 * r]}))
    # max with a NaN on one rank: NaN everywhere, the same on every rank
    odd = np.array([np.nan if r == 0 else 1.0, 2.0, -0.0 if r == 0 else 0.0], np.float32)
    out["max_nan"] = as_arrays(dist.all_reduce(fg.tensor(odd), op="max"))
    # barrier: rank 1 arrives late; nobody leaves before it arrived
    if r == 1:
        time.sleep(0.5)
    out["barrier_enter"] = time.time()
    dist.barrier()
    out["barrier_leave"] = time.time()
    return out


MISMATCHES = {
    "shape": lambda r, dist: dist.all_reduce({"w": fg.ones((3, 2 + r))}),
    "dtype": lambda r, dist: dist.all_reduce(
        {"w": fg.ones(3, dtype=fg.float32 if r == 0 else fg.float64)}),
    "structure": lambda r, dist: dist.broadcast(
        {"w": fg.ones(3)} if r == 0 else {"w": fg.ones(3), "b": fg.zeros(3)}),
    "op": lambda r, dist: dist.all_reduce(fg.ones(3), op="sum" if r == 0 else "max"),
    "collective": lambda r, dist: dist.barrier() if r == 0 else dist.all_gather(fg.ones(2)),
    "root": lambda r, dist: dist.broadcast(fg.ones(2), root=r),
    "bad_leaf": lambda r, dist: dist.all_gather({"w": fg.ones(2), "s": "text" if r else 1.0}),
    # failures on one rank only, caught there: the other rank must not wait forever
    "overflow_leaf": lambda r, dist: dist.all_reduce({"n": 2**40 if r else 1}),
    "bad_op": lambda r, dist: dist.all_reduce(fg.ones(2), op="avg" if r else "sum"),
    "bad_root": lambda r, dist: dist.broadcast(fg.ones(2), root=-1 if r else 0),
}


def mismatch(dist):
    r = dist.rank()
    out = {}
    for name, call in MISMATCHES.items():
        try:
            call(r, dist)
            out[name] = None
        except (ValueError, TypeError, OverflowError) as err:
            out[name] = f"{type(err).__name__}: {err}"
    # the world still works after every mismatch
    out["after"] = float(dist.all_reduce(fg.tensor(1.0)))
    return out


def crash(dist):
    """Rank 1 dies with an uncaught exception while rank 0 waits in a collective."""
    if dist.rank() == 1:
        raise RuntimeError("rank 1 fails on purpose")
    dist.barrier()
    return {"unreachable": True}


def failing_exit(dist):
    """Rank 1 calls sys.exit with a message while rank 0 waits in a collective."""
    if dist.rank() == 1:
        sys.exit("rank 1 exits on purpose")
    dist.barrier()
    return {"unreachable": True}


def caught_exit(dist):
    """Rank 1 catches its own SystemExit and goes on: nothing is aborted."""
    if dist.rank() == 1:
        try:
            sys.exit(3)
        except SystemExit:
            pass
    dist.barrier()
    return {"done": True}


def main():
    name, out_dir = sys.argv[1], sys.argv[2]
    from funcgrad import distributed as dist

    dist.init()
    result = globals()[name](dist)
    with open(os.path.join(out_dir, f"{name}.{dist.rank()}.pkl"), "wb") as f:
        pickle.dump(result, f)


if __name__ == "__main__":
    main()
