"""Scale benchmarks: indexing and searching up to a million vectors, and the Ray build."""
