"""How many candidates a query rescores from a segment's originals by default: a constant of its own, so that
`query --help` shows it without importing NumPy (the CLI's help loads no numeric code)."""

DEFAULT_RESCORE = 100
"""Candidates per query a segment with originals takes from its codes and rescores exactly, unless told otherwise
(`--rescore`). On 25,000 real MiniLM vectors (benchmarks/storage/results/rescoring.json) SQ8 and HNSW32,SQ8 reach
their best recall@10 by 20 (1.0, and HNSW32's own 0.996), IVF-PQ (IVF624,PQ48) by 100 (0.776 against 0.780 at 200,
0.535 from the codes: its probed cells, not its codes, bound it), and binary LSH still gains at 200 (0.83 at 100,
0.91 at 200: ask for more there); 100 costs a fraction of a millisecond more than 20 on the PQ and LSH types."""
