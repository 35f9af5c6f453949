"""all_reduce, broadcast, all_gather and barrier on two MPI processes, checked against
NumPy in float64 from each rank's known inputs."""

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import tree

from .conftest import needs_mpi, run_program
from .mpi_programs import REDUCE_DTYPES, make_tree

pytestmark = needs_mpi
WORLD = 2

TOLERANCE = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "complex64": 1e-6}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_program("collectives", tmp_path_factory.mktemp("collectives"), n=WORLD)


def _expected_reduce(op, dtypes):
    per_rank = [tree.leaves(make_tree(r, dtypes)) for r in range(WORLD)]
    expected = []
    for leaves in zip(*per_rank, strict=True):
        dtype = leaves[0].dtype
        stack = np.stack([np.asarray(x).astype(np.complex128 if dtype.kind == "c"
                                               else np.float64) for x in leaves])
        value = {"sum": stack.sum(0), "mean": stack.mean(0), "max": stack.max(0)}[op]
        expected.append((value, dtype, leaves[0].shape))
    return expected


def _check_leaf(value, expected):
    want, want_dtype, want_shape = expected
    dtype = value.dtype
    assert dtype == want_dtype and value.shape == want_shape
    rtol = TOLERANCE.get(np.dtype(dtype).name, 0)
    np.testing.assert_allclose(value.astype(want.dtype), want, rtol=rtol)


def test_world(results):
    assert [r["rank"] for r in results] == [0, 1]
    assert all(r["world_size"] == WORLD for r in results)


@pytest.mark.parametrize("op", sorted(REDUCE_DTYPES))
def test_all_reduce(results, op):
    expected = _expected_reduce(op, REDUCE_DTYPES[op])
    for rank_result in results:
        got = rank_result[f"all_reduce_{op}"]
        assert tree.structure(got) == tree.structure(make_tree(0, REDUCE_DTYPES[op]))
        for got_leaf, want in zip(tree.leaves(got), expected, strict=True):
            _check_leaf(got_leaf, want)


def test_all_reduce_max_propagates_nan_identically_on_every_rank(results):
    first, second = (r["max_nan"] for r in results)
    assert np.isnan(first[0]) and first[1] == 2.0
    np.testing.assert_array_equal(first, second)
    assert np.signbit(first[2]) == np.signbit(second[2])


@pytest.mark.parametrize("root", [0, 1])
def test_broadcast(results, root):
    every = sorted(set(sum(REDUCE_DTYPES.values(), [])))
    want = tree.leaves(make_tree(root, every))
    for rank_result in results:
        got = rank_result[f"broadcast_{root}"]
        assert tree.structure(got) == tree.structure(make_tree(root, every))
        for value, w in zip(tree.leaves(got), want, strict=True):
            assert value.dtype == w.dtype and value.shape == w.shape
            np.testing.assert_array_equal(value, w)


def test_all_gather_stacks_in_rank_order(results):
    every = sorted(set(sum(REDUCE_DTYPES.values(), [])))
    per_rank = [tree.leaves(make_tree(r, every)) for r in range(WORLD)]
    for rank_result in results:
        got = tree.leaves(rank_result["all_gather"])
        assert len(got) == len(per_rank[0])
        for i, value in enumerate(got):
            assert value.shape == (WORLD, *per_rank[0][i].shape)
            assert value.dtype == per_rank[0][i].dtype
            for r in range(WORLD):
                np.testing.assert_array_equal(value[r], per_rank[r][i])


def test_non_tensor_leaves(results):
    for rank_result in results:
        got = rank_result["numpy_leaves"]
        assert got["x"] == 1.0 and got["x"].dtype == np.float32
        assert got["y"][0] == 1.0


def test_barrier_waits_for_every_rank(results):
    latest_arrival = max(r["barrier_enter"] for r in results)
    assert all(r["barrier_leave"] >= latest_arrival for r in results)


# --- a world of one (no mpiexec): identities, and the argument checks -------------------


@pytest.fixture(scope="module")
def dist():
    from funcgrad import distributed

    distributed.init()
    if distributed.world_size() != 1:
        pytest.skip("the test process itself runs under mpiexec")
    return distributed


def test_single_process_world(dist):
    t = {"w": fg.ones((2, 3)), "n": fg.tensor(3)}
    assert dist.rank() == 0 and dist.world_size() == 1
    dist.init()  # idempotent
    for op in ("sum", "max"):
        out = dist.all_reduce(t, op=op)
        np.testing.assert_array_equal(out["w"], np.ones((2, 3), np.float32))
        assert out["n"].dtype == np.int32
    assert dist.all_reduce({"w": t["w"]}, op="mean")["w"].dtype == np.float32
    assert dist.broadcast(t)["n"].item() == 3
    gathered = dist.all_gather(t)
    assert gathered["w"].shape == (1, 2, 3) and gathered["n"].shape == (1,)
    dist.barrier()


@pytest.mark.parametrize("leaf, op, message", [
    (fg.tensor([1, 2]), "mean", "mean of integer"),
    (fg.tensor([True]), "sum", "bool leaves only support op='max'"),
    (fg.tensor([1 + 2j]), "max", "complex"),
])
def test_reduction_dtype_errors(dist, leaf, op, message):
    with pytest.raises(TypeError, match=message):
        dist.all_reduce({"x": leaf}, op=op)


def test_argument_errors(dist):
    with pytest.raises(ValueError, match="op must be one of"):
        dist.all_reduce(fg.ones(2), op="min")
    with pytest.raises(ValueError, match="root must be a rank"):
        dist.broadcast(fg.ones(2), root=1)
    with pytest.raises(ValueError, match="root must be a rank"):
        dist.broadcast(fg.ones(2), root=False)  # a bool is not a rank
    with pytest.raises(OverflowError, match=r"leaf \['n'\] is not a tensor"):
        dist.all_reduce({"n": 2**40})
    with pytest.raises(TypeError, match="traced value"):
        fg.grad(lambda x: dist.all_reduce(x).sum())(fg.ones(2))


@pytest.mark.parametrize("call", [
    lambda dist, x: (dist.barrier(), x)[1],
    lambda dist, x: x + dist.all_reduce(fg.ones(2)),  # a constant: no traced leaf
    lambda dist, x: x + dist.broadcast(fg.ones(2)),
    lambda dist, x: x + dist.all_gather(fg.ones(2))[0],
])
def test_collectives_refuse_recorded_programs(dist, call):
    # jit records the program once: a collective in it would communicate once, while
    # tracing, and never again (barrier() ran once in three calls)
    with pytest.raises(TypeError, match=r"inside jit\(<lambda>\).*outside fg.jit"):
        fg.jit(lambda x: call(dist, x))(fg.ones(2))


def test_collectives_run_in_eager_transformations(dist):
    # grad, vmap and eager loops run the Python each time: collectives work there
    x = fg.ones(2)
    assert fg.grad(lambda x: (dist.barrier(), x.sum())[1])(x).tolist() == [1.0, 1.0]
    assert fg.vmap(lambda x: (dist.barrier(), x)[1])(x).tolist() == [1.0, 1.0]
    carry = fg.fori_loop(0, 3, lambda i, c: dist.all_reduce(c) + 1.0, x)
    assert carry.tolist() == [4.0, 4.0]
