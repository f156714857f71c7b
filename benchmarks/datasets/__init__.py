"""Where the benchmarks' data lives, and the script that downloads and lays it out."""
