"""The inference layer: embeddings from local ONNX models, micro-batched, for every other layer."""
