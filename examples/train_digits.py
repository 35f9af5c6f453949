"""Train an MLP, then a small CNN, on scikit-learn's 8x8 digits with jit; save and reload.

    python examples/train_digits.py            # what `make demo` runs
    python examples/train_digits.py --epochs 5 --model mlp

Every training step is one compiled function (``fg.jit``): forward, backward and the
optimizer update.  The model is a pytree, so ``fg.grad`` differentiates it directly.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from tqdm import tqdm

import funcgrad as fg
import funcgrad.nn.functional as F
import funcgrad.numpy as fnp
from funcgrad import data, nn, optim, random


class MLP(nn.Module):
    layers: nn.Sequential

    def __init__(self, *, key):
        k1, k2, k3 = random.split(key, 3)
        self.layers = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64, 128, key=k1), nn.ReLU(),
            nn.Linear(128, 128, key=k2), nn.ReLU(),
            nn.Linear(128, 10, key=k3))

    def forward(self, x):
        return self.layers(x)


class CNN(nn.Module):
    conv1: nn.Conv2d
    conv2: nn.Conv2d
    head: nn.Linear

    def __init__(self, *, key):
        k1, k2, k3 = random.split(key, 3)
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1, key=k1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1, key=k2)
        self.head = nn.Linear(32 * 2 * 2, 10, key=k3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)   # (N, 16, 4, 4)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)   # (N, 32, 2, 2)
        return self.head(x.reshape(x.shape[0], -1))


def loss_fn(model, images, labels):
    return F.cross_entropy(model(images), labels)


def make_step(opt):
    @fg.jit
    def step(model, opt_state, images, labels):
        loss, grads = fg.value_and_grad(loss_fn)(model, images, labels)
        updates, opt_state = opt.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    return step


@fg.jit
def predict(model, images):
    return fnp.argmax(model(images), axis=-1)


def accuracy(model, dataset, batch_size=256):
    correct = total = 0
    for images, labels in data.DataLoader(dataset, batch_size=batch_size):
        correct += int((predict(model, images) == labels).sum())
        total += labels.shape[0]
    return correct / total


def train(name, model, train_set, test_set, epochs, key):
    opt = optim.adam(learning_rate=1e-2 if name == "mlp" else 5e-3)
    opt_state = opt.init(model)
    step = make_step(opt)
    loader = data.DataLoader(train_set, batch_size=64, shuffle=True, key=key, drop_last=True)
    print(f"\n{name}: {sum(p.size for p in nn.parameters(model))} parameters, "
          f"{len(loader)} batches per epoch")
    for epoch in range(epochs):
        start = time.perf_counter()
        losses = []
        for images, labels in tqdm(loader, desc=f"{name} epoch {epoch + 1}/{epochs}",
                                   leave=False, mininterval=0.5):
            model, opt_state, loss = step(model, opt_state, images, labels)
            losses.append(loss)
        seconds = time.perf_counter() - start
        print(f"epoch {epoch + 1:2d}  loss {float(np.mean([float(v) for v in losses])):.4f}  "
              f"test accuracy {accuracy(model, test_set):.4f}  {seconds:.2f} s/epoch"
              + ("  (includes compiling)" if epoch == 0 else ""))
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    args = parser.parse_args()
    train_set, test_set = data.datasets.digits()
    print(f"digits: {len(train_set)} training and {len(test_set)} test images of 8x8")
    key = random.key(0)
    models = {"mlp": MLP, "cnn": CNN}
    names = ["mlp", "cnn"] if args.model == "both" else [args.model]
    for name in names:
        init_key, data_key, key = random.split(key, 3)
        epochs = args.epochs or (20 if name == "mlp" else 10)
        model = train(name, models[name](key=init_key), train_set, test_set, epochs, data_key)
        final = accuracy(model, test_set)
        path = os.path.join(tempfile.gettempdir(), f"funcgrad_digits_{name}.safetensors")
        fg.save(path, model)
        reloaded = fg.load(path, like=model)
        same = accuracy(reloaded, test_set)
        print(f"{name}: final test accuracy {final:.4f}; saved to {path}, reloaded: "
              f"accuracy {same:.4f}")
        if name == "mlp" and final < 0.95:
            raise SystemExit(f"MLP accuracy {final:.4f} below 0.95")


if __name__ == "__main__":
    main()
