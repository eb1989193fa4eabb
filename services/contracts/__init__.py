"""Generated protobuf contracts: regenerate with ``python scripts/gen_protos.py``."""
