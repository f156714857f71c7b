"""What every benchmark repeats, written once: the machine it ran on and its load (machine), variants taking turns
in rounds and latency percentiles (rounds), the results file (results), and the environment a compared system runs
in, its own process with its own packages (environments)."""
