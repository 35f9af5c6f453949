"""PyTorch's classic ``NeuralNetwork`` (the quickstart tutorial's model), in funcgrad.

    python examples/pytorch_style_network.py

The PyTorch original:

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28*28, 512), nn.ReLU(),
                nn.Linear(512, 512), nn.ReLU(),
                nn.Linear(512, 10))

        def forward(self, x):
            x = self.flatten(x)
            logits = self.linear_relu_stack(x)
            return logits

What changes in funcgrad: fields are declared in the class body, layers with random
initialization take an explicit ``key=``, and the model is an immutable pytree, so a
training step is a function from (model, optimizer state, batch) to a new model and a new
state, instead of ``loss.backward(); optimizer.step()`` mutating them.
"""

from __future__ import annotations

import time

import funcgrad as fg
import funcgrad.nn.functional as F
from funcgrad import nn, optim, random


class NeuralNetwork(nn.Module):
    flatten: nn.Flatten
    linear_relu_stack: nn.Sequential

    def __init__(self, *, key):
        k1, k2, k3 = random.split(key, 3)
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512, key=k1), nn.ReLU(),
            nn.Linear(512, 512, key=k2), nn.ReLU(),
            nn.Linear(512, 10, key=k3))

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def loss_fn(model, images, labels):
    return F.cross_entropy(model(images), labels)       # nn.CrossEntropyLoss()


optimizer = optim.sgd(learning_rate=1e-3)               # torch.optim.SGD(lr=1e-3)


@fg.jit
def train_step(model, opt_state, images, labels):
    """PyTorch's ``loss.backward(); optimizer.step(); optimizer.zero_grad()``, as a pure
    function: returns the new model and optimizer state and the loss before the step."""
    loss, grads = fg.value_and_grad(loss_fn)(model, images, labels)
    updates, opt_state = optimizer.update(grads, opt_state, model)
    return optim.apply_updates(model, updates), opt_state, loss


def main():
    key_model, key_images, key_labels = random.split(random.key(0), 3)
    model = NeuralNetwork(key=key_model)
    print(model.linear_relu_stack[0])                   # Linear(weight=float32[512, 784], ...)
    print(f"{sum(p.size for p in nn.parameters(model))} parameters")   # 669706, as PyTorch's

    # forward on random data: a batch of 64 one-channel 28x28 images (NCHW)
    images = random.uniform(key_images, (64, 1, 28, 28))
    labels = random.randint(key_labels, (64,), 0, 10)
    logits = model(images)
    probabilities = F.softmax(logits, dim=1)          # nn.Softmax(dim=1)
    print(f"logits {logits.shape} {logits.dtype}; predicted classes of the first 8: "
          f"{probabilities.argmax(axis=1)[:8].tolist()}")

    # one training step, then a few more on the same batch: the loss goes down
    opt_state = optimizer.init(model)
    start = time.perf_counter()
    new_model, opt_state, loss = train_step(model, opt_state, images, labels)
    first = time.perf_counter() - start
    print(f"step 1: loss {float(loss):.4f}  ({first:.2f} s: trace, compile and run)")
    start = time.perf_counter()
    for _ in range(2, 12):
        new_model, opt_state, loss = train_step(new_model, opt_state, images, labels)
    per_step = (time.perf_counter() - start) / 10
    print(f"step 11: loss {float(loss):.4f}  ({per_step * 1e3:.2f} ms per compiled step)")
    print(f"loss after the steps: {float(loss_fn(new_model, images, labels)):.4f}")
    change = new_model.linear_relu_stack[0].weight - model.linear_relu_stack[0].weight
    print(f"the first weight matrix moved by up to {float(abs(change).max()):.2e}; "
          f"the original model is unchanged (immutable)")


if __name__ == "__main__":
    main()
