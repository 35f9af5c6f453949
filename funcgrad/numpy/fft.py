"""funcgrad.numpy.fft: discrete Fourier transforms (NumPy's numpy.fft) over Tensors."""
