"""What every benchmark repeats: the machine record, timing in rounds, summaries and the results file."""
