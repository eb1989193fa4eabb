"""The ``hindsight`` command: serve one layer, run the whole mesh on loopback, probe health."""
