"""Data-parallel training of an MLP on the 8x8 digits, one MPI process per worker.

    mpiexec -n 2 python examples/train_data_parallel.py [--epochs 10]

Every rank walks the same global batches (the same shuffle on every rank) and computes
the gradient on its own slice of each batch; ``all_reduce(op="mean")`` averages the
slices' gradients into the gradient of the whole batch, and every rank applies the same
update.  So the parameters stay identical on every rank (checked after every step) and
the run reaches the accuracy a single process reaches with the same global batches.
Rank 0 prints the results.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

import funcgrad as fg
import funcgrad.nn.functional as F
import funcgrad.numpy as fnp
from funcgrad import data, nn, optim
from funcgrad import distributed as dist


def load_digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_test, y_test)`` as host arrays: images ``(n, 1, 8, 8)``
    float32 in [0, 1], labels int32 (funcgrad's fixed 80/20 split)."""
    train, test = data.datasets.digits()
    return (*(np.asarray(a) for a in train.arrays), *(np.asarray(a) for a in test.arrays))


def make_model(key, hidden: int = 64) -> nn.Module:
    """An MLP: 64 pixels, one hidden ReLU layer, 10 logits."""
    k1, k2 = fg.random.split(key)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, hidden, key=k1), nn.ReLU(),
                         nn.Linear(hidden, 10, key=k2))


def loss_fn(model: nn.Module, images, labels) -> fg.Tensor:
    """Mean cross-entropy of the batch."""
    return F.cross_entropy(model(images), labels)


def checksum(tree) -> int:
    """A 63-bit digest of the exact bytes of every leaf."""
    digest = hashlib.blake2b(digest_size=8)
    for leaf in fg.tree.leaves(tree):
        digest.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return int.from_bytes(digest.digest(), "little") >> 1


def check_identical_across_ranks(tree, what: str) -> None:
    """Raise on every rank unless every rank holds bit-identical ``tree``."""
    sums = dist.all_gather(fg.tensor(np.int64(checksum(tree)))).numpy()
    if (sums != sums[0]).any():
        raise RuntimeError(f"{what} differ across ranks: checksums {sums.tolist()}")


def make_steps(optimizer, use_jit: bool):
    """``grad_step(model, x, y) -> (loss, grads)`` and ``update_step(model, grads,
    opt_state) -> (model, opt_state)``, jitted unless ``use_jit`` is False."""

    def update_step(model, grads, opt_state):
        updates, opt_state = optimizer.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state

    grad_step = fg.value_and_grad(loss_fn)
    if use_jit:
        return fg.jit(grad_step), fg.jit(update_step)
    return grad_step, update_step


def shard(batch: np.ndarray) -> np.ndarray:
    """This rank's contiguous slice of a global batch (the batch divides evenly)."""
    return np.split(batch, dist.world_size())[dist.rank()]


def train(epochs: int = 10, batch_size: int = 64, learning_rate: float = 3e-3,
          hidden: int = 64, seed: int = 0, use_jit: bool = True, verbose: bool = True
          ) -> dict:
    """Train data-parallel over the MPI world; returns the results every rank agrees on."""
    size = dist.world_size()
    if batch_size % size:
        raise ValueError(f"the global batch size {batch_size} must divide evenly over "
                         f"{size} ranks; pick a multiple of {size}")
    x_train, y_train, x_test, y_test = load_digits()
    # rank 0's initialization everywhere (each rank would draw the same from the same
    # key, but broadcasting makes that an invariant rather than an assumption)
    model = dist.broadcast(make_model(fg.random.key(seed), hidden), root=0)
    optimizer = optim.adam(learning_rate)
    opt_state = optimizer.init(model)
    grad_step, update_step = make_steps(optimizer, use_jit)

    steps, loss, seconds = 0, float("nan"), 0.0
    for epoch in range(epochs):
        # the same permutation on every rank: ranks see the same global batches
        order = np.random.default_rng([seed, epoch]).permutation(len(y_train))
        n_batches = len(order) // batch_size  # drop the last partial batch
        for b in range(n_batches):
            batch = shard(order[b * batch_size:(b + 1) * batch_size])
            start = time.perf_counter()
            local_loss, grads = grad_step(model, fg.tensor(x_train[batch]),
                                          fg.tensor(y_train[batch]))
            loss, grads = dist.all_reduce((local_loss, grads), op="mean")
            model, opt_state = update_step(model, grads, opt_state)
            check_identical_across_ranks(model, "parameters")
            if steps:  # the first step compiles
                seconds += time.perf_counter() - start
            steps += 1
        if verbose and dist.rank() == 0:
            print(f"epoch {epoch + 1}/{epochs}: loss {float(loss):.4f}", flush=True)

    # evaluation, sharded too: each rank counts the correct answers on its slice
    test_slice = np.array_split(np.arange(len(y_test)), size)[dist.rank()]
    logits = model(fg.tensor(x_test[test_slice]))
    correct = fnp.sum(fnp.argmax(logits, axis=-1) == fg.tensor(y_test[test_slice]))
    correct = int(dist.all_reduce(correct.astype(fg.int32), op="sum"))
    return {"accuracy": correct / len(y_test), "loss": float(loss), "steps": steps,
            "seconds": seconds, "checksum": checksum(model)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-jit", action="store_true", help="run the steps eagerly")
    args = parser.parse_args()
    dist.init()
    result = train(args.epochs, args.batch_size, args.learning_rate, args.hidden,
                   args.seed, use_jit=not args.no_jit)
    if dist.rank() == 0:
        print(f"ranks: {dist.world_size()}, steps: {result['steps']}, "
              f"{1000 * result['seconds'] / max(result['steps'] - 1, 1):.2f} ms/step "
              "(after the first, which compiles)")
        print(f"final loss: {result['loss']:.6f}")
        print(f"test accuracy: {result['accuracy']:.4f}")


if __name__ == "__main__":
    main()
