"""Training benchmarks: the methods of `searchengine train`, their speed and post-processing."""
