"""Memory stays proportional to the open region and the held-back tail, not to the whole generation
(scaled down here; benchmarks/bench_memory.py streams 100 MB)."""

from __future__ import annotations

import tracemalloc

from benchmarks.bench_memory import BLOCK, TEMPLATE

import chatparse


def _peak_streaming(total: int, chunk: int = 4096) -> int:
    parser = chatparse.ResponseParser(TEMPLATE, "")
    text = BLOCK * (chunk // len(BLOCK) + 2)
    tracemalloc.start()
    fed = 0
    while fed < total:
        offset = fed % len(BLOCK)
        parser.feed(text[offset : offset + chunk])
        fed += chunk
    parser.finalize()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_streaming_memory_does_not_grow_with_the_generation() -> None:
    small = _peak_streaming(500_000)
    large = _peak_streaming(5_000_000)
    # Ten times the text: the only growth allowed is the kept thinking blocks (about 2% of the text).
    assert large < 1_500_000, large
    assert large < small + 0.05 * 4_500_000, (small, large)


def test_one_huge_region_costs_about_its_own_size() -> None:
    parser = chatparse.ResponseParser(TEMPLATE, "")
    body = "x" * 4096
    tracemalloc.start()
    parser.feed("<|channel|>final<|message|>")
    for _ in range(500):  # a 2 MB region
        parser.feed(body)
    parser.feed("<|return|>")
    message, _ = parser.finalize()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(message["content"]) == 2_048_000
    assert peak < 3 * 2_048_000, peak  # the chunks, their join, and the stripped value
