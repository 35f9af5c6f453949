"""funcgrad.numpy.linalg: linear algebra (NumPy's numpy.linalg) over Tensors."""
