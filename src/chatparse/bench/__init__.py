"""What ``chatparse bench`` runs: the engine benchmark (``engine``) over synthetic outputs (``outputs``).
The other benchmarks, and the rows that need a source checkout, are scripts in ``benchmarks/``."""
