"""funcgrad.distributed: collectives on pytrees of Tensors across MPI processes (mpi4py).

Launch one process per worker with the MPI launcher; every process runs the same script::

    mpiexec -n 2 python train.py

Run without ``mpiexec``, a script is a world of one process (rank 0 of 1) and every
collective returns its input.  The collectives run on the host: each call flattens the
pytree, packs the leaves into one contiguous buffer per dtype and makes one MPI call per
buffer.  Before moving data, the ranks compare a digest of the tree's structure, shapes
and dtypes (and of the call itself); when they differ every rank raises the same
``ValueError`` naming what each rank passed, instead of hanging or mixing up buffers.

Collectives are host-side operations: call them outside ``fg.jit``/``grad``/``vmap``
(on the gradients a jitted step returns, say).

>>> from funcgrad import distributed as dist
>>> dist.init()
>>> grads = dist.all_reduce({"w": fg.ones(3)}, op="mean")   # the mean over all ranks
>>> params = dist.broadcast({"w": fg.zeros(3)}, root=0)    # rank 0's values everywhere
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import sys
import time
import traceback
from typing import Any

import numpy as np

from funcgrad import tree as _tree
from funcgrad.core import interpreter as _interp
from funcgrad.core.tensor import Tensor, aligned_copy, tensor, wrap
from funcgrad.transforms.tracing import TraceInterpreter

__all__ = ["all_gather", "all_reduce", "barrier", "broadcast", "init", "rank", "world_size"]

_INSTALL_HINT = "pip install funcgrad[distributed]  (mpi4py and the MPICH wheel)"

_comm = None  # mpi4py's COMM_WORLD once init() ran
_mpi = None  # the mpi4py.MPI module

# dtypes MPI reduces natively (mpi4py maps them from the NumPy buffer's type code);
# other floating types (float16, bfloat16) are reduced in float32 and cast back
_NATIVE = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                 np.uint32, np.uint64, np.float32, np.float64,
                                 np.complex64, np.complex128)}
_OPS = ("sum", "mean", "max")
_failed_exit = None  # the status of a failing sys.exit() call, to abort every rank with


# --- the world ------------------------------------------------------------------------


def init(*, abort_on_error: bool = True) -> None:
    """Start MPI (through mpi4py) for this process; later calls do nothing.

    Every other function here calls it on first use, so calling it yourself is optional.
    Without ``mpiexec`` the process is a world of one.

    Arguments:
        abort_on_error: in a world of more than one process, make an uncaught exception
            or a ``sys.exit()`` with a failing status abort every rank (``MPI_Abort``, as
            ``python -m mpi4py`` does), so that one failing rank cannot leave the others
            waiting in a collective forever.

    >>> from funcgrad import distributed as dist
    >>> dist.init(); dist.rank(), dist.world_size()   # without mpiexec
    (0, 1)
    """
    global _comm, _mpi
    if _comm is not None:
        return
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise ImportError(
            f"funcgrad.distributed needs mpi4py and an MPI library: {_INSTALL_HINT}; "
            f"importing mpi4py failed with: {err}") from err
    _mpi, _comm = MPI, MPI.COMM_WORLD
    _hide_launcher_from_iree()
    if abort_on_error and _comm.Get_size() > 1:
        _install_abort_hook()


# IREE's run-time sees these (set by mpiexec) and then wants to load libmpi for a
# collectives channel of its own, failing to create the CPU device when it cannot; funcgrad
# never runs collectives inside compiled code, so hide them once MPI has read them
_IREE_MPI_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPIEXEC_HOSTNAME")


def _hide_launcher_from_iree() -> None:
    for name in _IREE_MPI_VARIABLES:
        os.environ.pop(name, None)


def _install_abort_hook() -> None:
    previous = sys.excepthook
    python_exit = sys.exit

    def abort_all_ranks(kind, value, tb):
        sys.stdout.flush()
        if previous is sys.__excepthook__:
            # the whole report in one write: the launcher forwards output in chunks, and the
            # abort could cut a line-by-line traceback off before its message
            sys.stderr.flush()
            report = "".join(traceback.format_exception(kind, value, tb))
            os.write(2, report.encode("utf-8", "replace"))
        else:
            previous(kind, value, tb)
            sys.stderr.flush()
        _abort_all_ranks(1)

    # Python never shows a SystemExit to sys.excepthook: a failing sys.exit() on one rank
    # is remembered here and aborts every rank once this one has finished exiting
    def exit_aborting_on_failure(status=None):
        global _failed_exit
        if status not in (None, 0):
            _failed_exit = status
        python_exit(status)

    def abort_after_failed_exit():
        if _failed_exit is not None:
            _abort_all_ranks(_failed_exit if isinstance(_failed_exit, int) else 1)

    sys.excepthook = abort_all_ranks
    sys.exit = exit_aborting_on_failure
    atexit.register(abort_after_failed_exit)


def _abort_all_ranks(status: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    # the launcher forwards output asynchronously and the abort kills every rank: an
    # immediate abort lost the whole report now and then (an empty stderr in a test)
    time.sleep(0.3)
    _comm.Abort(status)


def rank() -> int:
    """This process's index in the world, from 0 to ``world_size() - 1``.

    >>> from funcgrad import distributed as dist
    >>> if dist.rank() == 0: print("only once")
    only once
    """
    init()
    return _comm.Get_rank()


def world_size() -> int:
    """The number of processes (``N`` of ``mpiexec -n N``; 1 without ``mpiexec``).

    >>> from funcgrad import distributed as dist
    >>> batch = fnp.arange(6)
    >>> batch[dist.rank()::dist.world_size()]   # this rank's share: all of it in a world of one
    tensor([0, 1, 2, 3, 4, 5], dtype=int32)
    """
    init()
    return _comm.Get_size()


def barrier() -> None:
    """Wait until every rank has called ``barrier()``.

    A rank that reaches another collective instead raises (on every rank) rather than hang.

    >>> from funcgrad import distributed as dist
    >>> dist.barrier()
    """
    init()
    _agree("barrier()", _staged_call("barrier()") or [], _tree.structure(None))


# --- collectives --------------------------------------------------------------------------


def all_reduce(tree: Any, op: str = "sum") -> Any:
    """Combine every rank's ``tree`` leaf by leaf; every rank gets the result.

    Arguments:
        tree: a pytree of Tensors (or arrays/numbers), with the same structure, shapes
            and dtypes on every rank.
        op: ``"sum"``, ``"mean"`` (the sum divided by ``world_size()``; inexact dtypes
            only: for integers use ``"sum"`` and divide as you need) or ``"max"``
            (real dtypes; for bool leaves it is a logical or).  ``float16`` and
            ``bfloat16`` leaves are combined in float32 and rounded once at the end.

    Returns a pytree of Tensors of the same structure, shapes and dtypes.

    >>> from funcgrad import distributed as dist
    >>> grads = dist.all_reduce({"w": fg.ones(3)}, op="mean")
    >>> dist.all_reduce(fg.tensor(dist.rank()), op="sum")   # 0 + 1 = 1 on two ranks
    tensor(0, dtype=int32)
    """
    init()
    name = f"all_reduce(op={op!r})"
    leaves, treedef, tensors = _flatten(name, tree)
    if op not in _OPS:  # reported on every rank, like any local failure (see _flatten)
        leaves = _Failure(ValueError, f"all_reduce: op must be one of {_OPS}, got {op!r}")
    _agree(name, leaves, treedef)
    reduce_dtypes = [_reduce_dtype(name, op, a.dtype) for a in leaves]
    if _comm.Get_size() == 1:
        return _tree.unflatten(treedef, tensors)
    mpi_op = _mpi.MAX if op == "max" else _mpi.SUM
    out = [None] * len(leaves)
    for dtype, positions in _group(reduce_dtypes).items():
        buffer = _pack([leaves[i] for i in positions], dtype)
        if op == "max" and np.dtype(dtype).kind == "f":
            # MPI's MAX keeps whichever operand its comparison favours, so with a NaN (or
            # -0.0 against 0.0) ranks could end with different values: gather every rank's
            # values and take np.maximum in rank order, the same on every rank, NaN-first
            gathered = np.empty((_comm.Get_size(), *buffer.shape), buffer.dtype)
            _comm.Allgather(buffer, gathered)
            buffer = np.maximum.reduce(gathered, axis=0)
        else:
            _comm.Allreduce(_mpi.IN_PLACE, buffer, op=mpi_op)
        if op == "mean":
            buffer /= _comm.Get_size()
        for i, part in zip(positions, _unpack(buffer, [leaves[i] for i in positions]),
                           strict=True):
            out[i] = part
    return _rebuild(treedef, out, tensors)


def broadcast(tree: Any, root: int = 0) -> Any:
    """Every rank gets rank ``root``'s ``tree`` (the others' values are replaced).

    Every rank passes a tree with the same structure, shapes and dtypes (for example
    its own freshly initialized parameters); one MPI call moves all the leaves.

    Arguments:
        tree: a pytree of Tensors.
        root: the rank whose values are sent.

    >>> from funcgrad import distributed as dist
    >>> params = dist.broadcast({"w": fg.random.normal(fg.random.key(dist.rank()), (3,))})
    """
    init()
    size = _comm.Get_size()
    valid_root = (isinstance(root, (int, np.integer)) and not isinstance(root, bool)
                  and 0 <= root < size)
    name = f"broadcast(root={int(root) if valid_root else root!r})"
    leaves, treedef, tensors = _flatten(name, tree)
    if not valid_root:  # reported on every rank, like any local failure (see _flatten)
        leaves = _Failure(ValueError,
                          f"broadcast: root must be a rank in [0, {size}), got {root!r}")
    _agree(name, leaves, treedef)
    if size == 1:
        return _tree.unflatten(treedef, tensors)
    buffer = (_pack_bytes(leaves) if _comm.Get_rank() == root
              else np.empty(sum(a.nbytes for a in leaves), np.uint8))
    _comm.Bcast(buffer, root=int(root))
    return _rebuild(treedef, _unpack_bytes(buffer, leaves), tensors)


def all_gather(tree: Any) -> Any:
    """Stack every rank's ``tree`` along a new leading axis of size ``world_size()``.

    Leaf ``x`` of shape ``s`` becomes a Tensor of shape ``(world_size(), *s)`` whose
    entry ``i`` is rank ``i``'s ``x``; every rank gets the same result.

    >>> from funcgrad import distributed as dist
    >>> dist.all_gather({"r": fg.tensor(dist.rank())})["r"]   # [0, 1] on two ranks
    tensor([0], dtype=int32)
    """
    init()
    name = "all_gather()"
    leaves, treedef, tensors = _flatten(name, tree)
    _agree(name, leaves, treedef)
    size = _comm.Get_size()
    send = _pack_bytes(leaves)
    if size == 1:
        received = send.reshape(1, -1)
    else:
        received = np.empty((size, send.size), np.uint8)
        _comm.Allgather(send, received)
    out, offset = [], 0
    for a in leaves:
        block = received[:, offset:offset + a.nbytes]
        out.append(aligned_copy(block).view(a.dtype).reshape((size, *a.shape)))
        offset += a.nbytes
    return _rebuild(treedef, out, tensors)


# --- flattening and the agreement check ---------------------------------------------------


def _flatten(name: str, tree: Any) -> tuple[list[np.ndarray], Any, list[Tensor]]:
    """Host NumPy views of ``tree``'s leaves, its treedef, and the leaves as Tensors.

    A failure here (a traced leaf, say) is not raised yet: the other ranks are about to
    wait in the agreement check, so the error travels through it and every rank raises.
    """
    paths_and_leaves, treedef = _tree.flatten_with_path(tree)
    staged = _staged_call(name)
    if staged is not None:
        return staged, treedef, []
    arrays, tensors = [], []
    for path, leaf in paths_and_leaves:
        if isinstance(leaf, Tensor) and type(leaf) is not Tensor:
            return _Failure(TypeError,
                f"{name}: leaf {_path_text(path)} is a traced value; collectives run on "
                "the host, so call them outside fg.jit/grad/vmap (on the values a jitted "
                "function returns)"), treedef, []
        try:
            t = leaf if isinstance(leaf, Tensor) else tensor(leaf)
        except Exception as err:  # noqa: BLE001 - whatever it is, every rank must hear of it
            kind = OverflowError if isinstance(err, OverflowError) else TypeError
            return _Failure(kind, f"{name}: leaf {_path_text(path)} is not a tensor "
                            f"({type(leaf).__name__}): {err}"), treedef, []
        arrays.append(np.asarray(t))
        tensors.append(t)
    return arrays, treedef, tensors


def _staged_call(name: str) -> _Failure | None:
    """A failure when called while a program is being recorded (jit, a loop body).

    Such a trace runs the Python once and the recorded program many times: a collective
    there would communicate once, while tracing, and never when the program runs.
    """
    interpreter = _interp.current()
    while interpreter is not None:
        if isinstance(interpreter, TraceInterpreter) and interpreter.stage_all:
            return _Failure(TypeError,
                f"{name} called inside {interpreter.name}: a recorded program runs it "
                "only once, while tracing; collectives run on the host, so call them "
                "outside fg.jit and loop bodies (on the values a jitted function returns)")
        interpreter = interpreter.parent
    return None


class _Failure:
    """A local error to report to every rank (instead of a list of leaves)."""

    def __init__(self, kind: type[Exception], message: str):
        self.kind, self.message = kind, message


def _path_text(path: tuple) -> str:
    return _tree.keystr(path) or "(root)"


def _describe(name: str, leaves, treedef) -> tuple:
    """What every rank must agree on: the call, the tree structure, each leaf's type."""
    if isinstance(leaves, _Failure):
        return ("error", leaves.message)
    # reprs of static node data may hold addresses (`<function f at 0x7f...>`) that
    # differ between processes even for the same program
    structure = re.sub(r" at 0x[0-9a-fA-F]+", "", str(treedef))
    shapes = tuple(f"{a.dtype.name}{list(a.shape)}" for a in leaves)
    return (name, structure, shapes)


def _agree(name: str, leaves, treedef) -> None:
    """Raise the same ValueError on every rank unless all ranks made the same call.

    One small allgather of a digest when all agree; a second one with the full
    descriptions only to word the error, which every rank then raises.
    """
    global _failed_exit
    _failed_exit = None  # a rank still making collective calls caught its SystemExit
    description = _describe(name, leaves, treedef)
    if _comm.Get_size() == 1:
        if isinstance(leaves, _Failure):
            raise leaves.kind(leaves.message)
        return
    digest = hashlib.blake2b(repr(description).encode(), digest_size=16).digest()
    digests = _comm.allgather(digest)
    if all(d == digests[0] for d in digests):
        if isinstance(leaves, _Failure):  # every rank failed the same way
            raise leaves.kind(leaves.message)
        return
    descriptions = _comm.allgather(description)
    raise ValueError(_mismatch_message(name, descriptions, treedef))


def _mismatch_message(name: str, descriptions: list[tuple], treedef) -> str:
    """Name the first thing that differs between ranks and what each rank has."""
    size = len(descriptions)
    errors = [(r, d[1]) for r, d in enumerate(descriptions) if d[0] == "error"]
    if errors:
        failed = "; ".join(f"rank {r}: {message}" for r, message in errors)
        return f"distributed: a collective failed on {len(errors)} of {size} ranks: {failed}"

    def per_rank(values) -> str:
        return "; ".join(f"rank {r} has {v}" for r, v in enumerate(values))

    calls = [d[0] for d in descriptions]
    if len(set(calls)) > 1:
        return ("distributed: the ranks called different collectives: "
                + "; ".join(f"rank {r} called {c}" for r, c in enumerate(calls))
                + " (every rank must make the same collective calls in the same order)")
    structures = [d[1] for d in descriptions]
    if len(set(structures)) > 1:
        return (f"distributed: {name}: the pytree structure differs across ranks: "
                f"{per_rank(structures)}")
    paths = [_path_text(p) for p, _ in _tree.leaves_with_path(
        _tree.unflatten(treedef, range(treedef.num_leaves)))]
    for i, path in enumerate(paths):
        kinds = [d[2][i] for d in descriptions]
        if len(set(kinds)) > 1:
            return (f"distributed: {name}: leaf {path} differs across ranks: "
                    f"{per_rank(kinds)} (shapes and dtypes must match on every rank)")
    return f"distributed: {name}: the ranks disagree: " + per_rank(descriptions)


# --- buffers ------------------------------------------------------------------------------


def _reduce_dtype(name: str, op: str, dtype: np.dtype) -> np.dtype:
    """The dtype MPI reduces ``dtype`` leaves in, or raise when ``op`` has no meaning."""
    if dtype == np.bool_:
        if op != "max":
            raise TypeError(f"{name}: bool leaves only support op='max' (a logical or); "
                            "cast them to an integer dtype to count")
        return np.dtype(np.uint8)
    if op == "max" and dtype.kind == "c":
        raise TypeError(f"{name}: complex ({dtype.name}) leaves have no maximum; "
                        "reduce their real and imaginary parts separately")
    if op == "mean" and dtype.kind in "iu":
        raise TypeError(f"{name}: the mean of integer ({dtype.name}) leaves is not an "
                        "integer; use op='sum' and divide by world_size(), or cast to a "
                        "float dtype first")
    if dtype in _NATIVE:
        return dtype
    if dtype.kind in "fV" and dtype.itemsize <= 4:  # float16, bfloat16, float8s
        return np.dtype(np.float32)
    raise TypeError(f"{name}: leaves of dtype {dtype.name} cannot be reduced over MPI")


def _group(dtypes: list[np.dtype]) -> dict[np.dtype, list[int]]:
    groups: dict[np.dtype, list[int]] = {}
    for i, dtype in enumerate(dtypes):
        groups.setdefault(dtype, []).append(i)
    return groups


def _pack(arrays: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """One contiguous ``dtype`` buffer holding every array, raveled, in order."""
    buffer = np.empty(sum(a.size for a in arrays), dtype)
    offset = 0
    for a in arrays:
        buffer[offset:offset + a.size] = a.reshape(-1)  # casts where dtype differs
        offset += a.size
    return buffer


def _unpack(buffer: np.ndarray, like: list[np.ndarray]) -> list[np.ndarray]:
    """Aligned arrays shaped and typed like ``like``, cut from ``buffer`` in order."""
    out, offset = [], 0
    for a in like:
        part = buffer[offset:offset + a.size].reshape(a.shape)
        out.append(aligned_copy(part.astype(a.dtype, copy=False)))
        offset += a.size
    return out


def _pack_bytes(arrays: list[np.ndarray]) -> np.ndarray:
    """The raw bytes of every array, concatenated (for moves that do no arithmetic)."""
    buffer = np.empty(sum(a.nbytes for a in arrays), np.uint8)
    offset = 0
    for a in arrays:
        buffer[offset:offset + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        offset += a.nbytes
    return buffer


def _unpack_bytes(buffer: np.ndarray, like: list[np.ndarray]) -> list[np.ndarray]:
    out, offset = [], 0
    for a in like:
        part = buffer[offset:offset + a.nbytes]
        out.append(aligned_copy(part).view(a.dtype).reshape(a.shape))
        offset += a.nbytes
    return out


def _rebuild(treedef, arrays: list[np.ndarray], like: list[Tensor]) -> Any:
    """Tensors over ``arrays`` (fresh, aligned, owned) with the weak types of ``like``."""
    return _tree.unflatten(treedef, [wrap(a, t.weak_type)
                                     for a, t in zip(arrays, like, strict=True)])
