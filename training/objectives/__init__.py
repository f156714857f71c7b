"""Loss functions, one per module, each checked against hand-computed values in tests/training/objectives/."""
