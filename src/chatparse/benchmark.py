"""Kept for old imports: the engine benchmark ``chatparse bench`` runs lives in ``chatparse.bench``
(``outputs``: the synthetic outputs; ``engine``: the timed rows); the corpus rows of ``--truncated-all`` are
in ``benchmarks/bench_engine.py``."""

from chatparse.bench.engine import (
    TRUNCATED_TARGET_MS_PER_100KB,
    best_time,
    dense,
    growth_exponent,
    main,
    memory,
    one_shot,
    one_shot_builtins,
    print_table,
    run,
    streaming,
    truncated,
    truncated_cuts,
)
from chatparse.bench.outputs import (
    BUILTINS,
    CUTS,
    HARMONY,
    QWEN3,
    QWEN35,
    TEMPLATES,
    WORDS,
    _words,
    bench_cuts,
    make_output,
    make_truncated,
)

__all__ = ["BUILTINS", "CUTS", "HARMONY", "QWEN3", "QWEN35", "TEMPLATES", "TRUNCATED_TARGET_MS_PER_100KB", "WORDS",
           "_words", "bench_cuts", "best_time", "dense", "growth_exponent", "main", "make_output", "make_truncated",
           "memory", "one_shot", "one_shot_builtins", "print_table", "run", "streaming", "truncated",
           "truncated_cuts"]
