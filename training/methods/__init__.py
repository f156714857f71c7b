"""One module per training method; each exposes a train_<method>() function that the CLI calls."""
