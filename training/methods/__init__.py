"""One module per training method; each exposes a train_<method>() function, named in training/registry.py."""
