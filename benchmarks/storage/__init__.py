"""Storage benchmarks: what writes, merges and segments cost an index, beside other vector stores."""
