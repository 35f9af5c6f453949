"""Fit a damped oscillator to noisy measurements by Newton's method, in float64.

    python examples/newton_physics_fit.py

The model is x(t) = A exp(-g t) cos(w t + phi).  Newton's method needs the Hessian of the
loss, but never as a matrix here: a Hessian-vector product is the forward-mode derivative
of the gradient, ``fg.jvp(fg.grad(loss), (theta,), (v,))``, and conjugate gradients
solve ``(H + mu I) d = -g`` with such products only (the way Newton-CG scales to models
with many parameters).  ``mu`` is a Levenberg-Marquardt damping: shrunk after a step
that lowers the loss, grown after one that does not.  One compiled function (``fg.jit``)
does gradient, CG and the trial loss.  All arithmetic is float64: the data are float64
NumPy arrays, and funcgrad keeps their dtype.
"""

from __future__ import annotations

import time

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import random

NAMES = ("A", "g", "w", "phi")
TRUE = np.array([2.0, 0.3, 2.5, 0.4])          # amplitude, damping, frequency, phase


def oscillator(theta, t):
    amplitude, damping, frequency, phase = theta[0], theta[1], theta[2], theta[3]
    return amplitude * fnp.exp(-damping * t) * fnp.cos(frequency * t + phase)


def make_data(n=200, noise=0.05):
    t = np.linspace(0.0, 10.0, n)                                       # float64
    clean = oscillator(fg.tensor(TRUE), fg.tensor(t))
    measured = clean + noise * random.normal(random.key(0), (n,), dtype=fg.float64)
    return fg.tensor(t), measured


def loss(theta, t, x):
    """Half the sum of squared residuals."""
    return 0.5 * fnp.sum((oscillator(theta, t) - x) ** 2)


def hessian_vector_product(theta, v, t, x):
    """H v without forming H: differentiate the gradient along v (forward over reverse)."""
    gradient = lambda th: fg.grad(loss)(th, t, x)
    return fg.jvp(gradient, (theta,), (v,))[1]


def conjugate_gradients(apply_a, b, iterations):
    """Solve A d = b for symmetric positive definite A given as a function."""

    def body(i, carry):
        d, r, p, rr = carry
        ap = apply_a(p)
        curvature = fnp.vdot(p, ap)
        alpha = fnp.where(curvature > 0, rr / fnp.where(curvature > 0, curvature, 1.0), 0.0)
        d = d + alpha * p
        r = r - alpha * ap
        rr_new = fnp.vdot(r, r)
        p = r + fnp.where(rr > 0, rr_new / fnp.where(rr > 0, rr, 1.0), 0.0) * p
        return d, r, p, rr_new

    zero = fnp.zeros_like(b)
    d, *_ = fg.fori_loop(0, iterations, body, (zero, b, b, fnp.vdot(b, b)))
    return d


@fg.jit
def newton_step(theta, mu, t, x):
    """A damped Newton step: the candidate parameters, their loss and the gradient norm."""
    value, gradient = fg.value_and_grad(loss)(theta, t, x)
    damped = lambda v: hessian_vector_product(theta, v, t, x) + mu * v
    direction = conjugate_gradients(damped, -gradient, iterations=2 * theta.shape[0])
    candidate = theta + direction
    return candidate, loss(candidate, t, x), value, fnp.linalg.norm(gradient)


def main():
    t, x = make_data()
    theta = fg.tensor(np.array([1.5, 0.5, 2.35, 0.0]))                  # the initial guess
    mu = 1.0
    print(f"data: {t.shape[0]} samples, dtype {x.dtype}; true parameters "
          + ", ".join(f"{n}={v}" for n, v in zip(NAMES, TRUE, strict=True)))
    start = time.perf_counter()
    for iteration in range(50):
        candidate, candidate_loss, value, grad_norm = newton_step(
            theta, fg.tensor(mu, dtype=fg.float64), t, x)
        print(f"step {iteration:2d}  loss {float(value):.12f}  |grad| {float(grad_norm):.2e}  "
              f"mu {mu:.0e}", end="")
        if float(grad_norm) < 1e-6:  # float64: the loss no longer changes measurably
            print("  converged")
            break
        if float(candidate_loss) < float(value):
            theta, mu = candidate, max(mu / 10.0, 1e-12)
            print("  accepted")
        else:
            mu *= 10.0
            print("  rejected: damping more")
    seconds = time.perf_counter() - start

    # Uncertainties: with Gaussian noise, cov(theta) ~= sigma^2 H^-1 at the optimum.
    hessian = fg.hessian(loss)(theta, t, x)
    residual = oscillator(theta, t) - x
    sigma2 = float(fnp.sum(residual ** 2)) / (t.shape[0] - theta.shape[0])
    errors = np.sqrt(np.diag(np.linalg.inv(hessian.numpy())) * sigma2)
    print(f"\n{iteration} Newton-CG steps in {seconds:.2f} s (the first call includes "
          f"compiling); theta dtype {theta.dtype}")
    for name, value, error, true in zip(NAMES, theta.numpy(), errors, TRUE, strict=True):
        print(f"  {name:>3} = {value:.5f} +- {error:.5f}   (true {true})")
    print(f"noise estimate sigma = {np.sqrt(sigma2):.4f} (true 0.05)")
    # The Hessian-vector product agrees with the full Hessian.
    v = fg.tensor(np.array([1.0, -2.0, 0.5, 3.0]))
    hvp = hessian_vector_product(theta, v, t, x)
    print(f"max |H v (jvp of grad) - fg.hessian(loss) @ v| = "
          f"{float(fnp.max(fnp.abs(hvp - hessian @ v))):.1e}")


if __name__ == "__main__":
    main()
