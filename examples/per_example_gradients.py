"""Per-example gradients of a small MLP: ``fg.vmap(fg.grad(loss))`` against a Python loop.

    python examples/per_example_gradients.py

A per-example gradient is the gradient of the loss of one example, for every example of
a batch (differential privacy clips them, influence functions and gradient-noise
statistics use them).  ``fg.grad`` differentiates the loss of one example; ``fg.vmap``
maps that over the batch in one vectorized computation, and ``fg.jit`` compiles it.  The
script checks the result against a Python loop that calls ``fg.grad`` once per example.
"""

from __future__ import annotations

import time

import funcgrad as fg
import funcgrad.nn.functional as F
import funcgrad.numpy as fnp
from funcgrad import nn, random, tree


def make_model(key):
    k1, k2 = random.split(key)
    return nn.Sequential(nn.Linear(16, 32, key=k1), nn.Tanh(), nn.Linear(32, 4, key=k2))


def example_loss(model, x, y):
    """The loss of ONE example: x has shape (16,), y is an int label."""
    return F.cross_entropy(model(x), y)


def timed(fun, *args, repeats=5):
    """The result of ``fun(*args)`` and its best time over ``repeats`` calls, in ms."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = fun(*args)
        tree.map(lambda leaf: leaf.numpy(), out)  # wait for the values
        best = min(best, time.perf_counter() - start)
    return out, best * 1e3


def main():
    key_model, key_x, key_y = random.split(random.key(0), 3)
    model = make_model(key_model)
    batch = 64
    xs = random.normal(key_x, (batch, 16))
    ys = random.randint(key_y, (batch,), 0, 4)

    grad_one = fg.grad(example_loss)                    # d loss / d model, one example

    def loop(model, xs, ys):                            # the reference: a Python loop
        grads = [grad_one(model, xs[i], ys[i]) for i in range(xs.shape[0])]
        return tree.map(lambda *g: fnp.stack(g), *grads)

    # in_axes: the model is shared (None), x and y are mapped along their axis 0
    per_example = fg.vmap(grad_one, in_axes=(None, 0, 0))
    per_example_jit = fg.jit(per_example)

    start = time.perf_counter()
    per_example_jit(model, xs, ys)
    compile_s = time.perf_counter() - start

    reference, loop_ms = timed(loop, model, xs, ys, repeats=2)
    batched, vmap_ms = timed(per_example, model, xs, ys)
    compiled, jit_ms = timed(per_example_jit, model, xs, ys, repeats=20)

    def max_difference(a, b):
        return max(float(fnp.max(fnp.abs(x - y))) for x, y in
                   zip(tree.leaves(a), tree.leaves(b), strict=True))

    shapes = [g.shape for g in nn.parameters(batched)]
    print(f"per-example gradients of a {sum(p.size for p in nn.parameters(model))}-parameter "
          f"MLP, batch {batch}: leaf shapes {shapes}")
    print(f"max |vmap(grad) - loop|      = {max_difference(batched, reference):.2e}")
    print(f"max |jit(vmap(grad)) - loop| = {max_difference(compiled, reference):.2e}")
    print(f"Python loop of grad:  {loop_ms:8.2f} ms")
    print(f"vmap(grad), eager:    {vmap_ms:8.2f} ms  ({loop_ms / vmap_ms:.0f}x the loop)")
    print(f"jit(vmap(grad)):      {jit_ms:8.2f} ms  ({loop_ms / jit_ms:.0f}x the loop; "
          f"first call {compile_s:.2f} s with tracing and compiling)")
    # The mean of the per-example gradients is the gradient of the mean loss.
    batch_grad = fg.grad(lambda m: fnp.mean(fg.vmap(example_loss, in_axes=(None, 0, 0))(
        m, xs, ys)))(model)
    mean_of_examples = tree.map(lambda g: fnp.mean(g, axis=0), compiled)
    print(f"max |mean of per-example grads - grad of mean loss| = "
          f"{max_difference(mean_of_examples, batch_grad):.2e}")


if __name__ == "__main__":
    main()
