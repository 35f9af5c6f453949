"""A tour of funcgrad in one script: tensors, dtypes, immutability, indexing, random keys,
devices and transformations (grad, vmap, make_ir, cond).  Run it with ``make demo`` (about a
second).  ``fg.jit`` is shown in docs/tour.md.
"""

import time

_START = time.perf_counter()

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 66 - len(title)))


def show(label: str, value) -> None:
    text = repr(value)
    if "\n" in text:
        print(f"{label} =")
        print("    " + text.replace("\n", "\n    "))
    else:
        print(f"{label} = {text}")


section("Tensors from an explicit random key")
key = fg.random.key(0)
x = fg.random.normal(key, (3, 3))
show("x", x)
print(f"x.shape = {x.shape}, x.dtype = {x.dtype}, x.device = {x.device}")
show("fg.random.normal(key, (3, 3)) again, same key", fg.random.normal(key, (3, 3))[0])
key_a, key_b = fg.random.split(key)
show("a new key gives new numbers", fg.random.normal(key_a, (3,)))

section("Arithmetic, reductions, indexing")
y = x * 2.0
show("y = x * 2.0  (the Python float is weak: still float32)", y)
show("fnp.sum(x * y)", fnp.sum(x * y))
show("x.sum(axis=0)", x.sum(axis=0))
show("x.max()", x.max())
show("x.argmax(axis=1)", x.argmax(axis=1))
show("x[0]", x[0])
show("x[:, 1]", x[:, 1])
show("x[x > 0]  (a boolean mask)", x[x > 0])
show("x[fg.tensor([2, 0])]  (an integer index tensor)", x[fg.tensor([2, 0])])
show("x @ x.T", x @ x.T)

section("dtypes and promotion")
show("fg.tensor([1.0, 2.0]).dtype  (Python floats -> float32)", fg.tensor([1.0, 2.0]).dtype)
show("fg.tensor([1, 2]).dtype  (Python ints -> int32)", fg.tensor([1, 2]).dtype)
show("fg.tensor(np.zeros(2)).dtype  (NumPy keeps float64)", fg.tensor(np.zeros(2)).dtype)
small = fg.tensor([1, 2, 3], dtype=fg.int8)
show("int8 tensor + 100  (weak int: stays int8)", small + 100)
show("fg.promote_types(fg.int8, fg.uint8)", fg.promote_types(fg.int8, fg.uint8))
show("float32 tensor + float64 tensor", fg.tensor([1.0]) + fg.tensor([1.0], dtype=fg.float64))
show("bfloat16 tensor * 3.0", fg.tensor([1.5, 2.0], dtype=fg.bfloat16) * 3.0)

section("Immutability: functional updates with .at[]")
try:
    x[0, 0] = 1.0
except TypeError as err:
    print(f"x[0, 0] = 1.0 raises TypeError: {err}")
z = x.at[0, 0].set(100.0)
show("z = x.at[0, 0].set(100.0); z[0]", z[0])
show("x[0] is unchanged", x[0])
show("fg.arange(5).at[fg.tensor([1, 1, 3])].add(10)  (repeats accumulate)",
     fg.arange(5).at[fg.tensor([1, 1, 3])].add(10))

section("Devices")
show("fg.devices()", fg.devices())
show("x.to('cpu').device", x.to("cpu").device)

section("Transformations of pure functions")


def loss(w):
    return fnp.sum(fnp.tanh(w) ** 2)


show("fg.grad(loss)(x[0])", fg.grad(loss)(x[0]))
show("fg.vmap(fnp.sum)(x)  (one sum per row)", fg.vmap(fnp.sum)(x))
print("fg.make_ir(loss)(x[0]) =")
print("    " + str(fg.make_ir(loss)(x[0])).replace("\n", "\n    "))

show("fg.cond(x[0, 0] > 0, double, negate, x[0])",
     fg.cond(x[0, 0] > 0, lambda v: v * 2, lambda v: -v, x[0]))

print(f"\nTour finished in {time.perf_counter() - _START:.2f} s (including imports).")
