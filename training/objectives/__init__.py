"""Loss functions, one per module, each checked against hand-computed values in tests/training/objectives/, and
each computed in float32 even when the forward pass ran under bf16 autocast (training/precision.py)."""
