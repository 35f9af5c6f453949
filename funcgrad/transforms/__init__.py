"""Transformations: tracing to IR, autodiff, vmap, control flow and custom rules."""
