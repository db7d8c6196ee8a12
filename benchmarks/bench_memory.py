"""Memory while streaming a huge generation: chatparse keeps only the open region and the held-back
tail, so a 100 MB generation streams with bounded extra memory. Prints peak RSS growth and throughput.
Run: ``python benchmarks/bench_memory.py [--mb 100]``."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import chatparse

# Text outside any region is dropped (no implicit field); each reasoning block is a short region.
TEMPLATE = {
    "start_anchor": "<|start|>assistant",
    "fields": {
        "thinking": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>", "repeats": True},
        "content": {"open": "<|channel|>final<|message|>", "close": "<|return|>"},
    },
}
BLOCK = "<|channel|>analysis<|message|>" + "a short thought " * 4 + "<|end|>" + "filler text between channels " * 120


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=100.0, help="size of the generation in MB (default 100)")
    parser.add_argument("--chunk", type=int, default=4096, help="characters per feed (default 4096)")
    args = parser.parse_args(argv)
    total = int(args.mb * 1_000_000)
    stream = chatparse.ResponseParser(TEMPLATE, "")
    before = rss_mb()
    started = time.perf_counter()
    fed, pending, blocks = 0, "", 0
    while fed < total:
        while len(pending) < args.chunk:
            pending += BLOCK
            blocks += 1
        stream.feed(pending[: args.chunk])
        pending = pending[args.chunk :]
        fed += args.chunk
    stream.feed("<|channel|>final<|message|>done<|return|>")
    message, _ = stream.finalize()
    elapsed = time.perf_counter() - started
    row = {"generation_mb": fed / 1e6, "seconds": round(elapsed, 2), "mb_per_s": round(fed / 1e6 / elapsed, 1),
           "rss_growth_mb": round(rss_mb() - before, 1), "thinking_blocks": len(message["thinking"]),
           "note": "rss growth includes the message itself (every thinking block is kept)"}
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
