"""One module per `searchengine train` method: a class with its options, data, loss and run (training/method.py), listed in training/registry.py."""
