"""funcgrad.random: explicit-key, counter-based random numbers (threefry-2x32)."""
