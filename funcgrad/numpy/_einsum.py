"""einsum: Einstein summation as a sequence of dot_general and reductions."""
