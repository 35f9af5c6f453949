"""Mismatched calls raise the same clear error on every rank (never a hang); a rank that
dies aborts the others; a missing mpi4py names the extra to install."""

import pytest

from .conftest import HERE, SKIP_REASON, launch, needs_mpi, run_program
from .mpi_programs import MISMATCHES

EXPECTED_WORDS = {
    "shape": ["leaf ['w']", "rank 0 has float32[3, 2]", "rank 1 has float32[3, 3]"],
    "dtype": ["leaf ['w']", "rank 0 has float32[3]", "rank 1 has float64[3]"],
    "structure": ["structure differs", "rank 0 has PyTreeSpec({'w': *})", "'b': *"],
    "op": ["rank 0 called all_reduce(op='sum')", "rank 1 called all_reduce(op='max')"],
    "collective": ["rank 0 called barrier()", "rank 1 called all_gather()"],
    "root": ["rank 0 called broadcast(root=0)", "rank 1 called broadcast(root=1)"],
    "bad_leaf": ["failed on 1 of 2 ranks", "rank 1", "leaf ['s'] is not a tensor"],
    "overflow_leaf": ["failed on 1 of 2 ranks", "rank 1", "leaf ['n'] is not a tensor",
                      "does not fit"],
    "bad_op": ["failed on 1 of 2 ranks", "rank 1", "op must be one of", "'avg'"],
    "bad_root": ["failed on 1 of 2 ranks", "rank 1", "root must be a rank", "got -1"],
}


@pytest.fixture(scope="module")
def mismatch_results(tmp_path_factory):
    if SKIP_REASON is not None:
        pytest.skip(SKIP_REASON)
    return run_program("mismatch", tmp_path_factory.mktemp("mismatch"), n=2)


@pytest.mark.parametrize("case", sorted(MISMATCHES))
def test_mismatch_raises_the_same_error_on_every_rank(mismatch_results, case):
    messages = [r[case] for r in mismatch_results]
    assert messages[0] is not None, f"{case}: no error was raised"
    assert messages[0].startswith("ValueError: distributed:")
    assert all(m == messages[0] for m in messages), messages
    for word in EXPECTED_WORDS[case]:
        assert word in messages[0]


def test_world_works_after_mismatches(mismatch_results):
    assert [r["after"] for r in mismatch_results] == [2.0, 2.0]


@needs_mpi
def test_a_crashing_rank_aborts_the_world(tmp_path):
    done = launch([str(HERE / "mpi_programs.py"), "crash", str(tmp_path)], n=2, timeout=60)
    assert done.returncode != 0
    assert "rank 1 fails on purpose" in done.stdout + done.stderr
    assert not list(tmp_path.glob("crash.*.pkl"))


@needs_mpi
def test_a_failing_sys_exit_aborts_the_world(tmp_path):
    # Python does not show a SystemExit to sys.excepthook; rank 0 waited forever
    done = launch([str(HERE / "mpi_programs.py"), "failing_exit", str(tmp_path)], n=2,
                  timeout=60)
    assert done.returncode != 0
    assert "rank 1 exits on purpose" in done.stdout + done.stderr
    assert not list(tmp_path.glob("failing_exit.*.pkl"))


@needs_mpi
def test_a_caught_sys_exit_aborts_nothing(tmp_path):
    assert run_program("caught_exit", tmp_path) == [{"done": True}, {"done": True}]


def test_missing_mpi4py_names_the_extra():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "from funcgrad import distributed\n"
            "try:\n    distributed.rank()\n"
            "except ImportError as err:\n    print(err)\n")
    done = launch(["-c", code], mpi=False, timeout=60)
    assert "pip install funcgrad[distributed]" in done.stdout, done.stdout + done.stderr
