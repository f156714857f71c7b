"""Turn text into vectors: model loading, pooling, prompts, precision, the ONNX backend, post-processing
modules (whitening, flow, SN/NATSV) and cross-encoder scoring. Imports nothing from the index layers."""
