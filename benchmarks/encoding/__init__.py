"""Encoding benchmarks: encoder runtimes, precisions and their speed against the CPU's or GPU's peak."""
