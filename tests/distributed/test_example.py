"""examples/train_data_parallel.py on two processes reaches what one process reaches."""

import re

import pytest

from .conftest import REPO, launch, needs_mpi

pytestmark = needs_mpi
EXAMPLE = str(REPO / "examples" / "train_data_parallel.py")
ARGS = ["--epochs", "2", "--batch-size", "64"]


def _results(done) -> dict:
    assert done.returncode == 0, f"the example failed:\n{done.stdout}\n{done.stderr}"
    found = dict(re.findall(r"^(ranks|final loss|test accuracy): ([\d.]+)", done.stdout,
                            flags=re.MULTILINE))
    assert set(found) == {"ranks", "final loss", "test accuracy"}, done.stdout
    return {k: float(v) for k, v in found.items()}


@pytest.fixture(scope="module")
def one_process():
    return _results(launch([EXAMPLE, *ARGS], mpi=False, timeout=240))


def test_two_processes_match_one(one_process):
    two = _results(launch([EXAMPLE, *ARGS], n=2, timeout=240))
    assert one_process["ranks"] == 1 and two["ranks"] == 2
    assert two["test accuracy"] == one_process["test accuracy"]
    assert two["final loss"] == pytest.approx(one_process["final loss"], rel=1e-4)
    assert one_process["test accuracy"] > 0.8


def test_batch_must_divide_over_ranks():
    done = launch([EXAMPLE, "--epochs", "1", "--batch-size", "63"], n=2, timeout=240)
    assert done.returncode != 0
    assert "must divide evenly over 2 ranks" in done.stdout + done.stderr
