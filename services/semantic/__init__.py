"""Semantic memory: records searchable by meaning, with vectors from the inference layer stored in Qdrant."""
