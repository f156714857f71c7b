"""The benchmark scripts, by area (benchmarks/README.md); each runs as a file and imports the others as a package."""
