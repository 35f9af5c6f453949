"""Linear-algebra primitives: decompositions and triangular solves."""
