"""Lowering: IR -> MLIR (StableHLO built in-process), IREE compilation, run-time, caches."""
