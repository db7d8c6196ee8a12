"""The OpenAI-compatible stream (`ChatCompletionStream`): µs per 4-character feed and the growth exponent
(log-log slope of total time against length; 1.0 is linear), for text (reasoning then content) and for
a tool call whose nested arguments stream key by key, next to the parser alone on the same text.

    python benchmarks/bench_openai.py [--quick]

Prints a table, then one JSON document. The test suite checks correctness only; time lives here.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from chatparse import ResponseParser
from chatparse.benchmark import best_time, growth_exponent
from chatparse.openai import ChatCompletionStream

TARGET_EXPONENT = 1.05


def text_output(size: int) -> str:
    return "<think>" + "why " * (size // 8) + "</think>" + "word " * (size // 10) + "<|im_end|>"


def nested_call_output(size: int) -> str:
    keys = max(1, size // 40)
    arguments = {f"k{i}": ["v" * 5, i, {"x": None}] for i in range(keys)}
    return "<tool_call>\n" + json.dumps({"name": "f", "arguments": arguments}) + "\n</tool_call>"


def _stream(text: str) -> None:
    stream = ChatCompletionStream("qwen3", "", created=1)
    for i in range(0, len(text), 4):
        stream.feed(text[i : i + 4])
    stream.finish()


def _parse(text: str) -> None:
    parser = ResponseParser("qwen3", "")
    for i in range(0, len(text), 4):
        parser.feed(text[i : i + 4])
    parser.finalize()


def run(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for case, make in (("text", text_output), ("nested-arguments", nested_call_output)):
        times = []
        for size in sizes:
            text = make(size)
            feeds = (len(text) + 3) // 4
            ours, _ = best_time(lambda: _stream(text), repeat)  # noqa: B023
            parser, _ = best_time(lambda: _parse(text), repeat)  # noqa: B023
            times.append(ours)
            rows.append({"bench": "openai-stream", "case": case, "chars": len(text), "feeds": feeds,
                         "stream_us_per_feed": ours / feeds * 1e6, "parser_us_per_feed": parser / feeds * 1e6})
        rows.append({"bench": "openai-growth", "case": case, "exponent": growth_exponent(sizes, times),
                     "target": TARGET_EXPONENT})
    return rows


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("--quick", action="store_true", help="smaller sizes")
    args = cli.parse_args()
    sizes = [16_000, 64_000] if args.quick else [16_000, 64_000, 256_000, 1_024_000]
    rows = run(sizes, repeat=3)
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    print("  ".join(columns))
    for row in rows:
        print("  ".join(f"{row.get(c, ''):.3g}" if isinstance(row.get(c), float) else str(row.get(c, "")) for c in columns))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
