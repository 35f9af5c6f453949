"""The fft primitive: complex and real discrete Fourier transforms over trailing axes."""
